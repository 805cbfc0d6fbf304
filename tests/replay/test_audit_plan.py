"""The audit's pre-pass (kaudit/replay/audit_plan.py): which recorded events are scheduling
decisions, what each carries, and the moment at which it is judged."""

from __future__ import annotations

from typing import Any

from kaudit.replay.audit_plan import (
    BIND,
    LINK_WINDOW_US,
    NODE_NAME,
    PREEMPTION,
    UNSCHEDULABLE,
    RecordedDecision,
    plan_decisions,
)
from kaudit.store.traces import StoredEvent
from kaudit.tracegen.builders import make_node, make_pod

Step = tuple[float, str, dict[str, Any]]
START_US = 1_767_603_600_000_000


def stored(*steps: Step) -> list[StoredEvent]:
    """``(seconds, type, object)`` steps as a stored trace's events, numbered in order."""
    events = []
    for seq, (seconds, kind, obj) in enumerate(steps):
        metadata = obj.get("metadata") or {}
        events.append(StoredEvent(seq, START_US + round(seconds * 1_000_000), kind,
                                  obj["kind"], metadata.get("namespace") or "",
                                  metadata["name"], obj))
    return events


def failed(pod: dict[str, Any], message: str, reason: str = "Unschedulable",
           nominated: str | None = None) -> dict[str, Any]:
    """``pod`` with a PodScheduled=False condition (and a nomination)."""
    status = {**pod["status"], "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}]}
    if nominated is not None:
        status["nominatedNodeName"] = nominated
    return {**pod, "status": status}


def preempted(pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` with upstream's DisruptionTarget condition of a preemption victim."""
    return {**pod, "status": {**pod["status"], "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
         "message": "default-scheduler: preempting to accommodate a higher priority pod"}]}}


def failed_scheduling_event(pod: str, message: str, *, events_api: bool = False
                            ) -> dict[str, Any]:
    """A FailedScheduling Event about ``default/pod`` (core/v1, or events.k8s.io/v1)."""
    about = {"kind": "Pod", "namespace": "default", "name": pod}
    if events_api:
        return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": f"{pod}.1", "namespace": "default"},
                "reason": "FailedScheduling", "regarding": about, "note": message}
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod}.1", "namespace": "default"},
            "reason": "FailedScheduling", "involvedObject": about, "message": message}


def by_pod(decisions: list[RecordedDecision]) -> dict[str, list[RecordedDecision]]:
    grouped: dict[str, list[RecordedDecision]] = {}
    for decision in decisions:
        grouped.setdefault(decision.pod, []).append(decision)
    return grouped


def test_bindings_failures_and_created_bound_pods_are_decisions() -> None:
    pending = make_pod("web").req(cpu="1").obj()
    gated = make_pod("gated").gate("example.com/hold").obj()
    events = stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (0.0, "ADDED", make_pod("initial").node("n1").obj()),          # 1: initial state
        (1.0, "ADDED", pending),                                        # 2
        (1.5, "MODIFIED", failed(pending, "0/1 nodes are available: A.")),  # 3
        (1.6, "MODIFIED", failed(pending, "0/1 nodes are available: A.")),  # 4: unchanged
        (1.7, "MODIFIED", failed(pending, "0/1 nodes are available: B.")),  # 5: new message
        (2.0, "MODIFIED", make_pod("web").req(cpu="1").node("n1").obj()),   # 6: bound
        (3.0, "ADDED", make_pod("static").node("n1").obj()),             # 7: nodeName
        (4.0, "MODIFIED", make_pod("late").node("n1").obj()),            # 8: first seen bound
        (5.0, "ADDED", gated),                                           # 9
        (5.5, "MODIFIED", failed(gated, "waiting for scheduling gates: [example.com/hold]",
                                 reason="SchedulingGated")),             # 10: not a decision
    )
    plan = plan_decisions(events)
    pods = by_pod(plan.decisions)

    assert "default/initial" not in pods and "default/gated" not in pods
    web = pods["default/web"]
    assert [(d.kind, d.seq, d.message, d.node) for d in web] == [
        (UNSCHEDULABLE, 3, "0/1 nodes are available: A.", None),
        (UNSCHEDULABLE, 5, "0/1 nodes are available: B.", None),
        (BIND, 6, None, "n1")]
    assert [d.moment_seq for d in web] == [3, 5, 6]
    assert web[0].uid == pending["metadata"]["uid"] and web[0].source == "condition"
    (static,) = pods["default/static"]
    assert (static.kind, static.node, static.seq) == (NODE_NAME, "n1", 7)
    (late,) = pods["default/late"]
    assert (late.kind, late.node, late.first_seen_bound) == (BIND, "n1", True)
    assert not web[-1].first_seen_bound
    assert [d.seq for d in plan.decisions] == [3, 5, 6, 7, 8]


def test_failed_scheduling_events_count_only_for_pods_whose_status_is_not_recorded() -> None:
    shown = make_pod("shown").req(cpu="64").obj()
    events = stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (1.0, "ADDED", make_pod("silent").req(cpu="64").obj()),
        (1.0, "ADDED", shown),
        (2.0, "ADDED", failed_scheduling_event("silent", "0/1 nodes are available: core.")),
        (2.0, "MODIFIED", failed(shown, "0/1 nodes are available: status.")),
        (2.5, "ADDED", failed_scheduling_event("shown", "0/1 nodes are available: ignored.")),
        (3.0, "ADDED", failed_scheduling_event("silent", "0/1 nodes are available: new.",
                                               events_api=True)),
    )
    pods = by_pod(plan_decisions(events).decisions)

    assert [(d.kind, d.source, d.message, d.seq) for d in pods["default/silent"]] == [
        (UNSCHEDULABLE, "event", "0/1 nodes are available: core.", 3),
        (UNSCHEDULABLE, "event", "0/1 nodes are available: new.", 6)]
    assert [(d.source, d.message) for d in pods["default/shown"]] == [
        ("condition", "0/1 nodes are available: status.")]


def _preemption_steps(victim_delay: float) -> list[Step]:
    urgent = make_pod("urgent").req(cpu="1").priority(1000).obj()
    low = make_pod("low").req(cpu="1500m").priority(10).node("n1").obj()
    far = make_pod("far").req(cpu="1500m").priority(10).node("n1").obj()
    other = make_pod("other").req(cpu="1500m").priority(10).node("n2").obj()
    return [
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", make_node("n2").capacity(cpu="2", memory="4Gi").obj()),
        (0.0, "ADDED", low),                                                   # 2
        (0.0, "ADDED", other),                                                 # 3
        (0.0, "ADDED", far),                                                   # 4
        (1.0, "ADDED", urgent),                                                # 5
        (2.0, "MODIFIED", preempted(low)),                                     # 6: victim
        (2.0, "MODIFIED", preempted(other)),                                   # 7: other node
        (2.001, "MODIFIED", failed(urgent, "0/2 nodes are available: 2 Insufficient cpu.",
                                   nominated="n1")),                           # 8: nomination
        (2.5, "DELETED", preempted(low)),                                      # 9
        (2.001 + victim_delay, "DELETED", preempted(far)),                     # 10
    ]


def test_a_nomination_is_a_preemption_with_the_victims_of_its_node_nearest_in_time() -> None:
    plan = plan_decisions(stored(*_preemption_steps(victim_delay=5.0)))
    (decision,) = by_pod(plan.decisions)["default/urgent"]

    assert (decision.kind, decision.node, decision.seq) == (PREEMPTION, "n1", 8)
    assert decision.message == "0/2 nodes are available: 2 Insufficient cpu."
    # low's condition (seq 6) and far's deletion carrying the condition (seq 10), not
    # other's (another node); judged before the first of them.
    assert decision.victims == ["default/low", "default/far"]
    assert decision.victim_seqs == [6, 10]
    assert decision.moment_seq == 6


def test_a_victim_beyond_the_link_window_is_not_linked() -> None:
    delay = LINK_WINDOW_US / 1_000_000 + 1.0
    (decision,) = by_pod(plan_decisions(stored(*_preemption_steps(delay))).decisions)[
        "default/urgent"]

    assert decision.victims == ["default/low"]


def _two_bindings_at(seconds_a: float, seconds_b: float) -> list[StoredEvent]:
    return stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (1.0, "ADDED", make_pod("a").req(cpu="1").obj()),                   # 1
        (1.0, "ADDED", make_pod("b").req(cpu="1").obj()),                   # 2
        (seconds_a, "MODIFIED", make_pod("a").req(cpu="1").node("n1").obj()),  # 3
        (seconds_b, "MODIFIED", make_pod("b").req(cpu="1").node("n1").obj()),  # 4
    )


def test_a_decision_is_judged_just_before_its_own_event() -> None:
    plan = plan_decisions(_two_bindings_at(2.0, 2.0))
    moments = {d.pod: d.moment_seq for d in plan.decisions}

    # b's binding comes after a's at the same instant: b's moment is after a's binding.
    assert moments == {"default/a": 3, "default/b": 4}


def test_latency_moves_the_moment_before_the_events_within_it() -> None:
    plan = plan_decisions(_two_bindings_at(2.0, 2.05), latency_us=100_000)
    moments = {d.pod: d.moment_seq for d in plan.decisions}

    # b: just after the last event at or before 2.05 - 0.1 s, i.e. before a's binding.
    assert moments == {"default/a": 3, "default/b": 3}
    assert plan.latency_us == 100_000
    # A latency shorter than the gap changes nothing.
    short = plan_decisions(_two_bindings_at(2.0, 2.05), latency_us=40_000)
    assert {d.pod: d.moment_seq for d in short.decisions} == {"default/a": 3,
                                                              "default/b": 4}


def test_latency_never_moves_a_decision_before_the_pods_previous_event() -> None:
    events = stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (1.0, "ADDED", make_pod("other").req(cpu="1").obj()),               # 1
        (1.9, "ADDED", make_pod("quick").req(cpu="1").obj()),               # 2
        (2.0, "MODIFIED", make_pod("quick").req(cpu="1").node("n1").obj()),  # 3
    )
    (decision,) = plan_decisions(events, latency_us=1_500_000).decisions

    # 2.0 - 1.5 s would be before "other" was created; the pod itself appeared at seq 2.
    assert decision.moment_seq == 3 == decision.floor_seq


def test_due_hands_each_decision_out_once_in_moment_order() -> None:
    plan = plan_decisions(_two_bindings_at(2.0, 2.05), latency_us=100_000)

    assert plan.due(2) == []
    assert [d.pod for d in plan.due(3)] == ["default/a", "default/b"]
    assert plan.due(4) == []


def test_writes_recorded_within_the_window_after_a_decision_are_in_flight() -> None:
    urgent = make_pod("urgent").req(cpu="1").priority(1000).obj()
    events = stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (1.0, "ADDED", make_pod("a").req(cpu="1").obj()),                       # 1
        (1.0, "ADDED", make_pod("b").req(cpu="1").obj()),                       # 2
        (1.0, "ADDED", urgent),                                                 # 3
        (2.0, "MODIFIED", make_pod("a").req(cpu="1").node("n1").obj()),         # 4
        (2.004, "MODIFIED", failed(urgent, "0/1 nodes are available: x.",
                                   nominated="n1")),                            # 5
        (2.009, "MODIFIED", make_pod("b").req(cpu="1").node("n1").obj()),       # 6
        (2.03, "MODIFIED", make_pod("urgent").req(cpu="1").node("n1").obj()),   # 7
    )
    plan = plan_decisions(events, window_us=10_000)
    in_flight = {(d.pod, d.kind): d.in_flight for d in plan.decisions}

    assert plan.window_us == 10_000
    # a's binding: urgent's nomination and b's binding follow within 10 ms; urgent's
    # binding (30 ms later) does not.
    assert in_flight[("default/a", BIND)] == [(PREEMPTION, "default/urgent", "n1"),
                                              (BIND, "default/b", "n1")]
    assert in_flight[("default/urgent", PREEMPTION)] == [(BIND, "default/b", "n1")]
    assert in_flight[("default/b", BIND)] == []
    assert plan_decisions(events).decisions[0].in_flight == []


def test_bindings_of_the_window_are_ordered_as_the_scheduling_queue_pops_them() -> None:
    def pod(name: str, priority: int) -> Any:
        return make_pod(name).req(cpu="1").priority(priority)
    events = stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="8", memory="8Gi").obj()),
        (1.0, "ADDED", pod("a", 0).obj()),
        (1.0, "ADDED", pod("b", 0).obj()),
        (1.001, "ADDED", pod("high", 100).obj()),
        (1.002, "ADDED", pod("retried", 0).obj()),
        (1.5, "MODIFIED", failed(pod("retried", 0).obj(), "0/1 nodes are available: x.")),
        (1.6, "ADDED", pod("gated", 0).gate("example.com/wait").obj()),
        (1.7, "MODIFIED", pod("gated", 0).obj()),
        (2.0, "MODIFIED", pod("high", 100).node("n1").obj()),
        (2.001, "MODIFIED", pod("b", 0).node("n1").obj()),
        (2.002, "MODIFIED", pod("a", 0).node("n1").obj()),
        (2.003, "MODIFIED", pod("retried", 0).node("n1").obj()),
        (2.0031, "MODIFIED", pod("gated", 0).node("n1").obj()),
        (2.0035, "ADDED", pod("late", 1000).obj()),
        (2.004, "MODIFIED", pod("late", 1000).node("n1").obj()),
    )
    plan = plan_decisions(events, window_us=10_000)
    by_pod = {d.pod: d for d in plan.decisions if d.kind == BIND}

    # The higher priority first; then by creation (a before b).
    high_key, a_key = by_pod["default/high"].queue_key, by_pod["default/a"].queue_key
    assert high_key is not None and a_key is not None
    assert (high_key[0], high_key[1] - a_key[1], a_key[0]) == (-100, 1_000, 0)
    assert by_pod["default/high"].queued_after == []
    assert by_pod["default/high"].queued_before == []
    assert by_pod["default/b"].queued_after == []
    assert by_pod["default/b"].queued_before == [(BIND, "default/a", "n1")]
    assert by_pod["default/a"].queued_after == ["default/b"]
    assert by_pod["default/a"].queued_before == []
    # A pod that failed, or was gated, joined the queue again when an event moved it: the
    # recording does not say when, so its binding is in no queue order.
    for pod_key in ("default/retried", "default/gated"):
        assert by_pod[pod_key].queue_key is None
        assert by_pod[pod_key].queued_after == by_pod[pod_key].queued_before == []
    # late, of the highest priority, joined the queue after a's binding was recorded.
    assert by_pod["default/late"].queued_after == []
    assert all((BIND, "default/late", "n1") not in d.queued_before for d in by_pod.values())
    # Without a window, no order is linked.
    assert all(not d.queued_before and not d.queued_after
               for d in plan_decisions(events).decisions)

def test_two_preemptions_on_one_node_each_take_their_own_burst_of_victims() -> None:
    """Async preemption: each preemptor's victims go together (a burst), but a burst may
    come before its preemptor's nomination is written and after the next one's; bursts and
    nominations are paired one to one, nearest first, and a victim both could claim (within
    the window) is shared."""
    first = make_pod("first").req(cpu="1").priority(1000).obj()
    second = make_pod("second").req(cpu="1").priority(1000).obj()
    v1, v2 = (make_pod(name).req(cpu="1").priority(1).node("n1").obj() for name in ("v1", "v2"))
    w1 = make_pod("w1").req(cpu="1").priority(1).node("n1").obj()
    events = stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="3", memory="4Gi").obj()),
        (0.0, "ADDED", v1), (0.0, "ADDED", v2), (0.0, "ADDED", w1),           # 1-3
        (1.0, "ADDED", first), (1.0, "ADDED", second),                        # 4-5
        (1.0100, "MODIFIED", preempted(v1)),                                  # 6: first's burst
        (1.0101, "MODIFIED", preempted(v2)),                                  # 7
        (1.0110, "MODIFIED", failed(first, "0/1 nodes are available: 1 Insufficient cpu.",
                                    nominated="n1")),                         # 8
        (1.0120, "MODIFIED", preempted(w1)),                                  # 9: second's
        (1.0150, "MODIFIED", failed(second, "0/1 nodes are available: 1 Insufficient cpu.",
                                    nominated="n1")),                         # 10
    )
    by = by_pod(plan_decisions(events, window_us=2_000).decisions)
    (one,) = by["default/first"]
    (two,) = by["default/second"]

    assert (one.victims, one.moment_seq) == (["default/v1", "default/v2"], 6)
    # w1 comes after first's nomination (the latest before it) but first already has its
    # burst: w1 is second's, judged before it.
    assert (two.victims, two.moment_seq) == (["default/w1"], 9)
    # Within 2 ms of one nomination only: not shared; with a wider window it is.
    assert (one.shared_victims, two.shared_victims) == ([], [])
    wide = by_pod(plan_decisions(events, window_us=10_000).decisions)
    assert "default/w1" in wide["default/first"][0].shared_victims


def test_a_victim_recorded_seconds_before_a_nomination_is_an_earlier_preemptions() -> None:
    """first's preemption writes v1's condition with its nomination and v2's half a second
    later (async preemption's API calls); second is nominated to n1 four seconds later with
    no new victim (it takes pods already preempted). v2 is first's: a preemption's victims
    are never written seconds before its nomination."""
    first = make_pod("first").req(cpu="2").priority(1000).obj()
    second = make_pod("second").req(cpu="1").priority(1000).obj()
    v1, v2 = (make_pod(name).req(cpu="1").priority(1).node("n1").obj() for name in ("v1", "v2"))
    events = stored(
        (0.0, "ADDED", make_node("n1").capacity(cpu="3", memory="4Gi").obj()),
        (0.0, "ADDED", v1), (0.0, "ADDED", v2),                               # 1-2
        (1.0, "ADDED", first), (1.0, "ADDED", second),                        # 3-4
        (2.0, "MODIFIED", preempted(v1)),                                     # 5
        (2.001, "MODIFIED", failed(first, "0/1 nodes are available: 1 Insufficient cpu.",
                                   nominated="n1")),                          # 6
        (2.5, "MODIFIED", preempted(v2)),                                     # 7: slow
        (6.5, "MODIFIED", failed(second, "0/1 nodes are available: 1 Insufficient cpu.",
                                 nominated="n1")),                            # 8
    )
    by = by_pod(plan_decisions(events).decisions)

    assert by["default/first"][0].victims == ["default/v1", "default/v2"]
    assert by["default/second"][0].victims == []


def test_the_queue_order_follows_resource_versions_when_every_creation_has_one() -> None:
    # An audit log stamps creations by when they were received; two received together may
    # commit (and reach the scheduler's informer) in the other order.
    def pod(name: str, version: str | None) -> dict[str, Any]:
        obj = make_pod(name).req(cpu="1").obj()
        if version is not None:
            obj["metadata"]["resourceVersion"] = version
        return obj

    def events(b_version: str | None) -> list[StoredEvent]:
        return stored(
            (0.0, "ADDED", make_node("n1").capacity(cpu="8", memory="8Gi").obj()),
            (1.000, "ADDED", pod("a", "12")),
            (1.001, "ADDED", pod("b", b_version)),
            (2.000, "MODIFIED", {**pod("a", "20"), "spec": {**pod("a", None)["spec"],
                                                            "nodeName": "n1"}}),
            (2.001, "MODIFIED", {**pod("b", "21"), "spec": {**pod("b", None)["spec"],
                                                            "nodeName": "n1"}}),
        )

    by_pod = {d.pod: d for d in plan_decisions(events("11"), window_us=10_000).decisions}
    assert by_pod["default/a"].queued_before == [(BIND, "default/b", "n1")]
    assert by_pod["default/b"].queued_after == ["default/a"]
    # One creation without a resourceVersion: the times decide, for every pod (a, then b,
    # as bound).
    plan = plan_decisions(events(None), window_us=10_000)
    assert all(not d.queued_before and not d.queued_after for d in plan.decisions)
