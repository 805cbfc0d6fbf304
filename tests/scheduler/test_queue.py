"""The scheduling queue's rules (upstream v1.34): order, backoff from rejected attempts and
errors, aligned to whole seconds, unschedulable pods moved by queueing hints, popping from
backoffQ when activeQ is empty, and PreEnqueue gating."""

from __future__ import annotations

from typing import Any

from kaudit.framework.events import (
    EVENT_NODE_ADD,
    ClusterEvent,
    QueueingHint,
    parse_action,
    register,
)
from kaudit.model.pod import parse_pod
from kaudit.scheduler.queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    UNSCHEDULABLE,
    SchedulingQueue,
    hint_table,
)
from kaudit.tracegen.builders import make_pod

S = 1_000_000


class Fake:
    """A plugin that registers ``events`` with a fixed hint (None: no hint function)."""

    def __init__(self, name: str, *events: tuple[str, str, QueueingHint | None]) -> None:
        self.name = name
        self.registrations = [
            register(resource, action, None if hint is None
                     else (lambda pod, old, new, h=hint: h))
            for resource, action, hint in events]

    def events_to_register(self) -> list[Any]:
        return self.registrations


def queue(*plugins: Fake, transitions: list | None = None, gate: Any = None,
          pop_from_backoff: bool = True) -> SchedulingQueue:
    log = transitions if transitions is not None else []
    table = hint_table(plugins)
    return SchedulingQueue(lambda q: (-q.pod.priority, q.timestamp),
                           initial_backoff_us=1 * S, max_backoff_us=10 * S,
                           max_in_unschedulable_us=300 * S,
                           transition=lambda *args: log.append(args[2:]),
                           hints=lambda pod: table,
                           pre_enqueue=gate or (lambda pod: None),
                           pop_from_backoff=pop_from_backoff)


def pod(name: str, priority: int = 0):  # type: ignore[no-untyped-def]
    return parse_pod(make_pod(name).priority(priority).obj())


def event(resource: str, action: str) -> ClusterEvent:
    return ClusterEvent(resource, parse_action(action))


def test_priority_then_arrival_order() -> None:
    q = queue()
    q.add(0, pod("old-low"))
    q.add(1, pod("high", 10))
    q.add(2, pod("new-low"))
    assert [q.pop(5).pod.name for _ in range(3)] == ["high", "old-low", "new-low"]
    assert q.pop(5) is None and q.scheduling_cycle == 3


def test_backoff_doubles_up_to_the_maximum() -> None:
    q = queue()
    assert [q.backoff_duration(n) // S for n in range(0, 7)] == [0, 1, 2, 4, 8, 10, 10]


def test_a_rejected_pod_waits_until_a_hint_says_an_event_may_help() -> None:
    transitions: list = []
    fit = Fake("Fit", ("Node", "Add", QueueingHint.QUEUE),
               ("Pod", "Delete", QueueingHint.QUEUE_SKIP))
    q = queue(fit, transitions=transitions)
    q.add(0, pod("a"))
    first = q.pop(0)
    q.requeue(0, first, {"Fit"})
    assert first.where == UNSCHEDULABLE and first.unschedulable_count == 1
    q.move_for_event(S // 2, event("AssignedPod", "Delete"))  # the hint says QueueSkip
    assert first.where == UNSCHEDULABLE
    q.move_for_event(S // 2, EVENT_NODE_ADD)  # Queue, but still backing off
    assert first.where == BACKOFF
    assert ("unschedulable", "backoff", "NodeAdd") in transitions


def test_backoff_ends_at_the_whole_second_after_its_truncated_expiry() -> None:
    q = queue(pop_from_backoff=True)
    q.add(int(0.3 * S), pod("a"))
    queued = q.pop(int(0.3 * S))
    q.requeue(int(0.3 * S), queued, set())  # an error: no rejecting plugin
    assert queued.where == BACKOFF and queued.consecutive_errors == 1
    # 0.3 s + 1 s = 1.3 s, truncated to 1 s: still backing off at 1.9 s, free at 2 s.
    assert q.backoff_time(queued) == 1 * S and q.free_at(queued) == 2 * S
    q.flush_backoff(int(1.9 * S))
    assert queued.where == BACKOFF
    q.flush_backoff(2 * S)
    assert queued.where == ACTIVE


def test_rejections_and_errors_count_apart() -> None:
    q = queue(Fake("Fit", ("Node", "Add", None)))
    q.add(0, pod("a"))
    queued = q.pop(0)
    q.requeue(0, queued, {"Fit"})
    q.activate(0, queued.pod.uid)
    assert q.pop(0) is queued
    q.requeue(0, queued, {"Fit"})
    assert (queued.unschedulable_count, queued.consecutive_errors) == (2, 0)
    q.activate(0, queued.pod.uid)
    assert q.pop(0) is queued
    q.requeue(0, queued, ())
    assert (queued.unschedulable_count, queued.consecutive_errors) == (2, 1)
    assert q.backoff_duration(queued.consecutive_errors) == 1 * S


def test_an_empty_active_queue_pops_rejected_pods_from_backoff_early() -> None:
    q = queue(Fake("Fit", ("Node", "Add", QueueingHint.QUEUE)))
    q.add(0, pod("rejected"))
    q.add(0, pod("error"))
    rejected, error = q.pop(0), q.pop(0)
    q.requeue(0, rejected, {"Fit"})
    q.requeue(0, error, ())
    q.move_for_event(0, EVENT_NODE_ADD)
    assert rejected.where == BACKOFF and error.where == BACKOFF
    popped = q.pop(0)
    assert popped is rejected and q.popped_from_backoff == 1
    assert q.pop(0) is None  # a pod backing off after an error is never popped early
    without = queue(Fake("Fit", ("Node", "Add", QueueingHint.QUEUE)), pop_from_backoff=False)
    without.add(0, pod("r"))
    r = without.pop(0)
    without.requeue(0, r, {"Fit"})
    without.move_for_event(0, EVENT_NODE_ADD)
    assert r.where == BACKOFF and without.pop(0) is None


def test_a_rejector_without_a_matching_registration_skips_the_event() -> None:
    q = queue(Fake("Fit", ("Node", "Add", None)), Fake("Other", ("Pod", "Delete", None)))
    q.add(0, pod("a"))
    queued = q.pop(0)
    q.requeue(0, queued, {"Fit"})
    q.move_for_event(5 * S, event("AssignedPod", "Delete"))
    assert queued.where == UNSCHEDULABLE
    q.move_for_event(5 * S, EVENT_NODE_ADD)
    assert queued.where == ACTIVE  # no hint function means Queue; the backoff is over


def test_a_plugin_without_registrations_hears_every_event() -> None:
    class Silent:
        name = "Silent"

        def events_to_register(self) -> None:
            return None

    q = queue(Silent())  # type: ignore[arg-type]
    q.add(0, pod("a"))
    queued = q.pop(0)
    q.requeue(0, queued, {"Silent"})
    q.move_for_event(5 * S, event("StorageClass", "Add"))
    assert queued.where == ACTIVE


def test_unschedulable_timeout_flush() -> None:
    q = queue(Fake("NodeAffinity", ("Node", "Add", None)))
    q.add(0, pod("a"))
    queued = q.pop(0)
    q.requeue(0, queued, {"NodeAffinity"})
    q.flush_unschedulable(299 * S)
    assert queued.where == UNSCHEDULABLE
    q.flush_unschedulable(301 * S)
    assert queued.where == ACTIVE


def test_gated_pods_wait_for_their_gates() -> None:
    gates = Fake("SchedulingGates", ("Pod", "UpdatePodSchedulingGatesEliminated", None))
    q = queue(gates, gate=lambda p: "SchedulingGates" if p.scheduling_gates else None)
    gated = parse_pod(make_pod("g").gate("example.com/wait").obj())
    q.add(0, gated)
    assert q.pods[gated.uid].where == GATED and q.pop(0) is None
    assert q.pods[gated.uid].unschedulable_plugins == {"SchedulingGates"}
    q.move_for_event(1, EVENT_NODE_ADD)  # not an event the gating plugin registered
    assert q.pods[gated.uid].where == GATED
    lifted = parse_pod(make_pod("g").obj())
    q.update(5, gated, lifted, [event("UnschedulablePod", "UpdatePodSchedulingGatesEliminated")])
    assert q.pop(5).pod.name == "g"
