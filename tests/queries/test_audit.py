"""The audit report (kaudit/queries/audit.py): counts, shares, groups by cause, ``--fail-on``
conditions and the four formats, over an audit of a small trace whose every class is known
(tests/replay/test_audit.py derives them: 1 agrees, 1 scoredLower, 1 infeasible, 3
notJudged)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from kaudit.errors import InputError
from kaudit.queries.audit import (
    CLASSES,
    AuditCondition,
    as_json,
    as_junit,
    as_markdown,
    as_text,
    audit_report,
    evaluate,
    markdown_cell,
    parse_condition,
)
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from tests.conftest import write_trace
from tests.replay.test_audit import ALL_FEASIBLE, audit_steps, bindings_steps, sampling_steps


@pytest.fixture
def report(engine: Engine, tmp_path: Path) -> dict[str, Any]:
    """The report of an audit of :func:`bindings_steps` (run ``rec-1``)."""
    audit_steps(engine, tmp_path, bindings_steps())
    return audit_report(engine, "rec-1")


def test_the_report_counts_by_class_and_lists_what_does_not_agree(
        report: dict[str, Any]) -> None:
    assert (report["run"], report["trace"], report["config"]) == ("rec-1", "rec", "default")
    assert report["classes"] == {**dict.fromkeys(CLASSES, 0), "agrees": 1, "scoredLower": 1,
                                 "infeasible": 1, "notJudged": 3}
    assert (report["decisions"], report["judged"], report["agreeOrTie"]) == (6, 3, 1)
    assert report["agreeShare"] == pytest.approx(1 / 3)
    assert report["disagreeShare"] == pytest.approx(2 / 3)
    assert report["sampledShare"] == 0
    assert report["latencySeconds"] == 0
    disagreements = [(d["pod"], d["class"], d["recordedNode"], d["t"])
                     for d in report["disagreements"]]
    # Seconds since the recording began: the bindings were recorded at 4 s and 6 s.
    assert disagreements == [("default/lower", "scoredLower", "small", 4.0),
                             ("default/nofit", "infeasible", "small", 6.0)]
    assert [d["pod"] for d in report["notJudged"]] == [
        "default/lost", "default/static", "default/other"]
    assert report["disagreements"][0]["time"] == "2026-01-05T09:00:04Z"


def test_groups_are_by_class_and_cause_largest_first(engine: Engine, tmp_path: Path) -> None:
    steps = bindings_steps()
    # Two more pods bound to the absent node: one group of three.
    for i, seconds in enumerate((12.0, 14.0)):
        name = f"lost-{i}"
        pod = steps[8][2]
        pending = {**pod, "metadata": {**pod["metadata"], "name": name, "uid": name}}
        bound = {**pending, "spec": {**pending["spec"], "nodeName": "ghost"}}
        steps += [(seconds, "ADDED", pending), (seconds + 1, "MODIFIED", bound)]
    audit_steps(engine, tmp_path, steps)
    groups = audit_report(engine, "rec-1")["groups"]

    assert [(g["count"], g["class"], g["cause"]) for g in groups] == [
        (3, "notJudged", "missing Node"),
        (1, "infeasible", "NodeResourcesFit: Insufficient cpu"),
        (1, "notJudged", "scheduler another-scheduler"),
        (1, "notJudged", "spec.nodeName"),
        (1, "scoredLower", "scores higher elsewhere: NodeResourcesFit")]
    assert groups[0]["examples"] == ["default/lost", "default/lost-0", "default/lost-1"]


def test_a_run_that_is_not_an_audit_is_refused(engine: Engine, tmp_path: Path) -> None:
    path = write_trace(tmp_path / "plain.jsonl", *bindings_steps()[:3])
    ingest_trace(engine, [TraceInput(path)], name="plain")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "plain"), config, registry, name="replayed")

    with pytest.raises(InputError, match="run 'replayed' is not an audit"):
        audit_report(engine, "replayed")


@pytest.mark.parametrize(("text", "expected"), [
    ("disagree>0.5%", AuditCondition("disagree>0.5%", "disagree", ">", 0.5, True)),
    (" infeasible >= 2 ", AuditCondition("infeasible >= 2", "infeasible", ">=", 2.0, False)),
    ("not_judged==0", AuditCondition("not_judged==0", "not_judged", "==", 0.0, False)),
])
def test_conditions_parse(text: str, expected: AuditCondition) -> None:
    assert parse_condition(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("bogus>1", "--fail-on 'bogus>1': unknown metric 'bogus'"),
    ("disagree>>1", "--fail-on 'disagree>>1': expected METRIC OP VALUE"),
    ("disagree>1%%", "--fail-on 'disagree>1%%': expected METRIC OP VALUE"),
    ("disagree", "--fail-on 'disagree': expected METRIC OP VALUE"),
])
def test_a_malformed_condition_names_itself(text: str, message: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_condition(text)
    assert str(raised.value).startswith(message)


def test_conditions_count_decisions_or_shares(report: dict[str, Any]) -> None:
    conditions = [parse_condition(text) for text in (
        "disagree>0.5%", "infeasible>0", "scored_lower>1", "agree>=34%", "not_judged<=50%")]
    verdicts = evaluate(report, conditions)

    # Shares are of the 3 judged decisions; not_judged's share is of all 6.
    assert [(v.actual, v.failed) for v in verdicts] == [
        (pytest.approx(200 / 3), True), (1.0, True), (1.0, False),
        (pytest.approx(100 / 3), False), (50.0, True)]
    assert verdicts[0].message == "disagree is 66.67%: disagree>0.5% holds, the audit fails"
    assert verdicts[2].message == "scored_lower is 1: scored_lower>1 does not hold"


def test_a_share_of_no_judged_decision_is_refused(report: dict[str, Any]) -> None:
    nothing = {**report, "judged": 0, "classes": dict.fromkeys(CLASSES, 0)}

    with pytest.raises(InputError, match="no decision was judged"):
        evaluate(nothing, [parse_condition("disagree>1%")])
    assert evaluate(nothing, [parse_condition("disagree>1")])[0].failed is False


def test_text_report(report: dict[str, Any]) -> None:
    text = as_text(report, evaluate(report, [parse_condition("infeasible>0")]))

    assert "6 recorded decisions, 3 judged: 1 agree or tie (33.33%), 2 disagree (66.67%)" \
        in text
    lines = text.splitlines()
    assert lines[0] == "audit run 'rec-1' of trace 'rec' (configuration default, Kubernetes " \
                       "v1.34.2)"
    assert report["kubernetesVersion"] == "v1.34.2"
    # Only the classes that occur, each with its count, in the order of CLASSES.
    assert lines[2:6] == ["           1  agrees", "           1  disagrees: scored lower",
                          "           1  disagrees: infeasible", "           3  not judged"]
    assert lines[6] == "  by cause:"
    assert "       1  scoredLower: scores higher elsewhere: NodeResourcesFit  " \
           "(e.g. default/lower)" in text
    assert "default/nofit  bound to small: infeasible: kaudit rejects small: " \
           "NodeResourcesFit: Insufficient cpu" in text
    assert text.endswith("FAIL: infeasible is 1: infeasible>0 holds, the audit fails")


def test_json_report_carries_the_conditions(report: dict[str, Any]) -> None:
    document = json.loads(as_json(report, evaluate(report, [parse_condition("agree<1")])))

    assert document["classes"] == report["classes"]
    assert document["conditions"] == [{"condition": "agree<1", "actual": 1.0,
                                       "failed": False,
                                       "message": "agree is 1: agree<1 does not hold"}]


def test_markdown_report(report: dict[str, Any]) -> None:
    markdown = as_markdown(report, evaluate(report, [parse_condition("disagree>0.5%")]))
    lines = markdown.splitlines()

    assert lines[0] == "## kaudit audit: rec-1"
    assert "6 recorded decisions of trace `rec`, 3 judged: **33.33%** agree or tie, " \
           "66.67% disagree." in lines
    assert "Judged by kube-scheduler of Kubernetes v1.34.2 (configuration `default`)." in lines
    assert "| disagrees: infeasible | 1 |" in lines
    assert "| 1 | scoredLower | scores higher elsewhere: NodeResourcesFit | default/lower |" \
        in lines
    assert lines[-1] == ("- ❌ `disagree>0.5%`: disagree is 66.67%: disagree>0.5% holds, "
                         "the audit fails")


def junit_suite(report: dict[str, Any]) -> ET.Element:
    """The JUnit report's suite, with a failing and a passing condition."""
    verdicts = evaluate(report, [parse_condition("disagree>0.5%"), parse_condition("agree<0")])
    suite = ET.fromstring(as_junit(report, verdicts)).find("testsuite")
    assert suite is not None
    return suite


def test_junit_report_fails_each_failed_condition_and_disagreement(
        report: dict[str, Any]) -> None:
    suite = junit_suite(report)
    failed = [(c.get("classname"), c.get("name")) for c in suite.findall("testcase")
              if c.find("failure") is not None]

    assert suite.get("failures") == "3"
    assert failed == [("kaudit.conditions", "disagree>0.5%"),
                      ("kaudit.audit.scoredLower", "default/lower at 2026-01-05T09:00:04Z"),
                      ("kaudit.audit.infeasible", "default/nofit at 2026-01-05T09:00:06Z")]
    assert ("kaudit.conditions", "agree<0") in [(c.get("classname"), c.get("name"))
                                                for c in suite.findall("testcase")]


def test_junit_suite_counts_match_its_cases(report: dict[str, Any]) -> None:
    suite = junit_suite(report)
    cases = suite.findall("testcase")

    assert suite.get("tests") == str(len(cases))
    assert suite.get("failures") == str(sum(c.find("failure") is not None for c in cases))
    assert suite.get("skipped") == str(sum(c.find("skipped") is not None for c in cases))


def test_a_sampled_decision_fails_no_junit_case(engine: Engine, tmp_path: Path) -> None:
    steps, _ = sampling_steps(*ALL_FEASIBLE)
    report = audit_steps(engine, tmp_path, steps)
    assert report["classes"]["sampled"] == 1

    verdicts = evaluate(report, [parse_condition("disagree>0")])
    suite = ET.fromstring(as_junit(report, verdicts)).find("testsuite")
    assert suite is not None and verdicts[0].failed is False
    assert [c.get("name") for c in suite.findall("testcase")
            if c.find("failure") is not None] == []


def test_a_markdown_cell_keeps_its_row() -> None:
    assert markdown_cell("scheduler evil|sched`x\nline") == "scheduler evil\\|sched`x line"
