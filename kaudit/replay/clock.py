"""A deterministic discrete-event loop: a heap of (time, priority, sequence, action).

Payloads are never compared: a monotonic sequence number breaks ties, and named priorities
decide what happens first at the same instant (SimPy's ``core.py`` shape). The order of
same-instant work is part of kaudit's semantics:

1. trace events (watch events of the recording), in trace order;
2. binding completions;
3. other API calls completing (preemption's status patches and deletions);
4. queue timers (backoff expiries, the periodic flushes), then pod completions (including
   victims that finished terminating);
5. the scheduler, which drains activeQ once everything else at that instant is done.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum


class Priority(IntEnum):
    TRACE = 0
    BIND = 1
    API = 2
    TIMER = 3
    COMPLETION = 4
    SCHEDULE = 5


@dataclass(order=True)
class _Entry:
    time_us: int
    priority: int
    seq: int
    action: Callable[[], None] = field(compare=False)


#: Work that changes the cluster when it runs (as opposed to the queue's own timers).
EFFECTS = frozenset({Priority.BIND, Priority.API, Priority.COMPLETION})


class EventLoop:
    def __init__(self, start_us: int = 0) -> None:
        self.now_us = start_us
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._effects = 0

    def at(self, time_us: int, priority: Priority, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, _Entry(max(time_us, self.now_us), priority,
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
        return self._heap[0].time_us if self._heap else None

    def step(self) -> None:
        entry = heapq.heappop(self._heap)
        self.now_us = entry.time_us
        if entry.priority in EFFECTS:
            self._effects -= 1
        entry.action()

    def run(self, until_us: int | None = None, on_step: Callable[[], None] | None = None
            ) -> None:
        while self._heap and (until_us is None or self._heap[0].time_us <= until_us):
            self.step()
            if on_step is not None:
                on_step()
