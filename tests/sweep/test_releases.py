"""A sweep's Kubernetes releases: ``kubernetesVersion`` in the spec (for every configuration, or
one), checked naming the file and the field; a cell's release in its key and on its run; each
trace's own release when the spec names none."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import orjson
import pytest
from sqlalchemy import Engine, select

from kaudit.errors import InputError
from kaudit.store.models import Run
from kaudit.sweep import cells
from kaudit.sweep.plan import plan_cells
from kaudit.sweep.run import run_sweep
from kaudit.sweep.spec import read_spec
from kaudit.sweep.worker import execute_cell
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.versions import KubernetesVersion
from tests.conftest import MADE_UP, write_trace
from tests.sweep.conftest import SAMPLE, write_spec


def _trace(path: Path, release: str | None = None) -> Path:
    write_trace(path, (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
                (1.0, "ADDED", make_pod("p1").req(cpu="1").obj()))
    if release is not None:
        header = orjson.dumps({"ts": "2026-01-05T09:00:00Z", "type": "BOOKMARK", "object": {
            "apiVersion": "kaudit.io/v1", "kind": "Recording", "metadata": {"annotations": {
                "kaudit.io/kubernetes-version": release}}}})
        path.write_bytes(header + b"\n" + path.read_bytes())
    return path


def test_the_spec_names_releases_for_all_configurations_or_one(
        tmp_path: Path, second_release: KubernetesVersion) -> None:
    spec = read_spec(write_spec(tmp_path / "s.yaml", f"""
kubernetesVersion: "1.99"
traces: [{{name: t, files: [{SAMPLE}]}}]
configs:
  - name: a
  - name: b
    kubernetesVersion: v1.34
"""))
    assert [(c.label, c.kubernetes_version) for c in spec.configs] == [("a", MADE_UP),
                                                                      ("b", "v1.34.2")]
    plain = read_spec(write_spec(tmp_path / "p.yaml", f"traces: [{{files: [{SAMPLE}]}}]\n"))
    assert plain.configs[0].kubernetes_version is None


@pytest.mark.parametrize(("text", "field", "message"), [
    ("kubernetesVersion: v1.20\n", "kubernetesVersion",
     "unsupported Kubernetes version 'v1.20': kaudit supports v1.34.2, v1.99.0"),
    ("configs: [{name: a, kubernetesVersion: latest}]\n", "configs[0].kubernetesVersion",
     "unsupported Kubernetes version 'latest'"),
    ("configs: [{name: a, kubernetesVersion: 1.34}]\n", "configs[0].kubernetesVersion",
     "expected a string, got a number"),
])
def test_an_unsupported_release_names_the_file_and_the_field(
        tmp_path: Path, second_release: KubernetesVersion, text: str, field: str,
        message: str) -> None:
    path = write_spec(tmp_path / "s.yaml", f"traces: [{{files: [{SAMPLE}]}}]\n{text}")
    with pytest.raises(InputError) as info:
        read_spec(path)
    assert str(info.value).startswith(f"{path}: {field}: {message}")


def test_a_cells_release_is_in_its_key_and_its_task(engine: Engine, tmp_path: Path,
                                                    second_release: KubernetesVersion) -> None:
    trace = _trace(tmp_path / "t.jsonl")
    body = f"name: s\ntraces: [{{name: t, files: [{trace}]}}]\n"
    (unnamed,) = plan_cells(engine, read_spec(write_spec(tmp_path / "a.yaml", body)))
    (named,) = plan_cells(engine, read_spec(write_spec(
        tmp_path / "b.yaml", body + "kubernetesVersion: v1.34.2\n")))
    # v1.34.2, which every run mirrored before releases were kept, keeps the keys of old cells.
    assert unnamed.key == named.key and unnamed.kubernetes_version == "v1.34.2"
    tasks = plan_cells(engine, read_spec(write_spec(tmp_path / "c.yaml", body + """
configs:
  - name: old
  - name: new
    kubernetesVersion: "1.99"
""")))
    assert [(t.config, t.kubernetes_version) for t in tasks] == [("old", "v1.34.2"),
                                                                 ("new", MADE_UP)]
    assert tasks[0].key == unnamed.key and tasks[1].key != unnamed.key
    assert tasks[1].config_choice().kubernetes_version == MADE_UP


def test_two_releases_identical_in_everything_but_their_name_are_two_cells(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from kaudit import versions

    twin = replace(versions.get("v1.34.2"), name=MADE_UP)
    monkeypatch.setattr(versions, "SUPPORTED", (versions.get("v1.34.2"), twin))
    monkeypatch.setattr(versions, "DEFAULT", versions.get("v1.34.2"))
    trace = _trace(tmp_path / "t.jsonl")
    tasks = plan_cells(engine, read_spec(write_spec(tmp_path / "s.yaml", f"""
traces: [{{name: t, files: [{trace}]}}]
configs: [{{name: a}}, {{name: b, kubernetesVersion: "1.99"}}]
""")))
    assert len({t.key for t in tasks}) == 2


def test_without_a_release_each_trace_mirrors_its_own(engine: Engine, tmp_path: Path,
                                                      second_release: KubernetesVersion) -> None:
    recorded = _trace(tmp_path / "recorded.jsonl", "v1.99.4")
    unknown = _trace(tmp_path / "unknown.jsonl", "v1.20.0")
    tasks = plan_cells(engine, read_spec(write_spec(tmp_path / "s.yaml", f"""
traces: [{{name: r, files: [{recorded}]}}, {{name: u, files: [{unknown}]}}]
configs: [{{name: t, fromTrace: true}}]
""")))
    assert [(t.trace, t.kubernetes_version) for t in tasks] == [("r", MADE_UP),
                                                                ("u", "v1.34.2")]
    pinned = plan_cells(engine, read_spec(write_spec(tmp_path / "p.yaml", f"""
traces: [{{name: r, files: [{recorded}]}}]
configs: [{{name: a, kubernetesVersion: v1.34.2}}]
""")))
    assert [t.kubernetes_version for t in pinned] == ["v1.34.2"]


def test_a_cells_run_mirrors_its_release(engine: Engine, db_url: str, tmp_path: Path,
                                         second_release: KubernetesVersion) -> None:
    """The worker's replay, in this process (a Dask worker process would not mirror the
    made-up release)."""
    trace = _trace(tmp_path / "t.jsonl")
    spec = read_spec(write_spec(tmp_path / "s.yaml", f"""
name: s
traces: [{{name: t, files: [{trace}]}}]
configs: [{{name: new, kubernetesVersion: "1.99"}}]
"""))
    (task,) = plan_cells(engine, spec)
    sweep_id, identity = cells.acquire_sweep(engine, spec)
    states = cells.register_cells(engine, sweep_id, spec, [task])
    answer = execute_cell(db_url, {**asdict(task), "cellId": states[task.key].id,
                                   "sweep": spec.name, "sweepIdentity": identity})
    assert answer["status"] == "complete", answer
    with engine.connect() as connection:
        release, options = connection.execute(
            select(Run.kubernetes_version, Run.options).where(Run.id == answer["runId"])).one()
    assert release == MADE_UP and orjson.loads(options)["featureGates"]["MadeUpGate"] is True


def test_a_sweep_on_dask_stores_each_cells_release(engine: Engine, db_url: str,
                                                   tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.jsonl")
    spec = read_spec(write_spec(tmp_path / "s.yaml", f"""
name: s
kubernetesVersion: "1.34"
traces: [{{name: t, files: [{trace}]}}]
"""))
    tally = run_sweep(engine, db_url, spec, workers=1)
    assert tally.complete == 1
    with engine.connect() as connection:
        assert list(connection.scalars(select(Run.kubernetes_version))) == ["v1.34.2"]
