"""The plugin registry: name → plugin class, in-tree plugins plus out-of-tree ones.

The in-tree map is written out, as upstream's ``NewInTreeRegistry``
(``pkg/scheduler/framework/plugins/registry.go``, Kubernetes v1.34). Out-of-tree plugins come
from the ``kaudit.plugins`` entry-point group or from ``--plugin module:Class`` on the command
line (``frameworkruntime.Registry`` and ``app.WithPlugin`` upstream). A plugin class is built
as ``cls(args, handle)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from typing import Any

from kaudit.config import FeatureGates, FieldError, PluginSpec
from kaudit.config import plugins as config_plugins
from kaudit.errors import ConfigError, InputError
from kaudit.framework.plugin import Plugin, extension_points
from kaudit.plugins.default_binder import DefaultBinder
from kaudit.plugins.default_preemption import DefaultPreemption
from kaudit.plugins.dynamic_resources import DynamicResources
from kaudit.plugins.image_locality import ImageLocality
from kaudit.plugins.inter_pod_affinity import InterPodAffinity
from kaudit.plugins.node_affinity import NodeAffinity
from kaudit.plugins.node_declared_features import NodeDeclaredFeatures
from kaudit.plugins.node_name import NodeName
from kaudit.plugins.node_ports import NodePorts
from kaudit.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from kaudit.plugins.node_resources_fit import NodeResourcesFit
from kaudit.plugins.node_unschedulable import NodeUnschedulable
from kaudit.plugins.node_volume_limits import NodeVolumeLimits
from kaudit.plugins.pod_topology_spread import PodTopologySpread
from kaudit.plugins.priority_sort import PrioritySort
from kaudit.plugins.scheduling_gates import SchedulingGates
from kaudit.plugins.taint_toleration import TaintToleration
from kaudit.plugins.volume_binding import VolumeBinding
from kaudit.plugins.volume_restrictions import VolumeRestrictions
from kaudit.plugins.volume_zone import VolumeZone

ENTRY_POINT_GROUP = "kaudit.plugins"


_IN_TREE_CLASSES: tuple[type[Plugin], ...] = (
    DefaultBinder, DefaultPreemption, DynamicResources, ImageLocality, InterPodAffinity,
    NodeAffinity, NodeDeclaredFeatures, NodeName, NodePorts, NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    NodeUnschedulable, NodeVolumeLimits, PodTopologySpread, PrioritySort, SchedulingGates,
    TaintToleration, VolumeBinding, VolumeRestrictions, VolumeZone,
)
#: Every plugin kaudit implements, by name (sorted).
IN_TREE: dict[str, type[Plugin]] = dict(sorted((cls.name, cls) for cls in _IN_TREE_CLASSES))


def in_tree_plugins() -> dict[str, type[Plugin]]:
    return dict(IN_TREE)


def load_plugin_class(reference: str) -> type[Plugin]:
    """Import ``module:Class`` and check it is a kaudit plugin."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise InputError(f"--plugin {reference!r}: expected MODULE:CLASS")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"--plugin {reference!r}: cannot import {module_name}: {exc}") from None
    plugin = getattr(module, attribute, None)
    if not isinstance(plugin, type) or not issubclass(plugin, Plugin):
        raise InputError(f"--plugin {reference!r}: {attribute} is not a subclass of "
                         "kaudit.framework.plugin.Plugin")
    if not plugin.name:
        raise InputError(f"--plugin {reference!r}: the class has no `name`")
    return plugin


def _add(registry: dict[str, type[Plugin]], name: str, plugin: type[Plugin]) -> None:
    """``Registry.Register``: a name is registered once (an out-of-tree plugin cannot replace
    an in-tree one)."""
    if name in IN_TREE:
        raise InputError(f"a plugin named {name} already exists (in-tree); rename yours")
    registry[name] = plugin


def build_registry(extra: Iterable[str] = (), *, entry_point_plugins: bool = True
                   ) -> dict[str, type[Plugin]]:
    """In-tree plugins, then entry-point plugins, then ``extra`` references."""
    registry = in_tree_plugins()
    if entry_point_plugins:
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            plugin = entry.load()
            _add(registry, getattr(plugin, "name", "") or entry.name, plugin)
    for reference in extra:
        plugin = load_plugin_class(reference)
        _add(registry, plugin.name, plugin)
    return registry


def plugin_spec(name: str, plugin: type[Plugin]) -> PluginSpec:
    """What configuration needs to know of ``plugin``, from its own declarations."""
    default_args = plugin.default_args
    return PluginSpec(name=name, extension_points=extension_points(plugin),
                      args=plugin.args_spec, gated_points=plugin.gated_points,
                      points_since=plugin.points_since,
                      default_args=None if default_args is None else dict(default_args))


def plugin_specs(registry: Mapping[str, type[Plugin]] | None = None) -> dict[str, PluginSpec]:
    """The specs of every plugin in ``registry`` (the in-tree plugins when None)."""
    return {name: plugin_spec(name, plugin)
            for name, plugin in (IN_TREE if registry is None else registry).items()}


def validate_plugin_args(name: str, args: dict[str, Any] | None, *,
                         feature_gates: FeatureGates | None = None) -> list[FieldError]:
    """Validate the args of the in-tree plugin ``name`` as given (upstream's
    ``validation_pluginargs.go``); raises ConfigError for a plugin that does not exist."""
    if name not in IN_TREE:
        raise ConfigError(f'unknown plugin "{name}"')
    return config_plugins.validate_plugin_args(plugin_spec(name, IN_TREE[name]), args,
                                               feature_gates=feature_gates)
