"""One definition of each summary metric, the same in the replay's summary, ``kaudit runs``,
``kaudit diff``, the CI conditions and the pod verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.errors import InputError
from kaudit.queries.conditions import evaluate, parse_condition
from kaudit.queries.diff import diff_runs
from kaudit.queries.explain import explain_pod
from kaudit.queries.runs import get_run
from kaudit.queries.summary_rows import format_delta, format_value, run_counts
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace


@pytest.fixture
def waiting(engine: Engine, tmp_path: Path) -> Engine:
    """One node; a pod that fits, one too big that stays, one too big the trace deletes."""
    node = make_node("n1").capacity(cpu="2", memory="4Gi", pods="110").obj()
    fits = make_pod("fits").req(cpu="1").obj()
    stays = make_pod("stays").req(cpu="8").obj()
    goes = make_pod("goes").req(cpu="8").obj()
    path = write_trace(tmp_path / "waiting.jsonl", (0, "ADDED", node), (1, "ADDED", fits),
                       (2, "ADDED", stays), (3, "ADDED", goes), (30, "DELETED", goes),
                       (60, "MODIFIED", node))
    ingest_trace(engine, [TraceInput(path)], name="waiting")
    config, registry = load()
    for name in ("first", "second"):
        replay_trace(engine, get_trace(engine, "waiting"), config, registry, name=name)
    return engine


def test_pending_at_end_and_never_scheduled_agree_everywhere(
        waiting: Engine, run_kaudit: Callable[..., Result]) -> None:
    counts = run_counts(get_run(waiting, "first").summary)
    assert counts["pendingAtEnd"] == 1 and counts["neverScheduled"] == 2
    report = diff_runs(waiting, "first", "second")
    aggregates = report["aggregates"]["b"]
    assert aggregates["pendingAtEnd"] == 1 and aggregates["neverScheduled"] == 2
    rows = {row["key"]: row for row in report["rows"]}
    assert rows["pendingAtEnd"]["label"] == "pending at end"
    assert rows["neverScheduled"]["bText"] == "2"

    listing = run_kaudit("runs").output.splitlines()
    header = listing[0].split("  ")
    assert "PENDING AT END" in listing[0] and "NEVER SCHEDULED" in listing[0]
    assert header  # the table prints both columns with the same numbers as the diff
    assert any(line.split()[1] == "first" and " 1 " in line and " 2 " in line
               for line in listing[1:])
    text = run_kaudit("diff", "first", "second").output
    assert any(line.split() == ["pending", "at", "end", "1", "1", "+0"]
               for line in text.splitlines())

    gone = explain_pod(waiting, "first", "default/goes")["verdict"]
    assert gone["state"] == "deleted-pending"
    assert gone["headline"].startswith("Deleted at 30 s after pending 27s: no node fits — "
                                       "1 lack cpu (needs 8, the largest free is 1)")
    stays = explain_pod(waiting, "first", "default/stays")["verdict"]
    assert stays["state"] == "pending" and stays["headline"].startswith("Pending 58s: ")


def test_conditions_use_the_same_names_and_units(waiting: Engine) -> None:
    report = diff_runs(waiting, "first", "second")
    verdict = evaluate(parse_condition("pending_at_end>0"), report)
    assert verdict.failed and verdict.actual == 1
    with pytest.raises(InputError, match="'unschedulable' was renamed to 'pending_at_end'"):
        parse_condition("unschedulable>0")
    assert evaluate(parse_condition("never_scheduled>=2"), report).failed
    share = evaluate(parse_condition("changed>50%"), report)
    assert "threshold 50% of 3 pods compared = 1.5 pods" in share.message
    assert share.threshold_text == "50% of 3 pods compared = 1.5 pods"
    imbalance = evaluate(parse_condition("imbalance>0.5"), report)
    assert "threshold 50.0%" in imbalance.message and imbalance.actual_text.endswith("%")
    lacking = {**report, "aggregates": {"a": {**report["aggregates"]["a"], "pendingSeconds": {
        "p50": None, "p95": None, "max": None}}, "b": report["aggregates"]["b"]}}
    with pytest.raises(InputError, match=r"--fail-on 'p95_pending>\+10s' cannot be evaluated: "
                                         r"the baseline \(first\) has no p95_pending value: "
                                         "no pod of it was bound"):
        evaluate(parse_condition("p95_pending>+10s"), lacking)
    # an absolute threshold needs only the checked run's value
    assert not evaluate(parse_condition("p95_pending>1000"), lacking).failed


def test_check_reports_print_units(waiting: Engine, run_kaudit: Callable[..., Result],
                                   tmp_path: Path) -> None:
    default = tmp_path / "default.yaml"
    default.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                       "kind: KubeSchedulerConfiguration\n")
    result = run_kaudit("compare", "waiting", "--config", str(default), "--config",
                        str(default), "--fail-on", "changed>50%", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "| pending at end | 1 | 1 | +0 |" in result.output
    assert "| cpu allocated, mean |" in result.output and "%" in result.output
    assert "| `changed>50%` | 0 | 50% of 3 pods compared = 1.5 pods | ✅ ok |" in result.output
    as_json = run_kaudit("compare", "waiting", "--config", str(default), "--config",
                         str(default), "--format", "json")
    assert json.loads(as_json.output)["aggregates"]["b"]["neverScheduled"] == 2


def test_formatting() -> None:
    assert format_value("ratio", 0.6666) == "66.7%" and format_value("count", None) == "–"
    assert format_delta("ratio", 0.44, 0.45) == "+1.0 pp"
    assert format_delta("seconds", 10.0, 12.5) == "+2.50 s" and format_delta("count", 2, 2) == "+0"
