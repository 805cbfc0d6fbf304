"""Strict decoding of a parsed KubeSchedulerConfiguration into the v1 types.

Mirrors how kube-scheduler reads ``--config`` (``cmd/kube-scheduler/app/options``
``LoadConfigFromFile`` with the strict codec of ``pkg/scheduler/apis/config/scheme``): only
``kubescheduler.config.k8s.io/v1`` / ``KubeSchedulerConfiguration`` is accepted, unknown
fields and wrong types are errors, and each ``pluginConfig`` args object of an in-tree
args kind is decoded strictly too (``DecodeNestedObjects``), its ``apiVersion`` and
``kind`` optional but checked when present. Args of other plugins are kept as given.
"""

from __future__ import annotations

from typing import Any

from kaudit.config.extenders import EXTENDER, decode_extenders
from kaudit.config.fielderrors import FieldError, child, index, not_supported, required
from kaudit.config.model import yaml_name
from kaudit.config.plugins import Registry, check_args_type
from kaudit.config.schema import ListOf, Obj, as_int, check, json_type
from kaudit.config.v1types import (
    API_VERSION,
    KIND,
    PLUGIN_SETS,
    ConfigurationV1,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
    ProfileV1,
)

_PLUGIN = Obj({"name": "string", "weight": "int32"})
_PLUGIN_SET = Obj({"enabled": ListOf(_PLUGIN), "disabled": ListOf(_PLUGIN)})
_PROFILE = Obj({
    "schedulerName": "string",
    "percentageOfNodesToScore": "int32",
    "plugins": Obj({yaml_name(name): _PLUGIN_SET for name in PLUGIN_SETS}),
    "pluginConfig": ListOf(Obj({"name": "string", "args": "object"})),
})
CONFIGURATION = Obj({
    "apiVersion": "string",
    "kind": "string",
    "parallelism": "int32",
    "leaderElection": Obj({
        "leaderElect": "bool", "leaseDuration": "duration", "renewDeadline": "duration",
        "retryPeriod": "duration", "resourceLock": "string", "resourceName": "string",
        "resourceNamespace": "string"}),
    "clientConnection": Obj({"kubeconfig": "string", "acceptContentTypes": "string",
                             "contentType": "string", "qps": "float", "burst": "int32"}),
    "enableProfiling": "bool",
    "enableContentionProfiling": "bool",
    "percentageOfNodesToScore": "int32",
    "podInitialBackoffSeconds": "int64",
    "podMaxBackoffSeconds": "int64",
    "profiles": ListOf(_PROFILE),
    "extenders": ListOf(EXTENDER),
    "delayCacheUntilActive": "bool",
})


class DecodeError(Exception):
    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(e.message() for e in errors))


def _type_meta(obj: Any) -> list[FieldError]:
    if not isinstance(obj, dict):
        return [FieldError("FieldValueTypeInvalid", "", f"expected a {KIND} object, got "
                           f"{json_type(obj) if obj is not None else 'an empty document'}",
                           obj)]
    errors = []
    for name, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = obj.get(name)
        if value is None:
            errors.append(required(name, f'must be "{want}"'))
        elif value != want:
            errors.append(not_supported(name, value, [want]))
    return errors


def _int_or_none(value: Any) -> int | None:
    return None if value is None else as_int(value)


def _plugin_set(raw: dict[str, Any] | None, path: str) -> PluginSet:
    raw = raw or {}

    def plugins(name: str) -> tuple[Plugin, ...]:
        p = child(path, name)
        return tuple(Plugin((item or {}).get("name") or "",
                            _int_or_none((item or {}).get("weight")), index(p, i))
                     for i, item in enumerate(raw.get(name) or []))

    return PluginSet(enabled=plugins("enabled"), disabled=plugins("disabled"))


def _plugins(raw: dict[str, Any] | None, path: str) -> Plugins | None:
    if raw is None:
        return None
    return {name: _plugin_set(raw.get(yaml_name(name)), child(path, yaml_name(name)))
            for name in PLUGIN_SETS}


def _plugin_config(raw: list[Any], path: str, registry: Registry
                   ) -> tuple[tuple[PluginConfig, ...], list[FieldError]]:
    entries, errors = [], []
    for i, item in enumerate(raw):
        p = index(path, i)
        name, args = (item or {}).get("name") or "", (item or {}).get("args")
        spec = registry.args_spec(name)
        if spec is not None and args is not None:
            errors += [e.under(child(p, "args")) for e in check_args_type(spec, args)]
        entries.append(PluginConfig(name, args, p))
    return tuple(entries), errors


def _profile(raw: dict[str, Any], path: str, registry: Registry
             ) -> tuple[ProfileV1, list[FieldError]]:
    plugin_config, errors = _plugin_config(raw.get("pluginConfig") or [],
                                           child(path, "pluginConfig"), registry)
    profile = ProfileV1(
        origin=path,
        scheduler_name=raw.get("schedulerName"),
        percentage_of_nodes_to_score=_int_or_none(raw.get("percentageOfNodesToScore")),
        plugins=_plugins(raw.get("plugins"), child(path, "plugins")),
        plugin_config=plugin_config,
    )
    return profile, errors


def decode_configuration(obj: Any, registry: Registry) -> ConfigurationV1:
    """The v1 configuration in ``obj`` (parsed YAML/JSON), or :class:`DecodeError`."""
    errors = _type_meta(obj) or check(obj, CONFIGURATION)
    if errors:
        raise DecodeError(errors)
    profiles = []
    for i, raw in enumerate(obj.get("profiles") or []):
        profile, profile_errors = _profile(raw or {}, index("profiles", i), registry)
        profiles.append(profile)
        errors += profile_errors
    if errors:
        raise DecodeError(errors)
    return ConfigurationV1(
        parallelism=_int_or_none(obj.get("parallelism")),
        percentage_of_nodes_to_score=_int_or_none(obj.get("percentageOfNodesToScore")),
        pod_initial_backoff_seconds=_int_or_none(obj.get("podInitialBackoffSeconds")),
        pod_max_backoff_seconds=_int_or_none(obj.get("podMaxBackoffSeconds")),
        profiles=tuple(profiles),
        extenders=decode_extenders(obj.get("extenders") or []),
    )

