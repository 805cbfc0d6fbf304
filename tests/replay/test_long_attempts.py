"""A replay busy in one long scheduling attempt (a plugin spinning, as a costly selector would)
is still a live run, stops promptly when told to, and stops with one line when its run is
removed under it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.errors import InputError
from kaudit.queries.runs import list_runs, remove_runs
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from tests.replay.slow_plugins import CONFIG, REFERENCE, SlowFilter


@pytest.fixture
def slow_config(tmp_path: Path) -> Path:
    path = tmp_path / "slow.yaml"
    path.write_text(CONFIG)
    return path


@pytest.fixture
def ingested(sample_path: Path, run_kaudit: Callable[..., Result]) -> str:
    assert run_kaudit("ingest", str(sample_path), "--name", "s").exit_code == 0
    return "s"


def test_a_run_busy_in_one_long_attempt_stays_live_and_cannot_be_removed(
        engine: Engine, ingested: str, slow_config: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kaudit.eventlog.runs.HEARTBEAT_SECONDS", 0.2)
    monkeypatch.setattr("kaudit.eventlog.runs.STALE_SECONDS", 1.0)
    monkeypatch.setenv("KAUDIT_TEST_SLOW_FILTER_SECONDS", "3")
    monkeypatch.setattr(SlowFilter, "spun", False)
    config, registry = load(slow_config, None, (REFERENCE,))
    seen: list[str] = []
    removal: list[str] = []
    done = threading.Event()

    def observe() -> None:
        spinning_since: float | None = None
        while not done.wait(0.1):
            seen.extend(run.status for run in list_runs(engine) if run.name == "long")
            if SlowFilter.spun and spinning_since is None:
                spinning_since = time.monotonic()
            if spinning_since and not removal and time.monotonic() - spinning_since > 1.5:
                try:
                    remove_runs(engine, ["long"])
                    removal.append("removed")
                except InputError as exc:
                    removal.append(str(exc))

    observer = threading.Thread(target=observe)
    observer.start()
    try:
        replay_trace(engine, get_trace(engine, ingested), config, registry, name="long")
    finally:
        done.set()
        observer.join()
    assert SlowFilter.spun and "running" in seen
    # never abandoned while busy; the observer may read the final status before it stops
    assert set(seen) <= {"running", "complete"}, seen
    assert removal and "still being replayed: long" in removal[0]


def _start_slow_replay(db_url: str, config: Path, name: str, mark: Path,
                       seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "kaudit.cli", "replay", "s", "--name", name, "--db", db_url,
         "--config", str(config), "--plugin", REFERENCE],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "KAUDIT_TEST_SLOW_FILTER_MARK": str(mark),
             "KAUDIT_TEST_SLOW_FILTER_SECONDS": str(seconds)})


def _wait_for(mark: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not mark.exists():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "the long attempt never began"
        time.sleep(0.1)


def _status(run_kaudit: Callable[..., Result], name: str) -> tuple[str, str | None]:
    import json

    runs = {r["name"]: r for r in json.loads(run_kaudit("runs", "--json").output)}
    return runs[name]["status"], runs[name]["error"]


@pytest.mark.slow
@pytest.mark.parametrize(("signals", "code", "error", "within"), [
    ((signal.SIGTERM,), 143, "terminated (SIGTERM)", 15.0),
    ((signal.SIGINT,), 130, "interrupted (SIGINT)", 15.0),
    ((signal.SIGTERM, signal.SIGTERM), 143, "terminated (SIGTERM)", 4.0),
], ids=["SIGTERM", "SIGINT", "SIGTERM twice"])
def test_signals_stop_a_replay_during_a_long_attempt(
        db_url: str, ingested: str, slow_config: Path, tmp_path: Path,
        run_kaudit: Callable[..., Result], signals: tuple[int, ...], code: int, error: str,
        within: float) -> None:
    mark = tmp_path / "spinning"
    process = _start_slow_replay(db_url, slow_config, "stopped", mark, 120)
    try:
        _wait_for(mark, process)
        began = time.monotonic()
        for sent in signals:
            process.send_signal(sent)
            time.sleep(0.3)
        _, stderr = process.communicate(timeout=within + 10)
        took = time.monotonic() - began
    finally:
        process.kill()
    assert process.returncode == code, stderr
    assert took < within, took
    assert b"Traceback" not in stderr
    assert _status(run_kaudit, "stopped") == ("failed", error)


@pytest.mark.slow
def test_a_replay_whose_run_was_removed_stops_with_one_line(
        db_url: str, ingested: str, slow_config: Path, tmp_path: Path,
        run_kaudit: Callable[..., Result]) -> None:
    mark = tmp_path / "spinning"
    process = _start_slow_replay(db_url, slow_config, "gone", mark, 2)
    try:
        _wait_for(mark, process)
        process.send_signal(signal.SIGSTOP)
        try:
            assert run_kaudit("runs", "rm", "gone", "--force").exit_code == 0
        finally:
            process.send_signal(signal.SIGCONT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode not in (0, None)
    assert stderr.decode() == "kaudit: run gone was removed while it was replaying; stopped\n"
