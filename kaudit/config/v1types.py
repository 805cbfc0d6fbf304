"""The ``kubescheduler.config.k8s.io/v1`` types as decoded from a file, before expansion.

Mirrors ``staging/src/k8s.io/kube-scheduler/config/v1/types.go`` (v1.34):
``KubeSchedulerConfiguration``, ``KubeSchedulerProfile``, ``Plugins``, ``PluginSet``,
``Plugin``, ``PluginConfig``. Optional (pointer) fields are ``None`` when unset. Each
item remembers the field path it came from (``origin``) so later stages can name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kaudit.config.extenders import ExtenderConfig
from kaudit.config.model import API_VERSION, EXTENSION_POINTS, KIND

__all__ = ["API_VERSION", "KIND", "MULTI_POINT", "PLUGIN_SETS", "ConfigurationV1", "Plugin",
           "PluginConfig", "PluginSet", "Plugins", "ProfileV1", "empty_plugins"]
MULTI_POINT = "MultiPoint"
PLUGIN_SETS: tuple[str, ...] = (MULTI_POINT, *EXTENSION_POINTS)


@dataclass(frozen=True)
class Plugin:
    name: str
    weight: int | None = None
    origin: str | None = None  # None for a built-in default


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[Plugin, ...] = ()
    disabled: tuple[Plugin, ...] = ()

    def names(self) -> list[str]:
        return [p.name for p in self.enabled]

    def disabled_names(self) -> set[str]:
        return {p.name for p in self.disabled}


Plugins = dict[str, PluginSet]  # keyed by every name in PLUGIN_SETS


def empty_plugins() -> Plugins:
    return {name: PluginSet() for name in PLUGIN_SETS}


@dataclass(frozen=True)
class PluginConfig:
    name: str
    args: dict[str, Any] | None
    origin: str


@dataclass(frozen=True)
class ProfileV1:
    origin: str
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins | None = None
    plugin_config: tuple[PluginConfig, ...] = ()


@dataclass(frozen=True)
class ConfigurationV1:
    parallelism: int | None = None
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int | None = None
    pod_max_backoff_seconds: int | None = None
    profiles: tuple[ProfileV1, ...] = ()
    extenders: tuple[ExtenderConfig, ...] = field(default=())
