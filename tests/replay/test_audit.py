"""The audit end to end (kaudit/replay/audit.py and audit_verdict.py): small recorded traces
whose every decision's class, scores and reasons are derived by hand from kube-scheduler
v1.34.2's rules.

The default profile's scores on these clusters (no taints unless a test adds one, no
affinities, spread constraints or images): TaintToleration 3 × 100 (no intolerable taint
anywhere: ``DefaultNormalizeScore`` reversed), NodeResourcesBalancedAllocation 100 (every pod
asks CPU and memory in the nodes' own ratio), NodeResourcesFit's LeastAllocated
``(allocatable - requested) * 100 / allocatable`` per resource, averaged over cpu and memory;
the other plugins score 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import Engine, select

from kaudit.eventlog.records import RecordKind
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.services.audit import audit_stored_trace
from kaudit.services.replay import ConfigChoice, resolve_config
from kaudit.store.models import Run, RunEvent
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import V1_34, write_trace
from tests.replay.test_audit_plan import Step, failed, failed_scheduling_event, preempted

GIB = 1024 ** 3


def least_allocated(requested_milli_cpu: int, cpu_milli: int, requested_gib: int,
                    memory_gib: int) -> int:
    """NodeResourcesFit's LeastAllocated score (``leastRequestedScore``, cpu and memory
    weighted 1 each), in Go's integer arithmetic."""
    cpu = (cpu_milli - requested_milli_cpu) * 100 // cpu_milli
    memory = (memory_gib - requested_gib) * GIB * 100 // (memory_gib * GIB)
    return (cpu + memory) // 2


def total(least: int) -> int:
    """The default profile's total on these clusters: TaintToleration 300, BalancedAllocation
    100, plus NodeResourcesFit."""
    return 300 + 100 + least


def audit_steps(engine: Engine, directory: Path, steps: list[Step], *, name: str = "rec",
                latency_s: float = 0.0, window_s: float | None = None,
                config: Path | None = None) -> dict[str, Any]:
    """Store ``steps`` as trace ``name`` and audit it as v1.34.2, whose scores the tests compute
    (with the default ``--window`` unless ``window_s`` is given); the audit's report."""
    path = write_trace(directory / f"{name}.jsonl", *steps)
    ingest_trace(engine, [TraceInput(path)], name=name)
    trace = get_trace(engine, name)
    resolved = resolve_config(trace, ConfigChoice(file=config, kubernetes_version=V1_34))
    window = {} if window_s is None else {"window_us": round(window_s * 1e6)}
    return audit_stored_trace(engine, trace, resolved, latency_us=round(latency_s * 1e6),
                              **window)


def audit_records(engine: Engine, run: str) -> dict[str, list[dict[str, Any]]]:
    """Every ``audit`` record of ``run`` by pod, in order."""
    with engine.connect() as connection:
        run_id = connection.execute(select(Run.id).where(Run.name == run)).scalar_one()
        rows = connection.execute(select(RunEvent.pod, RunEvent.data).where(
            RunEvent.run_id == run_id, RunEvent.kind == RecordKind.AUDIT.value)
            .order_by(RunEvent.seq)).all()
    records: dict[str, list[dict[str, Any]]] = {}
    for pod, data in rows:
        records.setdefault(pod or "", []).append(orjson.loads(data))
    return records


def one(records: dict[str, list[dict[str, Any]]], pod: str) -> dict[str, Any]:
    (record,) = records[f"default/{pod}"]
    return record


def bound(name: str, node: str, cpu: str, memory: str) -> dict[str, Any]:
    return make_pod(name).req(cpu=cpu, memory=memory).node(node).obj()


def bindings_steps() -> list[Step]:
    """``big`` (8 CPU, 16Gi) and ``small`` (2 CPU, 4Gi); pods bound one after another."""
    def pending(name: str, cpu: str, memory: str) -> dict[str, Any]:
        return make_pod(name).req(cpu=cpu, memory=memory).obj()
    return [
        (0.0, "ADDED", make_node("big").capacity(cpu="8", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("small").capacity(cpu="2", memory="4Gi").obj()),
        (1.0, "ADDED", pending("best", "1", "2Gi")),
        (2.0, "MODIFIED", bound("best", "big", "1", "2Gi")),
        (3.0, "ADDED", pending("lower", "1", "2Gi")),
        (4.0, "MODIFIED", bound("lower", "small", "1", "2Gi")),
        (5.0, "ADDED", pending("nofit", "1500m", "1Gi")),
        (6.0, "MODIFIED", bound("nofit", "small", "1500m", "1Gi")),
        (7.0, "ADDED", pending("lost", "100m", "128Mi")),
        (8.0, "MODIFIED", bound("lost", "ghost", "100m", "128Mi")),
        (9.0, "ADDED", bound("static", "big", "100m", "128Mi")),
        (10.0, "ADDED", make_pod("other").req(cpu="100m").scheduler("another-scheduler")
         .obj()),
        (11.0, "MODIFIED", make_pod("other").req(cpu="100m").scheduler("another-scheduler")
         .node("big").obj()),
    ]


def test_bindings_are_classified_with_kube_schedulers_scores(engine: Engine,
                                                             tmp_path: Path) -> None:
    report = audit_steps(engine, tmp_path, bindings_steps())
    records = audit_records(engine, report["run"])

    best = one(records, "best")
    assert best["class"] == "agrees"
    assert best["score"] == best["topScore"] == total(least_allocated(1000, 8000, 2, 16))
    assert best["reason"] == "kaudit's only top-scoring node"
    assert best["recorded"]["node"] == best["kaudit"]["node"] == "big"

    # Before "lower": big holds 1 CPU and 2Gi, small nothing; big still scores higher.
    lower = one(records, "lower")
    on_big, on_small = least_allocated(2000, 8000, 4, 16), least_allocated(1000, 2000, 2, 4)
    assert (on_big, on_small) == (75, 50)
    assert lower["class"] == "scoredLower"
    assert (lower["score"], lower["topScore"]) == (total(on_small), total(on_big))
    assert lower["kaudit"]["node"] == "big"
    assert lower["plugins"] == [{"plugin": "NodeResourcesFit", "best": on_big,
                                 "recorded": on_small}]
    assert lower["cause"] == "scores higher elsewhere: NodeResourcesFit"

    # small has 1 CPU left of 2: 1500m does not fit (and could after a preemption).
    nofit = one(records, "nofit")
    assert nofit["class"] == "infeasible"
    assert nofit["rejectedBy"] == {"plugin": "NodeResourcesFit", "code": "UNSCHEDULABLE",
                                   "reasons": ["Insufficient cpu"]}
    assert nofit["cause"] == "NodeResourcesFit: Insufficient cpu"

    lost = one(records, "lost")
    assert (lost["class"], lost["missing"], lost["cause"]) == (
        "notJudged", ["Node ghost"], "missing Node")
    static = one(records, "static")
    assert (static["class"], static["cause"]) == ("notJudged", "spec.nodeName")
    other = one(records, "other")
    assert (other["class"], other["cause"]) == ("notJudged", "scheduler another-scheduler")

    assert report["decisions"] == 6 and report["judged"] == 3
    assert {name: count for name, count in report["classes"].items() if count} == {
        "agrees": 1, "scoredLower": 1, "infeasible": 1, "notJudged": 3}


def two_pods_bound_at_one_instant() -> list[Step]:
    """Two equal nodes; two equal pods bound at the same instant, ``a`` first."""
    return [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="16Gi").obj()),
        (1.0, "ADDED", make_pod("a").req(cpu="1", memory="4Gi").obj()),
        (1.0, "ADDED", make_pod("b").req(cpu="1", memory="4Gi").obj()),
        (2.0, "MODIFIED", bound("a", "n1", "1", "4Gi")),
        (2.0, "MODIFIED", bound("b", "n2", "1", "4Gi")),
    ]


def test_a_binding_after_another_at_the_same_instant_sees_it(engine: Engine,
                                                             tmp_path: Path) -> None:
    report = audit_steps(engine, tmp_path, two_pods_bound_at_one_instant())
    records = audit_records(engine, report["run"])

    empty = total(least_allocated(1000, 4000, 4, 16))
    a = one(records, "a")
    assert a["class"] == "tie"
    assert a["score"] == a["topScore"] == empty
    assert a["reason"] == f"one of kaudit's 2 nodes tied at the top score {empty}"
    b = one(records, "b")  # a is on n1 by then: n2 is the only best
    assert (b["class"], b["score"], b["topScore"]) == ("agrees", empty, empty)


def test_latency_judges_before_the_events_within_it(engine: Engine, tmp_path: Path) -> None:
    report = audit_steps(engine, tmp_path, two_pods_bound_at_one_instant(), latency_s=0.5)
    records = audit_records(engine, report["run"])

    # b is judged before a's binding: both nodes are empty, a tie.
    assert one(records, "b")["class"] == "tie"
    assert report["latencySeconds"] == 0.5


#: kube-scheduler's FitError for a pod asking 16 CPU of two 2-CPU nodes: NodeResourcesFit
#: rejects both (UnschedulableAndUnresolvable: the request exceeds allocatable), then the
#: PostFilter plugins in order: DynamicResources (no claims) and DefaultPreemption (no node
#: where preemption might help, so every node is "absent").
TOO_BIG = ("0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
           "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def unschedulable_steps() -> list[Step]:
    huge = make_pod("huge").req(cpu="16").obj()
    wrong = make_pod("wrong").req(cpu="16").obj()
    fits = make_pod("fits").req(cpu="100m").obj()
    return [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="2", memory="4Gi").obj()),
        (1.0, "ADDED", huge),
        (1.0, "ADDED", wrong),
        (1.0, "ADDED", fits),
        (1.0, "ADDED", make_pod("silent").req(cpu="16").obj()),
        (2.0, "MODIFIED", failed(huge, TOO_BIG)),
        (2.0, "MODIFIED", failed(wrong, "0/2 nodes are available: 2 Insufficient memory.")),
        (2.0, "MODIFIED", failed(fits, TOO_BIG)),
        (2.0, "ADDED", failed_scheduling_event("silent", TOO_BIG)),
        (2.0, "ADDED", failed_scheduling_event("phantom", TOO_BIG)),
    ]


def test_recorded_failures_are_compared_byte_for_byte(engine: Engine, tmp_path: Path) -> None:
    report = audit_steps(engine, tmp_path, unschedulable_steps())
    records = audit_records(engine, report["run"])

    huge = one(records, "huge")
    assert (huge["class"], huge["kaudit"]["message"]) == ("unschedulableSame", TOO_BIG)
    silent = one(records, "silent")  # from the FailedScheduling Event
    assert (silent["class"], silent["recorded"]["message"]) == ("unschedulableSame", TOO_BIG)
    wrong = one(records, "wrong")
    assert (wrong["class"], wrong["cause"]) == ("unschedulableDifferent", "another message")
    assert wrong["kaudit"]["message"] == TOO_BIG
    fits = one(records, "fits")
    assert (fits["class"], fits["cause"]) == ("unschedulableDifferent",
                                              "kaudit places the pod")
    assert fits["kaudit"]["node"] in ("n1", "n2")
    phantom = one(records, "phantom")  # an Event about a pod the recording never shows
    assert (phantom["class"], phantom["cause"], phantom["missing"]) == (
        "notJudged", "pod never seen pending", ["Pod default/phantom (pending)"])


def test_a_pod_first_seen_bound_is_judged_as_it_was_before_its_binding(
        engine: Engine, tmp_path: Path) -> None:
    steps = [*bindings_steps()[:2], (1.0, "MODIFIED", bound("late", "small", "1", "2Gi"))]
    report = audit_steps(engine, tmp_path, steps)
    late = one(audit_records(engine, report["run"]), "late")

    assert late["recorded"]["firstSeenBound"] is True
    assert late["class"] == "scoredLower"
    assert (late["score"], late["topScore"]) == (total(least_allocated(1000, 2000, 2, 4)),
                                                 total(least_allocated(1000, 8000, 2, 16)))


@pytest.mark.parametrize(("cleared_before_s", "expected"), [
    (0.005, "unschedulableSame"), (0.5, "unschedulableDifferent")])
def test_a_nomination_cleared_just_before_a_cycle_may_still_be_in_the_queues_pod(
        engine: Engine, tmp_path: Path, cleared_before_s: float, expected: str) -> None:
    # Another preemptor cleared urgent's nomination (upstream's ClearNominatedNodeName) just
    # before urgent's failure was recorded; the cycle still saw urgent nominated to n1, as
    # its message (not eligible: a terminating pod there) says. Without the nomination
    # kaudit would preempt mid on n2.
    terminating, urgent = victim_terminating(), make_pod("urgent").req(
        cpu="1500m", memory="1Gi").priority(1000).obj()
    first = failed(urgent, "0/2 nodes are available: 2 Insufficient cpu.")
    steps = preemption_steps("n1")[:7]
    steps += [(2.1, "MODIFIED", terminating),
              (3.0 - cleared_before_s, "MODIFIED", first),
              (3.0, "MODIFIED", failed(urgent, NOT_ELIGIBLE_TERMINATING))]
    report = audit_steps(engine, tmp_path, steps)
    failure = audit_records(engine, report["run"])["default/urgent"][-1]

    assert failure["class"] == expected
    if expected == "unschedulableSame":
        assert failure["laggingView"] == {"podAsQueued": {"nominatedNodeName": "n1"}}
        assert "as the scheduler's queue still held it" in failure["reason"]
    else:
        assert failure["kaudit"]["message"] == "0/2 nodes are available: 2 Insufficient cpu."


NOT_ELIGIBLE_TERMINATING = (
    "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
    "not eligible due to a terminating pod on the nominated node.")


def victim_terminating() -> dict[str, Any]:
    """low, preempted by urgent on n1, still terminating (deleted at 2.1 s)."""
    terminating = preempted(make_pod("low").req(cpu="1500m", memory="1Gi").priority(10)
                            .node("n1").obj())
    terminating["metadata"]["deletionTimestamp"] = "2026-01-05T09:00:02.100Z"
    return terminating


def preemption_steps(nominated: str) -> list[Step]:
    """n1 holds ``low`` (priority 10), n2 ``mid`` (priority 100), each 1500m of 2 CPU;
    ``urgent`` (priority 1000, 1500m) fits nowhere and is recorded nominating ``nominated``,
    the pod there preempted, then bound there."""
    low = make_pod("low").req(cpu="1500m", memory="1Gi").priority(10).node("n1").obj()
    mid = make_pod("mid").req(cpu="1500m", memory="1Gi").priority(100).node("n2").obj()
    urgent = make_pod("urgent").req(cpu="1500m", memory="1Gi").priority(1000).obj()
    victim = low if nominated == "n1" else mid
    return [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", low),
        (0.0, "ADDED", mid),
        (1.0, "ADDED", urgent),
        (2.0, "MODIFIED", preempted(victim)),
        (2.0, "MODIFIED", failed(urgent, "0/2 nodes are available: 2 Insufficient cpu.",
                                 nominated=nominated)),
        (2.5, "DELETED", preempted(victim)),
        (3.0, "MODIFIED", make_pod("urgent").req(cpu="1500m", memory="1Gi").priority(1000)
         .node(nominated).obj()),
    ]


@pytest.mark.parametrize(("nominated", "expected"), [
    ("n1", {"class": "preemptionSame", "cause": "",
            "reason": "the same node and the same victims"}),
    ("n2", {"class": "preemptionDifferent", "cause": "another candidate",
            "reason": "recorded nomination n2: a candidate kaudit ranks below n1"}),
])
def test_a_preemption_is_judged_by_its_node_and_victims(
        engine: Engine, tmp_path: Path, nominated: str, expected: dict[str, str]) -> None:
    report = audit_steps(engine, tmp_path, preemption_steps(nominated))
    preemption, binding = audit_records(engine, report["run"])["default/urgent"]

    # pickOneNodeForPreemption: no PDBs; the lowest highest-priority victim is low's (10).
    assert {key: preemption[key] for key in expected} == expected
    assert preemption["kaudit"]["nominatedNode"] == "n1"
    assert preemption["kaudit"]["victims"] == ["default/low"]
    victim = "default/low" if nominated == "n1" else "default/mid"
    assert preemption["recorded"]["victims"] == [victim]
    # The binding to the nominated node once its victim is gone (the pod's own nomination
    # is not counted against it: 1500m twice would not fit).
    assert (binding["class"], binding["cause"]) == ("agrees", "nominated node")
    assert binding["kaudit"]["nominatedNode"] == nominated


def num_feasible_nodes_to_find(nodes: int) -> int:
    """Upstream's ``numFeasibleNodesToFind`` with percentageOfNodesToScore unset."""
    if nodes < 100:
        return nodes
    percentage = max(50 - nodes // 125, 5)
    return max(nodes * percentage // 100, 100)


def window_likelihood(scores: list[int | None], recorded: int, to_find: int) -> float:
    """Over every start position of a cycle's rotating window (the first ``to_find``
    feasible nodes in node order from the start; ``None`` marks an infeasible node): the
    chance that the window holds the recorded node and the cycle picks it (uniformly among
    the window's top-scoring nodes, as ``selectHost`` does)."""
    count = len(scores)
    wins = 0.0
    for start in range(count):
        window: list[int] = []
        for step in range(count):
            if len(window) == to_find:
                break
            if scores[(start + step) % count] is not None:
                window.append((start + step) % count)
        top = max(score for i in window if (score := scores[i]) is not None)
        if recorded in window and scores[recorded] == top:
            wins += 1 / sum(scores[i] == top for i in window)
    return wins / count


def sampling_steps(nodes: int, sizes: dict[int, tuple[int, int]], tainted_every: int | None
                   ) -> tuple[list[Step], list[int | None]]:
    """``nodes`` nodes of 4 CPU and 16Gi but those ``sizes`` names (CPU, GiB), every
    ``tainted_every``-th tainted against the pod; pod ``p`` (1 CPU, 4Gi) bound to the second
    largest. Returns the steps and each node's score (None: infeasible)."""
    steps: list[Step] = []
    scores: list[int | None] = []
    for i in range(nodes):
        cpu, memory = sizes.get(i, (4, 16))
        node = make_node(f"node-{i:03d}").capacity(cpu=str(cpu), memory=f"{memory}Gi")
        if tainted_every and i % tainted_every == tainted_every - 1:
            node.taint("dedicated", "other", "NoSchedule")
            scores.append(None)
        else:
            scores.append(total(least_allocated(1000, cpu * 1000, 4, memory)))
        steps.append((0.0, "ADDED", node.obj()))
    recorded = sorted(sizes)[1]
    steps += [(1.0, "ADDED", make_pod("p").req(cpu="1", memory="4Gi").obj()),
              (2.0, "MODIFIED", bound("p", f"node-{recorded:03d}", "1", "4Gi"))]
    return steps, scores


#: node 0 the largest (the top everywhere), node 150 the second, every node feasible.
ALL_FEASIBLE = (200, {0: (16, 64), 150: (8, 32)}, None)


@pytest.mark.parametrize(("nodes", "sizes", "tainted_every"), [
    ALL_FEASIBLE,
    # every third node tainted (infeasible), node 10 the top, nodes 198 and 229 tied second
    (250, {10: (16, 64), 198: (8, 32), 229: (8, 32)}, 3),
])
def test_a_node_best_only_in_some_windows_is_sampled(
        engine: Engine, tmp_path: Path, nodes: int, sizes: dict[int, tuple[int, int]],
        tainted_every: int | None) -> None:
    # One zone: upstream's node order is the order the nodes were added.
    top, recorded = min(sizes), sorted(sizes)[1]
    steps, scores = sampling_steps(nodes, sizes, tainted_every)
    report = audit_steps(engine, tmp_path, steps)
    record = one(audit_records(engine, report["run"]), "p")

    expected = window_likelihood(scores, recorded, num_feasible_nodes_to_find(nodes))
    assert 0 < expected < 1
    assert record["class"] == "sampled"
    assert (record["score"], record["topScore"]) == (scores[recorded], scores[top])
    assert record["likelihood"] == pytest.approx(expected)
    assert record["cause"] == "percentageOfNodesToScore"
    assert report["sampledShare"] == 1.0


def test_a_window_is_scored_with_its_own_normalization(engine: Engine, tmp_path: Path) -> None:
    # 200 nodes, one zone: a cycle scores a window of 100 feasible nodes. The pod prefers
    # tier=gold (weight 100) and tier=silver (weight 10). node-000 is gold and large,
    # node-150 silver and small, every other node large and unlabelled. Over the whole
    # cluster NodeAffinity normalizes node-150's 10 to 10 and the large nodes' fit wins; in a
    # window without node-000 it normalizes it to 100 (the window's maximum), and node-150
    # wins. Windows starting at nodes 51-100 hold node-150 and not node-000: 50 of 200 starts.
    def wanting(name: str) -> Any:
        return (make_pod(name).req(cpu="1", memory="4Gi")
                .preferred_node_affinity(100, "tier", "In", ["gold"])
                .preferred_node_affinity(10, "tier", "In", ["silver"]))

    steps: list[Step] = []
    for i in range(200):
        node = make_node(f"node-{i:03d}")
        if i == 150:
            node.capacity(cpu="2", memory="8Gi").label("tier", "silver")
        else:
            node.capacity(cpu="16", memory="64Gi")
        if i == 0:
            node.label("tier", "gold")
        steps.append((0.0, "ADDED", node.obj()))
    steps += [(1.0, "ADDED", wanting("p").obj()),
              (2.0, "MODIFIED", wanting("p").node("node-150").obj())]
    report = audit_steps(engine, tmp_path, steps)
    record = one(audit_records(engine, report["run"]), "p")
    assert record["class"] == "sampled"
    assert record["likelihood"] == pytest.approx(50 / 200)
    # The whole cluster's scores: node-150 below the top in every window.
    large = least_allocated(1000, 16000, 4, 64)
    assert (record["score"], record["topScore"]) == (
        total(least_allocated(1000, 2000, 4, 8)) + 2 * 10, total(large) + 2 * 100)


def test_other_pods_recorded_nominations_count_against_a_node(engine: Engine,
                                                               tmp_path: Path) -> None:
    # ``big`` (priority 1000, 3 CPU) is recorded nominated to n1; ``b`` (priority 0) is bound
    # there next. Upstream's filters add nominated pods of equal or higher priority
    # (addNominatedPods): 3 + 2 CPU exceed n1's 4.
    big = make_pod("big").req(cpu="3", memory="1Gi").priority(1000).obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="16Gi").obj()),
        (1.0, "ADDED", big),
        (2.0, "MODIFIED", failed(big, "0/2 nodes are available: 2 Insufficient cpu.",
                                 nominated="n1")),
        (3.0, "ADDED", make_pod("b").req(cpu="2", memory="1Gi").obj()),
        (4.0, "MODIFIED", bound("b", "n1", "2", "1Gi")),
    ]
    report = audit_steps(engine, tmp_path, steps)
    b = one(audit_records(engine, report["run"]), "b")

    assert b["class"] == "infeasible"
    assert b["rejectedBy"] == {"plugin": "NodeResourcesFit", "code": "UNSCHEDULABLE",
                               "reasons": ["Insufficient cpu"]}


def test_scored_lower_names_each_plugins_weighted_scores(engine: Engine,
                                                         tmp_path: Path) -> None:
    # Two equal nodes, n2 with a PreferNoSchedule taint the pod does not tolerate:
    # TaintToleration counts 0 and 1 intolerable taints, normalised reversed to 100 and 0,
    # weight 3; every other plugin scores both nodes alike.
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="16Gi")
         .taint("spot", "true", "PreferNoSchedule").obj()),
        (1.0, "ADDED", make_pod("p").req(cpu="1", memory="4Gi").obj()),
        (2.0, "MODIFIED", bound("p", "n2", "1", "4Gi")),
    ]
    report = audit_steps(engine, tmp_path, steps)
    p = one(audit_records(engine, report["run"]), "p")

    least = least_allocated(1000, 4000, 4, 16)
    assert p["class"] == "scoredLower"
    assert (p["score"], p["topScore"]) == (least + 100, least + 100 + 300)
    assert p["plugins"] == [{"plugin": "TaintToleration", "best": 300, "recorded": 0}]
    assert p["reason"] == (f"n2 scores {least + 100}, kaudit's top is {least + 400} on n1; "
                           "higher there: TaintToleration (300 vs 0)")


@pytest.mark.parametrize(("priority_b", "victim", "expected"), [
    # low-a (10) ranks below low-b (20): upstream reprieves low-b, the more important, first.
    (20, "low-a", {"class": "preemptionSame", "cause": "",
                   "reason": "the same node and the same victims"}),
    (20, "low-b", {"class": "preemptionDifferent", "cause": "other victims",
                   "reason": "the same node, other victims: recorded ['default/low-b'], "
                             "kaudit ['default/low-a']"}),
    # Equal priorities and no start times: upstream's order of the two is unstable, so
    # either victim agrees.
    (10, "low-a", {"class": "preemptionSame", "cause": ""}),
    (10, "low-b", {"class": "preemptionSame", "cause": ""}),
])
def test_a_preemption_with_other_victims_on_the_same_node(
        engine: Engine, tmp_path: Path, priority_b: int, victim: str,
        expected: dict[str, str]) -> None:
    # n1 (2 CPU) holds low-a and low-b, 1 CPU each; urgent (1 CPU) needs one of them gone.
    low = {"low-a": make_pod("low-a").req(cpu="1").priority(10).node("n1").obj(),
           "low-b": make_pod("low-b").req(cpu="1").priority(priority_b).node("n1").obj()}
    urgent = make_pod("urgent").req(cpu="1").priority(1000).obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", low["low-a"]),
        (0.0, "ADDED", low["low-b"]),
        (1.0, "ADDED", urgent),
        (2.0, "MODIFIED", preempted(low[victim])),
        (2.0, "MODIFIED", failed(urgent, "0/1 nodes are available: 1 Insufficient cpu.",
                                 nominated="n1")),
    ]
    report = audit_steps(engine, tmp_path, steps)
    preemption = one(audit_records(engine, report["run"]), "urgent")

    assert {key: preemption[key] for key in expected} == expected
    assert preemption["recorded"]["victims"] == [f"default/{victim}"]


def test_a_failure_while_the_victim_terminates_is_upstreams(engine: Engine,
                                                            tmp_path: Path) -> None:
    # After its preemption, urgent fails again while low (the victim) is still terminating on
    # n1: DefaultPreemption's PodEligibleToPreemptOthers refuses to preempt again, after
    # DynamicResources' PostFilter found no claims.
    terminating, urgent = victim_terminating(), make_pod("urgent").req(
        cpu="1500m", memory="1Gi").priority(1000).obj()
    steps = preemption_steps("n1")
    steps[7:7] = [(2.1, "MODIFIED", terminating),
                  (2.2, "MODIFIED", failed(urgent, NOT_ELIGIBLE_TERMINATING,
                                                 nominated="n1"))]
    report = audit_steps(engine, tmp_path, steps)
    preemption, failure, binding = audit_records(engine, report["run"])["default/urgent"]

    assert preemption["class"] == "preemptionSame"
    assert (failure["class"], failure["kaudit"]["message"]) == ("unschedulableSame",
                                                                NOT_ELIGIBLE_TERMINATING)
    assert binding["class"] == "agrees"


def test_nominations_kaudit_would_not_make(engine: Engine, tmp_path: Path) -> None:
    # n1 holds low (priority 10), n3 high (priority 5000), 1500m of 2 CPU each. urgent
    # (priority 1000, 1500m) can only preempt low; easy (100m) fits as it is.
    urgent = make_pod("urgent").req(cpu="1500m", memory="1Gi").priority(1000).obj()
    easy = make_pod("easy").req(cpu="100m").priority(1000).obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n3").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_pod("low").req(cpu="1500m", memory="1Gi").priority(10)
         .node("n1").obj()),
        (0.0, "ADDED", make_pod("high").req(cpu="1500m", memory="1Gi").priority(5000)
         .node("n3").obj()),
        (1.0, "ADDED", urgent),
        (1.0, "ADDED", easy),
        (2.0, "MODIFIED", failed(urgent, "0/2 nodes are available: 2 Insufficient cpu.",
                                 nominated="n3")),
        (2.0, "MODIFIED", failed(easy, "0/2 nodes are available: 2 Insufficient cpu.",
                                 nominated="n1")),
    ]
    report = audit_steps(engine, tmp_path, steps)
    records = audit_records(engine, report["run"])

    urgent_record = one(records, "urgent")
    assert (urgent_record["class"], urgent_record["cause"]) == ("preemptionDifferent",
                                                                "not a candidate")
    assert urgent_record["reason"] == ("recorded nomination n3: not a candidate kaudit's dry "
                                       "run found")
    assert urgent_record["kaudit"]["nominatedNode"] == "n1"
    easy_record = one(records, "easy")
    assert (easy_record["class"], easy_record["cause"]) == ("preemptionDifferent",
                                                            "kaudit places the pod")


def test_a_decision_needing_an_unrecorded_claim_is_not_judged(engine: Engine,
                                                              tmp_path: Path) -> None:
    claimer = make_pod("claimer").req(cpu="100m").pvc("data", "data-0")
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (1.0, "ADDED", claimer.obj()),
        (2.0, "MODIFIED", claimer.node("n1").obj()),
    ]
    report = audit_steps(engine, tmp_path, steps)
    record = one(audit_records(engine, report["run"]), "claimer")

    assert (record["class"], record["cause"], record["missing"]) == (
        "notJudged", "missing PersistentVolumeClaim",
        ["PersistentVolumeClaim default/data-0"])


def test_a_failed_scheduling_series_written_after_the_binding_is_no_new_decision(
        engine: Engine, tmp_path: Path) -> None:
    # web fails three times while hog holds n1 (Events: the first ADDED, the second opening a
    # series, the third only counted), is bound once hog is gone, and the series' final count
    # is written six minutes after its last observation.
    message = ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
               "preemption: 0/1 nodes are available: 1 No preemption victims found for "
               "incoming pod.")

    def series(count: int, last: str) -> dict[str, Any]:
        event = failed_scheduling_event("web", message, events_api=True)
        event["series"] = {"count": count, "lastObservedTime": last}
        return event
    hog = make_pod("hog").req(cpu="1500m").node("n1").obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", hog),
        (1.0, "ADDED", make_pod("web").req(cpu="1", memory="1Gi").obj()),
        (1.1, "ADDED", failed_scheduling_event("web", message, events_api=True)),
        (2.0, "MODIFIED", series(2, "2026-01-05T09:00:02.000000Z")),
        (2.4, "DELETED", hog),
        (2.5, "MODIFIED", bound("web", "n1", "1", "1Gi")),
        (362.3, "MODIFIED", series(3, "2026-01-05T09:00:02.300000Z")),
    ]
    report = audit_steps(engine, tmp_path, steps)
    classes = [record["class"] for record in audit_records(engine, report["run"])["default/web"]]

    assert classes[:2] == ["unschedulableSame", "unschedulableSame"]
    assert "agrees" in classes
    assert report["classes"]["notJudged"] == 0


def test_a_binding_away_from_a_fitting_nominated_node_disagrees(engine: Engine,
                                                                tmp_path: Path) -> None:
    # Upstream's findNodesThatFitPod tries a pod's nominated node first and binds it there
    # when it fits (evaluateNominatedNode), without scoring the others.
    pod = make_pod("nominee").req(cpu="1", memory="1Gi").priority(1000)
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="2", memory="4Gi").obj()),
        (1.0, "ADDED", pod.obj()),
        (2.0, "MODIFIED", failed(pod.obj(), "0/2 nodes are available: 2 Insufficient cpu.",
                                 nominated="n1")),
        (3.0, "MODIFIED", pod.node("n2").obj()),
    ]
    report = audit_steps(engine, tmp_path, steps)
    binding = audit_records(engine, report["run"])["default/nominee"][-1]

    assert binding["recorded"]["kind"] == "bind"
    assert (binding["class"], binding["cause"]) == ("scoredLower",
                                                    "the nominated node fits elsewhere")
    assert binding["kaudit"]["node"] == "n1"



def deletion_just_before(gap_s: float) -> list[Step]:
    """n1 holds resident (500m, 2Gi), n2 old (1 CPU, 4Gi), of 4 CPU and 16Gi each; old is
    deleted ``gap_s`` before p (1 CPU, 4Gi) is recorded bound to n1. Without old, n2 scores
    higher (NodeResourcesFit 75 against 62); with old still there, n1 does (62 against 50)."""
    old = make_pod("old").req(cpu="1", memory="4Gi").node("n2").obj()
    return [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_pod("resident").req(cpu="500m", memory="2Gi").node("n1").obj()),
        (0.0, "ADDED", old),
        (1.0, "ADDED", make_pod("p").req(cpu="1", memory="4Gi").obj()),
        (2.0, "DELETED", old),
        (2.0 + gap_s, "MODIFIED", bound("p", "n1", "1", "4Gi")),
    ]


@pytest.mark.parametrize(("gap_s", "window_s", "expected"), [
    (0.005, None, "agrees"),         # within the default 10 ms window
    (0.005, 0.0, "scoredLower"),     # --window 0: the recorded state alone
    (0.05, None, "scoredLower"),     # the deletion is older than the window
])
def test_a_deletion_recorded_within_the_window_may_not_have_been_seen(
        engine: Engine, tmp_path: Path, gap_s: float, window_s: float | None,
        expected: str) -> None:
    assert (least_allocated(1000, 4000, 4, 16), least_allocated(1500, 4000, 6, 16),
            least_allocated(2000, 4000, 8, 16)) == (75, 62, 50)
    report = audit_steps(engine, tmp_path, deletion_just_before(gap_s), window_s=window_s)
    p = one(audit_records(engine, report["run"]), "p")

    assert p["class"] == expected
    # The report says how many agree only in a lagging view (the window hides nothing).
    assert report["agreeInLaggingView"] == (expected == "agrees")
    if expected == "agrees":
        assert p["laggingView"] == {"notSeen": ["delete default/old on n2"],
                                    "writesInFlight": [], "queueOrder": False}
        # The attempt beside it is kaudit's ranking in the recorded state (the one explain
        # and the pod page read with the recorded free amounts): another node is on top there.
        with engine.connect() as connection:
            run_id = connection.execute(select(Run.id).where(Run.name == report["run"])
                                        ).scalar_one()
            (selected,) = connection.execute(select(RunEvent.node).where(
                RunEvent.run_id == run_id, RunEvent.kind == RecordKind.ATTEMPT.value,
                RunEvent.pod == "default/p")).scalars().all()
        assert selected is not None and selected != "n1"
        assert p["reason"].endswith("(within 10 ms of the recording: 1 change(s) it had "
                                    "not seen yet)")
    else:
        assert "laggingView" not in p


def test_another_pods_binding_recorded_just_after_may_have_been_made(
        engine: Engine, tmp_path: Path) -> None:
    # The scheduler decided a (to n1) and then b (to n2, since a was assumed on n1), but b's
    # binding is recorded first. Without a, n1 (75) beats n2 where resident (250m, 1Gi)
    # lives (68); with a on n1, n2 is the best (n1: 50).
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_pod("resident").req(cpu="250m", memory="1Gi").node("n2").obj()),
        (1.0, "ADDED", make_pod("a").req(cpu="1", memory="4Gi").obj()),
        (1.0, "ADDED", make_pod("b").req(cpu="1", memory="4Gi").obj()),
        (2.0, "MODIFIED", bound("b", "n2", "1", "4Gi")),
        (2.004, "MODIFIED", bound("a", "n1", "1", "4Gi")),
    ]
    assert least_allocated(1250, 4000, 5, 16) == 68
    records = audit_records(engine, audit_steps(engine, tmp_path, steps)["run"])

    b = one(records, "b")
    assert b["class"] == "agrees"
    # a joined the queue first, so the queue's order says it was decided before b.
    assert b["laggingView"] == {"notSeen": [], "writesInFlight": ["bind default/a n1"],
                                "queueOrder": True}
    assert one(records, "a")["class"] == "agrees"
    without = audit_records(engine, audit_steps(engine, tmp_path, steps, window_s=0.0)["run"])
    assert one(without, "b")["class"] == "scoredLower"


def test_the_queues_order_says_which_earlier_bindings_were_decided_after(
        engine: Engine, tmp_path: Path) -> None:
    # z, x and y join the queue in that order and are decided in that order: z to n1 (75
    # against 43), x to n2 (56 against n1's 50 with z), y to n2 (its nodeSelector). Their
    # bindings are recorded y, z, x. Judged in the recorded state (y and z bound), x would go
    # to n1 (n2 with y: 43); not seeing z, or y and z (the latest changes), sends it to n1
    # too. Only the queue's order (y decided after x, z before) gives x's state.
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="8", memory="32Gi").label(
            "tier", "two").obj()),
        (0.0, "ADDED", make_pod("resident").req(cpu="2500m", memory="10Gi").node("n2").obj()),
        (1.0, "ADDED", make_pod("z").req(cpu="1", memory="4Gi").obj()),
        (1.0, "ADDED", make_pod("x").req(cpu="1", memory="4Gi").obj()),
        (1.0, "ADDED", make_pod("y").req(cpu="1", memory="4Gi").node_selector(tier="two").obj()),
        (2.0, "MODIFIED", make_pod("y").req(cpu="1", memory="4Gi").node_selector(tier="two")
         .node("n2").obj()),
        (2.001, "MODIFIED", bound("z", "n1", "1", "4Gi")),
        (2.002, "MODIFIED", bound("x", "n2", "1", "4Gi")),
    ]
    assert least_allocated(2000, 4000, 8, 16) == 50
    assert least_allocated(3500, 8000, 14, 32) == 56
    assert least_allocated(4500, 8000, 18, 32) == 43
    records = audit_records(engine, audit_steps(engine, tmp_path, steps)["run"])

    x = one(records, "x")
    assert x["class"] == "agrees"
    assert x["laggingView"] == {"notSeen": ["bind default/y n2"], "writesInFlight": [],
                                "queueOrder": True}
    assert one(records, "y")["class"] == "agrees"
    assert one(records, "z")["class"] == "agrees"
    # y joined the queue before x: then x's state is the recorded one, where it scores lower.
    y_first = [steps[0], steps[1], steps[2], steps[5], steps[3], steps[4], *steps[6:]]
    records = audit_records(engine, audit_steps(engine, tmp_path, y_first, name="yfirst")["run"])
    assert one(records, "x")["class"] == "scoredLower"


# --------------------------------------------------------------------------- lagging views
# A lagging view may explain a decision only in a state the scheduler could have seen: one order
# of its decisions serves them all, a pod put back never over-commits its node, and only the
# scheduler's own writes can be in flight.


def test_two_decisions_cannot_each_have_been_made_after_the_other(
        engine: Engine, tmp_path: Path) -> None:
    # a (to n1) is right only if b was already on n2, and b (to n2) only if a was already on
    # n1: one of them disagrees whatever the order.
    def pending(name: str, cpu: str, memory: str) -> dict[str, Any]:
        return make_pod(name).req(cpu=cpu, memory=memory).obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", bound("pre1", "n1", "1m", "768Mi")),
        (0.0, "ADDED", bound("pre2", "n2", "250m", "256Mi")),
        (1.0, "ADDED", pending("a", "1m", "1280Mi")),
        (1.0, "ADDED", pending("b", "1", "1280Mi")),
        (2.0, "MODIFIED", bound("a", "n1", "1m", "1280Mi")),
        (2.005, "MODIFIED", bound("b", "n2", "1", "1280Mi")),
    ]
    report = audit_steps(engine, tmp_path, steps)
    records = audit_records(engine, report["run"])

    assert one(records, "a")["class"] == "agrees"
    assert one(records, "a")["laggingView"]["writesInFlight"] == ["bind default/b n2"]
    b = one(records, "b")
    assert (b["class"], b["decidedAfter"]) == ("scoredLower", ["default/a"])
    assert report["agreeInLaggingView"] == 1


def test_a_deletion_is_not_put_back_where_its_room_was_taken_since(
        engine: Engine, tmp_path: Path) -> None:
    # z leaves n2, b takes its room; a, bound to n1 though n2 scores higher, cannot be
    # explained by a view in which z is still on n2 beside b (5.5 cpu on 4).
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", bound("pre", "n1", "2", "6Gi")),
        (0.0, "ADDED", bound("z", "n2", "3", "10Mi")),
        (1.0, "ADDED", make_pod("a").req(cpu="100m", memory="1Gi").obj()),
        (1.0, "ADDED", make_pod("b").req(cpu="2500m", memory="10Mi").obj()),
        (1.995, "DELETED", bound("z", "n2", "3", "10Mi")),
        (1.997, "MODIFIED", bound("b", "n2", "2500m", "10Mi")),
        (2.0, "MODIFIED", bound("a", "n1", "100m", "1Gi")),
    ]
    records = audit_records(engine, audit_steps(engine, tmp_path, steps)["run"])

    assert one(records, "b")["class"] == "agrees"
    assert one(records, "a")["class"] == "scoredLower"
    assert "laggingView" not in one(records, "a")


def test_another_schedulers_writes_are_never_in_flight(engine: Engine, tmp_path: Path) -> None:
    # q is another scheduler's: its nomination to n2 just after a's binding cannot have been
    # in the audited scheduler's nominator.
    q = make_pod("q").req(cpu="3500m", memory="1Gi").scheduler("other-scheduler").obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", bound("pre", "n1", "1", "1Gi")),
        (1.0, "ADDED", make_pod("a").req(cpu="1", memory="1Gi").obj()),
        (1.0, "ADDED", q),
        (2.0, "MODIFIED", bound("a", "n1", "1", "1Gi")),
        (2.005, "MODIFIED", failed(q, "m", nominated="n2")),
    ]
    records = audit_records(engine, audit_steps(engine, tmp_path, steps)["run"])

    assert one(records, "a")["class"] == "scoredLower"
    assert one(records, "q")["class"] == "notJudged"


def kaudits_message(engine: Engine, directory: Path, steps: list[Step], pod: str) -> str:
    """kaudit's own message for ``pod``'s failure in ``steps`` (recorded with a placeholder)."""
    directory.mkdir(exist_ok=True)
    record = one(audit_records(engine, audit_steps(engine, directory, steps, name="baseline",
                                                   window_s=0.0)["run"]), pod)
    message: str = record["kaudit"]["message"]
    return message


@pytest.mark.parametrize(("gap_s", "expected"), [(0.005, "unschedulableSame"),
                                                  (0.05, "unschedulableDifferent")])
def test_a_node_update_recorded_within_the_window_may_not_have_been_seen(
        engine: Engine, tmp_path: Path, gap_s: float, expected: str) -> None:
    # n2 is cordoned gap_s before the scheduler's PodScheduled=False write for p is recorded,
    # and the message is the one of a cycle that saw n2 schedulable.
    p = make_pod("p").req(cpu="3").obj()
    nodes: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="2", memory="4Gi").obj()),
        (1.0, "ADDED", p)]
    message = kaudits_message(engine, tmp_path / "before",
                              [*nodes, (2.0, "MODIFIED", failed(p, "?"))], "p")
    cordon = make_node("n2").capacity(cpu="2", memory="4Gi").unschedulable().obj()
    steps = [*nodes, (2.0, "MODIFIED", cordon), (2.0 + gap_s, "MODIFIED", failed(p, message))]
    record = one(audit_records(engine, audit_steps(engine, tmp_path, steps, name="late")["run"]),
                 "p")

    assert record["class"] == expected, record["reason"]
    if expected == "unschedulableSame":
        assert record["laggingView"] == {"notSeen": ["update Node n2"], "writesInFlight": [],
                                         "queueOrder": False}
    else:
        assert "1 node(s) were unschedulable" in record["kaudit"]["message"]


def test_its_own_binding_recorded_before_a_failure_may_come_after_its_cycle(
        engine: Engine, tmp_path: Path) -> None:
    # The cycle that failed q came first; b's cycle, binding and recording came before q's
    # PodScheduled=False write. With b on n1, n1 would be short of memory for q too.
    q = make_pod("q").req(cpu="3", memory="1Gi").obj()
    start: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (1.0, "ADDED", q),
        (1.0, "ADDED", make_pod("b").req(cpu="100m", memory="3500Mi").obj())]
    message = kaudits_message(engine, tmp_path / "before",
                              [*start, (2.0, "MODIFIED", failed(q, "?"))], "q")
    steps = [*start, (2.0, "MODIFIED", bound("b", "n1", "100m", "3500Mi")),
             (2.004, "MODIFIED", failed(q, message))]
    record = one(audit_records(engine, audit_steps(engine, tmp_path, steps, name="late")["run"]),
                 "q")

    assert record["class"] == "unschedulableSame", record["reason"]
    assert record["laggingView"]["notSeen"] == ["bind default/b n1"]
    assert "Insufficient memory" not in message


def test_a_lagging_view_puts_back_each_object_as_last_recorded(engine: Engine,
                                                                tmp_path: Path) -> None:
    # low-b's binding is recorded 5 ms before q's decision, its start time 2 ms after the
    # binding (a status write, no change of what the scheduler reads). q disagrees in every
    # view, so each view takes low-b's binding back and redoes it. Then urgent's preemption
    # on n1 reads the pods' start times: low-b started before low-a, so low-a (the later) is
    # the victim, as long as low-b is put back as last recorded, start time included (urgent
    # fits on no node: n2 and n3 have 500m left).
    low_a = make_pod("low-a").req(cpu="1").priority(10).node("n1").obj()
    low_a["status"]["startTime"] = "2026-01-05T09:00:00Z"
    low_b = make_pod("low-b").req(cpu="1").priority(10).node("n1").obj()
    started_b = {**low_b, "status": {**low_b["status"], "phase": "Running",
                                     "startTime": "2026-01-05T08:59:00Z"}}
    urgent = make_pod("urgent").req(cpu="1").priority(1000).obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="1500m", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n3").capacity(cpu="500m", memory="4Gi").obj()),
        (0.0, "ADDED", make_pod("resident").req(cpu="1").priority(100).node("n2").obj()),
        (0.0, "ADDED", low_a),
        (0.5, "ADDED", make_pod("q").req(cpu="100m").obj()),
        (1.0, "ADDED", low_b),
        (1.002, "MODIFIED", started_b),
        (1.005, "MODIFIED", make_pod("q").req(cpu="100m").node("n2").obj()),
        (2.0, "ADDED", urgent),
        (3.0, "MODIFIED", preempted(low_a)),
        (3.0, "MODIFIED", failed(urgent, "0/3 nodes are available: 3 Insufficient cpu.",
                                 nominated="n1")),
    ]
    records = audit_records(engine, audit_steps(engine, tmp_path, steps)["run"])

    assert one(records, "q")["class"] == "scoredLower"  # so its lagging views were tried
    preemption = one(records, "urgent")
    assert preemption["recorded"]["victims"] == ["default/low-a"]
    assert (preemption["class"], preemption["kaudit"]["victims"]) == ("preemptionSame",
                                                                      ["default/low-a"])


def test_a_victim_an_earlier_preemption_took_is_not_looked_for_again(engine: Engine,
                                                                     tmp_path: Path) -> None:
    # first preempts low-b on n1; second, nominated there too while low-b terminates, needs
    # low-b and low-a gone. Upstream takes both, but only low-a gets a new DisruptionTarget
    # condition: low-b's is already there, so the recording shows low-a alone.
    low_a = make_pod("low-a").req(cpu="1").priority(10).node("n1").obj()
    low_a["status"]["startTime"] = "2026-01-05T08:00:00Z"
    low_b = make_pod("low-b").req(cpu="1").priority(10).node("n1").obj()
    low_b["status"]["startTime"] = "2026-01-05T08:30:00Z"
    terminating = preempted(low_b)
    terminating["metadata"]["deletionTimestamp"] = "2026-01-05T09:00:32Z"
    first = make_pod("first").req(cpu="1").priority(1000).obj()
    second = make_pod("second").req(cpu="1").priority(1000).obj()
    message = "0/1 nodes are available: 1 Insufficient cpu."
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", low_a),
        (0.0, "ADDED", low_b),
        (1.0, "ADDED", first),
        (2.0, "MODIFIED", preempted(low_b)),
        (2.0, "MODIFIED", failed(first, message, nominated="n1")),
        (2.1, "MODIFIED", terminating),
        (3.0, "ADDED", second),
        (4.0, "MODIFIED", preempted(low_a)),
        (4.0, "MODIFIED", failed(second, message, nominated="n1")),
    ]
    records = audit_records(engine, audit_steps(engine, tmp_path, steps)["run"])

    assert one(records, "first")["recorded"]["victims"] == ["default/low-b"]
    taken = one(records, "second")
    assert taken["recorded"]["victims"] == ["default/low-a"]
    assert sorted(taken["kaudit"]["victims"]) == ["default/low-a", "default/low-b"]
    assert taken["class"] == "preemptionSame"
    # Left out of the comparison, but in sight.
    assert taken["kaudit"]["victimsAlreadyPreempted"] == ["default/low-b"]


def test_a_nomination_beyond_the_dry_runs_offset_is_sampled_not_a_disagreement(
        engine: Engine, tmp_path: Path) -> None:
    # Six equal nodes, each holding one low-priority pod; the dry run stops at its first
    # candidate (minCandidateNodesAbsolute 1), from a random offset. Each urgent pod is recorded
    # nominating another node: only an offset at that node reaches it first.
    config = tmp_path / "one-candidate.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n"
        "  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: 0\n"
        "      minCandidateNodesAbsolute: 1\n")
    steps: list[Step] = []
    for index in range(6):
        steps.append((0.0, "ADDED", make_node(f"n{index}").capacity(cpu="2", memory="4Gi")
                      .obj()))
        steps.append((0.0, "ADDED", make_pod(f"low{index}").req(cpu="1500m", memory="1Gi")
                      .priority(10).node(f"n{index}").obj()))
    for index in range(6):
        urgent = make_pod(f"urgent{index}").req(cpu="1500m", memory="1Gi").priority(1000).obj()
        victim = make_pod(f"low{index}").req(cpu="1500m", memory="1Gi").priority(10) \
            .node(f"n{index}").obj()
        at = 1.0 + index
        steps += [(at, "ADDED", urgent),
                  (at + 0.1, "MODIFIED", preempted(victim)),
                  (at + 0.1, "MODIFIED", failed(urgent, "0/6 nodes are available: 6 "
                                                "Insufficient cpu.", nominated=f"n{index}")),
                  (at + 0.5, "DELETED", preempted(victim))]
    report = audit_steps(engine, tmp_path, steps, config=config)
    records = audit_records(engine, report["run"])
    judged = [one(records, f"urgent{index}") for index in range(6)]

    assert all(j["class"] in ("preemptionSame", "sampled") for j in judged), \
        [(j["class"], j["reason"]) for j in judged]
    sampled = [j for j in judged if j["class"] == "sampled"]
    assert sampled and all(j["cause"] == "preemption's random offset" for j in sampled)


def test_a_nomination_reached_from_an_offset_before_it_is_sampled(engine: Engine,
                                                                  tmp_path: Path) -> None:
    # The dry run stops at two candidates. n3's victim has the lowest priority, n2's the next:
    # from an offset at n2 the dry run examines n2 and n3 and nominates n3; only an offset
    # at n1 (n1 and n2) nominates n2, as recorded.
    config = tmp_path / "two-candidates.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n"
        "  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: 0\n"
        "      minCandidateNodesAbsolute: 2\n")

    def low(index: int) -> Any:
        priorities = [500, 400, 200, 100, 300, 300]
        return (make_pod(f"low{index}").req(cpu="1500m", memory="1Gi")
                .priority(priorities[index]).node(f"n{index}"))

    steps: list[Step] = []
    for index in range(6):
        steps.append((0.0, "ADDED", make_node(f"n{index}").capacity(cpu="2", memory="4Gi")
                      .obj()))
        steps.append((0.0, "ADDED", low(index).obj()))
    urgent = make_pod("urgent").req(cpu="1500m", memory="1Gi").priority(1000).obj()
    steps += [(1.0, "ADDED", urgent),
              (1.1, "MODIFIED", preempted(low(2).obj())),
              (1.1, "MODIFIED", failed(urgent, "0/6 nodes are available: 6 Insufficient cpu.",
                                       nominated="n2")),
              (1.5, "DELETED", preempted(low(2).obj()))]
    report = audit_steps(engine, tmp_path, steps, config=config)
    judged = one(audit_records(engine, report["run"]), "urgent")
    assert (judged["class"], judged["cause"]) == ("sampled", "preemption's random offset"), \
        judged["reason"]
    assert "from an offset at n1 it nominates n2" in judged["reason"]


def test_a_binding_is_not_explained_by_undoing_the_schedulers_own_earlier_binding(
        engine: Engine, tmp_path: Path) -> None:
    # a is bound to n1, then b to n2 5 ms later. Judged under bin packing (MostAllocated), b
    # belongs beside a on n1: a view in which a's binding was not yet seen would make n1 and
    # n2 tie, but the scheduler assumed a on n1 when it decided it, before b's cycle.
    config = tmp_path / "most-allocated.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n"
        "  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        "        type: MostAllocated\n")
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="8Gi").obj()),
        (1.0, "ADDED", make_pod("a").req(cpu="1", memory="1Gi").obj()),
        (1.0, "ADDED", make_pod("b").req(cpu="1", memory="1Gi").obj()),
        (2.0, "MODIFIED", bound("a", "n1", "1", "1Gi")),
        (2.005, "MODIFIED", bound("b", "n2", "1", "1Gi")),
    ]
    records = audit_records(engine, audit_steps(engine, tmp_path, steps, config=config)["run"])

    b = one(records, "b")
    assert b["class"] == "scoredLower", b["reason"]
    assert "laggingView" not in b


def test_a_node_change_committed_before_the_decision_may_be_recorded_after_it(
        engine: Engine, tmp_path: Path) -> None:
    # n1's taint is removed (resourceVersion 15) before the scheduler writes web's failure
    # (20), which it based on the untainted node; the recorder's node watch delivers the
    # change 5 ms after the failure. Committed after the failure (25), it was not seen.
    message = ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
               "preemption: 0/1 nodes are available: 1 Preemption is not helpful for "
               "scheduling.")

    def versioned(obj: dict[str, Any], version: int) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(version)}}

    def steps(untainted_at: int) -> list[Step]:
        node = make_node("n1").capacity(cpu="4", memory="16Gi")
        web = make_pod("web").req(cpu="8", memory="1Gi").obj()
        return [
            (0.0, "ADDED", versioned(node.taint("dedicated", "x", "NoSchedule").obj(), 10)),
            (1.0, "ADDED", versioned(web, 12)),
            (2.0, "MODIFIED", versioned(failed(web, message), 20)),
            (2.005, "MODIFIED", versioned(make_node("n1").capacity(cpu="4", memory="16Gi")
                                          .obj(), untainted_at)),
        ]

    records = audit_records(engine, audit_steps(engine, tmp_path, steps(15))["run"])
    web = one(records, "web")
    assert web["class"] == "unschedulableSame"
    assert web["laggingView"]["seenBeforeRecorded"] == ["update Node n1"]
    assert "committed before its write" in web["reason"]
    records = audit_records(engine, audit_steps(engine, tmp_path, steps(25),
                                                name="after")["run"])
    assert one(records, "web")["class"] == "unschedulableDifferent"


def test_a_pod_assumed_in_a_view_is_no_longer_nominated(engine: Engine, tmp_path: Path) -> None:
    # urgent, nominated to n1, was bound to n2 just before low's cycle (its binding recorded
    # just after low's): assumed on n2, its nomination no longer holds n1's room, and low
    # fits n1 (the emptier node).
    urgent = make_pod("urgent").req(cpu="3", memory="1Gi").priority(100).obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="16Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="4", memory="16Gi").obj()),
        (0.5, "ADDED", urgent),
        (1.0, "MODIFIED", failed(urgent, "0/2 nodes are available: 2 Insufficient cpu.",
                                 nominated="n1")),
        (1.5, "ADDED", make_pod("low").req(cpu="2", memory="1Gi").obj()),
        (2.0, "MODIFIED", bound("low", "n1", "2", "1Gi")),
        (2.001, "MODIFIED", {**failed(urgent, "0/2 nodes are available: 2 Insufficient cpu.",
                                      nominated="n1"),
                             "spec": {**urgent["spec"], "nodeName": "n2"}}),
    ]
    low = one(audit_records(engine, audit_steps(engine, tmp_path, steps)["run"]), "low")
    assert low["class"] == "agrees"
    assert low["laggingView"]["writesInFlight"] == ["bind default/urgent n2"]


def test_a_node_a_view_took_away_counts_with_its_topology_afterwards(engine: Engine,
                                                                     tmp_path: Path) -> None:
    # n2 is added 50 ms before x's binding to n1 is recorded: kaudit scores n2 higher, and the
    # view where the scheduler had not seen n2 yet explains the binding. The spreading of x
    # read the zones while n2 was out of that view; s, bound to n2 later, must find n2 in
    # zone-b again (not "missing required label").
    zone = "topology.kubernetes.io/zone"
    x = make_pod("x").labels(app="x").req(cpu="1", memory="1Gi") \
        .spread(zone, 1, "ScheduleAnyway", {"app": "x"}).obj()
    s = make_pod("s").labels(app="web").req(cpu="1", memory="1Gi") \
        .spread(zone, 1, "DoNotSchedule", {"app": "web"}).obj()
    n2 = make_node("n2").capacity(cpu="4", memory="8Gi").zone("zone-b").obj()
    steps: list[Step] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").zone("zone-a").obj()),
        (0.0, "ADDED", make_pod("web0").labels(app="web").req(cpu="1", memory="1Gi")
         .node("n1").obj()),
        (1.0, "ADDED", x),
        (2.0, "ADDED", n2),
        (2.05, "MODIFIED", {**x, "spec": {**x["spec"], "nodeName": "n1"}}),
        (3.0, "ADDED", s),
        (4.0, "MODIFIED", {**s, "spec": {**s["spec"], "nodeName": "n2"}}),
    ]
    records = audit_records(engine, audit_steps(engine, tmp_path, steps, window_s=0.1)["run"])
    assert one(records, "x")["laggingView"]["notSeen"] == ["add Node n2"]
    assert one(records, "s")["class"] == "agrees", one(records, "s")["reason"]
