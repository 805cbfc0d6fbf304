"""Build a :class:`Scheduler` from a configuration file, feature gates and plugins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kaudit.config import (
    FeatureGates,
    SchedulerConfiguration,
    load_configuration,
    load_object,
    parse_feature_gates,
)
from kaudit.config.extenders import ExtenderConfig
from kaudit.errors import ConfigError
from kaudit.framework.extender import ExtenderCall, ExtenderError
from kaudit.framework.plugin import Handle, Plugin
from kaudit.framework.ports import HandlePorts
from kaudit.framework.runtime import Framework
from kaudit.scheduler.extender.http import HTTPExtender, Transport
from kaudit.scheduler.registry import build_registry, plugin_specs
from kaudit.scheduler.schedule import Scheduler


def load(config_path: Path | None = None, feature_gates: str | FeatureGates | None = None,
         plugins: Sequence[str] = ()) -> tuple[SchedulerConfiguration, dict[str, type[Plugin]]]:
    """Load the configuration (defaults when ``config_path`` is None) and the registry."""
    gates = (feature_gates if isinstance(feature_gates, FeatureGates)
             else parse_feature_gates(feature_gates or ""))
    registry = build_registry(plugins)
    config = load_configuration(config_path, plugins=plugin_specs(registry),
                                feature_gates=gates)
    return config, registry


def load_object_config(obj: Any, source: str, feature_gates: str | FeatureGates | None = None,
                       plugins: Sequence[str] = (),
                       ) -> tuple[SchedulerConfiguration, dict[str, type[Plugin]]]:
    """Like :func:`load` for an already parsed configuration (one stored with a trace)."""
    gates = (feature_gates if isinstance(feature_gates, FeatureGates)
             else parse_feature_gates(feature_gates or ""))
    registry = build_registry(plugins)
    config = load_object(obj, source, plugins=plugin_specs(registry), feature_gates=gates)
    return config, registry


#: Builds a scheduler over the given ports: how a replay asks for its scheduler once it has
#: made the ports (its cluster state, clock, nominator...).
SchedulerFactory = Callable[[HandlePorts], Scheduler]


def build_scheduler(config: SchedulerConfiguration, registry: dict[str, type[Plugin]], *,
                    ports: HandlePorts | None = None, seed: int = 0,
                    tie_break: str = "random",
                    extender_transport: Callable[[ExtenderConfig], Transport] | None = None,
                    ) -> Scheduler:
    """The scheduler of ``config``; its extenders speak HTTP unless ``extender_transport``
    gives each its transport (recorded answers, say). ``ports`` go on every plugin's handle
    (this is the one place that fills them); without them plugins run without a cluster
    state, clock, nominator or API writer of a replay."""
    calls: list[ExtenderCall] = []
    try:
        extenders = [HTTPExtender(extender, extender_transport(extender)
                                  if extender_transport else None, calls)
                     for extender in config.extenders]
    except ExtenderError as exc:
        raise ConfigError(f"{config.source or 'configuration'}: extenders: {exc}") from None
    frameworks = {}
    for name, profile in config.profiles.items():
        handle = Handle(feature_gates=config.feature_gates, scheduler_name=name,
                        extenders=tuple(extenders), ports=ports or HandlePorts(),
                        parallelism=config.parallelism)
        frameworks[name] = Framework(profile, registry, handle)
    return Scheduler(frameworks, percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                     seed=seed, feature_gates=config.feature_gates, tie_break=tie_break,
                     extenders=extenders, extender_calls=calls)


def scheduler_factory(config: SchedulerConfiguration, registry: dict[str, type[Plugin]], *,
                      seed: int = 0, tie_break: str = "random",
                      extender_transport: Callable[[ExtenderConfig], Transport] | None = None,
                      ) -> SchedulerFactory:
    """``build_scheduler`` with everything but the ports: what a replay is given."""
    def build(ports: HandlePorts) -> Scheduler:
        return build_scheduler(config, registry, ports=ports, seed=seed, tie_break=tie_break,
                               extender_transport=extender_transport)
    return build


def ports_needed(config: SchedulerConfiguration, registry: dict[str, type[Plugin]]
                 ) -> frozenset[str]:
    """The optional handle ports the plugins of ``config``'s profiles declare they read."""
    return frozenset(port for profile in config.profiles.values()
                     for refs in profile.plugins.values() for ref in refs
                     if ref.name in registry
                     for port in registry[ref.name].ports_needed)
