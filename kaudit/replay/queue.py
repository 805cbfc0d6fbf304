"""The scheduling queue: activeQ, backoffQ and unschedulablePods, as upstream's PriorityQueue.

Mirrors ``pkg/scheduler/backend/queue/scheduling_queue.go`` (Kubernetes v1.34):

* activeQ is ordered by the QueueSort plugin (PrioritySort: priority, then the time the pod
  was last added to the queue); a pod's timestamp is refreshed after each failed attempt;
* after a failed attempt a pod goes to backoffQ when a move request arrived during or after its
  scheduling cycle (or it failed with an error), otherwise to unschedulablePods;
* backoff is ``initial * 2^(attempts-1)`` capped at ``max``; backoffQ is flushed every second,
  unschedulablePods every 30 s for pods waiting longer than ``podMaxInUnschedulablePodsDuration``;
* cluster events move an unschedulable pod when one of the plugins that rejected it registered
  that event (``EventsToRegister``) — to backoffQ while it is still backing off, else activeQ;
* pods failing PreEnqueue (scheduling gates) wait, gated, until an update lets them in.

Differences, on purpose: queueing-hint functions are approximated by the events each plugin
registers (a hint can only ever keep a pod back that this lets through), and
``SchedulerPopFromBackoffQ``'s popping from backoffQ when activeQ is empty is not modelled,
because with zero-time scheduling it would retry a pod at the same instant it failed.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kaudit.model.pod import PodInfo

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in-flight"
NONE = "none"

Transition = Callable[[int, PodInfo, str, str, str], None]


@dataclass
class QueuedPod:
    pod: PodInfo
    timestamp: int
    attempts: int = 0
    initial_attempt_us: int | None = None
    unschedulable_plugins: frozenset[str] = frozenset()
    gating_plugin: str = ""
    backoff_expiry: int = 0
    cycle: int = 0
    where: str = NONE
    version: int = field(default=0)
    #: The replay's state version when the pod last failed: a retry at the same version
    #: would fail again (see ``Replay._retries_pending``).
    failed_at: object = None


class SchedulingQueue:
    def __init__(self, sort_key: Callable[[QueuedPod], tuple[int, int]], *,
                 initial_backoff_us: int, max_backoff_us: int,
                 max_in_unschedulable_us: int, transition: Transition) -> None:
        self.sort_key = sort_key
        self.initial_backoff_us = initial_backoff_us
        self.max_backoff_us = max_backoff_us
        self.max_in_unschedulable_us = max_in_unschedulable_us
        self.transition = transition
        self.pods: dict[str, QueuedPod] = {}
        #: The pods in unschedulablePods, so cluster events touch only them.
        self.unschedulable: dict[str, QueuedPod] = {}
        self._active: list[tuple[tuple[int, int], int, str, int]] = []
        self._backoff: list[tuple[int, int, str, int]] = []
        self._seq = itertools.count()
        self.scheduling_cycle = 0
        self.move_request_cycle = -1

    # ------------------------------------------------------------------ placement

    def _move(self, now: int, queued: QueuedPod, where: str, event: str) -> None:
        previous = queued.where
        if previous == UNSCHEDULABLE:
            self.unschedulable.pop(queued.pod.uid, None)
        if where == UNSCHEDULABLE:
            self.unschedulable[queued.pod.uid] = queued
        queued.where = where
        queued.version += 1
        if where == ACTIVE:
            heapq.heappush(self._active, (self.sort_key(queued), next(self._seq),
                                          queued.pod.uid, queued.version))
        elif where == BACKOFF:
            heapq.heappush(self._backoff, (queued.backoff_expiry, next(self._seq),
                                           queued.pod.uid, queued.version))
        if previous != where:
            self.transition(now, queued.pod, previous, where, event)

    def backoff_duration(self, attempts: int) -> int:
        if attempts <= 0:
            return 0
        duration = self.initial_backoff_us
        for _ in range(attempts - 1):
            duration *= 2
            if duration > self.max_backoff_us:
                return self.max_backoff_us
        return min(duration, self.max_backoff_us)

    def backing_off(self, queued: QueuedPod, now: int) -> bool:
        return queued.backoff_expiry > now

    def add(self, now: int, pod: PodInfo, gate: str | None, event: str = "PodAdd") -> None:
        """A new pending pod: activeQ, or gated when a PreEnqueue plugin (``gate``) says so."""
        queued = QueuedPod(pod, now)
        self.pods[pod.uid] = queued
        if gate:
            queued.gating_plugin = gate
            self._move(now, queued, GATED, event)
        else:
            self._move(now, queued, ACTIVE, event)

    def update(self, now: int, pod: PodInfo, gate: str | None) -> None:
        """A pending pod changed: refresh it; a gated pod is let in once its gates are gone."""
        queued = self.pods.get(pod.uid)
        if queued is None:
            return
        queued.pod = pod
        if queued.where == GATED and not gate:
            queued.gating_plugin = ""
            self._move(now, queued, ACTIVE, "PodUpdate")
        elif queued.where == GATED:
            queued.gating_plugin = gate or queued.gating_plugin
        elif queued.where == UNSCHEDULABLE:
            self._activate_or_backoff(now, queued, "PodUpdate")
        elif queued.where == ACTIVE:
            self._move(now, queued, ACTIVE, "PodUpdate")

    def delete(self, now: int, uid: str, event: str = "PodDelete") -> QueuedPod | None:
        queued = self.pods.pop(uid, None)
        self.unschedulable.pop(uid, None)
        if queued is not None and queued.where != NONE:
            previous = queued.where
            queued.where = NONE
            queued.version += 1
            self.transition(now, queued.pod, previous, NONE, event)
        return queued

    # ------------------------------------------------------------------ popping

    def pop(self, now: int) -> QueuedPod | None:
        while self._active:
            _, _, uid, version = heapq.heappop(self._active)
            queued = self.pods.get(uid)
            if queued is None or queued.version != version or queued.where != ACTIVE:
                continue
            self.scheduling_cycle += 1
            queued.cycle = self.scheduling_cycle
            queued.attempts += 1
            if queued.initial_attempt_us is None:
                queued.initial_attempt_us = now
            previous = queued.where
            queued.where = IN_FLIGHT
            queued.version += 1
            self.transition(now, queued.pod, previous, IN_FLIGHT, "Pop")
            return queued
        return None

    def has_active(self) -> bool:
        return any(self.pods.get(uid) is not None and self.pods[uid].version == version
                   for _, _, uid, version in self._active)

    def done(self, now: int, queued: QueuedPod) -> None:
        """The pod was scheduled: it leaves the queue."""
        self.pods.pop(queued.pod.uid, None)
        previous = queued.where
        queued.where = NONE
        self.transition(now, queued.pod, previous, NONE, "Scheduled")

    def requeue(self, now: int, queued: QueuedPod, rejecting: Iterable[str],
                error: bool = False) -> None:
        """``AddUnschedulableIfNotPresent`` after a failed attempt."""
        if queued.pod.uid not in self.pods:
            return
        queued.timestamp = now
        queued.unschedulable_plugins = frozenset(rejecting)
        queued.backoff_expiry = now + self.backoff_duration(queued.attempts)
        if error or not queued.unschedulable_plugins or \
                self.move_request_cycle >= queued.cycle:
            self._move(now, queued, BACKOFF, "ScheduleAttemptFailure")
        else:
            self._move(now, queued, UNSCHEDULABLE, "ScheduleAttemptFailure")

    # ------------------------------------------------------------------ moving

    def _activate_or_backoff(self, now: int, queued: QueuedPod, event: str) -> None:
        if self.backing_off(queued, now):
            self._move(now, queued, BACKOFF, event)
        else:
            self._move(now, queued, ACTIVE, event)

    def move_for_event(self, now: int, event: str,
                       interested: Callable[[QueuedPod], bool]) -> None:
        """``MoveAllToActiveOrBackoffQueue`` for a cluster event."""
        self.move_request_cycle = self.scheduling_cycle
        for queued in list(self.unschedulable.values()):
            if interested(queued):
                self._activate_or_backoff(now, queued, event)

    def flush_backoff(self, now: int) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, _, uid, version = heapq.heappop(self._backoff)
            queued = self.pods.get(uid)
            if queued is None or queued.version != version or queued.where != BACKOFF:
                continue
            self._move(now, queued, ACTIVE, "BackoffComplete")

    def flush_unschedulable(self, now: int) -> None:
        for queued in list(self.unschedulable.values()):
            if now - queued.timestamp > self.max_in_unschedulable_us:
                self._activate_or_backoff(now, queued, "UnschedulableTimeout")

    def next_backoff_expiry(self) -> int | None:
        while self._backoff:
            expiry, _, uid, version = self._backoff[0]
            queued = self.pods.get(uid)
            if queued is not None and queued.version == version and queued.where == BACKOFF:
                return expiry
            heapq.heappop(self._backoff)
        return None

    def counts(self) -> dict[str, int]:
        counts = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
        for queued in self.pods.values():
            if queued.where in counts:
                counts[queued.where] += 1
        return counts
