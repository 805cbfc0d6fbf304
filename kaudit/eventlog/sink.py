"""Where a replay writes down what happened: the event log.

The engine reports facts to an :class:`EventSink`; the sink turns them into ordered records
``(seq, ts_us, kind, pod, node, data, blob)``. :class:`MemorySink` keeps them in a list (tests),
:class:`SqlSink` writes them to ``run_events`` in batches, each batch in its own transaction, so
the dashboard can read a run while it is being replayed. Each batch first checks that the run is
still there and still this process's: a run removed under its replay (``kaudit runs rm``)
stops the replay with :class:`~kaudit.eventlog.runs.RunRemovedError`, not a foreign-key error.

Record kinds and their ``data``:

* ``node`` — a node got a slot: ``{"slot"}`` (slots are how attempts refer to nodes);
* ``watch`` — a trace event applied: ``{"traceSeq", "type", "resource"}``;
* ``queue`` — a queue transition: ``{"from", "to", "event"}``;
* ``attempt`` — a scheduling attempt (see :mod:`kaudit.eventlog.codec`, JSON + blob);
* ``bind`` — the pod bound to ``node``; ``bindfail`` — Reserve, Permit, PreBind or Bind
  failed (the plugin's status); both with ``binder`` and ``extenders`` (the bind call) when
  an extender bound the pod; ``recorded`` — the trace's own placement;
* ``nominate`` — preemption nominated ``node`` for the pod (with ``tiedNodes``,
  ``tiedVictims`` and ``partialDryRun`` when chance decided part of it);
* ``preempt`` — the pod was chosen as a victim by ``{"preemptor"}`` (``tie`` when a tie among
  equally ranked victims decided it); ``terminate`` — its deletion was accepted and it
  terminates, still counted on ``node``;
* ``delete`` — the pod left ``{"reason": trace|completed|preempted|lifetime}``;
* ``create`` — kaudit created the pod (a recreated victim): ``{"replaces"}``;
* ``extender`` — extender calls no other record holds: the bind call for a pod deleted
  while it was being bound (``{"extenders", "binder", "reason"}``);
* ``claim`` — a ResourceClaim as kaudit wrote it (a claim generated from a template, an
  allocation and reservation, a release, a deallocation) or kept it (a trace's version with
  kaudit's status): ``{"type": ADDED|MODIFIED|DELETED, "object"}``, the pod it concerns when
  there is one;
* ``audit`` — ``kaudit audit`` judged a recorded decision of the pod (``node``: the recorded
  node): ``{"class", "reason", "recorded": {"kind", "node", "message", "victims", "tUs",
  "traceSeq"}, "kaudit", "momentSeq", ...}`` (see :mod:`kaudit.replay.audit_verdict`), after
  the ``attempt`` record of kaudit's evaluation at that moment.

At the end of the run the sink also receives the run's :class:`~kaudit.eventlog.timeline.Timeline`
(node and placement intervals, queue spans, series), which :class:`SqlSink` writes to the
``run_nodes``, ``run_placements``, ``run_queue_spans`` and ``run_series`` tables; it also
indexes, in ``run_rejections``, which plugins rejected nodes in each attempt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, insert, select

from kaudit.eventlog.records import Record, RecordKind
from kaudit.eventlog.runs import RunRemovedError, this_owner
from kaudit.eventlog.timeline import Timeline
from kaudit.store.bulk import insert_rows
from kaudit.store.models import Run, RunNode, RunPlacement, RunQueueSpan, RunSeries
from kaudit.store.writes import transaction

_COLUMNS = ("run_id", "seq", "ts_us", "kind", "pod", "node", "data", "blob")
_REJECTION_COLUMNS = ("run_id", "plugin", "seq", "nodes")


class EventSink:
    """Numbers records in order and hands them to :meth:`emit`."""

    #: Whether the replay should keep a timeline for :meth:`write_timeline`.
    keeps_timeline = True

    def __init__(self) -> None:
        self.seq = 0
        self.bytes_by_kind: dict[str, int] = {}
        self.count_by_kind: dict[str, int] = {}

    def record(self, ts_us: int, kind: RecordKind, pod: str | None = None,
               node: str | None = None, data: dict[str, Any] | None = None,
               blob: bytes | None = None) -> None:
        text = orjson.dumps(data or {}, option=orjson.OPT_SORT_KEYS).decode()
        name = kind.value
        record: Record = (self.seq, ts_us, name, pod, node, text, blob or None)
        self.seq += 1
        size = len(text) + (len(blob) if blob else 0) + len(pod or "") + len(node or "") + 24
        self.bytes_by_kind[name] = self.bytes_by_kind.get(name, 0) + size
        self.count_by_kind[name] = self.count_by_kind.get(name, 0) + 1
        self.emit(record)

    def emit(self, record: Record) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Write whatever is buffered."""

    def write_timeline(self, timeline: Timeline) -> None:
        """Keep the run's timeline (called once, when the run ends)."""


class MemorySink(EventSink):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[Record] = []
        self.timeline: Timeline | None = None

    def emit(self, record: Record) -> None:
        self.records.append(record)

    def write_timeline(self, timeline: Timeline) -> None:
        self.timeline = timeline


class NullSink(EventSink):
    """Logging off (for measuring the cost of the event log)."""

    keeps_timeline = False

    def emit(self, record: Record) -> None:
        return None


class SqlSink(EventSink):
    def __init__(self, engine: Engine, run_id: int, batch_size: int = 5000, *,
                 name: str | None = None) -> None:
        super().__init__()
        self.engine = engine
        self.run_id = run_id
        self.name = name or f"#{run_id}"
        self.batch_size = batch_size
        self.buffer: list[tuple[Any, ...]] = []
        self.rejections: list[tuple[int, str, int, int]] = []

    def record(self, ts_us: int, kind: RecordKind, pod: str | None = None,
               node: str | None = None, data: dict[str, Any] | None = None,
               blob: bytes | None = None) -> None:
        if kind == RecordKind.ATTEMPT and data and data.get("rejectedBy"):
            self.rejections.extend((self.run_id, plugin, self.seq, nodes)
                                   for plugin, nodes in data["rejectedBy"].items())
        super().record(ts_us, kind, pod, node, data, blob)

    def emit(self, record: Record) -> None:
        self.buffer.append((self.run_id, *record))
        if len(self.buffer) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        with self._writing() as connection:
            insert_rows(connection, "run_events", _COLUMNS, self.buffer)
            insert_rows(connection, "run_rejections", _REJECTION_COLUMNS, self.rejections)
        self.buffer = []
        self.rejections = []

    def _still_ours(self, connection: Connection) -> bool:
        host, pid = this_owner()
        return connection.scalar(select(Run.id).where(
            Run.id == self.run_id, Run.owner_host == host, Run.owner_pid == pid)) is not None

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """A transaction on the run, refused once the run was removed (even when the removal
        races the write and the database answers with a foreign-key error)."""
        try:
            with transaction(self.engine) as connection:
                if not self._still_ours(connection):
                    raise RunRemovedError(self.name)
                yield connection
        except RunRemovedError:
            raise
        except Exception:
            with self.engine.connect() as connection:
                if not self._still_ours(connection):
                    raise RunRemovedError(self.name) from None
            raise

    def write_timeline(self, timeline: Timeline) -> None:
        """Insert the timeline in one transaction (intervals of zero length left out)."""
        tables = (
            (RunNode, ("slot", "name", "zone", "start_us", "end_us", "cpu_milli",
                       "memory_bytes", "pods", "extended", "labels", "unschedulable", "taints"),
             timeline.nodes, 3),
            (RunPlacement, ("pod", "node", "start_us", "end_us", "by", "priority", "cpu_milli",
                            "memory_bytes", "extended"), timeline.placements, 2),
            (RunQueueSpan, ("pod", "queue", "start_us", "end_us"), timeline.queue_spans, 2),
            (RunSeries, ("ts_us", "active", "backoff", "unschedulable", "gated", "bound",
                         "allocation"), timeline.series, None),
        )
        with self._writing() as connection:
            for model, columns, rows, start in tables:
                values = [{"run_id": self.run_id, **dict(zip(columns, row, strict=True))}
                          for row in rows
                          if start is None or row[start] != row[start + 1]]
                for first in range(0, len(values), self.batch_size):
                    connection.execute(insert(model), values[first:first + self.batch_size])


def digest(records: Iterator[Record]) -> str:
    """sha256 over the records, identical whichever database they were read back from."""
    hasher = hashlib.sha256()
    for seq, ts_us, kind, pod, node, data, blob in records:
        hasher.update(orjson.dumps([seq, ts_us, kind, pod, node, data]))
        hasher.update(bytes(blob) if blob else b"-")
    return hasher.hexdigest()
