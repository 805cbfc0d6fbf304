"""``kaudit gpu-report`` says why a column is empty rather than printing dashes alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from sqlalchemy import Engine

from kaudit.queries.gpu_sharing import gpu_report
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace


def test_a_run_without_gpus_says_why_its_report_is_empty(
        engine: Engine, tmp_path: Path, run_kaudit: Callable[..., Result]) -> None:
    path = write_trace(tmp_path / "cpu.jsonl",
                       (0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
                       (1, "ADDED", make_pod("p").req(cpu="1").obj()))
    ingest_trace(engine, [TraceInput(path)], name="cpu")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "cpu"), config, registry, name="cpu",
                 gpu_report=True)
    (run,) = gpu_report(engine, ["cpu"])["runs"]
    assert all(value is None for value in run["at"]["100"].values())
    assert run["empty"].startswith("the cluster had no GPUs")
    output = run_kaudit("gpu-report", "cpu").output
    assert "cpu: empty columns: the cluster had no GPUs" in output


def test_gpus_but_no_gpu_workload_the_report_counts(sample_path: Path, engine: Engine) -> None:
    """The sample's GPU node is used by a pod asking nvidia.com/gpu, which the FGD protocol's
    curves do not count."""
    ingest_trace(engine, [TraceInput(sample_path)])
    config, registry = load()
    replay_trace(engine, get_trace(engine, "sample"), config, registry, name="s",
                 gpu_report=True)
    (run,) = gpu_report(engine, ["s"])["runs"]
    assert run["gpus"] == 4
    assert run["empty"].startswith("no pod tried asked for GPU devices as the report counts")
