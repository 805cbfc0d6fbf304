"""The trace feed: a trace's events enter the event loop one at a time, at their timestamps.

Only the next instant's events are in the loop, as one piece of work at priority ``TRACE``: a
trace's events at one instant are applied together, in trace order, before everything else
then; the next instant's are scheduled when they are done.
An event the replay cannot use is reported against the trace's file and line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from kaudit.errors import UnreplayableEventError
from kaudit.replay.clock import EventLoop, Priority
from kaudit.replay.options import ReplaySummary
from kaudit.store.traces import StoredEvent

# What a value the replay cannot use raises; reported against the trace's file and line (a
# database or disk failure is not the trace's fault and propagates as it is).
DATA_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, OverflowError)


class TraceFeed:
    """Feeds ``events`` into ``loop``, handing each to ``apply`` at its time; ``count`` is told
    of each event applied (the progress guard's unit of work)."""

    def __init__(self, loop: EventLoop, apply: Callable[[StoredEvent], None],
                 summary: ReplaySummary, count: Callable[[], None],
                 before: Callable[[StoredEvent], None] | None = None) -> None:
        self.loop = loop
        self.apply = apply
        #: Told of each event just before it is applied (the audit judges decisions there).
        self.before = before
        self.summary = summary
        self.count = count
        self._events: Iterator[StoredEvent] = iter(())
        self._next_event: StoredEvent | None = None
        self._progress: Callable[[int], None] | None = None
        #: Every event has been applied.
        self.done = True
        #: The time of the last event applied.
        self.last_us: int | None = None
        #: Where each pod's last event came from (source, line), for errors found later.
        self.origin: dict[str, tuple[int, int]] = {}

    def start(self, events: Iterable[StoredEvent],
              progress: Callable[[int], None] | None = None) -> None:
        self._events = iter(events)
        self._progress = progress
        self._advance()
        self._schedule()

    def _advance(self) -> None:
        self._next_event = next(self._events, None)
        self.done = self._next_event is None

    def _schedule(self) -> None:
        if self._next_event is not None:
            self.loop.at(self._next_event.ts_us, Priority.TRACE, self._deliver)

    def _deliver(self) -> None:
        """Every event due now, in trace order (one piece of loop work: nothing else runs
        between a trace's events at one instant)."""
        now = self.loop.now_us
        while self._next_event is not None and self._next_event.ts_us <= now:
            event = self._next_event
            self._apply(event)
            self._advance()
        self._schedule()

    def _apply(self, event: StoredEvent) -> None:
        self.count()
        try:
            if self.before is not None:
                self.before(event)
            self.apply(event)
        except DATA_ERRORS as exc:
            raise UnreplayableEventError(
                event.source, event.line, f"cannot replay this {event.type} {event.kind} "
                f"event: {type(exc).__name__}: {exc}") from exc
        if event.kind == "Pod":
            self.origin[f"{event.namespace}/{event.name}"] = (event.source, event.line)
        self.last_us = self.loop.now_us
        self.summary.trace_events += 1
        if self._progress is not None:
            self._progress(1)
