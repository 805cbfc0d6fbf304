"""Queries over ingested traces: listing, lookup by name or id, and their events."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, delete, select

from kaudit.errors import InputError
from kaudit.eventlog.runs import RunStatus, effective_status
from kaudit.store.models import RejectedLine, Run, Trace
from kaudit.store.traces import TraceSummary, get_trace, summary_of


def list_traces(engine: Engine) -> list[TraceSummary]:
    with engine.connect() as connection:
        rows = connection.execute(select(Trace).order_by(Trace.id)).all()
    return [summary_of(row) for row in rows]  # type: ignore[arg-type]


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
                                run.heartbeat_at) == RunStatus.RUNNING]
    if busy and not force:
        raise InputError(f"run(s) of these traces still being replayed: {', '.join(busy)} "
                         "(--force removes them anyway)")
    with engine.begin() as connection:
        connection.execute(delete(Trace).where(Trace.id.in_(ids)))
    return [trace.name for trace in found]


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
