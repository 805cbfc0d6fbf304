"""Upstream kube-scheduler's own plugin test tables, run against kaudit's plugins.

The cases live in ``tests/data/conformance/cases/*.json``: transcriptions of the unit tests in
``pkg/scheduler/framework/plugins/...`` (origin, format and the corrections made for v1.34 in
that folder's README). Each case builds a cluster, runs one plugin's PreFilter/Filter or
PreScore/Score/NormalizeScore, and compares the codes, reasons and scores with upstream's
expectations.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from kaudit.cluster.state import ClusterState
from kaudit.config import parse_feature_gates
from kaudit.config.feature_gates import GATE_SPECS
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
from tests.conftest import DATA

CASES_DIR = DATA / "conformance" / "cases"
#: Alpha gates of releases after v1.34: cases that need them do not apply to kaudit.
NOT_IN_V1_34 = {"TaintTolerationComparisonOperators"}

#: Cases kaudit deliberately reports as failing-as-expected, with the upstream evidence.
KNOWN_DIFFERENCES: dict[str, str] = {}


def _load() -> list[Any]:
    params = []
    for path in sorted(CASES_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        for index, case in enumerate(data["cases"]):
            case_id = f"{path.stem}[{index}]:{case['name']}"
            marks = []
            gates = case.get("feature_gates") or {}
            if NOT_IN_V1_34 & {g for g, on in gates.items() if on}:
                marks.append(pytest.mark.skip(reason="needs an alpha gate of a later release"))
            if case_id in KNOWN_DIFFERENCES:
                marks.append(pytest.mark.xfail(reason=KNOWN_DIFFERENCES[case_id], strict=True))
            if "args_error" in case["expect"]:
                continue  # validated by tests/config
            params.append(pytest.param(case, id=case_id, marks=marks))
    return params


def _handle(case: dict[str, Any]) -> Handle:
    # Gates locked in v1.34 (NodeInclusionPolicyInPodTopologySpread) cannot be turned off;
    # the conformance README notes those cases expect the same outcome with the gate on.
    gates = ",".join(f"{k}={'true' if v else 'false'}"
                     for k, v in (case.get("feature_gates") or {}).items()
                     if k not in NOT_IN_V1_34 and not GATE_SPECS[k].locked)
    return Handle(feature_gates=parse_feature_gates(gates))


def _cluster(case: dict[str, Any]) -> ClusterState:
    cluster = ClusterState()
    for obj in case.get("objects") or []:
        cluster.set_object(obj["kind"], obj)
    for node in case["nodes"]:
        cluster.add_node(node)
    for pod in case.get("pods") or []:
        cluster.add_pod(parse_pod(pod))
    return cluster


@pytest.mark.parametrize("case", _load())
def test_upstream_case(case: dict[str, Any]) -> None:
    registry = in_tree_plugins()
    plugin_class = registry.get(case["plugin"])
    if plugin_class is None:
        pytest.skip(f"plugin {case['plugin']} is not implemented yet")
    plugin = plugin_class(case.get("args") or {}, _handle(case))
    cluster = _cluster(case)
    pod = parse_pod(case["pod"])
    expect = case["expect"]
    state = CycleState()

    if "filter" in expect or "prefilter" in expect:
        prefilter_code = Code.SUCCESS
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
