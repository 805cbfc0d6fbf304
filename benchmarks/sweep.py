"""Sweep throughput: cells per minute with one and with two Dask workers, the engine's per-cell
overhead, and the write rate into the database with workers writing at once.

    python -m benchmarks.sweep                                  # SQLite, 1 and 2 workers
    python -m benchmarks.sweep --postgres postgresql://postgres@127.0.0.1:5432/test
    python -m benchmarks.sweep --cells 12 --events 8000 --json

Each cell replays the same synthetic trace (``kaudit.tracegen.synthetic``: nodes, then pods
arriving, bound and deleted; CPU-bound, a few seconds each) under kube-scheduler's defaults
with its own seed, into a fresh database per measurement, on a local Dask cluster started by
the sweep (its start-up is part of the time). The per-cell overhead is the sweep's wall time
with one worker minus the time the same work takes without it (the trace ingested and every
cell replayed one after the other in this process, into a fresh database of the same kind),
divided by the cells: the cluster's start-up shared over the cells, task transfer, claiming
and finishing each cell, and measuring its metrics. The write rate counts the rows
the replays stored (event log and timeline) per second of the sweep.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.engine import resolve_url
from kaudit.store.models import (
    RunEvent,
    RunNode,
    RunPlacement,
    RunQueueSpan,
    RunRejection,
    RunSeries,
    SweepCell,
)
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.sweep.run import run_sweep
from kaudit.sweep.spec import read_spec
from kaudit.tracegen.synthetic import write_synthetic

ROW_TABLES = (RunEvent, RunNode, RunPlacement, RunQueueSpan, RunSeries, RunRejection)


@contextmanager
def _database(backend: str, scratch: Path, postgres: str | None) -> Iterator[str]:
    """A fresh database URL: an SQLite file, or a new database on the PostgreSQL server."""
    if backend == "sqlite":
        path = scratch / f"sweep-{uuid.uuid4().hex[:8]}.db"
        yield f"sqlite:///{path}"
        return
    assert postgres is not None
    admin = create_engine(resolve_url(postgres), isolation_level="AUTOCOMMIT")
    name = f"kaudit_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(resolve_url(postgres)).set(database=name).render_as_string(
            hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _direct_seconds(trace: Path, url: str, seeds: list[int]) -> float:
    """Seconds to do the sweep's work without it: ingest the trace and replay every cell,
    one after the other, in this process, into a fresh database of the same kind."""
    began = time.perf_counter()
    engine = open_database(url)
    try:
        stored = get_trace(engine, ingest_trace(engine, [TraceInput(trace)]).trace_id)
        config, registry = load(None)
        for seed in seeds:
            replay_trace(engine, stored, config, registry, name=f"direct-{seed}", seed=seed)
    finally:
        engine.dispose()
    return time.perf_counter() - began


def _measure(spec_path: Path, url: str, workers: int) -> dict[str, Any]:
    spec = read_spec(spec_path)
    engine = open_database(url)
    try:
        began = time.perf_counter()
        tally = run_sweep(engine, url, spec, workers=workers)
        seconds = time.perf_counter() - began
        with engine.connect() as connection:
            rows = sum(connection.scalar(select(func.count()).select_from(table)) or 0
                       for table in ROW_TABLES)
            cell_seconds = [s for s in connection.scalars(select(SweepCell.seconds)) if s]
    finally:
        engine.dispose()
    if tally.failed or tally.complete != tally.total:
        raise SystemExit(f"the sweep did not complete: {tally.as_json()}")
    return {"workers": workers, "cells": tally.complete, "seconds": round(seconds, 2),
            "cellsPerMinute": round(60 * tally.complete / seconds, 2),
            "meanCellSeconds": round(statistics.fmean(cell_seconds), 2),
            "rowsWritten": rows, "rowsPerSecond": round(rows / seconds)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=8, help="cells (seeds) per sweep")
    parser.add_argument("--events", type=int, default=6000, help="events of the trace")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--postgres", metavar="URL",
                        help="also measure on this PostgreSQL server (a database is created "
                             "and dropped per measurement)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    backends = ["sqlite", *(["postgresql"] if args.postgres else [])]
    with tempfile.TemporaryDirectory(prefix="kaudit-bench-sweep-") as tmp:
        scratch = Path(tmp)
        trace = scratch / "synthetic.jsonl"
        write_synthetic(trace, args.events, args.nodes)
        seeds = list(range(1, args.cells + 1))
        spec = scratch / "sweep.yaml"
        spec.write_text(f"name: bench\ntraces: [{{name: synthetic, files: [{trace}]}}]\n"
                        f"seeds: {seeds}\n")
        results = []
        direct: dict[str, float] = {}
        for backend in backends:
            with _database(backend, scratch, args.postgres) as url:
                direct[backend] = _direct_seconds(trace, url, seeds)
            print(f"{backend:10} direct: {args.cells} replays in {direct[backend]:.1f} s",
                  file=sys.stderr)
            for workers in args.workers:
                with _database(backend, scratch, args.postgres) as url:
                    measured = _measure(spec, url, workers)
                measured["backend"] = backend
                measured["directSeconds"] = round(direct[backend], 2)
                if workers == 1:
                    measured["overheadSecondsPerCell"] = round(
                        (measured["seconds"] - direct[backend]) / measured["cells"], 2)
                results.append(measured)
                print(f"{backend:10} {workers} worker(s): {measured['cells']} cells in "
                      f"{measured['seconds']:.1f} s = {measured['cellsPerMinute']:.1f} "
                      f"cells/min, {measured['rowsPerSecond']:,} rows/s written",
                      file=sys.stderr)
    for backend in backends:
        one = next((r for r in results if r["backend"] == backend and r["workers"] == 1), None)
        for r in results:
            if one is not None and r["backend"] == backend:
                r["speedupOverOneWorker"] = round(r["cellsPerMinute"] / one["cellsPerMinute"],
                                                  2)
    if args.json:
        print(json.dumps({"events": args.events, "nodes": args.nodes, "results": results},
                         indent=2))
        return 0
    print(f"{args.cells} cells of {args.events:,} events on {args.nodes} nodes; 'direct' is "
          "the same ingest and replays called one after the other in this process")
    print(f"{'backend':10} {'workers':>7} {'cells':>5} {'direct s':>8} {'sweep s':>8} "
          f"{'cells/min':>9} {'speed-up':>8} {'overhead/cell':>13} {'rows/s':>8}")
    for r in results:
        overhead = r.get("overheadSecondsPerCell")
        print(f"{r['backend']:10} {r['workers']:>7} {r['cells']:>5} {r['directSeconds']:>8.1f} "
              f"{r['seconds']:>8.1f} {r['cellsPerMinute']:>9.1f} "
              f"{r['speedupOverOneWorker']:>7.2f}× "
              f"{'' if overhead is None else f'{overhead:.2f} s':>13} "
              f"{r['rowsPerSecond']:>8,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
