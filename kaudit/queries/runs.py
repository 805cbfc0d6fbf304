"""Queries over replay runs: listing, a pod's whole story, and the raw event stream."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine, delete, select

from kaudit.errors import InputError, UnknownObjectError
from kaudit.eventlog.runs import RunStatus, effective_status
from kaudit.eventlog.sink import digest
from kaudit.model.timestamps import format_timestamp
from kaudit.store.models import Run, RunEvent, Trace


@dataclass(frozen=True)
class RunSummary:
    id: int
    name: str
    trace: str
    status: RunStatus
    seed: int
    lifetime: str
    config_source: str | None
    created_at: str
    summary: dict[str, Any] | None
    error: str | None
    #: The Kubernetes release whose kube-scheduler the run mirrored.
    kubernetes_version: str | None = None

    @property
    def warnings(self) -> list[str]:
        """What the replay warned of: the first use of each feature the run's release turns
        on and kaudit does not model (the summary's ``unmodelledFeatures``)."""
        found = (self.summary or {}).get("unmodelledFeatures") or []
        return [str(entry.get("message")) for entry in found if isinstance(entry, dict)]

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "trace": self.trace, "status": self.status,
                "seed": self.seed, "lifetime": self.lifetime, "config": self.config_source,
                "kubernetesVersion": self.kubernetes_version,
                "createdAt": self.created_at, "summary": self.summary, "error": self.error}


def _utc(moment: datetime) -> str:
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return moment.isoformat(timespec="seconds")


def _summary(row: Any) -> RunSummary:
    status = effective_status(row.status, row.owner_host, row.owner_pid, row.heartbeat_at)
    error = row.error
    if status == RunStatus.ABANDONED and error is None:
        error = (f"its replay ({row.owner_host or 'an earlier kaudit'}, pid "
                 f"{row.owner_pid if row.owner_pid is not None else '?'}) stopped without "
                 "finishing it; `kaudit runs rm` removes it")
    return RunSummary(row.id, row.name, row.trace_name, status, row.seed, row.lifetime,
                      row.config_source, _utc(row.created_at),
                      orjson.loads(row.summary) if row.summary else None, error,
                      row.kubernetes_version)


_RUN_COLUMNS = (Run.id, Run.name, Trace.name.label("trace_name"), Run.status, Run.seed,
                Run.lifetime, Run.config_source, Run.created_at, Run.summary, Run.error,
                Run.owner_host, Run.owner_pid, Run.heartbeat_at, Run.kubernetes_version)


def list_runs(engine: Engine) -> list[RunSummary]:
    with engine.connect() as connection:
        rows = connection.execute(select(*_RUN_COLUMNS).join(Trace, Trace.id == Run.trace_id)
                                  .order_by(Run.id)).all()
    return [_summary(r) for r in rows]


def get_run(engine: Engine, ref: str) -> RunSummary:
    with engine.connect() as connection:
        query = select(*_RUN_COLUMNS).join(Trace, Trace.id == Run.trace_id)
        row = connection.execute(query.where(Run.name == ref)).first()
        if row is None and ref.isdigit():
            row = connection.execute(query.where(Run.id == int(ref))).first()
    if row is None:
        raise UnknownObjectError(f"no run named {ref!r}; `kaudit runs` lists them")
    return _summary(row)


def remove_runs(engine: Engine, refs: list[str], force: bool = False) -> list[str]:
    """Delete runs and every row of theirs, in one transaction; a run still being replayed
    by a live process is refused unless ``force``. Returns the names removed."""
    found = [get_run(engine, ref) for ref in refs]
    busy = [run.name for run in found if run.status == RunStatus.RUNNING]
    if busy and not force:
        raise InputError(f"run(s) still being replayed: {', '.join(busy)} (--force removes "
                         "them anyway)")
    with engine.begin() as connection:
        connection.execute(delete(Run).where(Run.id.in_([run.id for run in found])))
    return [run.name for run in found]


def run_configuration(engine: Engine, run_id: int) -> tuple[dict[str, Any], dict[str, bool]]:
    """The run's stored effective configuration and its feature gates."""
    with engine.connect() as connection:
        stored, options = connection.execute(
            select(Run.config, Run.options).where(Run.id == run_id)).one()
    return orjson.loads(stored), orjson.loads(options).get("featureGates") or {}


def node_names(engine: Engine, run_id: int) -> dict[int, str]:
    with engine.connect() as connection:
        rows = connection.execute(select(RunEvent.node, RunEvent.data).where(
            RunEvent.run_id == run_id, RunEvent.kind == "node")).all()
    return {orjson.loads(data)["slot"]: node for node, data in rows if node is not None}


def pod_key(engine: Engine, run_id: int, ref: str) -> str:
    """``NAMESPACE/NAME`` of the pod ``ref`` names (a bare name must be unique in the run)."""
    if "/" in ref:
        return ref
    with engine.connect() as connection:
        keys = [key for key in connection.scalars(select(RunEvent.pod).where(
            RunEvent.run_id == run_id, RunEvent.pod.like(f"%/{ref}")).distinct())
            if key is not None]
    if len(keys) == 1:
        return keys[0]
    if not keys:
        raise UnknownObjectError(f"no pod named {ref!r} in this run")
    raise UnknownObjectError(f"pod name {ref!r} is ambiguous: {', '.join(sorted(keys))}; "
                             "use NAMESPACE/NAME")


def iter_run_events(engine: Engine, run_id: int, *, pod: str | None = None,
                    node: str | None = None, kind: str | None = None,
                    since_us: int | None = None, until_us: int | None = None,
                    batch: int = 2000) -> Iterator[dict[str, Any]]:
    """The run's log in order, filtered, streamed in batches."""
    last = -1
    while True:
        query = (select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.pod,
                        RunEvent.node, RunEvent.data)
                 .where(RunEvent.run_id == run_id, RunEvent.seq > last))
        if pod is not None:
            query = query.where(RunEvent.pod == pod)
        if node is not None:
            query = query.where(RunEvent.node == node)
        if kind is not None:
            query = query.where(RunEvent.kind == kind)
        if since_us is not None:
            query = query.where(RunEvent.ts_us >= since_us)
        if until_us is not None:
            query = query.where(RunEvent.ts_us <= until_us)
        with engine.connect() as connection:
            rows = connection.execute(query.order_by(RunEvent.seq).limit(batch)).all()
        if not rows:
            return
        for seq, ts_us, kind_, pod_, node_, data in rows:
            yield {"seq": seq, "time": format_timestamp(ts_us), "kind": kind_, "pod": pod_,
                   "node": node_, **orjson.loads(data)}
        last = rows[-1][0]


def run_digest(engine: Engine, run_id: int) -> str:
    """sha256 over the run's event log in order (``kaudit.eventlog.sink.digest``): equal for
    two runs whose logs are the same, byte for byte, on any database."""
    with engine.connect() as connection:
        rows = connection.execute(
            select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.pod, RunEvent.node,
                   RunEvent.data, RunEvent.blob)
            .where(RunEvent.run_id == run_id).order_by(RunEvent.seq)).all()
    return digest((row.seq, row.ts_us, row.kind, row.pod, row.node, row.data, row.blob)
                  for row in rows)
