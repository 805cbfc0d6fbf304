"""Equally important victims, judged by upstream's own cycle: a listed state's pod order.

Generated scenarios give every pod its own start time, so upstream never has to break a
tie between potential victims there. Real clusters are full of such ties (start times have
one-second resolution): upstream reprieves equal pods in its ``NodeInfo.Pods`` order, which,
for a scheduler that has just listed the cluster, is the API server's key order
(namespace/name), whatever order the objects were given in.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kaudit.framework.runtime import Framework
from kaudit.tracegen.builders import make_node, make_pod
from tests.oracle.compare import compare_cycle, differences, whatif_report
from tests.oracle.conftest import run_cycles

START = "2026-01-05T08:00:00Z"
EARLIER = "2026-01-05T07:00:00Z"


def _running(name: str, node: str, cpu: str, start: str = START,
             memory: str = "1Gi") -> dict[str, Any]:
    obj = make_pod(name).node(node).req(cpu=cpu, memory=memory).priority(0).obj()
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


def _crowded_scenario(seed: int, unstarted: bool = False) -> dict[str, Any]:
    """One node full of 13 to 20 potential victims of two start times, listed in name order:
    past 12 of them ``sort.Slice`` is a quicksort that reorders equals. Odd seeds add a
    PodDisruptionBudget over some of them (upstream then sorts the victims again, violators
    reprieved first); every third seed's preemptor needs most of the node. ``unstarted``:
    3 to 20 pods, some bound but without a start time yet (upstream reads each as starting
    at a fresh ``time.Now()``, so two such pods of equal priority each come first)."""
    rng = random.Random(seed)
    count = rng.randint(3, 20) if unstarted else rng.randint(13, 20)
    sizes = [rng.choice([250, 500, 1000]) for _ in range(count)]
    starts = [rng.choice([EARLIER, START, None] if unstarted else [EARLIER, START])
              for _ in range(count)]
    cpu = -(-sum(sizes) // 1000)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "default", "uid": "ns-default",
        "labels": {"kubernetes.io/metadata.name": "default"}}}
    node = make_node("n0").capacity(cpu=str(cpu), memory="64Gi", pods="110").obj()
    pods = [_running(f"p{i:02d}", "n0", f"{size}m", start or START, memory="10Mi")
            for i, (size, start) in enumerate(zip(sizes, starts, strict=True))]
    for obj, start in zip(pods, starts, strict=True):
        if start is None:
            del obj["status"]["startTime"]
    objects = [namespace, node, *pods]
    if seed % 2:
        for obj in pods:
            obj["metadata"]["labels"] = {"app": rng.choice(["guarded", "free"])}
        objects.append({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard", "namespace": "default", "uid": "pdb-guard"},
            "spec": {"selector": {"matchLabels": {"app": "guarded"}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 9, "desiredHealthy": 8,
                       "expectedPods": 9}})
    wanted = f"{cpu - 1}" if seed % 3 == 0 else "2"
    preemptor = make_pod("high").req(cpu=wanted, memory="10Mi").priority(100).obj()
    return {"objects": objects, "pod": preemptor, "config": None}


@pytest.mark.parametrize("node_by_node", [False, True], ids=["block", "node-by-node"])
def test_past_twelve_potential_victims_equals_are_reprieved_as_go_s_sort_leaves_them(
        oracle: dict[str, Path], node_by_node: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if node_by_node:
        monkeypatch.setattr(Framework, "judges_nodes_independently", lambda self, state: False)
    _agree_with_upstream(oracle, {f"crowded-{seed}": _crowded_scenario(seed)
                                  for seed in range(16)})


def _agree_with_upstream(oracle: dict[str, Path], scenarios: dict[str, Any]) -> None:
    """Upstream's cycle and kaudit's decide every scenario alike, field by field."""
    answers = run_cycles(oracle["cycle"], [{"id": key, **scen}
                                           for key, scen in scenarios.items()])
    for key, scenario in scenarios.items():
        assert "error" not in answers[key], answers[key].get("error")
        diff = compare_cycle(answers[key]["expect"], whatif_report(scenario))
        assert not any(diff.values()), f"{key}:\n{differences(diff)}"


@pytest.mark.parametrize("node_by_node", [False, True], ids=["block", "node-by-node"])
def test_potential_victims_without_a_start_time_are_reprieved_as_upstream_s_clock_orders_them(
        oracle: dict[str, Path], node_by_node: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if node_by_node:
        monkeypatch.setattr(Framework, "judges_nodes_independently", lambda self, state: False)
    _agree_with_upstream(oracle, {f"unstarted-{seed}": _crowded_scenario(seed, unstarted=True)
                                  for seed in range(24)})


def test_candidates_whose_victims_have_no_start_time_are_tied(
        oracle: dict[str, Path]) -> None:
    """Upstream's last criterion reads each such victim's start as ``time.Now()`` when it
    visits its node, in the map's random order: either node may win."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "default", "uid": "ns-default",
        "labels": {"kubernetes.io/metadata.name": "default"}}}
    nodes = [make_node(name).capacity(cpu="2", memory="16Gi", pods="10").obj()
             for name in ("n0", "n1")]
    pods = [_running(name, node, "2") for name, node in (("a", "n0"), ("b", "n1"))]
    for obj in pods:
        del obj["status"]["startTime"]
    preemptor = make_pod("high").req(cpu="2", memory="1Gi").priority(100).obj()
    scenario = {"objects": [namespace, *nodes, *pods], "pod": preemptor, "config": None}
    assert sorted(whatif_report(scenario)["preemption"]["tiedNodes"]) == ["n0", "n1"]
    answers = run_cycles(oracle["cycle"], [{"id": str(n), **scenario} for n in range(20)])
    assert {answers[str(n)]["expect"]["nominatedNode"] for n in range(20)} == {"n0", "n1"}
