"""The in-tree plugins kaudit knows, what each implements, and their arguments.

Mirrors, for v1.34: the plugin registry (``pkg/scheduler/framework/plugins/registry.go``),
the extension-point interfaces each plugin type asserts (``var _ fwk.FilterPlugin = ...``
in each plugin package; DefaultPreemption is a PreEnqueue plugin too, for asynchronous
preemption), the default score weights (``apis/config/v1/default_plugins.go``) and the
registered argument kinds (``<Plugin>Args`` in ``kube-scheduler/config/v1``).

One deliberate difference: upstream's VolumeBinding always implements PreScore and
Score, and without ``StorageCapacityScoring`` its PreScore returns Skip so it never
scores. kaudit lists it at those points only when the gate is on; with the gate off it
still *accepts* VolumeBinding at PreScore/Score (upstream does) but drops it there, which
has the same effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kaudit.config.args_defaults import DEFAULTERS, default_args
from kaudit.config.args_schema import ARGS_SCHEMAS
from kaudit.config.args_validation import VALIDATORS
from kaudit.config.feature_gates import FeatureGates
from kaudit.config.fielderrors import FieldError, not_supported
from kaudit.config.model import EXTENSION_POINTS
from kaudit.config.schema import check
from kaudit.errors import ConfigError

ARGS_API_VERSION = "kubescheduler.config.k8s.io/v1"


@dataclass(frozen=True)
class PluginSpec:
    """A plugin: the extension points it runs at, its default args (``None`` when it takes
    none) and its score weight in the default profile (``None`` when it does not score
    there)."""

    name: str
    extension_points: frozenset[str]
    default_args: dict[str, Any] | None
    default_weight: int | None


_POINTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "PrioritySort": ("QueueSort",),
    "SchedulingGates": ("PreEnqueue",),
    "NodeUnschedulable": ("Filter",),
    "NodeName": ("Filter",),
    "TaintToleration": ("Filter", "PreScore", "Score"),
    "NodeAffinity": ("PreFilter", "Filter", "PreScore", "Score"),
    "NodePorts": ("PreFilter", "Filter"),
    "NodeResourcesFit": ("PreFilter", "Filter", "PreScore", "Score"),
    "VolumeRestrictions": ("PreFilter", "Filter"),
    "NodeVolumeLimits": ("PreFilter", "Filter"),
    "VolumeBinding": ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "PreBind"),
    "VolumeZone": ("PreFilter", "Filter"),
    "PodTopologySpread": ("PreFilter", "Filter", "PreScore", "Score"),
    "InterPodAffinity": ("PreFilter", "Filter", "PreScore", "Score"),
    "DynamicResources": ("PreEnqueue", "PreFilter", "Filter", "PostFilter", "Reserve",
                         "PreBind"),
    "DefaultPreemption": ("PreEnqueue", "PostFilter"),
    "NodeResourcesBalancedAllocation": ("PreScore", "Score"),
    "ImageLocality": ("Score",),
    "DefaultBinder": ("Bind",),
})
_WEIGHTS: Mapping[str, int] = MappingProxyType({
    "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
    "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
})
# Points a plugin implements but that do nothing unless a gate is on: (gate, points).
_GATED_POINTS: Mapping[str, tuple[str, frozenset[str]]] = MappingProxyType({
    "VolumeBinding": ("StorageCapacityScoring", frozenset({"PreScore", "Score"})),
})


@dataclass(frozen=True)
class Registry:
    """The plugins available to a configuration under given feature gates."""

    specs: Mapping[str, PluginSpec]
    inert: Mapping[str, frozenset[str]]  # implemented points dropped under these gates
    gates: FeatureGates

    def implements(self, name: str, point: str) -> bool:
        return point in self.specs[name].extension_points or point in self.inert.get(name, ())

    def active(self, name: str, point: str) -> bool:
        return point in self.specs[name].extension_points

    def takes_args(self, name: str) -> bool:
        return name in self.specs and self.specs[name].default_args is not None


def _in_tree(gates: FeatureGates) -> tuple[dict[str, PluginSpec], dict[str, frozenset[str]]]:
    specs, inert = {}, {}
    for name, points in _POINTS.items():
        active = frozenset(points)
        if name in _GATED_POINTS:
            gate, gated = _GATED_POINTS[name]
            if not gates.enabled(gate):
                active, inert[name] = active - gated, gated
        weight = _WEIGHTS.get(name, 1 if "Score" in active else None)
        args = default_args(name, None, gates) if name in DEFAULTERS else None
        specs[name] = PluginSpec(name, active, args, weight)
    return specs, inert


def build_registry(gates: FeatureGates, extra: Mapping[str, PluginSpec] | None = None) -> Registry:
    """In-tree plugins under ``gates`` plus the out-of-tree ``extra`` ones."""
    specs, inert = _in_tree(gates)
    for name, spec in (extra or {}).items():
        if name in specs:
            raise ConfigError(f"a plugin named {name} already exists")
        unknown = sorted(spec.extension_points - set(EXTENSION_POINTS))
        if name != spec.name or unknown:
            raise ConfigError(f"plugin {name}: invalid spec (name {spec.name!r}, unknown "
                              f"extension points {unknown})")
        specs[name] = spec
    return Registry(MappingProxyType(specs), MappingProxyType(inert), gates)


IN_TREE_PLUGINS: Mapping[str, PluginSpec] = MappingProxyType(_in_tree(FeatureGates())[0])


def check_args_type(plugin: str, args: dict[str, Any]) -> list[FieldError]:
    """Strict-decoding problems in in-tree ``args``: unknown fields, wrong types, and an
    ``apiVersion``/``kind`` that does not match the plugin's args kind."""
    errors = check(args, ARGS_SCHEMAS[plugin])
    if errors:
        return errors
    if args.get("apiVersion") not in (None, ARGS_API_VERSION):
        errors.append(not_supported("apiVersion", args["apiVersion"], [ARGS_API_VERSION]))
    if args.get("kind") not in (None, f"{plugin}Args"):
        errors.append(not_supported("kind", args["kind"], [f"{plugin}Args"]))
    return errors


def validate_plugin_args(plugin_name: str, args: dict[str, Any], *,
                         feature_gates: FeatureGates | None = None) -> list[FieldError]:
    """Validate ``args`` of an in-tree plugin as given, without defaulting.

    Mirrors ``validation_pluginargs.go``; a field left out counts as its Go zero value.
    Paths are relative to the args (``scoringStrategy.resources[1].weight``). A plugin
    that takes no args accepts anything, as upstream ignores its args.
    """
    if plugin_name not in _POINTS:
        raise ConfigError(f'unknown plugin "{plugin_name}"')
    if plugin_name not in VALIDATORS:
        return []
    args = {} if args is None else args
    errors = check_args_type(plugin_name, args)
    if errors:
        return errors
    return VALIDATORS[plugin_name](args, feature_gates or FeatureGates())
