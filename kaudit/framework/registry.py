"""The plugin registry: name → plugin class, in-tree plugins plus out-of-tree ones.

Out-of-tree plugins come from the ``kaudit.plugins`` entry-point group or from
``--plugin module:Class`` on the command line (``frameworkruntime.Registry`` and
``app.WithPlugin`` upstream). A plugin class is built as ``cls(args, handle)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points

from kaudit.errors import InputError
from kaudit.framework.plugin import Plugin

ENTRY_POINT_GROUP = "kaudit.plugins"


def in_tree_plugins() -> dict[str, type[Plugin]]:
    from kaudit.plugins.in_tree import IN_TREE

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


def build_registry(extra: Iterable[str] = (), *, entry_point_plugins: bool = True
                   ) -> dict[str, type[Plugin]]:
    """In-tree plugins, then entry-point plugins, then ``extra`` references."""
    registry = in_tree_plugins()
    if entry_point_plugins:
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            plugin = entry.load()
            registry[getattr(plugin, "name", "") or entry.name] = plugin
    for reference in extra:
        plugin = load_plugin_class(reference)
        registry[plugin.name] = plugin
    return registry
