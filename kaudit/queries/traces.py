"""Queries over ingested traces: listing, lookup by name or id, and their events."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine, delete, select

from kaudit.errors import InputError, UnknownObjectError
from kaudit.readers.events import REPLAY_KINDS
from kaudit.readers.timestamps import format_timestamp
from kaudit.store.models import RejectedLine, Run, Trace, TraceEvent
from kaudit.store.ownership import RUNNING, effective_status


@dataclass(frozen=True)
class TraceSummary:
    id: int
    name: str
    events: int
    kind_counts: dict[str, int]
    start_us: int | None
    end_us: int | None
    rejected: int
    created_at: str
    sources: list[dict[str, Any]]
    #: The KubeSchedulerConfiguration stored with the trace (a simulator export's), if any.
    scheduler_config: dict[str, Any] | None = None

    @property
    def has_scheduler_config(self) -> bool:
        return self.scheduler_config is not None

    @property
    def span_seconds(self) -> float:
        if self.start_us is None or self.end_us is None:
            return 0.0
        return (self.end_us - self.start_us) / 1e6

    @property
    def unused_kinds(self) -> list[str]:
        return sorted(kind for kind in self.kind_counts if kind not in REPLAY_KINDS)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "events": self.events,
            "kinds": self.kind_counts, "unusedKinds": self.unused_kinds,
            "start": None if self.start_us is None else format_timestamp(self.start_us),
            "end": None if self.end_us is None else format_timestamp(self.end_us),
            "spanSeconds": self.span_seconds, "rejected": self.rejected,
            "ingestedAt": self.created_at, "sources": self.sources,
            "schedulerConfig": self.scheduler_config,
        }


def _utc(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; kaudit stores UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _summary(row: Trace) -> TraceSummary:
    return TraceSummary(
        id=row.id, name=row.name, events=row.event_count,
        kind_counts=orjson.loads(row.kind_counts), start_us=row.start_us, end_us=row.end_us,
        rejected=row.rejected_count,
        created_at=_utc(row.created_at).isoformat(timespec="seconds"),
        sources=orjson.loads(row.sources),
        scheduler_config=None if row.scheduler_config is None
        else orjson.loads(row.scheduler_config),
    )


def list_traces(engine: Engine) -> list[TraceSummary]:
    with engine.connect() as connection:
        rows = connection.execute(select(Trace).order_by(Trace.id)).all()
    return [_summary(row) for row in rows]  # type: ignore[arg-type]


def remove_traces(engine: Engine, refs: list[str], force: bool = False) -> list[str]:
    """Delete traces with their runs and every row of theirs, in one transaction; a trace
    with a run still being replayed by a live process is refused unless ``force``."""
    found = [get_trace(engine, ref) for ref in refs]
    ids = {trace.id for trace in found}
    with engine.connect() as connection:
        runs = connection.execute(select(Run.name, Run.status, Run.owner_host, Run.owner_pid,
                                         Run.heartbeat_at).where(Run.trace_id.in_(ids))).all()
    busy = [run.name for run in runs
            if effective_status(run.status, run.owner_host, run.owner_pid,
                                run.heartbeat_at) == RUNNING]
    if busy and not force:
        raise InputError(f"run(s) of these traces still being replayed: {', '.join(busy)} "
                         "(--force removes them anyway)")
    with engine.begin() as connection:
        connection.execute(delete(Trace).where(Trace.id.in_(ids)))
    return [trace.name for trace in found]


def get_trace(engine: Engine, ref: str | int) -> TraceSummary:
    """A trace by name, or by id when ``ref`` is a number; raises UnknownObjectError."""
    with engine.connect() as connection:
        row = connection.execute(select(Trace).where(Trace.name == str(ref))).first()
        if row is None and str(ref).isdigit():
            row = connection.execute(select(Trace).where(Trace.id == int(ref))).first()
    if row is None:
        raise UnknownObjectError(f"no trace named {ref!r}; `kaudit traces` lists them")
    return _summary(row)  # type: ignore[arg-type]


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    ts_us: int
    type: str
    kind: str
    namespace: str
    name: str
    object: dict[str, Any]
    source: int = 0  # index of the input file in the trace's sources
    line: int = 0


def iter_events(engine: Engine, trace_id: int, *, batch: int = 2000) -> Iterator[StoredEvent]:
    """A trace's events in replay order, streamed in batches (bounded memory)."""
    last = -1
    while True:
        with engine.connect() as connection:
            rows = connection.execute(
                select(TraceEvent.seq, TraceEvent.ts_us, TraceEvent.type, TraceEvent.kind,
                       TraceEvent.namespace, TraceEvent.name, TraceEvent.object,
                       TraceEvent.source, TraceEvent.line)
                .where(TraceEvent.trace_id == trace_id, TraceEvent.seq > last)
                .order_by(TraceEvent.seq).limit(batch)
            ).all()
        if not rows:
            return
        for row in rows:
            yield StoredEvent(row.seq, row.ts_us, row.type, row.kind, row.namespace, row.name,
                              orjson.loads(row.object), row.source, row.line)
        last = rows[-1].seq


def rejected_lines(engine: Engine, trace_id: int) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        rows = connection.execute(
            select(RejectedLine.source, RejectedLine.line, RejectedLine.reason,
                   RejectedLine.text)
            .where(RejectedLine.trace_id == trace_id).order_by(RejectedLine.id)).all()
    return [{"source": r.source, "line": r.line, "reason": r.reason, "text": r.text}
            for r in rows]


def trace_content_hash(engine: Engine, trace_id: int) -> str | None:
    with engine.connect() as connection:
        return connection.scalar(select(Trace.content_hash).where(Trace.id == trace_id))
