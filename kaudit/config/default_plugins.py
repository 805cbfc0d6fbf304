"""The default plugin set and how a profile's ``plugins`` are merged into it.

Mirrors ``pkg/scheduler/apis/config/v1/default_plugins.go`` (v1.34): ``getDefaultPlugins``
(every default plugin enabled through MultiPoint, in order, with its score weight) and
``applyFeatureGates`` (in v1.34, DynamicResources inserted before DefaultPreemption when
``DynamicResourceAllocation`` is on), both read from the release's
:class:`~kaudit.versions.KubernetesVersion`, and ``mergePlugins`` / ``mergePluginSet``: a custom
enabled plugin that is also a default replaces it in place (taking its weight, or none),
custom plugins that replace nothing are appended, ``disabled`` removes defaults and
``"*"`` removes them all. Disabled lists are kept: the framework's MultiPoint expansion
reads them.
"""

from __future__ import annotations

from kaudit.config.feature_gates import FeatureGates
from kaudit.config.v1types import MULTI_POINT, PLUGIN_SETS, Plugin, Plugins, PluginSet
from kaudit.versions import KubernetesVersion


def default_plugins(gates: FeatureGates, version: KubernetesVersion | None = None) -> Plugins:
    """``getDefaultPlugins`` with ``applyFeatureGates`` of ``version`` (the release of
    ``gates``, :data:`kaudit.versions.DEFAULT` unless given otherwise): the release's default
    MultiPoint list, then each of its gated plugins whose gate is on, inserted before its
    anchor or appended, in the release's order."""
    if version is None:
        version = gates.version
    elif version is not gates.version:
        raise ValueError(f"feature gates of {gates.version.name} given for the default "
                         f"plugins of {version.name}")
    enabled = [Plugin(p.name, p.weight) for p in version.default_multi_point]
    for gated in version.gated_plugins:
        if not gates.enabled(gated.gate):
            continue
        plugin = Plugin(gated.plugin.name, gated.plugin.weight)
        if gated.before is None:
            enabled.append(plugin)
        else:
            enabled.insert([p.name for p in enabled].index(gated.before), plugin)
    plugins = {name: PluginSet() for name in PLUGIN_SETS}
    plugins[MULTI_POINT] = PluginSet(enabled=tuple(enabled))
    return plugins


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """``mergePluginSet``: ``custom`` applied on top of ``default``."""
    disabled = [Plugin(p.name, origin=p.origin) for p in custom.disabled]
    disabled += [Plugin(p.name, origin=p.origin) for p in default.disabled]
    disabled_names = {p.name for p in disabled}
    # The last custom entry of a name wins the in-place replacement, as upstream's map.
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            if plugin.name in custom_by_name:
                i, plugin = custom_by_name[plugin.name]
                replaced.add(i)
            enabled.append(plugin)
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled=tuple(enabled), disabled=tuple(disabled))


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """``mergePlugins``: every extension point (and MultiPoint) merged."""
    if custom is None:
        return dict(default)
    return {name: merge_plugin_set(default.get(name, PluginSet()), custom.get(name, PluginSet()))
            for name in PLUGIN_SETS}


def plugin_names(plugins: Plugins | None) -> list[str]:
    """``pluginsNames``: every enabled name at any point or MultiPoint, sorted."""
    if plugins is None:
        return []
    return sorted({p.name for s in plugins.values() for p in s.enabled})
