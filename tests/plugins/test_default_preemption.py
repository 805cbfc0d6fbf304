"""DefaultPreemption's coin flips: candidates tied after every criterion of
``pickOneNodeForPreemption``, and equally ranked victims that upstream's unstable sort orders
at random (``MoreImportantPod``: priority, then start time)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace

STARTED = "2026-01-05T08:00:00Z"


def started(builder, when: str = STARTED):  # type: ignore[no-untyped-def]
    obj = builder.obj()
    obj["status"] = {"phase": "Running", "startTime": when}
    return obj


def preempt(*objects: dict, seed: int = 0):  # type: ignore[no-untyped-def]
    config, registry = load()
    cluster = ClusterState()
    for obj in objects:
        if obj["kind"] == "Node":
            cluster.add_node(obj)
        else:
            cluster.add_pod(pod_info(cluster, obj))
    pod = pod_info(cluster, make_pod("high").req(cpu="1").priority(1000).obj())
    attempt = build_scheduler(config, registry, seed=seed).schedule(cluster, pod)
    assert attempt.post_filter_result is not None
    return attempt.post_filter_result.details


def node(name: str, cpu: str = "2") -> dict:
    return make_node(name).capacity(cpu=cpu, memory="4Gi").obj()


def test_candidates_tied_after_every_criterion_are_recorded() -> None:
    details = preempt(node("n1", "1"), node("n2", "1"),
                      started(make_pod("a").node("n1").req(cpu="1").priority(10)),
                      started(make_pod("b").node("n2").req(cpu="1").priority(10)))
    assert sorted(c.node for c in details.tied) == ["n1", "n2"]
    assert details.chosen in details.tied
    assert details.tie_exposed == {"default/a", "default/b"}
    assert details.as_json()["tiedNodes"] == [c.node for c in details.tied]


def test_a_later_victim_start_time_breaks_the_node_tie() -> None:
    details = preempt(node("n1", "1"), node("n2", "1"),
                      started(make_pod("a").node("n1").req(cpu="1").priority(10)),
                      started(make_pod("b").node("n2").req(cpu="1").priority(10),
                              "2026-01-05T08:30:00Z"))
    # GetEarliestPodStartTime: the node whose most important victim started latest wins.
    assert [c.node for c in details.tied] == ["n2"] and not details.tie_exposed


def test_equally_ranked_victims_with_different_fates_are_a_tie() -> None:
    details = preempt(node("n1"),
                      started(make_pod("a").node("n1").req(cpu="1").priority(10)),
                      started(make_pod("b").node("n1").req(cpu="1").priority(10)))
    assert len(details.chosen.victims) == 1
    assert details.chosen.victim_ties == (("default/a", "default/b"),)
    assert details.tie_exposed == {"default/a", "default/b"}
    assert details.as_json()["victimTies"] == [["default/a", "default/b"]]


def test_ranked_victims_are_no_tie() -> None:
    details = preempt(node("n1"),
                      started(make_pod("old").node("n1").req(cpu="1").priority(10)),
                      started(make_pod("new").node("n1").req(cpu="1").priority(10),
                              "2026-01-05T08:30:00Z"))
    # The earlier-started pod is more important: it is reprieved first and stays.
    assert [v.name for v in details.chosen.victims] == ["new"]
    assert details.chosen.victim_ties == () and not details.tie_exposed


def test_diff_reports_a_tied_preemption_as_a_tie_flip(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    trace = write_trace(
        tmp_path / "tied.jsonl",
        (0, "ADDED", node("n1", "1")), (0, "ADDED", node("n2", "1")),
        (1, "ADDED", started(make_pod("a").node("n1").req(cpu="1").priority(10))),
        (1, "ADDED", started(make_pod("b").node("n2").req(cpu="1").priority(10))),
        (2, "ADDED", make_pod("high").req(cpu="1").priority(1000).obj()))
    assert run_kaudit("ingest", str(trace), "--name", "tied").exit_code == 0
    placed: dict[str, str] = {}
    for seed in range(12):
        run = json.loads(run_kaudit("replay", "tied", "--seed", str(seed), "--json").output)
        story = json.loads(run_kaudit("explain", run["name"], "default/high", "--json").output)
        placed.setdefault(story["boundNode"], run["name"])
        if len(placed) == 2:
            break
    assert set(placed) == {"n1", "n2"}, "the random offset never picked the other node"
    diff = json.loads(run_kaudit("diff", placed["n1"], placed["n2"], "--json").output)
    assert diff["counts"]["moved"] == 0
    assert diff["counts"]["preemptedOnlyInA"] == diff["counts"]["preemptedOnlyInB"] == 0
    changes = {c["pod"]: c["change"] for c in diff["changes"]}
    assert changes == {"default/high": "tie-flip", "default/a": "tie-flip",
                       "default/b": "tie-flip"}


def test_potential_nodes_are_the_unschedulable_ones_in_node_order() -> None:
    """``nodesWherePreemptionMightHelp`` over random diagnoses: nodes in several zones, some
    removed, statuses Unschedulable, UnschedulableAndUnresolvable or absent, and an absent
    status of either code."""
    import random

    from kaudit.framework.diagnosis import Diagnosis
    from kaudit.framework.status import Code, Status
    from kaudit.plugins.default_preemption import DefaultPreemption
    for seed in range(30):
        rng = random.Random(seed)
        cluster = ClusterState()
        names = [f"n{i}" for i in range(rng.randint(1, 40))]
        for name in names:
            cluster.add_node(make_node(name).label("topology.kubernetes.io/zone",
                                                   rng.choice("abc")).obj())
        for name in rng.sample(names, len(names) // 5):
            cluster.remove_node(name)
        codes = (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        statuses = {name: Status.of(rng.choice(codes), "why") for name in names
                    if rng.random() < 0.7}
        diagnosis = Diagnosis(node_statuses=dict(rng.sample(list(statuses.items()),
                                                            len(statuses))),
                              absent_status=Status.of(rng.choice(codes), "absent"))
        expected = [slot for slot in cluster.order
                    if diagnosis.status_of(cluster.node(slot).name).code
                    == Code.UNSCHEDULABLE]
        assert DefaultPreemption._potential_nodes(cluster, diagnosis) == expected
