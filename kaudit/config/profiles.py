"""How a profile's merged ``plugins`` become the ordered plugin list at each point.

Mirrors ``NewFramework`` in ``pkg/scheduler/framework/runtime/framework.go`` (v1.34):

* ``updatePluginList``: plugins named at a specific point, in order; an unknown name, a
  plugin that does not implement the point, or a repeat is an error.
* ``expandMultiPointPlugins``, point by point (skipped when the point disables ``"*"``):
  each MultiPoint plugin that implements the point and is not disabled there joins it,
  unless the point names it explicitly (an override, which keeps the point's setting).
  Final order: overrides in the point's order, then MultiPoint plugins in MultiPoint
  order, then the point's other plugins. A MultiPoint plugin listed twice is an error.
* exactly one QueueSort plugin and at least one Bind plugin.
* ``getScoreWeights``: a Score plugin's weight comes from the Score point's entry, else
  its MultiPoint entry; a weight of 0 (or none) becomes 1.

Errors name the field path of the offending entry and keep upstream's wording.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from kaudit.config.fielderrors import (
    DUPLICATE,
    FieldError,
    child,
    invalid,
    not_found,
    required,
)
from kaudit.config.model import EXTENSION_POINTS, PluginRef, yaml_name
from kaudit.config.plugins import Registry
from kaudit.config.v1types import MULTI_POINT, Plugin, Plugins
from kaudit.errors import ConfigError

# The order of getExtensionPoints: it decides which point reports an error first.
FRAMEWORK_ORDER = ("PreFilter", "Filter", "PostFilter", "Reserve", "PreScore", "Score",
                   "PreBind", "Bind", "PostBind", "Permit", "PreEnqueue", "QueueSort")


class FrameworkError(ConfigError):
    """A profile's plugins cannot be assembled; carries the :class:`FieldError`."""

    def __init__(self, error: FieldError) -> None:
        self.error = error
        super().__init__(error.message())


@dataclass(frozen=True)
class _Where:
    profile_path: str

    def entry(self, plugin: Plugin, point: str) -> str:
        if plugin.origin is not None:
            return plugin.origin
        return child(self.profile_path, f"plugins.{yaml_name(point)}")


def _type_name(point: str) -> str:
    return f"{point}Plugin"


def closest_plugin(name: str, registry: Registry) -> str | None:
    """The registered plugin name closest to a misspelt ``name``, if any is close."""
    close = difflib.get_close_matches(name, list(registry.specs), n=1, cutoff=0.75)
    return close[0] if close else None


def _does_not_exist(point: str, name: str, registry: Registry) -> str:
    """Upstream's text, with kaudit's hint when the name looks like a misspelling."""
    detail = f'{_type_name(point)} "{name}" does not exist'
    close = closest_plugin(name, registry)
    return detail + (f' (did you mean "{close}"?)' if close else "")


def _already_registered(path: str, name: str, point: str) -> FieldError:
    return FieldError(DUPLICATE, path, f'plugin "{name}" already registered as '
                      f'"{_type_name(point)}"', name)


def _update_plugin_list(point: str, plugins: Plugins, registry: Registry,
                        where: _Where) -> list[str]:
    names: list[str] = []
    for plugin in plugins[point].enabled:
        path = where.entry(plugin, point)
        if plugin.name not in registry.specs:
            raise FrameworkError(not_found(path, plugin.name,
                                           _does_not_exist(point, plugin.name, registry)))
        if not registry.implements(plugin.name, point):
            raise FrameworkError(invalid(path, plugin.name, f'plugin "{plugin.name}" does not '
                                         f"extend {_type_name(point)} plugin"))
        if plugin.name in names:
            raise FrameworkError(_already_registered(path, plugin.name, point))
        names.append(plugin.name)
    return names


def _expand_multi_point(point: str, explicit: list[str], plugins: Plugins,
                        registry: Registry, where: _Where) -> list[str]:
    disabled = plugins[point].disabled_names()
    if "*" in disabled:
        return explicit
    overrides: set[str] = set()
    from_multi_point: list[str] = []
    for plugin in plugins[MULTI_POINT].enabled:
        path = where.entry(plugin, MULTI_POINT)
        if plugin.name not in registry.specs:
            raise FrameworkError(not_found(path, plugin.name,
                                           _does_not_exist(point, plugin.name, registry)))
        if not registry.implements(plugin.name, point) or plugin.name in disabled:
            continue
        if plugin.name in explicit:
            overrides.add(plugin.name)
        elif plugin.name in from_multi_point:
            raise FrameworkError(_already_registered(path, plugin.name, point))
        else:
            from_multi_point.append(plugin.name)
    return ([n for n in explicit if n in overrides] + from_multi_point
            + [n for n in explicit if n not in overrides])


def score_weights(plugins: Plugins, registry: Registry) -> dict[str, int]:
    """``getScoreWeights``: the Score point's entries first, then MultiPoint's."""
    weights: dict[str, int] = {}
    for plugin in (*plugins["Score"].enabled, *plugins[MULTI_POINT].enabled):
        if plugin.name not in registry.specs or not registry.implements(plugin.name, "Score"):
            continue
        if plugin.name not in weights:
            weights[plugin.name] = plugin.weight or 1
    return weights


def expand_plugins(plugins: Plugins, registry: Registry, scheduler_name: str,
                   profile_path: str) -> dict[str, tuple[PluginRef, ...]]:
    """The final plugin list at every extension point, with Score weights."""
    where = _Where(profile_path)
    lists = {point: _update_plugin_list(point, plugins, registry, where)
             for point in FRAMEWORK_ORDER}
    if plugins[MULTI_POINT].enabled:
        for point in FRAMEWORK_ORDER:
            lists[point] = _expand_multi_point(point, lists[point], plugins, registry, where)
    lists = {point: [n for n in names if registry.active(n, point)]
             for point, names in lists.items()}
    plugins_path = child(profile_path, "plugins")
    if len(lists["QueueSort"]) != 1:
        raise FrameworkError(invalid(
            child(plugins_path, "queueSort"), len(lists["QueueSort"]),
            f"only one queue sort plugin required for profile with scheduler name "
            f'"{scheduler_name}", but got {len(lists["QueueSort"])}'))
    if not lists["Bind"]:
        detail = ("at least one bind plugin is needed for profile with scheduler name "
                  f'"{scheduler_name}"')
        raise FrameworkError(required(child(plugins_path, "bind"), detail))
    weights = score_weights(plugins, registry)
    return {point: tuple(PluginRef(n, weights[n] if point == "Score" else 0)
                         for n in lists[point])
            for point in EXTENSION_POINTS}


def needed_plugins(plugins: Plugins) -> list[str]:
    """``pluginsNeeded``: every plugin named at a point or in MultiPoint, first-seen order."""
    seen: dict[str, None] = {}
    for plugin_set in plugins.values():
        for plugin in plugin_set.enabled:
            seen.setdefault(plugin.name)
    return list(seen)
