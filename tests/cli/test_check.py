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
