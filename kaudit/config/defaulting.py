"""Defaulting of a decoded v1 configuration.

Mirrors ``SetDefaults_KubeSchedulerConfiguration`` and ``setDefaults_KubeSchedulerProfile``
in ``pkg/scheduler/apis/config/v1/defaults.go`` (v1.34): parallelism 16, one profile when
there is none, ``default-scheduler`` as the name of a lone unnamed profile, plugins merged
into the default set, each given args object defaulted, then defaulted args appended for
every enabled plugin that takes args and has none (in name order), percentageOfNodesToScore
0, backoff 1s and 10s. The numbers are the release's (``api_defaults`` of the
:class:`~kaudit.versions.KubernetesVersion` of the registry's feature gates). Out-of-tree
plugins from ``extra_plugins`` get their ``default_args`` with the given args laid over them
(a shallow merge).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from kaudit.config.default_plugins import default_plugins, merge_plugins, plugin_names
from kaudit.config.fielderrors import child, index
from kaudit.config.plugins import Registry
from kaudit.config.v1types import ConfigurationV1, PluginConfig, ProfileV1

DEFAULT_SCHEDULER_NAME = "default-scheduler"


def defaulted_args(name: str, given: dict[str, Any] | None,
                   registry: Registry) -> dict[str, Any] | None:
    """The args a plugin runs with: defaulted for typed kinds, merged for extra plugins."""
    args_spec = registry.args_spec(name)
    if args_spec is not None:
        return args_spec.defaulted(given, registry.gates)
    spec = registry.specs.get(name)
    if spec is not None and spec.default_args is not None:
        return {**copy.deepcopy(spec.default_args), **copy.deepcopy(given or {})}
    return given


def _profile(profile: ProfileV1, registry: Registry) -> ProfileV1:
    plugins = merge_plugins(default_plugins(registry.gates), profile.plugins)
    configs = [replace(c, args=defaulted_args(c.name, c.args, registry))
               for c in profile.plugin_config]
    existing = {c.name for c in configs}
    config_path = child(profile.origin, "pluginConfig")
    for name in plugin_names(plugins):
        if name not in existing and registry.takes_args(name):
            configs.append(PluginConfig(name, defaulted_args(name, None, registry),
                                        index(config_path, len(configs))))
    return replace(profile, plugins=plugins, plugin_config=tuple(configs))


def default_configuration(config: ConfigurationV1, registry: Registry) -> ConfigurationV1:
    profiles = config.profiles or (ProfileV1(origin=index("profiles", 0)),)
    if len(profiles) == 1 and profiles[0].scheduler_name is None:
        profiles = (replace(profiles[0], scheduler_name=DEFAULT_SCHEDULER_NAME),)

    def pick(value: int | None, default: int) -> int:
        return default if value is None else value

    defaults = registry.gates.version.api_defaults
    return replace(
        config,
        parallelism=pick(config.parallelism, defaults.parallelism),
        percentage_of_nodes_to_score=pick(config.percentage_of_nodes_to_score,
                                          defaults.percentage_of_nodes_to_score),
        pod_initial_backoff_seconds=pick(config.pod_initial_backoff_seconds,
                                         defaults.pod_initial_backoff_seconds),
        pod_max_backoff_seconds=pick(config.pod_max_backoff_seconds,
                                     defaults.pod_max_backoff_seconds),
        profiles=tuple(_profile(p, registry) for p in profiles),
    )
