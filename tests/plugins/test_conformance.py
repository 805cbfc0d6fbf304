"""Upstream kube-scheduler's own plugin test tables, run against kaudit's plugins at every
release kaudit mirrors.

The cases live in ``tests/data/conformance/cases/*.json``: transcriptions of the unit tests in
``pkg/scheduler/framework/plugins/...`` (origin, format and the corrections in that folder's
README). ``<table>.json`` was transcribed for v1.34; ``<table>@v1.N.json`` holds what the table
of release v1.N changed: a case of the same name replaces the earlier one from that release on,
a new name adds a case, and ``removed`` names the cases that release dropped. Each case runs at
every release in :data:`kaudit.versions.SUPPORTED` it applies to, with the plugin built from
that release's feature gates, and its test id starts with the release. Each case builds a
cluster, runs one plugin's PreFilter/Filter or PreScore/Score/NormalizeScore, and compares the
codes, reasons and scores with upstream's expectations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.config import FeatureGates
from kaudit.config.load import REFUSED_GATES
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Code
from kaudit.model.pod import parse_pod
from kaudit.scheduler.registry import in_tree_plugins
from kaudit.versions import KubernetesVersion
from tests.conftest import DATA

CASES_DIR = DATA / "conformance" / "cases"
#: The release a table's file without ``@v1.N`` was transcribed for.
BASE_RELEASE = "v1.34"

#: Cases where kaudit differs from upstream, run as strict xfails, with the upstream evidence,
#: by test id (``<release>/<file>[<index>]:<name>``).
KNOWN_DIFFERENCES: dict[str, str] = {}


def _minor(name: str) -> tuple[int, int]:
    major, minor = name.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def _tables() -> dict[str, list[tuple[tuple[int, int], Path]]]:
    """Each table's files (the v1.34 transcription, then one per later release), oldest
    first."""
    tables: dict[str, list[tuple[tuple[int, int], Path]]] = {}
    for path in sorted(CASES_DIR.glob("*.json")):
        table, _, release = path.stem.partition("@")
        tables.setdefault(table, []).append((_minor(release or BASE_RELEASE), path))
    for files in tables.values():
        files.sort()
        assert files[0][0] == _minor(BASE_RELEASE), files
        assert len({minor for minor, _ in files}) == len(files), files
    return tables


def _cases_at(files: list[tuple[tuple[int, int], Path]],
              version: KubernetesVersion) -> list[tuple[str, dict[str, Any]]]:
    """The cases of one table that apply at ``version``, each with its origin (file stem and
    index): the earliest transcription with every later one up to ``version`` laid over it."""
    cases: list[tuple[str, dict[str, Any]]] = []
    for minor, path in files:
        if minor > version.release[:2]:
            break
        data = json.loads(path.read_text())
        for name in [*data.get("removed", ()), *(c["name"] for c in data["cases"])]:
            assert sum(c["name"] == name for _, c in cases) <= 1, f"{path.name}: {name}: ambiguous"
        for name in data.get("removed", ()):
            assert any(c["name"] == name for _, c in cases), f"{path.name}: no case {name}"
            cases = [(origin, c) for origin, c in cases if c["name"] != name]
        earlier = {c["name"]: i for i, (_, c) in enumerate(cases)}
        for index, case in enumerate(data["cases"]):
            entry = (f"{path.stem}[{index}]", case)
            if case["name"] in earlier:
                cases[earlier[case["name"]]] = entry
            else:
                cases.append(entry)
    return cases


def _gates(case: dict[str, Any], version: KubernetesVersion) -> tuple[dict[str, bool], str]:
    """The gate overrides a case needs at ``version``, or why it cannot run there."""
    overrides: dict[str, bool] = {}
    for name, on in (case.get("feature_gates") or {}).items():
        spec = version.gates.get(name)
        if spec is None:
            fixed = version.removed_gates.get(name)
            if fixed is not None and fixed != on:
                return {}, f"{name} is removed at {version.name}, fixed to {fixed}"
            if on and fixed is None:
                return {}, f"needs {name}, a gate {version.name} does not have"
            continue  # a gate not there yet is off; a removed one is fixed at the case's value
        if spec.locked:
            # Locked gates (NodeInclusionPolicyInPodTopologySpread from v1.33) cannot be set;
            # the podtopologyspread files' notes: the outcome is the same with the gate locked.
            continue
        refused = REFUSED_GATES.get(name)
        if on and refused is not None and (refused[1] is None
                                           or version.release[:2] < refused[1]):
            return {}, f"needs {name}, which kaudit refuses at {version.name} ({refused[0]})"
        overrides[name] = on
    return overrides, ""


def _load() -> list[Any]:
    params = []
    for files in _tables().values():
        for version in versions.SUPPORTED:
            for origin, case in _cases_at(files, version):
                if "args_error" in case["expect"]:
                    continue  # validated by tests/config
                case_id = f"{version.name}/{origin}:{case['name']}"
                overrides, skip = _gates(case, version)
                marks = []
                if skip:
                    marks.append(pytest.mark.skip(reason=skip))
                if case_id in KNOWN_DIFFERENCES:
                    marks.append(pytest.mark.xfail(reason=KNOWN_DIFFERENCES[case_id],
                                                   strict=True))
                params.append(pytest.param(case, FeatureGates(overrides, version),
                                           id=case_id, marks=marks))
    return params


def _cluster(case: dict[str, Any]) -> ClusterState:
    cluster = ClusterState()
    for obj in case.get("objects") or []:
        cluster.set_object(obj["kind"], obj)
    for node in case["nodes"]:
        cluster.add_node(node)
    for pod in case.get("pods") or []:
        cluster.add_pod(parse_pod(pod))
    return cluster


@pytest.mark.parametrize(("case", "gates"), _load())
def test_upstream_case(case: dict[str, Any], gates: FeatureGates) -> None:
    registry = in_tree_plugins()
    plugin_class = registry.get(case["plugin"])
    if plugin_class is None:
        pytest.skip(f"plugin {case['plugin']} is not implemented yet")
    plugin = plugin_class(case.get("args") or {}, Handle(feature_gates=gates))
    cluster = _cluster(case)
    pod = parse_pod(case["pod"])
    expect = case["expect"]
    state = CycleState()

    if "filter" in expect or "prefilter" in expect:
        prefilter_code = Code.SUCCESS
        if not isinstance(plugin, PreFilterPlugin) and "prefilter" in expect:
            # No PreFilter is a PreFilter that succeeds for all nodes.
            assert expect["prefilter"]["code"] == "Success"
            assert "node_names" not in expect["prefilter"], "no PreFilter to restrict the nodes"
        if isinstance(plugin, PreFilterPlugin):
            result, status = plugin.pre_filter(state, pod, cluster)
            prefilter_code = status.code
            if "prefilter" in expect:
                want = expect["prefilter"]
                assert status.code.label == want["code"]
                if "reasons" in want:
                    assert list(status.reasons) == want["reasons"]
                if "node_names" in want:
                    assert result is not None and result.node_names is not None
                    assert sorted(result.node_names) == sorted(want["node_names"])
                elif status.ok:
                    assert result is None or result.all_nodes
        if prefilter_code not in (Code.SUCCESS,):
            return
        assert isinstance(plugin, FilterPlugin)
        for node_name, want in (expect.get("filter") or {}).items():
            slot = cluster.slot_of[node_name]
            verdicts = plugin.filter(state, pod, cluster, np.asarray([slot]))
            status = verdicts.status(0)
            assert status.code.label == want["code"], node_name
            if "reasons" in want and case["plugin"] != "PodTopologySpread":
                assert list(status.reasons) == want["reasons"], node_name

    if "score" in expect or "prescore" in expect:
        assert isinstance(plugin, ScorePlugin)
        names = case.get("feasible_nodes") or [n["metadata"]["name"] for n in case["nodes"]]
        slots = np.asarray([cluster.slot_of[n] for n in names], dtype=np.int64)
        if isinstance(plugin, PreFilterPlugin) and case["plugin"] in ("PodTopologySpread",):
            plugin.pre_filter(state, pod, cluster)
        if isinstance(plugin, PreScorePlugin):
            status = plugin.pre_score(state, pod, cluster, slots)
            if "prescore" in expect:
                assert status.code.label == expect["prescore"]["code"]
                if expect["prescore"].get("message_contains"):
                    assert expect["prescore"]["message_contains"] in status.message
            if status.code == Code.SKIP:
                assert "score" not in expect or not expect["score"]
                return
            if "prescore" in expect and not status.ok:
                return
            assert status.ok, status
        scores = plugin.score(state, pod, cluster, slots)
        normalized = plugin.normalize(state, pod, slots, scores)
        final = scores if normalized is None else normalized
        got = {name: int(score) for name, score in zip(names, final, strict=True)}
        want = {name: expect["score"][name] for name in names if name in expect["score"]}
        assert {n: got[n] for n in want} == want
