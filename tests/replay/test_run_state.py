"""A run's stored status is always true: a replay killed without a word reads as abandoned, a
replay told to stop is marked failed, and runs and traces can be removed whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import Result
from sqlalchemy import Engine, func, select, update

from benchmarks.replay import events
from kaudit.eventlog.runs import effective_status, this_owner
from kaudit.store.models import Run, RunEvent


def test_a_running_run_is_abandoned_when_its_owner_is_gone() -> None:
    now = datetime.now(UTC)
    host, pid = this_owner()
    assert effective_status("complete", host, pid, None, now) == "complete"
    assert effective_status("running", host, pid, now, now) == "running"
    recent, stale = now - timedelta(seconds=5), now - timedelta(minutes=2)
    assert effective_status("running", "elsewhere", 1, recent, now) == "running"
    assert effective_status("running", "elsewhere", 1, stale, now) == "abandoned"
    assert effective_status("running", None, None, None, now) == "abandoned"  # before owners
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert effective_status("running", host, dead.pid, now, now) == "abandoned"


@pytest.fixture
def big_trace(tmp_path: Path) -> Path:
    """A trace that takes a few seconds to replay."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"\n".join(events("SchedulingBasic", 2000, 0, 20000)) + b"\n")
    return path


def _start_replay(db_url: str, name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "kaudit.cli", "replay", "big", "--name", name,
                             "--db", db_url], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _wait_until_logging(engine: Engine, name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            run_id = connection.scalar(select(Run.id).where(Run.name == name))
            logged = run_id is not None and connection.scalar(
                select(func.count()).select_from(RunEvent).where(RunEvent.run_id == run_id))
        if logged:
            return
        time.sleep(0.2)
    raise AssertionError("the replay never started logging")


def _runs(run_kaudit: Callable[..., Result]) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(run_kaudit("runs", "--json").output)}


@pytest.mark.slow
def test_a_killed_replay_is_abandoned_removable_and_harmless(
        engine: Engine, db_url: str, big_trace: Path,
        run_kaudit: Callable[..., Result]) -> None:
    assert run_kaudit("ingest", str(big_trace), "--name", "big").exit_code == 0
    process = _start_replay(db_url, "killed")
    try:
        _wait_until_logging(engine, "killed")
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        process.kill()
    run = _runs(run_kaudit)["killed"]
    assert run["status"] == "abandoned" and "stopped without finishing" in run["error"]
    removed = run_kaudit("runs", "rm", "killed", "--json")
    assert removed.exit_code == 0 and json.loads(removed.output) == {"removed": ["killed"]}
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(RunEvent)) == 0
    assert "killed" not in _runs(run_kaudit)
    again = run_kaudit("replay", "big", "--name", "after", "--json")
    assert again.exit_code == 0 and json.loads(again.output)["status"] == "complete"


@pytest.mark.slow
def test_a_terminated_replay_is_marked_failed(
        engine: Engine, db_url: str, big_trace: Path,
        run_kaudit: Callable[..., Result]) -> None:
    assert run_kaudit("ingest", str(big_trace), "--name", "big").exit_code == 0
    process = _start_replay(db_url, "stopped")
    try:
        _wait_until_logging(engine, "stopped")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 143, stderr
    assert b"terminated (SIGTERM)" in stderr
    run = _runs(run_kaudit)["stopped"]
    assert run["status"] == "failed" and run["error"] == "terminated (SIGTERM)"


def test_a_live_run_is_not_removed_without_force(
        engine: Engine, sample_path: Path, run_kaudit: Callable[..., Result]) -> None:
    assert run_kaudit("ingest", str(sample_path), "--name", "s").exit_code == 0
    assert run_kaudit("replay", "s", "--name", "live").exit_code == 0
    host, pid = this_owner()
    with engine.begin() as connection:  # as if this process were still replaying it
        connection.execute(update(Run).values(status="running", owner_host=host, owner_pid=pid,
                                              heartbeat_at=datetime.now(UTC)))
    assert _runs(run_kaudit)["live"]["status"] == "running"
    refused = run_kaudit("runs", "rm", "live")
    assert refused.exit_code == 2 and "still being replayed: live" in refused.output
    refused = run_kaudit("traces", "rm", "s")
    assert refused.exit_code == 2 and "still being replayed: live" in refused.output
    assert run_kaudit("traces", "rm", "s", "--force").exit_code == 0
    assert _runs(run_kaudit) == {}
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(RunEvent)) == 0
