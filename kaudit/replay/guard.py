"""The replay's progress guard: the work budget of one virtual instant, and the heartbeat tick.

Every pod's retry waits for a backoff of at least a second, so a healthy replay does a bounded
amount of work per pod at one instant; the budget (timer steps and scheduling attempts) is
generous and only a cycle that never lets the clock advance can exhaust it — then the replay
stops with :class:`~kaudit.errors.ReplayStalledError` instead of spinning for ever.
"""

from __future__ import annotations

from collections.abc import Callable

from kaudit.cluster.state import ClusterState
from kaudit.errors import ReplayStalledError
from kaudit.model.timestamps import format_timestamp
from kaudit.scheduler.queue import SchedulingQueue

INSTANT_WORK_BASE = 100_000
INSTANT_WORK_PER_POD = 100
#: The heartbeat is told of every this many units of work.
TICK_EVERY = 256


class ProgressGuard:
    def __init__(self, queue: SchedulingQueue, cluster: ClusterState) -> None:
        self.queue = queue
        self.cluster = cluster
        self.tick: Callable[[], None] | None = None
        self._work = 0
        self._instant_us: int | None = None
        self._instant_work = 0

    def count(self) -> None:
        """A unit of work (an event applied, a timer, an attempt): every few hundred, the
        tick (a heartbeat, and where a stop request may raise, between writes)."""
        self._work += 1
        if self.tick is not None and self._work % TICK_EVERY == 0:
            self.tick()

    def spend(self, at_us: int) -> None:
        """A unit of work at the virtual instant ``at_us`` that counts against its budget."""
        self.count()
        if at_us != self._instant_us:
            self._instant_us = at_us
            self._instant_work = 0
        self._instant_work += 1
        if self._instant_work <= INSTANT_WORK_BASE:
            return
        pods = len(self.queue.pods) + len(self.cluster.pods)
        if self._instant_work <= INSTANT_WORK_BASE + INSTANT_WORK_PER_POD * pods:
            return
        waiting = sorted(self.queue.pods.values(), key=lambda q: -q.attempts)[:3]
        names = ", ".join(f"{q.pod.key} ({q.attempts} attempts)" for q in waiting)
        raise ReplayStalledError(
            f"the replay made no progress in virtual time: {self._instant_work - 1} steps "
            f"and scheduling attempts at {format_timestamp(at_us)} without the "
            f"clock advancing (the queues only cycle; most tried: {names or 'none'}). "
            "This is a kaudit bug: please report it with the trace.")
