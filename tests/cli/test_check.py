"""CI mode: ``kaudit compare`` and ``kaudit check`` exit codes, formats and GitHub outputs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kaudit.cli import cli
from tests.queries.test_diff import MOST_ALLOCATED


@pytest.fixture
def configs(tmp_path: Path) -> dict[str, Path]:
    most = tmp_path / "most.yaml"
    most.write_text(MOST_ALLOCATED)
    default = tmp_path / "default.yaml"
    default.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                       "kind: KubeSchedulerConfiguration\n")
    return {"most": most, "default": default}


def test_compare_exit_codes(run_kaudit: Callable[..., Result], sample_path: Path,
                            configs: dict[str, Path]) -> None:
    same = run_kaudit("compare", str(sample_path), "--config", str(configs["default"]),
                      "--config", str(configs["default"]), "--fail-on", "changed>0")
    assert same.exit_code == 0, same.output
    assert "PASSED" in same.output
    worse = run_kaudit("compare", "sample", "--config", str(configs["default"]),
                       "--config", str(configs["most"]), "--fail-on", "moved>5%",
                       "--format", "json")
    assert worse.exit_code == 1
    report = json.loads(worse.output)
    assert report["passed"] is False and report["conditions"][0]["failed"] is True
    usage = run_kaudit("compare", "sample", "--config", str(configs["default"]),
                       "--config", str(configs["most"]), "--fail-on", "bogus>1")
    assert usage.exit_code == 2 and "unknown metric" in usage.output
    one = run_kaudit("compare", "sample", "--config", str(configs["default"]))
    assert one.exit_code == 2


def test_check_needs_only_trace_config_and_baseline(
        run_kaudit: Callable[..., Result], sample_path: Path, configs: dict[str, Path],
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = tmp_path / "baseline.json"
    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    assert run_kaudit("replay", "sample", "--summary-out", str(baseline)).exit_code == 0
    summary = json.loads(baseline.read_text())
    assert summary["pods"]["web/payments-0"]["node"] and summary["aggregates"]["scheduled"]

    step_summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    workdir = tmp_path / "ci"
    workdir.mkdir()
    monkeypatch.chdir(workdir)  # a CI checkout: no database anywhere
    runner = CliRunner()
    passing = runner.invoke(cli, ["check", str(sample_path), "--baseline", str(baseline),
                                  "--fail-on", "changed>0", "--fail-on", "preempted>baseline"])
    assert passing.exit_code == 0, passing.output
    failing = runner.invoke(cli, ["check", str(sample_path), "--config", str(configs["most"]),
                                  "--baseline", str(baseline), "--fail-on", "changed>5%",
                                  "--format", "junit"])
    assert failing.exit_code == 1
    xml_text = failing.output.split("::error", 1)[0]
    suites = ET.fromstring(xml_text)
    assert suites.tag == "testsuites"
    suite = suites.find("testsuite")
    assert suite is not None and int(suite.get("failures", "0")) == 1
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "0")) == len(cases) > 1
    assert cases[0].get("name") == "changed>5%" and cases[0].find("failure") is not None
    assert all(c.get("classname") in ("kaudit.conditions", "kaudit.pods") for c in cases)
    assert "::error title=kaudit changed>5%::" in failing.output
    assert "kaudit: baseline → candidate" in step_summary.read_text()
    assert not list(workdir.glob("*.db"))

    other = tmp_path / "other.jsonl"
    other.write_text(sample_path.read_text().replace("node-a1", "node-x1"))
    mismatch = runner.invoke(cli, ["check", str(other), "--baseline", str(baseline)])
    assert mismatch.exit_code == 2 and "another trace" in mismatch.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert runner.invoke(cli, ["check", str(sample_path), "--baseline", str(bad)]).exit_code == 2


def test_check_reads_its_trace_as_ingest_does(run_kaudit: Callable[..., Result],
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Several files and a ``--snapshot`` List, exactly as ``kaudit ingest`` takes them."""
    from kaudit.tracegen.builders import make_node, make_pod
    from tests.conftest import write_trace

    snapshot = tmp_path / "start.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="110").obj()
        for i in range(3)]}))
    first = write_trace(tmp_path / "part-1.jsonl",
                        *((float(i), "ADDED", make_pod(f"a{i}").req(cpu="1").obj())
                          for i in range(4)))
    second = write_trace(tmp_path / "part-2.jsonl",
                         *((10.0 + i, "ADDED", make_pod(f"b{i}").req(cpu="1").obj())
                           for i in range(4)))
    baseline = tmp_path / "baseline.json"
    inputs = [str(first), str(second), "--snapshot", str(snapshot)]
    assert run_kaudit("ingest", *inputs, "--name", "parts").exit_code == 0
    assert run_kaudit("replay", "parts", "--summary-out", str(baseline)).exit_code == 0
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    passing = runner.invoke(cli, ["check", *inputs, "--baseline", str(baseline),
                                  "--fail-on", "changed>0", "--fail-on", "pending_at_end>0"])
    assert passing.exit_code == 0, passing.output
    assert "pending_at_end = 0 (threshold 0) — ok" in passing.output
    # the same files without the snapshot are another trace
    partial = runner.invoke(cli, ["check", str(first), str(second), "--baseline",
                                  str(baseline)])
    assert partial.exit_code == 2 and "another trace" in partial.output
    missing = runner.invoke(cli, ["check", "--baseline", str(baseline)])
    assert missing.exit_code == 2 and "give at least one trace FILE or --snapshot FILE" in \
        missing.output


@pytest.fixture
def sample_baseline(run_kaudit: Callable[..., Result], sample_path: Path,
                    tmp_path: Path) -> Path:
    """The sample replayed under kube-scheduler's defaults, its summary written as a
    baseline."""
    baseline = tmp_path / "baseline.json"
    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    assert run_kaudit("replay", "sample", "--summary-out", str(baseline)).exit_code == 0
    return baseline


def _check(*args: str) -> Result:
    return CliRunner().invoke(cli, ["check", *args])


def test_the_baselines_stored_aggregates_are_its_side_of_the_report(
        sample_path: Path, sample_baseline: Path) -> None:
    """Attempts, allocation, imbalance and fragmentation come from the run's event log: the
    baseline summary stores them and the report reads them back, in every format."""
    from kaudit.datadirs import sample_config

    stored = json.loads(sample_baseline.read_text())["aggregates"]
    args = [str(sample_path), "--config", str(sample_config()), "--baseline",
            str(sample_baseline), "--fail-on", "attempts>baseline", "--fail-on",
            "imbalance>baseline"]
    report = json.loads(_check(*args, "--format", "json").output)
    assert report["aggregates"]["a"] == stored
    assert [c["threshold"] for c in report["conditions"]] == [stored["attempts"],
                                                              stored["imbalance"]]
    markdown = _check(*args, "--format", "markdown").output
    assert f"| attempts | {stored['attempts']} |" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| ")
            and " | " in line and "condition" not in line]
    assert not [row for row in rows[:14] if "| – |" in row]
    text = _check(*args).output
    assert "not measurable" not in text and f"baseline's {stored['attempts']})" in text


@pytest.mark.parametrize("output_format", ["text", "markdown", "json", "junit"])
def test_a_condition_that_cannot_be_evaluated_is_an_input_error(
        sample_path: Path, sample_baseline: Path, tmp_path: Path, output_format: str) -> None:
    document = json.loads(sample_baseline.read_text())
    del document["aggregates"]["imbalance"]
    lacking = tmp_path / "lacking.json"
    lacking.write_text(json.dumps(document))
    result = _check(str(sample_path), "--baseline", str(lacking), "--fail-on",
                    "imbalance>baseline", "--fail-on", "changed>0", "--format", output_format)
    assert result.exit_code == 2, result.output
    assert "PASSED" not in result.output and "pass" not in result.output
    assert ("--fail-on 'imbalance>baseline' cannot be evaluated: the baseline (baseline) has "
            f"no imbalance value: the baseline {lacking} does not store it") in result.output


def test_the_checked_run_written_as_the_next_baseline(
        sample_path: Path, sample_baseline: Path, tmp_path: Path) -> None:
    from kaudit.datadirs import sample_config

    accepted = tmp_path / "accepted.json"
    packing = ["--config", str(sample_config())]
    first = _check(str(sample_path), *packing, "--baseline", str(sample_baseline),
                   "--baseline-out", str(accepted))
    assert first.exit_code == 0, first.output
    assert json.loads(accepted.read_text())["aggregates"] != \
        json.loads(sample_baseline.read_text())["aggregates"]
    again = _check(str(sample_path), *packing, "--baseline", str(accepted), "--fail-on",
                   "changed>0", "--fail-on", "attempts!=baseline", "--format", "json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["result"] == "passed"


def test_a_sweep_report_is_refused_as_a_baseline_saying_why(
        sample_path: Path, tmp_path: Path) -> None:
    report = tmp_path / "sweep.json"
    report.write_text(json.dumps({"sweep": "tuning", "rows": [], "comparisons": []}))
    result = _check(str(sample_path), "--baseline", str(report))
    assert result.exit_code == 2
    assert "a sweep report, not a run summary" in result.output
    assert "kaudit check --sweep SPEC" in result.output


def test_unschedulable_is_refused_with_its_new_name(sample_path: Path,
                                                    sample_baseline: Path) -> None:
    result = _check(str(sample_path), "--baseline", str(sample_baseline), "--fail-on",
                    "unschedulable>0")
    assert result.exit_code == 2
    assert "'unschedulable' was renamed to 'pending_at_end'" in result.output
    assert "write 'pending_at_end>0'" in result.output


def test_compare_names_the_defaults_reports_aggregates_and_claims_no_pass(
        run_kaudit: Callable[..., Result], sample_path: Path) -> None:
    from kaudit.datadirs import sample_config

    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    result = run_kaudit("compare", "sample", "--config", "default", "--config",
                        str(sample_config()))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "no conditions given (--fail-on): nothing checked"
    assert "PASSED" not in result.output
    assert any(line.split()[:2] == ["imbalance", "(cpu)"] for line in lines)
    as_json = json.loads(run_kaudit("compare", "sample", "--config", "default", "--config",
                                    str(sample_config()), "--format", "json").output)
    assert as_json["passed"] is None and as_json["result"] == "unchecked"
    junit = run_kaudit("compare", "sample", "--config", "default", "--config",
                       str(sample_config()), "--format", "junit").output
    suite = ET.fromstring(junit).find("testsuite")
    assert suite is not None
    names = [p.get("name") for p in suite.iter("property")]
    assert "imbalance (cpu)" in names and "conditions" in names
    missing = run_kaudit("compare", "sample", "--config", "trace", "--config", "default")
    assert missing.exit_code == 2 and "carries no scheduler configuration" in missing.output


def test_any_stored_run_is_written_as_a_baseline(run_kaudit: Callable[..., Result],
                                                 sample_baseline: Path, tmp_path: Path) -> None:
    """``kaudit runs summary`` writes what ``replay --summary-out`` wrote (a sweep's cells are
    runs too, so one of them can be a baseline)."""
    written = tmp_path / "written.json"
    result = run_kaudit("runs", "summary", "sample-1", str(written))
    assert result.exit_code == 0, result.output
    assert json.loads(written.read_text()) == json.loads(sample_baseline.read_text())


def test_a_pod_held_back_by_preenqueue_is_pending_at_end(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    """A pod whose ResourceClaim never exists and a pod with a scheduling gate are never tried:
    they are still pending when the trace ends, and ``pending_at_end>0`` catches them."""
    from kaudit.tracegen.builders import make_node, make_pod
    from kaudit.tracegen.dra import with_claims
    from tests.conftest import write_trace

    gated = make_pod("gated").req(cpu="1").obj()
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    trace = write_trace(
        tmp_path / "held.jsonl",
        (0.0, "ADDED", make_node("n1").capacity(cpu="8", memory="32Gi").obj()),
        (1.0, "ADDED", make_pod("fits").req(cpu="1").obj()),
        (1.0, "ADDED", with_claims(make_pod("orphan").req(cpu="1").obj(),
                                   gpu=("claim", "nope"))),
        (1.0, "ADDED", gated), (9.0, "ADDED", make_pod("tick").req(cpu="1").obj()))
    baseline = tmp_path / "baseline.json"
    assert run_kaudit("ingest", str(trace), "--name", "held").exit_code == 0
    replayed = run_kaudit("replay", "held", "--summary-out", str(baseline))
    assert "2 pending at the end (2 of them held back by PreEnqueue, never tried;" in \
        replayed.output
    aggregates = json.loads(baseline.read_text())["aggregates"]
    assert (aggregates["pendingAtEnd"], aggregates["heldBack"]) == (2, 2)
    result = _check(str(trace), "--baseline", str(baseline), "--fail-on", "pending_at_end>0",
                    "--fail-on", "held_back>0", "--format", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert [c["actual"] for c in report["conditions"]] == [2, 2]


def test_check_replays_under_the_baselines_seed_and_replay_options(
        run_kaudit: Callable[..., Result], sample_path: Path, tmp_path: Path) -> None:
    """A baseline made with --one-try, --lifetime relative and seed 3 is checked against a
    run made the same way: only the configuration may differ."""
    baseline, checked = tmp_path / "baseline.json", tmp_path / "checked.json"
    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    assert run_kaudit("replay", "sample", "--one-try", "--lifetime", "relative", "--seed", "3",
                      "--summary-out", str(baseline)).exit_code == 0
    made = json.loads(baseline.read_text())
    assert made["replayOptions"]["oneTry"] is True and made["seed"] == 3
    result = _check(str(sample_path), "--baseline", str(baseline), "--baseline-out",
                    str(checked), "--fail-on", "scheduled!=baseline", "--fail-on",
                    "attempts!=baseline")
    assert result.exit_code == 0, result.output
    again = json.loads(checked.read_text())
    assert (again["seed"], again["replayOptions"]) == (3, made["replayOptions"])
    assert again["aggregates"] == made["aggregates"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**made, "replayOptions": {"oneTry": "yes"}}))
    refused = _check(str(sample_path), "--baseline", str(bad))
    assert refused.exit_code == 2
    assert "replayOptions.oneTry: expected a boolean, got 'yes'" in refused.output


@pytest.mark.parametrize("output_format", ["text", "markdown", "junit"])
def test_moved_pods_reasons_state_exact_amounts_in_every_format(
        run_kaudit: Callable[..., Result], sample_path: Path, output_format: str) -> None:
    """A move decided by a resource rejection reads as explain words it: the pod's request
    against the node's free amount (``lack cpu (needs 1, free 570m)``), never upstream's bare
    ``Insufficient cpu``."""
    from kaudit.datadirs import sample_config

    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    args = ("compare", "sample", "--config", "default", "--config", str(sample_config()))
    report = json.loads(run_kaudit(*args, "--format", "json").output)
    # each compare replays anew (other run names): the words after the run's name
    lacking = [c["reason"].split(" rejected ", 1)[1] for c in report["changes"]
               if ": lack cpu (needs " in c["reason"]]
    assert lacking, [c["reason"] for c in report["changes"]]
    shown = run_kaudit(*args, "--format", output_format).output
    assert "Insufficient cpu" not in shown
    assert any(f" rejected {reason}" in shown for reason in lacking), shown
