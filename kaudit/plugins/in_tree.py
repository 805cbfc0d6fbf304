"""The in-tree registry: every plugin kaudit implements, by name.

Each module of :mod:`kaudit.plugins` holds one plugin class; they are collected here, so adding
a plugin means adding its module.
"""

from __future__ import annotations

import importlib
import pkgutil

import kaudit.plugins
from kaudit.framework.plugin import Plugin

_NOT_PLUGINS = {"in_tree", "names", "helper"}


def _collect() -> dict[str, type[Plugin]]:
    registry: dict[str, type[Plugin]] = {}
    for module_info in pkgutil.iter_modules(kaudit.plugins.__path__):
        if module_info.name in _NOT_PLUGINS or module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"kaudit.plugins.{module_info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Plugin)
                    and value.__module__ == module.__name__ and value.name):
                registry[value.name] = value
    return dict(sorted(registry.items()))


IN_TREE: dict[str, type[Plugin]] = _collect()
