"""`kaudit sweep`, `kaudit sweep report`, `kaudit sweep list` and `kaudit check --sweep` from
the command line: outputs, formats, exit codes and errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from kaudit.cli import cli
from tests.sweep.conftest import BIN_PACKING, SAMPLE, sample_spec  # noqa: F401 (a fixture)


def _kaudit(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_sweep_report_and_list(tmp_path: Path, sample_spec: Path) -> None:  # noqa: F811
    db = str(tmp_path / "k.db")
    ran = _kaudit("sweep", str(sample_spec), "--db", db, "--workers", "2")
    assert ran.exit_code == 0, ran.output
    assert "sweep tuning: 4 cell(s) replayed, 0 failed, 0 already complete" in ran.output
    assert "sweep tuning: 4/4 cells done (0 failed), 0 running, 0 waiting" in ran.stderr
    assert "report: kaudit sweep report tuning" in ran.output

    text = _kaudit("sweep", "report", "tuning", "--db", db)
    assert text.exit_code == 0
    assert "Sweep tuning: 4 of 4 cells complete" in text.output
    assert "Against default (paired by seed" in text.output
    as_json = orjson.loads(_kaudit("sweep", "report", "tuning", "--db", db, "--json").stdout)
    assert as_json["configs"] == ["default", "bin-packing"] and as_json["seeds"] == [1, 2]
    assert [r["run"] for r in as_json["runs"]] == [
        "tuning.default.sample.s1", "tuning.default.sample.s2",
        "tuning.bin-packing.sample.s1", "tuning.bin-packing.sample.s2"]
    rows = list(csv.DictReader(io.StringIO(
        _kaudit("sweep", "report", "tuning", "--db", db, "--format", "csv").output)))
    assert {r["config"] for r in rows} == {"default", "bin-packing"}
    assert {r["kind"] for r in rows} == {"value", "difference vs default"}
    markdown = _kaudit("sweep", "report", "tuning", "--db", db, "--format", "markdown",
                       "--metric", "pendingP95", "--baseline", "bin-packing").output
    assert markdown.startswith("# Sweep tuning")
    assert "| pending p95 |" in markdown and "default − bin-packing" in markdown

    listed = orjson.loads(_kaudit("sweep", "list", "--db", db, "--json").stdout)
    assert [(s["name"], s["cells"], s["complete"]) for s in listed] == [("tuning", 4, 4)]
    assert "tuning" in _kaudit("sweep", "list", "--db", db).output

    # Each cell is an ordinary run.
    explained = _kaudit("runs", "--db", db, "--json")
    assert sorted({r["config"] for r in orjson.loads(explained.stdout)}) == [
        f"{BIN_PACKING} [sweep tuning, config bin-packing]",
        "kube-scheduler's defaults [sweep tuning, config default]"]
    again = _kaudit("sweep", str(sample_spec), "--db", db, "--json")
    assert orjson.loads(again.stdout)["skipped"] == 4

    kept = _kaudit("sweep", "rm", "tuning", "--keep-runs", "--db", db)
    assert kept.output == "removed sweep(s) tuning (their runs kept)\n"
    assert orjson.loads(_kaudit("sweep", "list", "--db", db, "--json").stdout) == []
    assert len(orjson.loads(_kaudit("runs", "--db", db, "--json").stdout)) == 4
    # Run again: the cells are redone; the kept runs are the user's now and stay, the new
    # runs take the next free names.
    redone = _kaudit("sweep", str(sample_spec), "--db", db, "--json", "--quiet")
    assert orjson.loads(redone.stdout)["complete"] == 4
    names = {r["name"] for r in orjson.loads(_kaudit("runs", "--db", db, "--json").stdout)}
    assert len(names) == 8 and "tuning.default.sample.s1-2" in names
    assert orjson.loads(_kaudit("sweep", "rm", "tuning", "--db", db, "--json").stdout) == {
        "removed": ["tuning"]}
    assert {r["name"] for r in orjson.loads(_kaudit("runs", "--db", db, "--json").stdout)} == {
        "tuning.default.sample.s1", "tuning.default.sample.s2", "tuning.bin-packing.sample.s1",
        "tuning.bin-packing.sample.s2"}


def test_check_a_sweep(tmp_path: Path, sample_spec: Path) -> None:  # noqa: F811
    db = str(tmp_path / "k.db")
    worse = _kaudit("check", "--sweep", str(sample_spec), "--db", db,
                    "--fail-on", "imbalance>baseline", "--fail-on", "p95_pending>+1000s")
    assert worse.exit_code == 1, worse.output
    assert ("imbalance>baseline on trace sample: imbalance (cpu): bin-packing − default = "
            in worse.output)
    assert "FAILED beyond noise" in worse.output
    assert "p95_pending>+1000s on trace sample" in worse.output
    summary = tmp_path / "summary.md"
    fine = CliRunner(env={"GITHUB_STEP_SUMMARY": str(summary)}).invoke(
        cli, ["check", "--sweep", str(sample_spec), "--db", db, "--fail-on",
              "pending_at_end>+10", "--format", "json"], catch_exceptions=False)
    assert fine.exit_code == 0, fine.output
    document = orjson.loads(fine.stdout)
    assert [v["failed"] for v in document["verdicts"]] == [False]
    assert document["report"]["cells"]["complete"] == 4
    assert summary.read_text().startswith("# Sweep tuning: 4 of 4 cells complete")
    junit = _kaudit("check", "--sweep", str(sample_spec), "--db", db, "--fail-on",
                    "imbalance>baseline", "--fail-on", "pending_at_end>100", "--format",
                    "junit")
    assert junit.exit_code == 1
    assert junit.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert 'tests="3" failures="1"' in junit.stdout  # one comparison, two absolute checks
    assert 'name="imbalance&gt;baseline on sample"' in junit.stdout
    # Options may come before the spec.
    before = _kaudit("sweep", "--db", db, "--quiet", str(sample_spec))
    assert "all 4 cells were already complete" in before.output


@pytest.mark.parametrize(("args", "message"), [
    (["check", "--sweep", "S", "--fail-on", "changed>1%"], "unknown metric 'changed'"),
    (["check", "--sweep", "S", "--baseline", "S"], "--sweep takes the traces"),
    (["check", "--fail-on", "moved>0"], "give at least one trace FILE"),
    (["sweep", "S", "--scheduler", "tcp://10.1.2.3:8786"],
     "workers on other machines cannot write to an SQLite file"),
    (["sweep", "S", "--workers", "0"], "--workers 0: expected at least 1"),
    (["sweep", "missing.yaml"], "missing.yaml: no such sweep spec file"),
    (["sweep", "report", "nope"], "no sweep named 'nope'"),
    (["sweep", "rm", "nope"], "no sweep named 'nope'"),
])
def test_usage_and_input_errors(tmp_path: Path, sample_spec: Path,  # noqa: F811
                                args: list[str], message: str) -> None:
    argv = [str(sample_spec) if a == "S" else a for a in args]
    if argv[0] == "sweep" or "--sweep" in argv:
        argv += ["--db", str(tmp_path / "k.db")]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_an_unreachable_scheduler_is_an_input_error(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(f"traces: [{{files: [{SAMPLE}]}}]\n")
    result = CliRunner().invoke(cli, ["sweep", str(spec), "--scheduler", "tcp://127.0.0.1:9",
                                      "--db", str(tmp_path / "k.db")])
    assert result.exit_code == 2, result.output
    assert "--scheduler tcp://127.0.0.1:9: cannot reach a Dask scheduler" in result.output
