"""The FGD paper's protocol: each pod tried once, and the GPU allocation and fragmentation
report against arrived workload, through the CLI."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

import yaml
from click.testing import Result
from sqlalchemy import Engine

from kaudit.fgd.paper import paper_configuration
from kaudit.queries.explain import explain_pod
from kaudit.queries.runs import get_run, iter_run_events
from tests.conftest import gpu_share_events, replay_gpu_policies


def test_each_pod_is_tried_once_and_a_failed_one_is_given_up(engine: Engine,
                                                             tmp_path: Path) -> None:
    replay_gpu_policies(engine, tmp_path, ("FGD",))
    run = get_run(engine, "fgd")
    summary = run.summary or {}
    pods = sum(1 for _t, _kind, obj in gpu_share_events() if obj["kind"] == "Pod")
    assert summary["attempts"] == pods
    assert summary["podsScheduled"] + summary["podsPendingAtEnd"] == pods
    assert summary["podsPendingAtEnd"] > 0  # 48 pods ask more than the cluster has
    events = list(iter_run_events(engine, run.id))
    given_up = {e["pod"] for e in events if e["kind"] == "queue" and e.get("event") == "GivenUp"}
    failed = {e["pod"] for e in events if e["kind"] == "attempt" and not e.get("node")}
    assert given_up == failed and len(failed) == summary["podsPendingAtEnd"]
    pending = explain_pod(engine, "fgd", sorted(failed)[0])
    assert pending["verdict"]["state"] == "pending" and len(pending["attempts"]) == 1


def test_the_gpu_report_gives_the_papers_curves(engine: Engine, tmp_path: Path,
                                                run_kaudit: Callable[..., Result]) -> None:
    replay_gpu_policies(engine, tmp_path)
    out = tmp_path / "curves.csv"
    result = run_kaudit("gpu-report", "fgd", "bestfit", "--json", "--csv", str(out))
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [r["run"] for r in report["runs"]] == ["fgd", "bestfit"]
    gpus = 2 * 8 + 2 * 4
    for run in report["runs"]:
        assert run["gpus"] == gpus and run["samples"] == 48
        assert run["policy"] in ("FGDScore", "BestFitScore")
        curves = run["curves"]
        assert curves["arrived"] == list(range(131))
        known = [i for i, v in enumerate(curves["allocated"]) if v is not None]
        assert known and known[0] <= 3  # the first pod asks 2 % of the GPUs
        for i in known:
            assert curves["allocated"][i] + curves["unallocated"][i] == 100
            assert 0 <= curves["fragRate"][i] <= 100 and curves["fragAmount"][i] >= 0
            # nothing is allocated that has not arrived (a neighbouring point and rounding)
            assert curves["allocated"][i] <= i + 1.5
        allocated = [curves["allocated"][i] for i in known]
        assert allocated == sorted(allocated)  # no deletions: allocation only grows
        assert run["at"]["100"]["unallocated"] == curves["unallocated"][100]
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 2 * 131 and rows[0]["run"] == "fgd" and rows[0]["arrived"] == "0"
    text = run_kaudit("gpu-report", "fgd")
    assert text.exit_code == 0 and "unallocated GPU %" in text.output


def test_the_allocation_at_the_end_is_what_the_bound_pods_hold(
        engine: Engine, tmp_path: Path) -> None:
    replay_gpu_policies(engine, tmp_path, ("FGD",))
    run = get_run(engine, "fgd")
    held = 0
    for event in iter_run_events(engine, run.id):
        if event["kind"] == "bind" and event.get("gpus"):
            held += event["gpus"]["milli"] * len(event["gpus"]["devices"])
    sharing = (run.summary or {})["gpuSharing"]
    assert sharing["allocatedMilli"] == held > 0
    assert sharing["arrivedMilli"] > held  # more was asked than the cluster holds


def test_a_run_without_a_gpu_report_is_refused_with_the_flag_to_use(
        sample_runs: Engine, run_kaudit: Callable[..., Result]) -> None:
    result = run_kaudit("gpu-report", "default")
    assert result.exit_code != 0
    assert "run default has no GPU report: replay with --gpu-report" in result.output


def test_explain_says_which_tie_break_chose(engine: Engine, tmp_path: Path) -> None:
    replay_gpu_policies(engine, tmp_path, ("FGD",))
    first = explain_pod(engine, "fgd", "default/job-00")["verdict"]
    assert "the seeded order of node names chose it" in first["headline"], first


def test_typical_pods_may_be_configured_and_are_checked(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    config = tmp_path / "fgd.yaml"
    config.write_text("""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score: {enabled: [{name: FGDScore}]}
  pluginConfig:
  - name: FGDScore
    args:
      typicalPods:
      - {cpuMilli: 4000, gpuMilli: 1500, gpuCount: 1, frequency: 0.5}
      - {cpuMilli: 4000, gpuMilli: 0, gpuCount: 1, frequency: 0}
""")
    result = run_kaudit("config", "show", str(config), db=False)
    assert result.exit_code == 2, result.output
    assert "typicalPods[0].gpuMilli: Invalid value: 1500: must be at most 1000" in result.output
    assert "typicalPods[1].frequency: Invalid value: 0: must be in (0, 1]" in result.output
    assert "gpuMilli and gpuCount must both be 0 or both be positive" in result.output


def test_the_replay_command_runs_the_protocol(engine: Engine, tmp_path: Path,
                                              run_kaudit: Callable[..., Result]) -> None:
    replay_gpu_policies(engine, tmp_path, ())
    config = tmp_path / "gpupacking.yaml"
    config.write_text(yaml.safe_dump(paper_configuration("GpuPacking")))
    result = run_kaudit("replay", "gpus", "--config", str(config), "--one-try", "--gpu-report",
                        "--tie-break", "shuffled-name", "--seed", "3", "--name", "packing")
    assert result.exit_code == 0, result.output
    assert "GPU: 24 GPUs, unallocated" in result.output
    assert "(kaudit gpu-report packing)" in result.output
    assert (get_run(engine, "packing").summary or {})["attempts"] == 48
