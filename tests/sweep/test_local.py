"""Sweeps on a local Dask cluster (worker processes on this machine), on SQLite and
PostgreSQL: every cell stored once as an ordinary run, nothing redone, failures kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import Engine, select

from kaudit.errors import InputError
from kaudit.queries.diff import aggregates
from kaudit.queries.outcomes import run_outcomes
from kaudit.queries.runs import remove_runs
from kaudit.queries.sweeps import remove_sweeps
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.services.replay import ConfigChoice, resolve_config
from kaudit.store.models import Run, SweepCell
from kaudit.store.traces import get_trace
from kaudit.sweep import run as sweep_run
from kaudit.sweep.run import run_sweep
from kaudit.sweep.spec import read_spec
from kaudit.tracegen.synthetic import write_synthetic
from tests.sweep.conftest import BIN_PACKING, CRASH_CONFIG, SAMPLE, write_spec


def _cells(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return connection.execute(
            select(SweepCell.config, SweepCell.seed, SweepCell.status, SweepCell.run_id,
                   SweepCell.attempts, SweepCell.metrics, SweepCell.error, Run.name, Run.status,
                   Run.seed).outerjoin(Run, Run.id == SweepCell.run_id)
            .order_by(SweepCell.position)).all()


def _runs(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return connection.execute(select(Run.name, Run.status).order_by(Run.name)).all()


def test_each_cell_is_one_ordinary_run_and_a_finished_sweep_does_no_work(
        engine: Engine, db_url: str, sample_spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = read_spec(sample_spec)
    tally = run_sweep(engine, db_url, spec, workers=2)
    assert (tally.total, tally.complete, tally.failed, tally.skipped) == (4, 4, 0, 0)
    cells = _cells(engine)
    assert [(c.config, c.seed, c.status, c.attempts) for c in cells] == [
        ("default", 1, "complete", 1), ("default", 2, "complete", 1),
        ("bin-packing", 1, "complete", 1), ("bin-packing", 2, "complete", 1)]
    assert [c.name for c in cells] == ["tuning.default.sample.s1", "tuning.default.sample.s2",
                                       "tuning.bin-packing.sample.s1",
                                       "tuning.bin-packing.sample.s2"]
    assert {r.status for r in _runs(engine)} == {"complete"} and len(_runs(engine)) == 4

    # A cell's run is the run `kaudit replay` makes of the same trace, config and seed.
    trace = get_trace(engine, "tuning.sample")
    resolved = resolve_config(trace, ConfigChoice(file=BIN_PACKING))  # as `kaudit replay`
    replay_trace(engine, trace, resolved.config, resolved.registry, name="by-hand", seed=2)
    by_hand = aggregates(run_outcomes(engine, "by-hand"))
    in_sweep = aggregates(run_outcomes(engine, "tuning.bin-packing.sample.s2"))
    assert in_sweep == by_hand
    stored = orjson.loads(cells[3].metrics)
    assert {k: stored[k] for k in by_hand} == orjson.loads(orjson.dumps(by_hand))

    # Run again: nothing is submitted; no cluster is even started.
    def no_cluster(*args: Any) -> Any:
        raise AssertionError("a finished sweep started a cluster")

    monkeypatch.setattr(sweep_run, "_client", no_cluster)
    again = run_sweep(engine, db_url, spec, workers=2)
    assert (again.skipped, again.complete, again.failed) == (4, 0, 0)
    monkeypatch.undo()

    # A cell whose run was removed is redone, alone.
    remove_runs(engine, ["tuning.default.sample.s2"])
    redone = run_sweep(engine, db_url, spec, workers=1)
    assert (redone.skipped, redone.complete) == (3, 1)
    assert [c.attempts for c in _cells(engine)] == [1, 2, 1, 1]
    assert len(_runs(engine)) == 5  # the four cells and the run by hand


def test_a_failing_cell_is_recorded_and_retried_next_time(
        engine: Engine, db_url: str, tmp_path: Path) -> None:
    (tmp_path / "crash.yaml").write_text(CRASH_CONFIG)
    spec_path = write_spec(tmp_path / "s.yaml", f"""
name: breaks
traces: [{{name: sample, files: [{SAMPLE}]}}]
configs:
  - name: default
  - name: crash
    file: crash.yaml
    plugins: ["tests.sweep.failing_plugin:Crash"]
seeds: [3]
""")
    spec = read_spec(spec_path)
    tally = run_sweep(engine, db_url, spec, workers=2)
    assert (tally.complete, tally.failed) == (1, 1)
    assert tally.failures[0]["cell"] == "crash × sample × seed 3"
    assert "the Crash plugin crashed" in tally.failures[0]["error"]
    cells = _cells(engine)
    assert [(c.config, c.status) for c in cells] == [("default", "complete"),
                                                      ("crash", "failed")]
    assert "RuntimeError: the Crash plugin crashed" in cells[1].error
    # The failed cell's run is kept, failed with its error; nothing reads running.
    assert dict(_runs(engine)) == {"breaks.default.sample.s3": "complete",
                                   "breaks.crash.sample.s3": "failed"}
    again = run_sweep(engine, db_url, spec, workers=1)
    assert (again.skipped, again.failed) == (1, 1)
    assert [c.attempts for c in _cells(engine)] == [1, 2]
    assert dict(_runs(engine))["breaks.crash.sample.s3"] == "failed"
    assert len(_runs(engine)) == 2


def test_an_interrupted_sweep_leaves_nothing_running(
        engine: Engine, db_url: str, tmp_path: Path) -> None:
    write_synthetic(tmp_path / "long.jsonl", 6000, 100)  # seconds per cell
    spec = read_spec(write_spec(tmp_path / "s.yaml", f"""
name: stopped
traces: [{{name: long, files: [{tmp_path / "long.jsonl"}]}}]
seeds: 1-4
"""))
    seen: list[int] = []

    def stop_when_running() -> None:
        with engine.connect() as connection:
            running = connection.scalar(select(SweepCell.id).where(
                SweepCell.status == "running"))
        if running is not None:
            seen.append(running)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(engine, db_url, spec, workers=2, check_stop=stop_when_running)
    assert seen
    statuses = [c.status for c in _cells(engine)]
    assert "running" not in statuses and "failed" in statuses
    assert {r.status for r in _runs(engine)} <= {"complete", "failed"}
    assert all(c.error == "interrupted: the sweep was stopped" for c in _cells(engine)
               if c.status == "failed")
    finished = run_sweep(engine, db_url, spec, workers=2)
    assert finished.failed == 0 and finished.skipped == 4 - len(
        [s for s in statuses if s != "complete"])
    assert [c.status for c in _cells(engine)] == ["complete"] * 4
    assert len(_runs(engine)) == 4 and {r.status for r in _runs(engine)} == {"complete"}


def test_a_cluster_that_cannot_run_these_cells_is_refused(
        engine: Engine, db_url: str, sample_spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dask.distributed import LocalCluster

    import kaudit

    spec = read_spec(sample_spec)
    with (LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty,
          pytest.raises(InputError, match="the Dask cluster has no workers")):
        run_sweep(engine, db_url, spec, scheduler=empty.scheduler_address)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        monkeypatch.setattr(kaudit, "__version__", "0.0.0-not-the-workers")
        with pytest.raises(InputError, match=r"every worker needs kaudit 0\.0\.0-not-the-"
                                             r"workers installed; tcp://127\.0\.0\.1:\d+: "
                                             r"kaudit \d"):
            run_sweep(engine, db_url, spec, scheduler=cluster.scheduler_address)
    # Nothing ran; the cells wait for a cluster that can run them.
    assert {c.status for c in _cells(engine)} == {"pending"}
    assert _runs(engine) == []


def test_a_renamed_configuration_keeps_its_run_and_a_new_one_takes_its_old_name(
        engine: Engine, db_url: str, tmp_path: Path) -> None:
    def spec(configs: str) -> Any:
        return read_spec(write_spec(tmp_path / "s.yaml", f"""
name: rr
traces: [{{name: t, files: [{SAMPLE}]}}]
configs: {configs}
seeds: [1]
"""))

    first = spec("[{name: default}, {name: bp, patch: {percentageOfNodesToScore: 50}}]")
    assert run_sweep(engine, db_url, first, workers=1).complete == 2
    renamed = spec("[{name: default}, {name: packing, patch: {percentageOfNodesToScore: 50}},"
                   " {name: bp, patch: {percentageOfNodesToScore: 70}}]")
    tally = run_sweep(engine, db_url, renamed, workers=1)
    assert (tally.skipped, tally.complete) == (2, 1)
    with engine.connect() as connection:
        rows = connection.execute(select(SweepCell.config, SweepCell.run_name, Run.name)
                                  .join(Run, Run.id == SweepCell.run_id)
                                  .order_by(SweepCell.position)).all()
    assert [tuple(r) for r in rows] == [("default", "rr.default.t.s1", "rr.default.t.s1"),
                                        ("packing", "rr.bp.t.s1", "rr.bp.t.s1"),
                                        ("bp", "rr.bp.t.s1-2", "rr.bp.t.s1-2")]
    # Removing the sweep removes exactly its three runs, not a run that merely looks like one.
    config, registry = load(None)
    replay_trace(engine, get_trace(engine, "rr.t"), config, registry, name="rr.packing.t.s1")
    assert remove_sweeps(engine, ["rr"]) == ["rr"]
    assert [r.name for r in _runs(engine)] == ["rr.packing.t.s1"]


def test_quieting_the_local_workers_leaves_the_sweep_s_own_logging_alone() -> None:
    """The workers start with Dask's logging at critical (no traceback per worker on
    Ctrl-C); the sweep's process imports Dask first, so its own warnings still show."""
    import os
    import subprocess
    import sys

    script = ("import logging, os\n"
              "from kaudit.sweep.run import WORKER_LOG_LEVEL, _quiet_worker_logs\n"
              "with _quiet_worker_logs():\n"
              "    import distributed  # noqa: F401\n"
              "    inside = os.environ[WORKER_LOG_LEVEL]\n"
              "print(inside, logging.getLogger('distributed').level,"
              " WORKER_LOG_LEVEL in os.environ)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={k: v for k, v in os.environ.items()
                                          if not k.startswith("DASK_")})
    assert out.stdout.split() == ["critical", str(20), "False"]  # info, as Dask's default


def test_dask_is_quiet_in_this_process_only_while_the_sweep_stops_its_cluster() -> None:
    import logging
    dask_logger = logging.getLogger("distributed")
    before = dask_logger.level
    try:
        dask_logger.setLevel(logging.INFO)
        with sweep_run._dask_quiet_here():
            assert not logging.getLogger("distributed.batched").isEnabledFor(logging.ERROR)
            assert logging.getLogger("kaudit.sweep.run").isEnabledFor(logging.ERROR)
        assert dask_logger.level == logging.INFO
    finally:
        dask_logger.setLevel(before)
