"""Equally important victims, judged by upstream's own cycle: a listed state's pod order.

Generated scenarios give every pod its own start time, so upstream never has to break a
tie between potential victims there. Real clusters are full of such ties (start times have
one-second resolution): upstream reprieves equal pods in its ``NodeInfo.Pods`` order, which,
for a scheduler that has just listed the cluster, is the API server's key order
(namespace/name), whatever order the objects were given in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kaudit.tracegen.builders import make_node, make_pod
from tests.oracle.compare import compare_cycle, differences, whatif_report
from tests.oracle.conftest import run_cycles

START = "2026-01-05T08:00:00Z"
EARLIER = "2026-01-05T07:00:00Z"


def _running(name: str, node: str, cpu: str, start: str = START) -> dict[str, Any]:
    obj = make_pod(name).node(node).req(cpu=cpu, memory="1Gi").priority(0).obj()
    obj["status"] = {"phase": "Running", "startTime": start}
    return obj


def _scenario() -> dict[str, Any]:
    """n0 holds z (2 cpu), y and x (1 cpu each), listed in that order, all equal; n1 holds
    w (2 cpu), started earlier. The preemptor needs 2 cpu. Reprieved in name order, n0
    loses z alone and wins over n1 (its victim started later); reprieved in the listed
    order, n0 would lose y and x, and n1 win with one victim."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "default", "uid": "ns-default",
        "labels": {"kubernetes.io/metadata.name": "default"}}}
    nodes = [make_node(name).capacity(cpu="4", memory="16Gi", pods="10").obj()
             for name in ("n0", "n1")]
    pods = [_running("z", "n0", "2"), _running("y", "n0", "1"), _running("x", "n0", "1"),
            _running("w", "n1", "2", EARLIER), _running("v", "n1", "2")]
    pods[-1]["spec"]["priority"] = 1000
    preemptor = make_pod("high").req(cpu="2", memory="1Gi").priority(100).obj()
    return {"objects": [namespace, *nodes, *pods], "pod": preemptor, "config": None}


def test_equal_victims_are_reprieved_in_the_listed_state_s_key_order(
        oracle: dict[str, Path]) -> None:
    scenario = _scenario()
    answer = run_cycles(oracle["cycle"], [{"id": "ties", **scenario}])["ties"]
    assert "error" not in answer, answer.get("error")
    expect = answer["expect"]
    assert expect["preemption"]["nominatedNode"] == "n0"
    assert expect["preemption"]["victims"] == ["default/z"]
    diff = compare_cycle(expect, whatif_report(scenario))
    assert not any(diff.values()), differences(diff)
