"""``kaudit audit``: the issue's acceptance cases (an export of kaudit's own replay agrees with
itself, another scoring strategy disagrees, a second scheduler's pods are not judged), the
report formats, ``--run``, and usage errors (exit 2 with a message naming what is wrong)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from sqlalchemy import create_engine, update

from kaudit.queries.audit import AGREEING, CLASSES, DISAGREEING
from kaudit.store.models import Run
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import V1_34, write_trace
from tests.queries.test_diff import MOST_ALLOCATED
from tests.replay.test_audit import bindings_steps

Kaudit = Callable[..., Result]


@pytest.fixture
def sample_export(run_kaudit: Kaudit, sample_path: Path, tmp_path: Path) -> str:
    """The sample replayed by kaudit with the defaults of v1.34.2 (run ``own``), exported and
    stored as trace ``export``: a recording whose every decision kaudit's default profile made,
    whose header names v1.34.2 (the release the scores the cases reason about are of)."""
    exported = tmp_path / "own.jsonl"
    for args in (("ingest", str(sample_path)),
                 ("replay", "sample", "--name", "own", "--kubernetes-version", V1_34),
                 ("export", "own", "-o", str(exported)),
                 ("ingest", str(exported), "--name", "export")):
        result = run_kaudit(*args)
        assert result.exit_code == 0, result.output
    return "export"


def audit_json(run_kaudit: Kaudit, *args: str, exit_code: int = 0) -> dict[str, Any]:
    result = run_kaudit("audit", *args, "--json")
    assert result.exit_code == exit_code, result.output
    document: dict[str, Any] = json.loads(result.output)
    return document


def test_an_export_of_kaudits_own_replay_agrees_with_the_same_configuration(
        run_kaudit: Kaudit, sample_export: str) -> None:
    report = audit_json(run_kaudit, sample_export, "--fail-on", "disagree>0")
    assert report["kubernetesVersion"] == V1_34  # the export's header names the run's release

    assert report["judged"] > 50
    assert report["disagreements"] == []
    assert sum(report["classes"][c] for c in AGREEING) == report["agreeOrTie"] \
        == report["judged"]
    assert report["classes"]["sampled"] == 0
    assert report["conditions"][0]["failed"] is False


def test_another_scoring_strategy_flags_scored_lower_decisions(
        run_kaudit: Kaudit, sample_export: str, tmp_path: Path) -> None:
    most = tmp_path / "most.yaml"
    most.write_text(MOST_ALLOCATED)
    report = audit_json(run_kaudit, sample_export, "--config", str(most),
                        "--fail-on", "disagree>0.5%", exit_code=1)

    scored_lower = [d for d in report["disagreements"] if d["class"] == "scoredLower"]
    assert scored_lower and report["classes"]["scoredLower"] == len(scored_lower)
    # MostAllocated is the only change: NodeResourcesFit differs on every one of them.
    assert all("NodeResourcesFit" in {p["plugin"] for p in d["plugins"]}
               for d in scored_lower)
    assert report["config"] == str(most)
    (condition,) = report["conditions"]
    assert condition["failed"] is True and condition["actual"] > 0.5


def second_scheduler_steps() -> list[tuple[float, str, dict[str, Any]]]:
    """Two pods of ``volcano``, one of the default scheduler, each recorded bound."""
    steps: list[tuple[float, str, dict[str, Any]]] = [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj())]
    for i, (name, scheduler) in enumerate((("batch-0", "volcano"), ("web", "default-scheduler"),
                                           ("batch-1", "volcano"))):
        pod = make_pod(name).req(cpu="100m").scheduler(scheduler)
        steps += [(1.0 + i, "ADDED", pod.obj()), (1.5 + i, "MODIFIED", pod.node("n1").obj())]
    return steps


TWO_PROFILES = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: volcano
"""


def test_a_second_schedulers_pods_are_not_judged(run_kaudit: Kaudit, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "mixed.jsonl", *second_scheduler_steps())
    report = audit_json(run_kaudit, str(trace))

    assert (report["decisions"], report["judged"]) == (3, 1)
    assert [(d["pod"], d["cause"]) for d in report["notJudged"]] == [
        ("default/batch-0", "scheduler volcano"), ("default/batch-1", "scheduler volcano")]
    assert report["groups"] == [{"class": "notJudged", "cause": "scheduler volcano",
                                 "count": 2, "examples": ["default/batch-0",
                                                          "default/batch-1"]}]
    # A configuration with a profile for it judges them.
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(TWO_PROFILES)
    served = audit_json(run_kaudit, "mixed", "--config", str(profiles))
    assert (served["decisions"], served["judged"]) == (3, 3)


@pytest.fixture
def bindings_audit(run_kaudit: Kaudit, tmp_path: Path) -> dict[str, Any]:
    """``kaudit audit`` of tests/replay/test_audit.py's bindings trace (run ``rec-1``)."""
    trace = write_trace(tmp_path / "rec.jsonl", *bindings_steps())
    return audit_json(run_kaudit, str(trace))


def test_json_shape(bindings_audit: dict[str, Any]) -> None:
    assert list(bindings_audit["classes"]) == list(CLASSES) and len(CLASSES) == 10
    assert bindings_audit["decisions"] == 6
    assert {d["class"] for d in bindings_audit["disagreements"]} <= set(DISAGREEING)
    assert [d["pod"] for d in bindings_audit["disagreements"]] == ["default/lower",
                                                                   "default/nofit"]
    first = bindings_audit["disagreements"][0]
    assert {"pod", "recordedNode", "t", "time", "class", "reason", "cause", "recorded",
            "kaudit", "momentSeq"} <= set(first)
    assert bindings_audit["conditions"] == []


def test_since_and_until_judge_only_the_decisions_recorded_between(
        run_kaudit: Kaudit, bindings_audit: dict[str, Any]) -> None:
    """The cluster still follows the whole recording: a decision judged within the interval
    gets the judgment the whole audit gave it."""
    part = audit_json(run_kaudit, "rec", "--since", "3.5", "--until", "8", "--name", "part")

    whole = {d["pod"]: d for d in bindings_audit["disagreements"] + bindings_audit["notJudged"]}
    judged = part["disagreements"] + part["notJudged"]
    assert sorted(d["pod"] for d in judged) == ["default/lost", "default/lower", "default/nofit"]
    assert part["decisions"] == 3
    for decision in judged:
        assert (decision["class"], decision["reason"]) == (whole[decision["pod"]]["class"],
                                                           whole[decision["pod"]]["reason"])
    assert part["interval"]["since"] is not None and part["interval"]["until"] is not None
    assert bindings_audit["interval"] == {"since": None, "until": None}
    text = run_kaudit("audit", "--run", "part")
    assert "only the decisions recorded from " in text.output


@pytest.mark.parametrize(("args", "message"), [
    (("--since", "99"), "--since: 99 s is outside the trace"),
    (("--until", "soon"), "--until: 'soon' is not a number of seconds from the trace's start"),
    (("--since", "8", "--until", "3"), "--since must not be after --until"),
])
def test_a_bad_interval_exits_2_naming_it(run_kaudit: Kaudit, tmp_path: Path,
                                          args: tuple[str, ...], message: str) -> None:
    trace = write_trace(tmp_path / "rec.jsonl", *bindings_steps())
    result = run_kaudit("audit", str(trace), *args)

    assert result.exit_code == 2, result.output
    assert message in result.output


def test_a_stored_audit_is_reported_again(run_kaudit: Kaudit,
                                          bindings_audit: dict[str, Any]) -> None:
    again = audit_json(run_kaudit, "--run", bindings_audit["run"])

    assert again == bindings_audit


def test_markdown_and_junit_parse(run_kaudit: Kaudit, bindings_audit: dict[str, Any]) -> None:
    markdown = run_kaudit("audit", "--run", "rec-1", "--format", "markdown")
    assert markdown.exit_code == 0, markdown.output
    lines = markdown.output.splitlines()
    assert lines[0] == "## kaudit audit: rec-1"
    table = [line for line in lines if line.startswith("| ")]
    assert table[0] == "| class | decisions |"
    assert all(line.count("|") == 3 for line in table[:6])

    junit = run_kaudit("audit", "--run", "rec-1", "--format", "junit",
                       "--fail-on", "infeasible>0")
    assert junit.exit_code == 1
    suite = ET.fromstring(junit.output).find("testsuite")
    assert suite is not None
    failed = [c.get("classname") for c in suite.findall("testcase")
              if c.find("failure") is not None]
    assert failed == ["kaudit.conditions", "kaudit.audit.scoredLower",
                      "kaudit.audit.infeasible"]


@pytest.mark.parametrize(("args", "message"), [
    (("--fail-on", "disagree>>1"), "--fail-on 'disagree>>1': expected METRIC OP VALUE"),
    (("--fail-on", "wrong>1%"), "--fail-on 'wrong>1%': unknown metric 'wrong'"),
    (("--kubernetes-version", "1.99"), "unsupported Kubernetes version '1.99'"),
    (("--latency", "-1"), "--latency must be between 0 and 3600 seconds, not -1.0"),
    (("--window", "3601"), "--window must be between 0 and 3600 seconds, not 3601.0"),
])
def test_bad_options_exit_2_naming_them(run_kaudit: Kaudit, tmp_path: Path,
                                        args: tuple[str, ...], message: str) -> None:
    trace = write_trace(tmp_path / "rec.jsonl", *bindings_steps())
    result = run_kaudit("audit", str(trace), *args)

    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_run_that_is_not_an_audit_exits_2(run_kaudit: Kaudit, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "rec.jsonl", *bindings_steps())
    assert run_kaudit("ingest", str(trace)).exit_code == 0
    assert run_kaudit("replay", "rec", "--name", "plain").exit_code == 0
    result = run_kaudit("audit", "--run", "plain")

    assert result.exit_code == 2
    assert "run 'plain' is not an audit; `kaudit audit TRACE` makes one" in result.output


def test_a_trace_and_a_run_exclude_each_other(run_kaudit: Kaudit) -> None:
    both = run_kaudit("audit", "rec", "--run", "rec-1")
    neither = run_kaudit("audit")

    assert both.exit_code == neither.exit_code == 2
    assert "give a TRACE to audit, or --run RUN" in both.output


def test_reporting_a_stored_audit_refuses_options_that_only_make_one(
        run_kaudit: Callable[..., Any]) -> None:
    result = run_kaudit("audit", "--run", "whatever", "--latency", "0.5", "--window", "0")
    assert result.exit_code == 2
    assert "--latency, --window only apply when auditing a TRACE" in result.output


def test_an_audit_that_did_not_complete_never_passes_a_gate(
        run_kaudit: Kaudit, bindings_audit: dict[str, Any], db_url: str) -> None:
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(update(Run).where(Run.name == bindings_audit["run"])
                           .values(status="failed", error="interrupted (SIGINT)"))
    engine.dispose()
    for output_format in ("text", "markdown", "junit"):
        result = run_kaudit("audit", "--run", bindings_audit["run"], "--format", output_format,
                            "--fail-on", "disagree>100%")
        assert result.exit_code == 2, result.output
        assert "failed" in result.output
    assert "this report holds only the decisions judged before it stopped" in run_kaudit(
        "audit", "--run", bindings_audit["run"]).output
