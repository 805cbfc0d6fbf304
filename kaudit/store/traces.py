"""A stored trace read back: its summary and its events in replay order.

What the replay engine reads from the store (the query layer lists, removes and reports on
traces in :mod:`kaudit.queries.traces`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.errors import UnknownObjectError
from kaudit.model.kinds import REPLAY_KINDS
from kaudit.model.timestamps import format_timestamp
from kaudit.store.models import Trace, TraceEvent


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
    #: The Kubernetes release the trace was recorded from, as its source says it (whether
    #: kaudit mirrors it or not); None when the source does not say.
    kubernetes_version: str | None = None

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
            "kubernetesVersion": self.kubernetes_version,
        }


def _utc(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; kaudit stores UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def summary_of(row: Trace) -> TraceSummary:
    return TraceSummary(
        id=row.id, name=row.name, events=row.event_count,
        kind_counts=orjson.loads(row.kind_counts), start_us=row.start_us, end_us=row.end_us,
        rejected=row.rejected_count,
        created_at=_utc(row.created_at).isoformat(timespec="seconds"),
        sources=orjson.loads(row.sources),
        scheduler_config=None if row.scheduler_config is None
        else orjson.loads(row.scheduler_config),
        kubernetes_version=row.kubernetes_version,
    )


def get_trace(engine: Engine, ref: str | int) -> TraceSummary:
    """A trace by name, or by id when ``ref`` is a number; raises UnknownObjectError."""
    with engine.connect() as connection:
        row = connection.execute(select(Trace).where(Trace.name == str(ref))).first()
        if row is None and str(ref).isdigit():
            row = connection.execute(select(Trace).where(Trace.id == int(ref))).first()
    if row is None:
        raise UnknownObjectError(f"no trace named {ref!r}; `kaudit traces` lists them")
    return summary_of(row)  # type: ignore[arg-type]


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
