"""What configuration needs to know of a plugin, and the plugins available to a configuration.

The configuration layer never imports a plugin: the scheduler hands it one
:class:`PluginSpec` per registered plugin, built from the plugin class's own declarations
(its name, the extension points it implements, the points a feature gate switches off, and
its arguments: an :class:`ArgsSpec` with the v1 kind, the strict-decoding schema, upstream's
defaulting and upstream's validation). Mirrors how ``NewInTreeRegistry``
(``pkg/scheduler/framework/plugins/registry.go``, v1.34) and the ``<Plugin>Args`` kinds of
``kube-scheduler/config/v1`` meet in upstream's scheme.

One deliberate difference: upstream's VolumeBinding always implements PreScore and
Score, and without ``StorageCapacityScoring`` its PreScore returns Skip so it never
scores. kaudit lists it at those points only when the gate is on; with the gate off it
still *accepts* VolumeBinding at PreScore/Score (upstream does) but drops it there, which
has the same effect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from kaudit.config.feature_gates import FeatureGates
from kaudit.config.fielderrors import FieldError, not_supported
from kaudit.config.model import EXTENSION_POINTS
from kaudit.config.schema import Obj, check
from kaudit.errors import ConfigError

ARGS_API_VERSION = "kubescheduler.config.k8s.io/v1"


@dataclass(frozen=True)
class ArgsSpec:
    """A plugin's arguments: the v1 kind (``NodeResourcesFitArgs``), the schema strict decoding
    checks them against, upstream's ``SetDefaults_<Kind>`` and ``Validate<Kind>``."""

    kind: str
    schema: Obj
    set_defaults: Callable[[dict[str, Any], FeatureGates], dict[str, Any]]
    validate: Callable[[dict[str, Any], FeatureGates], list[FieldError]]

    def defaulted(self, given: dict[str, Any] | None, gates: FeatureGates) -> dict[str, Any]:
        """The complete args from the (type-checked) ``given`` ones."""
        args = {k: v for k, v in (given or {}).items() if k not in ("apiVersion", "kind")}
        return self.set_defaults(args, gates)


@dataclass(frozen=True)
class PluginSpec:
    """A plugin as configuration sees it: the extension points it implements, the points a
    disabled feature gate makes inert (gate → points), its typed args (in-tree kinds), or
    plain default args laid under the given ones (out-of-tree plugins)."""

    name: str
    extension_points: frozenset[str]
    args: ArgsSpec | None = None
    gated_points: Mapping[str, frozenset[str]] = field(
        default_factory=lambda: MappingProxyType({}))
    default_args: dict[str, Any] | None = None
    #: Points the plugin has only from an upstream minor release on (``"v1.35"`` → points).
    points_since: Mapping[str, frozenset[str]] = field(
        default_factory=lambda: MappingProxyType({}))


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
        spec = self.specs.get(name)
        return spec is not None and (spec.args is not None or spec.default_args is not None)

    def args_spec(self, name: str) -> ArgsSpec | None:
        spec = self.specs.get(name)
        return spec.args if spec is not None else None


def _minor(name: str) -> tuple[int, int]:
    major, minor = name.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def build_registry(gates: FeatureGates, plugins: Mapping[str, PluginSpec]) -> Registry:
    """The ``plugins`` under ``gates``: a gated point of a plugin is inert when its gate is off;
    a point a plugin has only from a later release than the gates' is not implemented."""
    specs: dict[str, PluginSpec] = {}
    inert: dict[str, frozenset[str]] = {}
    for name, spec in plugins.items():
        unknown = sorted(spec.extension_points - set(EXTENSION_POINTS))
        if name != spec.name or unknown:
            raise ConfigError(f"plugin {name}: invalid spec (name {spec.name!r}, unknown "
                              f"extension points {unknown})")
        active = spec.extension_points
        for minor, points in spec.points_since.items():
            if gates.version.release[:2] < _minor(minor):
                active = active - points
        for gate, points in spec.gated_points.items():
            if not gates.enabled(gate):
                active, inert[name] = active - points, inert.get(name, frozenset()) | points
        specs[name] = replace(spec, extension_points=active)
    return Registry(MappingProxyType(specs), MappingProxyType(inert), gates)


def check_args_type(spec: ArgsSpec, args: dict[str, Any]) -> list[FieldError]:
    """Strict-decoding problems in typed ``args``: unknown fields, wrong types, and an
    ``apiVersion``/``kind`` that does not match the plugin's args kind."""
    errors = check(args, spec.schema)
    if errors:
        return errors
    if args.get("apiVersion") not in (None, ARGS_API_VERSION):
        errors.append(not_supported("apiVersion", args["apiVersion"], [ARGS_API_VERSION]))
    if args.get("kind") not in (None, spec.kind):
        errors.append(not_supported("kind", args["kind"], [spec.kind]))
    return errors


def validate_plugin_args(spec: PluginSpec, args: dict[str, Any] | None, *,
                         feature_gates: FeatureGates | None = None) -> list[FieldError]:
    """Validate ``args`` of a plugin as given, without defaulting.

    Mirrors ``validation_pluginargs.go``; a field left out counts as its Go zero value.
    Paths are relative to the args (``scoringStrategy.resources[1].weight``). A plugin
    that takes no typed args accepts anything, as upstream ignores its args.
    """
    if spec.args is None:
        return []
    args = {} if args is None else args
    errors = check_args_type(spec.args, args)
    if errors:
        return errors
    return spec.args.validate(args, feature_gates or FeatureGates())
