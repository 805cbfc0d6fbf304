"""A sweep on a real Dask cluster: a `dask scheduler` and two `dask worker` processes on
127.0.0.1, writing into PostgreSQL, as a sweep across machines would; one worker killed in the
middle of a cell, and the sweep still stores every cell once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, select

from kaudit.cli import cli
from kaudit.store.models import Run, SweepCell
from kaudit.sweep.run import SweepProgress, run_sweep
from kaudit.sweep.spec import read_spec
from kaudit.tracegen.synthetic import write_synthetic
from tests.sweep.conftest import REPO, write_spec

pytestmark = pytest.mark.parametrize("backend", ["postgresql"])


@dataclass
class DaskCluster:
    address: str
    workers: list[subprocess.Popen[bytes]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    """`dask scheduler` and two single-threaded `dask worker` processes without nannies (so
    a killed worker stays dead), started by their own commands."""
    from dask.distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = (tmp_path / "dask.log").open("wb")
    common = {"cwd": REPO, "stdout": log, "stderr": subprocess.STDOUT}
    processes = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host",
                                   "127.0.0.1", "--port", str(port), "--no-dashboard"],
                                  **common)]  # type: ignore[call-overload]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        workers = [subprocess.Popen([sys.executable, "-m", "dask", "worker", address,
                                     "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                     "--host", "127.0.0.1", "--name", f"w{i}"],
                                    **common)  # type: ignore[call-overload]
                   for i in range(2)]
        processes += workers
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield DaskCluster(address, workers)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()


def _cells(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return connection.execute(select(SweepCell.status, SweepCell.attempts,
                                         SweepCell.worker, SweepCell.run_id)
                                  .order_by(SweepCell.position)).all()


def _runs(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return connection.execute(select(Run.id, Run.name, Run.status, Run.owner_pid)).all()


def test_a_sweep_on_a_dask_cluster_into_postgresql(
        engine: Engine, db_url: str, dask_cluster: DaskCluster, sample_spec: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["sweep", str(sample_spec), "--scheduler", dask_cluster.address,
                                 "--db", db_url, "--json", "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    tally = orjson.loads(result.output)
    assert (tally["complete"], tally["failed"], tally["workers"]) == (4, 0, 2)
    cells = _cells(engine)
    assert [c.status for c in cells] == ["complete"] * 4
    assert all(c.worker.startswith("tcp://127.0.0.1:") for c in cells)
    runs = _runs(engine)
    assert len(runs) == 4 and {r.status for r in runs} == {"complete"}
    # The runs were replayed in the worker processes, both of them.
    assert {r.owner_pid for r in runs} == {w.pid for w in dask_cluster.workers}

    again = runner.invoke(cli, ["sweep", str(sample_spec), "--scheduler",
                                dask_cluster.address, "--db", db_url],
                          catch_exceptions=False)
    assert again.exit_code == 0
    assert "all 4 cells were already complete; nothing to do" in again.output
    assert len(_runs(engine)) == 4

    report = runner.invoke(cli, ["sweep", "report", "tuning", "--db", db_url, "--json"],
                           catch_exceptions=False)
    assert orjson.loads(report.output)["cells"] == {
        "total": 4, "complete": 4, "failed": 0, "running": 0, "abandoned": 0, "pending": 0}


def test_a_worker_killed_mid_cell_leaves_every_cell_stored_once(
        engine: Engine, db_url: str, dask_cluster: DaskCluster, tmp_path: Path) -> None:
    write_synthetic(tmp_path / "long.jsonl", 6000, 100)  # a few seconds per cell
    spec = read_spec(write_spec(tmp_path / "s.yaml", f"""
name: survives
traces: [{{name: long, files: [{tmp_path / "long.jsonl"}]}}]
seeds: 1-4
"""))
    outcome: list[SweepProgress | BaseException] = []

    def sweep() -> None:
        try:
            outcome.append(run_sweep(engine, db_url, spec, scheduler=dask_cluster.address))
        except BaseException as exc:  # reported by the assertion below
            outcome.append(exc)

    thread = threading.Thread(target=sweep)
    thread.start()
    worker_pids = {w.pid for w in dask_cluster.workers}
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline:
        running = [r for r in _runs(engine) if r.status == "running" and r.owner_pid
                   in worker_pids]
        if running:
            victim = running[0]
        else:
            time.sleep(0.05)
    assert victim is not None, "no cell started"
    time.sleep(0.5)  # mid-cell: its events are being written
    os.kill(victim.owner_pid, signal.SIGKILL)
    thread.join(timeout=300)
    assert not thread.is_alive()
    tally = outcome[0]
    assert isinstance(tally, SweepProgress), tally
    assert (tally.complete, tally.failed) == (4, 0)
    cells = _cells(engine)
    assert [c.status for c in cells] == ["complete"] * 4
    assert sorted(c.attempts for c in cells) == [1, 1, 1, 2]
    runs = _runs(engine)
    assert len(runs) == 4 and {r.status for r in runs} == {"complete"}
    assert {c.run_id for c in cells} == {r.id for r in runs}
    assert victim.owner_pid not in {r.owner_pid for r in runs}
