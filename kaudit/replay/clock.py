"""A deterministic discrete-event loop: a heap of (time, priority, sequence, action).

Payloads are never compared: a monotonic sequence number breaks ties, and named priorities
decide what happens first at the same instant (SimPy's ``core.py`` shape). The order of
same-instant work is part of kaudit's semantics:

1. trace events (watch events of the recording), in trace order;
2. binding completions;
3. other API calls completing (preemption's status patches and deletions);
4. queue timers (backoff expiries, the periodic flushes), then pod completions (including
   victims that finished terminating);
5. the scheduler, which drains activeQ once everything else at that instant is done: the
   loop arms its end-of-instant action (:meth:`EventLoop.at_instant_end`) after any other
   work at an instant, so work the drain itself schedules at the same instant runs after it
   and is followed by another drain.

The loop owns virtual time: ``now_us`` only moves when the loop steps.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from enum import IntEnum


class Priority(IntEnum):
    TRACE = 0
    BIND = 1
    API = 2
    TIMER = 3
    COMPLETION = 4
    SCHEDULE = 5


#: (time, priority, sequence, action): tuples compare in C, and the sequence is unique, so
#: actions are never compared.
_Entry = tuple[int, int, int, Callable[[], None]]
_SCHEDULE = int(Priority.SCHEDULE)

#: Work that changes the cluster when it runs (as opposed to the queue's own timers).
EFFECTS = frozenset({int(Priority.BIND), int(Priority.API), int(Priority.COMPLETION)})


class EventLoop:
    def __init__(self, start_us: int = 0) -> None:
        self._now_us = start_us
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._effects = 0
        self._instant_end: Callable[[], None] | None = None
        self._armed = False

    @property
    def now_us(self) -> int:
        """The virtual now: the time of the work being done (read-only)."""
        return self._now_us

    def at_instant_end(self, action: Callable[[], None]) -> None:
        """Run ``action`` (the scheduler's drain) at priority ``SCHEDULE`` after any other work
        at an instant."""
        self._instant_end = action

    def _end_instant(self) -> None:
        self._armed = False
        assert self._instant_end is not None
        self._instant_end()

    def at(self, time_us: int, priority: Priority, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (max(time_us, self._now_us), int(priority),
                                    next(self._seq), action))
        if priority in EFFECTS:
            self._effects += 1

    @property
    def effects_pending(self) -> bool:
        """Bindings, API calls or completions are still due: the cluster will change."""
        return self._effects > 0

    def __bool__(self) -> bool:
        return bool(self._heap)

    def peek_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def peek_priority(self) -> int | None:
        return self._heap[0][1] if self._heap else None

    def step(self) -> int:
        """Do the next piece of work; returns its priority."""
        time_us, priority, _, action = heapq.heappop(self._heap)
        self._now_us = time_us
        if priority in EFFECTS:
            self._effects -= 1
        action()
        if priority != _SCHEDULE and self._instant_end is not None and not self._armed:
            self._armed = True
            self.at(time_us, Priority.SCHEDULE, self._end_instant)
        return priority

    def run_instant(self, before_step: Callable[[int, int], None] | None = None) -> None:
        """Everything due at the next instant, up to its end-of-instant action;
        ``before_step(time_us, priority)`` is told of each piece of work before it runs."""
        while self._heap:
            if before_step is not None:
                head = self._heap[0]
                before_step(head[0], head[1])
            if self.step() == _SCHEDULE:
                return
