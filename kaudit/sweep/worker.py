"""One cell of a sweep, replayed where a Dask worker runs it: claim, replay, measure, finish.

The task is plain data (:class:`kaudit.sweep.plan.CellTask` as a dict) and the database URL,
so the function runs in any worker process that has kaudit installed and can reach the
database. The cell's run is an ordinary run (``kaudit explain``, ``diff`` and the dashboard
work on it) named after the sweep and the cell, with the cell in its labels. A previous
attempt's run of the cell (its worker died midway) is removed first, so each cell ends with
exactly one run.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import Any

from sqlalchemy import Engine

from kaudit.errors import KauditError
from kaudit.queries.diff import aggregates
from kaudit.queries.outcomes import run_outcomes
from kaudit.replay.options import ReplaySummary
from kaudit.services.replay import replay_stored_trace, resolve_config
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.sweep import cells
from kaudit.sweep.plan import task_from_json

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def _engine(db_url: str) -> Engine:
    """One engine per database and worker process: the schema is checked once."""
    with _lock:
        if db_url not in _engines:
            _engines[db_url] = open_database(db_url, create=False)
        return _engines[db_url]


def _where() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"{socket.gethostname()} pid {os.getpid()}"


def worker_version() -> str:
    """The kaudit version of this worker (the coordinator refuses workers of another)."""
    from kaudit import __version__

    return __version__


def cell_metrics(engine: Engine, run_name: str, summary: ReplaySummary) -> dict[str, Any]:
    """The cell's summary metrics: ``kaudit diff``'s aggregates, and with a GPU report the
    FGD paper's values at 100 % arrived workload."""
    metrics = aggregates(run_outcomes(engine, run_name))
    metrics["replaySeconds"] = round(summary.wall_seconds, 3)
    sharing = summary.gpu_sharing or {}
    curves = sharing.get("curves") or {}
    if curves:
        for name, key in (("unallocated", "gpuUnallocated"), ("fragAmount", "gpuFragAmount"),
                          ("fragRate", "gpuFragRate"), ("allocated", "gpuAllocated")):
            values = curves.get(name) or []
            metrics[f"{key}At100"] = values[100] if len(values) > 100 else None
            metrics[f"{key}At130"] = values[130] if len(values) > 130 else None
    return metrics


def execute_cell(db_url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Replay one cell; returns ``{"key", "status", ...}``, never raises for a failed replay
    (the failure is stored with the cell). ``status`` is complete, failed or skipped."""
    task = task_from_json(data)
    began = time.perf_counter()
    engine = _engine(db_url)
    token = uuid.uuid4().hex
    cell_id = data["cellId"]
    if not cells.claim(engine, cell_id, token, _where()):
        return {"key": task.key, "status": "skipped"}
    try:
        identity = f"{data.get('sweepIdentity')}/{cell_id}"
        name = cells.run_name_for(engine, cell_id, token, task.run_name, identity)
        trace = get_trace(engine, task.trace_id)
        resolved = resolve_config(trace, task.config_choice())
        labels = {"sweep": data.get("sweep"), "cell": identity, "cellKey": task.key,
                  "trace": task.trace, "config": task.config, "seed": task.seed}
        result = replay_stored_trace(engine, trace, resolved, name=name, labels=labels,
                                     **task.replay_kwargs())
        run_id = result.run.id
        metrics = cell_metrics(engine, name, result.summary)
    except Exception as exc:  # the cell fails; the sweep goes on
        error = str(exc) if isinstance(exc, KauditError) else f"{type(exc).__name__}: {exc}"
        cells.fail(engine, cell_id, token, error, time.perf_counter() - began)
        return {"key": task.key, "status": "failed", "error": error}
    seconds = time.perf_counter() - began
    if not cells.finish(engine, cell_id, token, run_id, metrics, seconds):
        # The cell was taken from this attempt (the sweep was stopped, or the cell retried
        # elsewhere): its run is not the cell's, so it does not stay.
        cells.remove_run(engine, run_id)
        return {"key": task.key, "status": "superseded"}
    return {"key": task.key, "status": "complete", "seconds": round(seconds, 3),
            "runId": run_id}
