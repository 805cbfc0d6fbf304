"""Merging custom plugins into the defaults, and MultiPoint expansion.

The two tables are transcribed from upstream: ``TestMergePlugins`` in
``pkg/scheduler/apis/config/v1/default_plugins_test.go`` and
``TestNewFrameworkMultiPointExpansion`` in
``pkg/scheduler/framework/runtime/framework_test.go``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kaudit.config import FeatureGates, PluginRef, PluginSpec
from kaudit.config.default_plugins import merge_plugins
from kaudit.config.plugins import Registry
from kaudit.config.profiles import expand_plugins
from kaudit.config.v1types import PLUGIN_SETS, Plugin, Plugins, PluginSet
from kaudit.errors import ConfigError

Item = str | tuple[str, int]


def plugin_set(enabled: Sequence[Item] = (), disabled: Sequence[str] = ()) -> PluginSet:
    def plugin(item: Item) -> Plugin:
        return Plugin(item) if isinstance(item, str) else Plugin(item[0], item[1])

    return PluginSet(tuple(plugin(i) for i in enabled), tuple(Plugin(n) for n in disabled))


def plugins(**sets: PluginSet) -> Plugins:
    return {name: sets.get(name, PluginSet()) for name in PLUGIN_SETS}


MERGE_CASES: list[tuple[str, Plugins | None, Plugins, Plugins]] = [
    ("AppendCustomPlugin",
     plugins(Filter=plugin_set(["CustomPlugin"])),
     plugins(Filter=plugin_set(["DefaultPlugin1", "DefaultPlugin2"])),
     plugins(Filter=plugin_set(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"]))),
    ("InsertAfterDefaultPlugins2",
     plugins(Filter=plugin_set(["CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"])),
     plugins(Filter=plugin_set(["DefaultPlugin1", "DefaultPlugin2"])),
     plugins(Filter=plugin_set(["DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"],
                               ["DefaultPlugin2"]))),
    ("InsertBeforeAllPlugins",
     plugins(Filter=plugin_set(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"])),
     plugins(Filter=plugin_set(["DefaultPlugin1", "DefaultPlugin2"])),
     plugins(Filter=plugin_set(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"]))),
    ("ReorderDefaultPlugins",
     plugins(Filter=plugin_set(["DefaultPlugin2", "DefaultPlugin1"], ["*"])),
     plugins(Filter=plugin_set(["DefaultPlugin1", "DefaultPlugin2"])),
     plugins(Filter=plugin_set(["DefaultPlugin2", "DefaultPlugin1"], ["*"]))),
    ("ApplyNilCustomPlugin",
     None,
     plugins(Filter=plugin_set(["DefaultPlugin1", "DefaultPlugin2"])),
     plugins(Filter=plugin_set(["DefaultPlugin1", "DefaultPlugin2"]))),
    ("CustomPluginOverrideDefaultPlugin",
     plugins(Filter=plugin_set([("Plugin1", 2), ("Plugin3", 3)])),
     plugins(Filter=plugin_set(["Plugin1", "Plugin2", "Plugin3"])),
     plugins(Filter=plugin_set([("Plugin1", 2), "Plugin2", ("Plugin3", 3)]))),
    ("OrderPreserveAfterOverride",
     plugins(Filter=plugin_set([("Plugin2", 2), ("Plugin1", 1)])),
     plugins(Filter=plugin_set(["Plugin1", "Plugin2", "Plugin3"])),
     plugins(Filter=plugin_set([("Plugin1", 1), ("Plugin2", 2), "Plugin3"]))),
    ("RepeatedCustomPlugin",
     plugins(Filter=plugin_set(["Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)])),
     plugins(Filter=plugin_set(["Plugin1", "Plugin2", "Plugin3"])),
     plugins(Filter=plugin_set(["Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)]))),
    ("Append custom MultiPoint plugin",
     plugins(MultiPoint=plugin_set(["CustomPlugin"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin1", "DefaultPlugin2"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"]))),
    ("Append disabled Multipoint plugins",
     plugins(MultiPoint=plugin_set(["CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]),
             Score=plugin_set([], ["CustomPlugin2"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin1", "DefaultPlugin2"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin1", "CustomPlugin", "CustomPlugin2"],
                                   ["DefaultPlugin2"]),
             Score=plugin_set([], ["CustomPlugin2"]))),
    ("override default MultiPoint plugins with custom value",
     plugins(MultiPoint=plugin_set([("DefaultPlugin", 5)])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin"])),
     plugins(MultiPoint=plugin_set([("DefaultPlugin", 5)]))),
    ("disabled MultiPoint plugin in default set",
     plugins(MultiPoint=plugin_set(["CustomPlugin"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin"], ["DefaultPlugin2"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin", "CustomPlugin"], ["DefaultPlugin2"]))),
    ("disabled MultiPoint plugin in default set for specific extension point",
     plugins(MultiPoint=plugin_set(["CustomPlugin"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin"]), Score=plugin_set([], ["DefaultPlugin2"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin", "CustomPlugin"]),
             Score=plugin_set([], ["DefaultPlugin2"]))),
    ("multipoint with only disabled gets merged",
     plugins(MultiPoint=plugin_set([], ["DefaultPlugin"])),
     plugins(MultiPoint=plugin_set(["DefaultPlugin"])),
     plugins(MultiPoint=plugin_set([], ["DefaultPlugin"]))),
]


@pytest.mark.parametrize(("custom", "default", "expected"),
                         [case[1:] for case in MERGE_CASES], ids=[c[0] for c in MERGE_CASES])
def test_merge_plugins(custom: Plugins | None, default: Plugins, expected: Plugins) -> None:
    assert merge_plugins(default, custom) == expected


# The test registry of framework_test.go: which test plugin implements which points.
ALL_BUT_PRE_ENQUEUE = frozenset({"QueueSort", "PreFilter", "Filter", "PostFilter", "PreScore",
                                 "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"})
TEST_REGISTRY = Registry(
    specs={name: PluginSpec(name, points) for name, points in {
        "TestPlugin": ALL_BUT_PRE_ENQUEUE,
        "ScorePlugin1": frozenset({"PreScore", "Score"}),
        "ScorePlugin2": frozenset({"PreScore", "Score"}),
        "ScoreWithNormalizePlugin1": frozenset({"Score"}),
        "QueueSortPlugin": frozenset({"QueueSort"}),
        "BindPlugin": frozenset({"Bind"}),
    }.items()},
    inert={}, gates=FeatureGates())
T, S1, S2, SN = "TestPlugin", "ScorePlugin1", "ScorePlugin2", "ScoreWithNormalizePlugin1"


def everywhere(name: str, *, pre_score: list[str], score: list[Item],
               skip: tuple[str, ...] = ()) -> dict[str, list[Item]]:
    lists: dict[str, list[Item]] = {p: [name] for p in ALL_BUT_PRE_ENQUEUE if p not in skip}
    lists["PreScore"], lists["Score"] = list(pre_score), list(score)
    return {p: v for p, v in lists.items() if v}


EXPANSION_CASES: list[tuple[str, Plugins, dict[str, list[Item]]]] = [
    ("plugin expansion",
     plugins(MultiPoint=plugin_set([(T, 5)])),
     everywhere(T, pre_score=[T], score=[(T, 5)])),
    ("disable MultiPoint plugin at some extension points",
     plugins(MultiPoint=plugin_set([T]), PreScore=plugin_set([], [T]),
             Score=plugin_set([], [T])),
     everywhere(T, pre_score=[], score=[])),
    ("Multiple MultiPoint plugins",
     plugins(MultiPoint=plugin_set([T, S1])),
     everywhere(T, pre_score=[T, S1], score=[(T, 1), (S1, 1)])),
    ("disable MultiPoint extension",
     plugins(MultiPoint=plugin_set([T, S1]), PreScore=plugin_set([], ["*"])),
     everywhere(T, pre_score=[], score=[(T, 1), (S1, 1)])),
    ("Reorder MultiPoint plugins (specified extension takes precedence)",
     plugins(MultiPoint=plugin_set([SN, T, S1]), Score=plugin_set([S1, T])),
     everywhere(T, pre_score=[T, S1], score=[(S1, 1), (T, 1), (SN, 1)])),
    ("Reorder MultiPoint plugins (specified extension only takes precedence when it exists "
     "in MultiPoint)",
     plugins(MultiPoint=plugin_set([T, S1]), Score=plugin_set([SN, S1, T])),
     everywhere(T, pre_score=[T, S1], score=[(S1, 1), (T, 1), (SN, 1)])),
    ("Override MultiPoint plugins weights",
     plugins(MultiPoint=plugin_set([T, S1]), Score=plugin_set([(S1, 5), (T, 3)])),
     everywhere(T, pre_score=[T, S1], score=[(S1, 5), (T, 3)])),
    ("disable and enable MultiPoint plugins with '*'",
     plugins(MultiPoint=plugin_set(["QueueSortPlugin", "BindPlugin", S1], ["*"])),
     {"QueueSort": ["QueueSortPlugin"], "PreScore": [S1], "Score": [(S1, 1)],
      "Bind": ["BindPlugin"]}),
    ("disable and enable MultiPoint plugin by name",
     plugins(MultiPoint=plugin_set(["BindPlugin", "QueueSortPlugin", S1], [S1])),
     {"QueueSort": ["QueueSortPlugin"], "PreScore": [S1], "Score": [(S1, 1)],
      "Bind": ["BindPlugin"]}),
    ("Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
     plugins(MultiPoint=plugin_set([T, S1]), Score=plugin_set([(S1, 5), (S2, 5), (T, 3)])),
     everywhere(T, pre_score=[T, S1], score=[(S1, 5), (T, 3), (S2, 5)])),
]


def refs(items: list[Item], point: str) -> tuple[PluginRef, ...]:
    """Expected refs; upstream's ListPlugins shows weights at Score only."""
    pairs = [(i, 0) if isinstance(i, str) else i for i in items]
    return tuple(PluginRef(name, weight if point == "Score" else 0) for name, weight in pairs)


@pytest.mark.parametrize(("config", "want"), [c[1:] for c in EXPANSION_CASES],
                         ids=[c[0] for c in EXPANSION_CASES])
def test_multi_point_expansion(config: Plugins, want: dict[str, Any]) -> None:
    got = expand_plugins(config, TEST_REGISTRY, "", "profiles[0]")
    assert {p: v for p, v in got.items() if v} == {p: refs(v, p) for p, v in want.items()}


def test_multi_point_double_registration_is_an_error() -> None:
    with pytest.raises(ConfigError, match='plugin "TestPlugin" already registered as '
                                          '"PreFilterPlugin"'):
        expand_plugins(plugins(MultiPoint=plugin_set([T, T])), TEST_REGISTRY, "", "p")
