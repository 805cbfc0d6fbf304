"""Ctrl-C and SIGTERM on `kaudit sweep` itself (a real process with its local Dask cluster):
the sweep stops promptly, no cell and no run is left running, and the next run finishes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from kaudit.store.models import Run, SweepCell
from kaudit.store.schema import open_database
from kaudit.tracegen.synthetic import write_synthetic
from tests.sweep.conftest import REPO, write_spec


def _states(engine: Engine) -> tuple[list[str], list[str]]:
    with engine.connect() as connection:
        cells = list(connection.scalars(select(SweepCell.status).order_by(SweepCell.position)))
        runs = list(connection.scalars(select(Run.status)))
    return cells, runs


@pytest.mark.parametrize(("signum", "group", "exit_code", "message"), [
    (signal.SIGINT, False, 130, "kaudit: interrupted"),
    # Ctrl-C in a terminal: every process of the group gets it, the workers too.
    (signal.SIGINT, True, 130, "kaudit: interrupted"),
    (signal.SIGTERM, False, 143, "kaudit: terminated (SIGTERM)"),
])
def test_a_signal_stops_the_sweep_and_leaves_nothing_running(
        tmp_path: Path, signum: int, group: bool, exit_code: int, message: str) -> None:
    write_synthetic(tmp_path / "long.jsonl", 6000, 100)
    spec = write_spec(tmp_path / "s.yaml", f"""
name: stopped
traces: [{{name: long, files: [{tmp_path / "long.jsonl"}]}}]
seeds: 1-6
""")
    db = tmp_path / "k.db"
    process = subprocess.Popen([sys.executable, "-m", "kaudit", "sweep", str(spec), "--db",
                                str(db), "--workers", "2"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=group)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if db.exists():
                try:
                    engine = open_database(f"sqlite:///{db}", create=False)
                except Exception:  # the schema is still being created
                    time.sleep(0.1)
                    continue
                try:
                    if "running" in _states(engine)[1]:
                        break
                except Exception:  # the schema is still being created
                    pass
                finally:
                    engine.dispose()
            time.sleep(0.1)
        else:
            pytest.fail("no cell started")
        began = time.monotonic()
        if group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
        stopped_in = time.monotonic() - began
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == exit_code, stderr.decode()
    assert message in stderr.decode()
    assert "Traceback" not in stderr.decode()  # the workers did not each report it
    assert stopped_in < 20  # not after every cell
    engine = open_database(f"sqlite:///{db}")
    try:
        cells, runs = _states(engine)
        assert "running" not in cells and "running" not in runs
        assert cells.count("complete") < 6 and "failed" in cells
        again = subprocess.run([sys.executable, "-m", "kaudit", "sweep", str(spec), "--db",
                                str(db), "--workers", "2", "--quiet"], cwd=REPO,
                               capture_output=True, timeout=300)
        assert again.returncode == 0, again.stderr.decode()
        cells, runs = _states(engine)
        assert cells == ["complete"] * 6 and runs == ["complete"] * 6
    finally:
        engine.dispose()
