"""The scheduling queue's rules: order, backoff, unschedulable pods and moves."""

from __future__ import annotations

from kaudit.model.pod import parse_pod
from kaudit.replay.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE, SchedulingQueue
from kaudit.tracegen.builders import make_pod

S = 1_000_000


def queue(transitions: list | None = None) -> SchedulingQueue:
    log = transitions if transitions is not None else []
    return SchedulingQueue(lambda q: (-q.pod.priority, q.timestamp),
                           initial_backoff_us=1 * S, max_backoff_us=10 * S,
                           max_in_unschedulable_us=300 * S,
                           transition=lambda *args: log.append(args[2:]))


def pod(name: str, priority: int = 0):  # type: ignore[no-untyped-def]
    return parse_pod(make_pod(name).priority(priority).obj())


def test_priority_then_arrival_order() -> None:
    q = queue()
    q.add(0, pod("old-low"), None)
    q.add(1, pod("high", 10), None)
    q.add(2, pod("new-low"), None)
    assert [q.pop(5).pod.name for _ in range(3)] == ["high", "old-low", "new-low"]
    assert q.pop(5) is None and q.scheduling_cycle == 3


def test_backoff_doubles_up_to_the_maximum() -> None:
    q = queue()
    assert [q.backoff_duration(n) // S for n in range(0, 7)] == [0, 1, 2, 4, 8, 10, 10]


def test_failed_pods_wait_unless_a_move_request_came_in_their_cycle() -> None:
    transitions: list = []
    q = queue(transitions)
    q.add(0, pod("a"), None)
    first = q.pop(0)
    q.requeue(0, first, {"NodeResourcesFit"})
    assert first.where == UNSCHEDULABLE
    q.move_for_event(2 * S, "NodeAdd", lambda queued: True)
    assert first.where == ACTIVE  # its 1 s backoff is over
    second = q.pop(2 * S)
    q.move_for_event(2 * S, "PodDelete", lambda queued: False)  # during its cycle
    q.requeue(2 * S, second, {"NodeResourcesFit"})
    assert second.where == BACKOFF and second.backoff_expiry == 4 * S
    q.flush_backoff(3 * S)
    assert second.where == BACKOFF
    q.flush_backoff(4 * S)
    assert second.where == ACTIVE
    assert ("active", "in-flight", "Pop") in transitions


def test_pods_without_rejecting_plugins_back_off() -> None:
    q = queue()
    q.add(0, pod("err"), None)
    queued = q.pop(0)
    q.requeue(0, queued, set(), error=True)
    assert queued.where == BACKOFF


def test_unschedulable_timeout_flush() -> None:
    q = queue()
    q.add(0, pod("a"), None)
    queued = q.pop(0)
    q.requeue(0, queued, {"NodeAffinity"})
    q.flush_unschedulable(299 * S)
    assert queued.where == UNSCHEDULABLE
    q.flush_unschedulable(301 * S)
    assert queued.where == ACTIVE


def test_gated_pods_wait_for_their_gates() -> None:
    q = queue()
    gated = parse_pod(make_pod("g").gate("example.com/wait").obj())
    q.add(0, gated, "SchedulingGates")
    assert q.pods[gated.uid].where == GATED and q.pop(0) is None
    q.update(5, parse_pod(make_pod("g").obj()), None)
    assert q.pop(5).pod.name == "g"
