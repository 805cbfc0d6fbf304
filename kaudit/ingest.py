"""``kaudit ingest``: store trace files as one trace of ordered watch events, all or nothing.

Inputs are streamed (memory stays bounded on gigabyte traces) and every line is validated. The
whole trace is written in one transaction: on the first invalid line nothing is stored and a
:class:`~kaudit.errors.TraceError` names ``FILE:LINE``; with ``skip_invalid`` the valid lines
are stored and each rejected line is recorded with its reason. Identical content (same bytes,
same options) is detected by its sha256 and not stored twice.

Order: snapshot objects first (as ``ADDED`` at the trace's start), then the event files in the
order given. Times must not go backwards unless ``sort`` is set, in which case events are
ordered by time, keeping arrival order among equal times.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from kaudit import __version__
from kaudit.errors import InputError, TraceError
from kaudit.readers.events import Rejected, WatchEvent
from kaudit.readers.snapshot import LIST, read_snapshot
from kaudit.readers.watch import StreamStats, UntimedClock, read_watch_stream
from kaudit.store.models import RejectedLine, Trace, TraceEvent

EVENTS = "events"
SNAPSHOT = "snapshot"
BATCH_SIZE = 5000

_EVENT_COLUMNS = ("trace_id", "seq", "ts_us", "type", "kind", "namespace", "name", "uid",
                  "source", "line", "object")
_REJECTED_TABLE = RejectedLine.__table__


def _insert_sql(connection: Connection, table: str, columns: tuple[str, ...]) -> str:
    """A driver-level INSERT: batches of plain tuples skip per-row statement compilation."""
    style = connection.dialect.paramstyle
    marks = ", ".join("?" if style == "qmark" else "%s" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


@dataclass(frozen=True)
class TraceInput:
    path: Path
    role: str = EVENTS


@dataclass
class IngestResult:
    trace_id: int
    name: str
    events: int
    rejected: int
    kind_counts: dict[str, int]
    start_us: int | None
    end_us: int | None
    sources: list[dict[str, Any]] = field(default_factory=list)
    #: True when identical content was already stored: nothing new was written.
    duplicate: bool = False


def content_hash(inputs: Sequence[TraceInput], options: dict[str, Any]) -> str:
    """sha256 over the decompressed inputs, their roles, and the options that shape events."""
    from kaudit.readers.files import hash_content

    digest = hashlib.sha256()
    digest.update(orjson.dumps(options, option=orjson.OPT_SORT_KEYS))
    for item in inputs:
        digest.update(f"\0{item.role}\0".encode())
        hash_content(item.path, digest)
    return digest.hexdigest()


def default_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".ndjson", ".json", ".yaml", ".yml", ".log"):
        name = name.removesuffix(suffix)
    return name or "trace"


def _unique_name(connection: Connection, wanted: str | None, fallback: str) -> str:
    taken = set(connection.scalars(select(Trace.name)))
    if wanted is not None:
        if wanted in taken:
            raise InputError(f"a trace named {wanted!r} already exists; choose another --name")
        return wanted
    name, counter = fallback, 1
    while name in taken:
        counter += 1
        name = f"{fallback}-{counter}"
    return name


class _Writer:
    """Buffers event and rejected-line rows and writes them in batches."""

    def __init__(self, connection: Connection, trace_id: int, batch_size: int) -> None:
        self.connection = connection
        self.trace_id = trace_id
        self.batch_size = batch_size
        self.events: list[tuple[Any, ...]] = []
        self.event_sql = _insert_sql(connection, "trace_events", _EVENT_COLUMNS)
        self.rejected: list[dict[str, Any]] = []
        self.seq = 0
        self.kinds: Counter[str] = Counter()
        self.rejected_count = 0

    def event(self, event: WatchEvent, source: int) -> None:
        self.events.append((
            self.trace_id, self.seq, event.ts_us, event.type, event.kind, event.namespace,
            event.name, event.uid, source, event.line, orjson.dumps(event.object).decode(),
        ))
        self.seq += 1
        self.kinds[event.kind] += 1
        if len(self.events) >= self.batch_size:
            self.flush()

    def _copy_events(self) -> None:
        """PostgreSQL: COPY is several times faster than INSERT, in the same transaction."""
        raw = self.connection.connection.driver_connection
        with raw.cursor() as cursor, cursor.copy(  # type: ignore[union-attr]
                f"COPY trace_events ({', '.join(_EVENT_COLUMNS)}) FROM STDIN") as copy:
            for row in self.events:
                copy.write_row(row)

    def reject(self, source: str, line: int | None, reason: str, text: str | None) -> None:
        self.rejected.append({"trace_id": self.trace_id, "source": source, "line": line,
                              "reason": reason, "text": text})
        self.rejected_count += 1
        if len(self.rejected) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if self.events:
            if self.connection.dialect.name == "postgresql":
                self._copy_events()
            else:
                self.connection.exec_driver_sql(self.event_sql, self.events)
            self.events = []
        if self.rejected:
            self.connection.execute(insert(_REJECTED_TABLE), self.rejected)
            self.rejected = []


def _renumber_by_time(connection: Connection, trace_id: int) -> None:
    """Order a trace's events by (time, arrival) in place: seq becomes the sorted position."""
    ranked = (
        select(TraceEvent.id,
               (func.row_number().over(order_by=(TraceEvent.ts_us, TraceEvent.seq)) - 1)
               .label("position"))
        .where(TraceEvent.trace_id == trace_id)
        .subquery()
    )
    # Two steps through negative numbers keep (trace_id, seq) unique at every row update.
    connection.execute(
        update(TraceEvent)
        .where(TraceEvent.id == ranked.c.id)
        .values(seq=-ranked.c.position - 1)
    )
    connection.execute(
        update(TraceEvent).where(TraceEvent.trace_id == trace_id).values(seq=-TraceEvent.seq - 1)
    )


def ingest_trace(
    engine: Engine,
    inputs: Sequence[TraceInput],
    *,
    name: str | None = None,
    start_us: int | None = None,
    step_us: int = 0,
    sort: bool = False,
    skip_invalid: bool = False,
    progress: Callable[[int], None] | None = None,
    batch_size: int = BATCH_SIZE,
) -> IngestResult:
    """Ingest ``inputs`` as one trace; see the module docstring for the rules."""
    if not inputs:
        raise InputError("nothing to ingest: give at least one trace file")
    if step_us < 0:
        raise InputError("--step must not be negative")
    for item in inputs:
        if not item.path.is_file():
            raise TraceError(str(item.path), None, "no such file" if not item.path.exists()
                             else "not a regular file")
    ordered = [i for i in inputs if i.role == SNAPSHOT] + [i for i in inputs if i.role != SNAPSHOT]
    digest = content_hash(ordered, {"start_us": start_us, "step_us": step_us, "sort": sort})

    with engine.connect() as connection:
        existing = connection.execute(
            select(Trace.id, Trace.name).where(Trace.content_hash == digest)).first()
    if existing is not None:
        return _describe_existing(engine, existing.id, duplicate=True)

    try:
        with engine.begin() as connection:
            return _store(connection, ordered, digest, name=name, start_us=start_us,
                          step_us=step_us, sort=sort, skip_invalid=skip_invalid,
                          progress=progress, batch_size=batch_size)
    except IntegrityError as exc:
        # Another process stored the same content (or name) between our check and commit.
        raise InputError(f"could not store the trace: {exc.orig}") from None


def _store(connection: Connection, inputs: Sequence[TraceInput], digest: str, *,
           name: str | None, start_us: int | None, step_us: int, sort: bool,
           skip_invalid: bool, progress: Callable[[int], None] | None,
           batch_size: int) -> IngestResult:
    trace_name = _unique_name(connection, name, default_name(inputs[-1].path))
    trace_id = connection.execute(
        insert(Trace).values(
            name=trace_name, content_hash=digest, sources="[]",
            created_at=datetime.now(UTC), kaudit_version=__version__, event_count=0,
            kind_counts="{}", rejected_count=0,
        ).returning(Trace.id)
    ).scalar_one()
    writer = _Writer(connection, trace_id, batch_size)
    clock = UntimedClock(start_us or 0, step_us)
    sources: list[dict[str, Any]] = []
    snapshot_seqs: list[int] = []
    first_ts: int | None = None
    last_ts: int | None = None
    min_ts: int | None = None
    max_ts: int | None = None
    out_of_order = False

    for index, item in enumerate(inputs):
        path = str(item.path)
        before_events, before_rejected = writer.seq, writer.rejected_count
        stats = StreamStats()
        items: Iterator[WatchEvent | Rejected]
        if item.role == SNAPSHOT:
            items = read_snapshot(item.path, start_us or 0)
            stats.format = LIST
        else:
            items = read_watch_stream(item.path, clock, stats, progress)
        try:
            for element in items:
                if isinstance(element, Rejected):
                    if not skip_invalid:
                        raise TraceError(path, element.line, element.reason)
                    writer.reject(path, element.line, element.reason, element.text)
                    continue
                if item.role == SNAPSHOT:
                    snapshot_seqs.append(writer.seq)
                else:
                    ts = element.ts_us
                    if start_us is not None and ts < start_us and not sort:
                        raise TraceError(path, element.line, "time goes backwards: this event "
                                         "is before --start (use --sort to reorder)")
                    if last_ts is not None and ts < last_ts:
                        if not sort:
                            raise TraceError(path, element.line, "time goes backwards: "
                                             f"{ts / 1e6:.6f}s after {last_ts / 1e6:.6f}s "
                                             "(use --sort to reorder events by time)")
                        out_of_order = True
                    last_ts = ts
                    first_ts = ts if first_ts is None else first_ts
                    min_ts = ts if min_ts is None else min(min_ts, ts)
                    max_ts = ts if max_ts is None else max(max_ts, ts)
                writer.event(element, index)
        except TraceError as exc:
            if not skip_invalid or exc.source != path:
                raise
            writer.reject(path, exc.line, exc.reason, None)  # a damaged file: keep what was read
        if item.role == SNAPSHOT and progress is not None:
            progress(item.path.stat().st_size)
        sources.append({
            "path": path, "role": item.role, "format": stats.format, "lines": stats.lines,
            "events": writer.seq - before_events,
            "rejected": writer.rejected_count - before_rejected,
            "bookmarks": stats.bookmarks, "bytes": item.path.stat().st_size,
        })
    writer.flush()

    start = start_us if start_us is not None else min_ts
    if snapshot_seqs:
        start = start if start is not None else 0
        if start_us is None and start != 0:
            connection.execute(
                update(TraceEvent)
                .where(TraceEvent.trace_id == trace_id, TraceEvent.source.in_(
                    [i for i, item in enumerate(inputs) if item.role == SNAPSHOT]))
                .values(ts_us=start))
        min_ts = start if min_ts is None else min(min_ts, start)
        max_ts = start if max_ts is None else max(max_ts, start)
    if out_of_order:
        _renumber_by_time(connection, trace_id)

    kind_counts = dict(sorted(writer.kinds.items()))
    connection.execute(
        update(Trace).where(Trace.id == trace_id).values(
            sources=orjson.dumps(sources).decode(), event_count=writer.seq,
            kind_counts=orjson.dumps(kind_counts).decode(), start_us=min_ts, end_us=max_ts,
            rejected_count=writer.rejected_count,
        )
    )
    return IngestResult(trace_id=trace_id, name=trace_name, events=writer.seq,
                        rejected=writer.rejected_count, kind_counts=kind_counts,
                        start_us=min_ts, end_us=max_ts, sources=sources)


def _describe_existing(engine: Engine, trace_id: int, *, duplicate: bool) -> IngestResult:
    with engine.connect() as connection:
        trace = connection.execute(select(Trace).where(Trace.id == trace_id)).one()
    return IngestResult(
        trace_id=trace.id, name=trace.name, events=trace.event_count,
        rejected=trace.rejected_count, kind_counts=orjson.loads(trace.kind_counts),
        start_us=trace.start_us, end_us=trace.end_us, sources=orjson.loads(trace.sources),
        duplicate=duplicate,
    )
