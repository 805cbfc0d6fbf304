"""Planning a sweep: identical cells refused, keys that ignore how numbers are written, bad
trace files reported as `kaudit ingest` reports them with nothing stored, and one coordinator
per sweep at a time."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, update

from kaudit.errors import InputError
from kaudit.store.models import Sweep, SweepCell, Trace
from kaudit.sweep import cells
from kaudit.sweep.plan import plan_cells
from kaudit.sweep.run import run_sweep
from kaudit.sweep.spec import read_spec
from tests.sweep.conftest import SAMPLE, write_spec


def _spec(tmp_path: Path, body: str) -> Path:
    return write_spec(tmp_path / "s.yaml", f"name: s\ntraces: [{{name: t, files: [{SAMPLE}]}}]\n"
                                           + body)


@pytest.mark.parametrize(("body", "message"), [
    ("configs: [{name: a}, {name: b, patch: {percentageOfNodesToScore: 0}}]\n",
     "configs a and b are the same configuration"),
    ("configs: [{name: a}, {name: b, replay: {tieBreak: random}}]\n",
     "configs a and b are the same configuration"),
])
def test_identical_configurations_are_refused(engine: Engine, tmp_path: Path, body: str,
                                              message: str) -> None:
    with pytest.raises(InputError, match=message):
        plan_cells(engine, read_spec(_spec(tmp_path, body)))


def test_identical_traces_are_refused(engine: Engine, tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s.yaml", f"traces: [{{name: a, files: [{SAMPLE}]}}, "
                                           f"{{name: b, files: [{SAMPLE}]}}]\n")
    with pytest.raises(InputError, match="traces a and b are the same trace content"):
        plan_cells(engine, read_spec(spec))


def test_numbers_key_alike_however_written(engine: Engine, tmp_path: Path) -> None:
    keys = []
    for replay in ("", "replay: {victimTermination: 1, bindLatency: 0}\n",
                   "replay: {victimTermination: 1.0, bindLatency: 0.0}\n"):
        (task,) = plan_cells(engine, read_spec(_spec(tmp_path, replay)))
        keys.append(task.key)
    assert len(set(keys)) == 1
    other = plan_cells(engine, read_spec(_spec(tmp_path, "replay: {victimTermination: 2}\n")))
    assert other[0].key != keys[0]


def test_a_bad_trace_file_is_named_and_nothing_is_stored(engine: Engine, tmp_path: Path
                                                         ) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(SAMPLE.read_bytes().split(b"\n", 1)[0] + b"\n{not json\n")
    spec = write_spec(tmp_path / "s.yaml", f"traces: [{{name: ok, files: [{SAMPLE}]}}, "
                                           f"{{name: bad, files: [{bad}]}}]\n")
    with pytest.raises(InputError) as caught:
        run_sweep(engine, None, read_spec(spec), workers=1)
    assert str(caught.value).startswith(f"{spec}: trace bad: {bad}:2: ")
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(SweepCell)) == 0
        assert connection.scalar(select(func.count()).select_from(Sweep)) == 0
        names = list(connection.scalars(select(Trace.name)))
    assert names == ["s.ok"]  # the good trace before it is stored whole; the bad one not


def test_a_missing_stored_trace_names_the_spec(engine: Engine, tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s.yaml", "traces: [{name: t, trace: nowhere}]\n")
    with pytest.raises(InputError, match=f"{spec}: trace t: no trace named 'nowhere'"):
        plan_cells(engine, read_spec(spec))


def test_one_coordinator_at_a_time(engine: Engine, tmp_path: Path) -> None:
    spec = read_spec(_spec(tmp_path, ""))
    sweep_id, identity = cells.acquire_sweep(engine, spec)
    assert identity.startswith(f"{sweep_id}@")
    # Another live process holds it (the parent of this test process stands in for one).
    with engine.begin() as connection:
        connection.execute(update(Sweep).values(coordinator_pid=os.getppid()))
    with pytest.raises(InputError, match=f"sweep s is being run by another `kaudit sweep` "
                                         f"\\(pid {os.getppid()} on "):
        cells.acquire_sweep(engine, spec)
    # A holder whose heartbeat is old is gone: the sweep is taken over, with its identity.
    with engine.begin() as connection:
        connection.execute(update(Sweep).values(
            coordinator_heartbeat_at=datetime(2020, 1, 1, tzinfo=UTC)))
    assert cells.acquire_sweep(engine, spec) == (sweep_id, identity)
    cells.register_cells(engine, sweep_id, spec, plan_cells(engine, spec))
    cells.release_sweep(engine, sweep_id)
    with engine.connect() as connection:
        assert connection.execute(select(Sweep.coordinator_pid)).one() == (None,)


def test_cells_of_a_sweep_nobody_runs_read_abandoned(engine: Engine, tmp_path: Path) -> None:
    from kaudit.queries.sweeps import list_sweeps, sweep_report

    spec = read_spec(_spec(tmp_path, ""))
    sweep_id, _ = cells.acquire_sweep(engine, spec)
    (state,) = cells.register_cells(engine, sweep_id, spec, plan_cells(engine, spec)).values()
    assert cells.claim(engine, state.id, "token", "somewhere")
    assert list_sweeps(engine)[0]["running"] == 1  # this process coordinates it
    # The coordinator was killed (kill -9): its lease stays, its process is gone.
    with engine.begin() as connection:
        connection.execute(update(Sweep).values(coordinator_pid=2**22 + 12345))
    assert (list_sweeps(engine)[0]["running"], list_sweeps(engine)[0]["abandoned"]) == (0, 1)
    assert sweep_report(engine, "s")["cells"]["abandoned"] == 1
    assert sweep_report(engine, "s")["runs"][0]["status"] == "abandoned"


def test_a_configuration_from_the_trace_replays_as_kaudit_replay_does(
        engine: Engine, db_url: str, tmp_path: Path) -> None:
    """``fromTrace: true`` takes each trace's stored configuration (a simulator export's,
    through the same service as ``kaudit replay``): its cells are keyed by it and replayed
    under it, apart from kube-scheduler's defaults."""
    from dataclasses import asdict

    from kaudit.queries.outcomes import run_outcomes
    from kaudit.services.replay import ConfigChoice, replay_stored_trace, resolve_config
    from kaudit.store.traces import get_trace
    from kaudit.sweep.worker import execute_cell
    from tests.conftest import DATA

    spec = read_spec(write_spec(tmp_path / "s.yaml", f"""
name: s
traces: [{{name: sim, files: [{DATA / "simulator" / "export.json"}]}}]
configs: [{{name: stored, fromTrace: true}}, {{name: default}}]
"""))
    sweep_id, identity = cells.acquire_sweep(engine, spec)
    tasks = plan_cells(engine, spec)
    stored, default = tasks
    assert stored.key != default.key and stored.config_document is None
    states = cells.register_cells(engine, sweep_id, spec, tasks)
    for task in tasks:
        data = {**asdict(task), "cellId": states[task.key].id, "sweep": spec.name,
                "sweepIdentity": identity}
        assert execute_cell(db_url, data)["status"] == "complete"
    trace = get_trace(engine, stored.trace_id)
    replayed = replay_stored_trace(engine, trace, resolve_config(trace, ConfigChoice()),
                                   name="by-replay")
    by_sweep = run_outcomes(engine, stored.run_name)
    by_replay = run_outcomes(engine, replayed.run.name)
    assert by_sweep.config == by_replay.config
    assert {k: p.node for k, p in by_sweep.pods.items()} == \
        {k: p.node for k, p in by_replay.pods.items()}
    assert by_sweep.config != run_outcomes(engine, default.run_name).config


def test_a_cell_keeps_the_key_it_had_before_newer_replay_options(engine: Engine,
                                                                  tmp_path: Path) -> None:
    """A sweep finished before an option existed is recognised when run again: the sample
    trace under the defaults, seed 0, keys as it did (options added later enter the key only
    when set)."""
    (task,) = plan_cells(engine, read_spec(_spec(tmp_path, "")))
    # The sample's bytes changed once since (it gained its header naming v1.34.2), and with
    # them its key; the header-less sample as v1.34.2 keyed 4422ab9b….
    assert task.key == "6123d2acdf39a04acada11dc4ae936a42f187e47cff9fc9bfe023d438b18fd79"
    (timed,) = plan_cells(engine, read_spec(_spec(tmp_path, "replay: {cycleDuration: 0.005}\n")))
    assert timed.key != task.key
