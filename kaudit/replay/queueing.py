"""The scheduling queue as the replay drives it: transitions logged, PreEnqueue gates asked,
and the queue's timers on the virtual clock.

The queue itself is :class:`~kaudit.scheduler.queue.SchedulingQueue`
(``pkg/scheduler/backend/queue/scheduling_queue.go``, Kubernetes v1.34). Its goroutines
become timers here: ``flushBackoffQCompleted`` every second (armed at the first tick that
finds a pod's backoff over) and ``flushUnschedulablePodsLeftover`` every 30 seconds from the
start (armed at the first tick that finds a pod waited longer than
``podMaxInUnschedulablePodsDuration``).
"""

from __future__ import annotations

from typing import Any

from kaudit.eventlog.records import RecordKind
from kaudit.eventlog.sink import EventSink
from kaudit.eventlog.timeline import NoTimeline, Timeline
from kaudit.model.pod import PodInfo
from kaudit.replay.clock import EventLoop, Priority
from kaudit.replay.options import SECOND, ReplayOptions
from kaudit.scheduler.queue import ACTIVE, BACKOFF, QueuedPod, SchedulingQueue
from kaudit.scheduler.schedule import Scheduler

UNSCHEDULABLE_FLUSH_US = 30 * SECOND


class QueueDriver:
    """Owns the replay's :class:`SchedulingQueue` (``queue``) and its hooks and timers."""

    def __init__(self, scheduler: Scheduler, loop: EventLoop, sink: EventSink,
                 timeline: Timeline | NoTimeline, options: ReplayOptions) -> None:
        self.scheduler = scheduler
        self.loop = loop
        self.sink = sink
        self.timeline = timeline
        self.options = options
        #: The first instant of the replay, from which the unschedulable flush ticks.
        self.start_us: int | None = None
        #: The PreEnqueue plugin holding each gated pod back, and its message.
        self._gated_by: dict[str, tuple[str, str]] = {}
        self._backoff_flushes: set[int] = set()
        #: Pods tried once and given up (``one_try``), still pending.
        self.given_up: dict[str, PodInfo] = {}
        self.hint_tables = scheduler.hint_tables()
        self.queue = SchedulingQueue(
            sort_key=scheduler.queue_sort_key() or (lambda q: (-q.pod.priority, q.timestamp)),
            initial_backoff_us=options.initial_backoff_us,
            max_backoff_us=options.max_backoff_us,
            max_in_unschedulable_us=options.max_in_unschedulable_us,
            transition=self._transition,
            hints=lambda pod: self.hint_tables.get(pod.scheduler_name),
            pre_enqueue=self._gate,
            pop_from_backoff=scheduler.feature_gates.enabled("SchedulerPopFromBackoffQ"),
            on_backoff=self._arm_backoff_flush)

    def _transition(self, now: int, pod: PodInfo, source: str, target: str, event: str
                    ) -> None:
        data: dict[str, Any] = {"from": source, "to": target, "event": event}
        gate = self._gated_by.get(pod.uid) if target == "gated" else None
        if gate is not None and gate[0] != "SchedulingGates":
            # Which PreEnqueue holds the pod back, and why (scheduling gates are in the spec).
            data["gate"], data["reason"] = gate
        self.sink.record(now, RecordKind.QUEUE, pod.key, None, data)
        self.timeline.queue(now, pod, source, target)

    def _gate(self, pod: PodInfo) -> str | None:
        framework = self.scheduler.framework_for(pod)
        if framework is None:
            return None
        status = framework.run_pre_enqueue(pod)
        if status.ok:
            self._gated_by.pop(pod.uid, None)
            return None
        self._gated_by[pod.uid] = (status.plugin or "PreEnqueue", status.message)
        return status.plugin or "PreEnqueue"

    def give_up(self, queued: QueuedPod) -> None:
        """``one_try``: the pod failed its one attempt and stays pending, out of the queue."""
        self.queue.give_up(self.loop.now_us, queued)
        self.given_up[queued.pod.uid] = queued.pod

    def retries_pending(self, version: tuple[int, int]) -> bool:
        """Pods in activeQ or backoffQ that may fare differently when tried again (a preemptor
        waiting for its backoff, say). Pods in unschedulablePods would only be retried by
        their periodic flush, and pods that already failed against the current state
        (``version``) would fail again: neither keeps a finished trace going."""
        return any(q.where in (ACTIVE, BACKOFF) and q.failed_at != version
                   for q in self.queue.pods.values())

    def _arm_backoff_flush(self, free_at: int) -> None:
        """The once-a-second backoff flush that first finds the pod's backoff over."""
        if free_at not in self._backoff_flushes:
            self._backoff_flushes.add(free_at)
            self.loop.at(free_at, Priority.TIMER, lambda: self._flush_backoff(free_at))

    def _flush_backoff(self, tick: int) -> None:
        self._backoff_flushes.discard(tick)
        self.queue.flush_backoff(self.loop.now_us)

    def arm_unschedulable_flush(self, queued: QueuedPod) -> None:
        """The 30-second flush of unschedulablePods that first finds the pod waited longer
        than ``podMaxInUnschedulablePodsDuration`` (it runs every 30 s from the start)."""
        start = self.start_us or 0
        due = queued.timestamp + self.options.max_in_unschedulable_us + 1
        tick = start + -(-(due - start) // UNSCHEDULABLE_FLUSH_US) * UNSCHEDULABLE_FLUSH_US
        self.loop.at(tick, Priority.TIMER,
                     lambda: self.queue.flush_unschedulable(self.loop.now_us))
