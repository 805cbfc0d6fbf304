"""The report of an audit run (``kaudit audit``, ``GET /api/v1/runs/RUN/audit``, the audit page).

An audit run's event log holds one ``audit`` record per recorded decision
(:mod:`kaudit.replay.audit`). The report counts them by class, gives the share of judged
decisions (all but ``notJudged``) that agree or tie, lists every other decision with its reason
and groups them by cause, so a thousand disagreements with one cause read as one line.
``--fail-on`` conditions (``disagree>0.5%``) are evaluated over the same numbers, and the report
is written as text, JSON, Markdown or JUnit.
"""

from __future__ import annotations

import operator
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.errors import InputError
from kaudit.eventlog.records import RecordKind
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.runs import RunSummary, get_run
from kaudit.queries.units import moment, percent
from kaudit.store.models import Run, RunEvent

CLASSES = ("agrees", "tie", "sampled", "scoredLower", "infeasible", "unschedulableSame",
           "unschedulableDifferent", "preemptionSame", "preemptionDifferent", "notJudged")
AGREEING = ("agrees", "tie", "unschedulableSame", "preemptionSame")
DISAGREEING = ("scoredLower", "infeasible", "unschedulableDifferent", "preemptionDifferent")
#: What each class means, in a few words (the text report and the audit page).
CLASS_LABELS = {
    "agrees": "agrees", "tie": "tie (recorded node among kaudit's top)",
    "sampled": "sampled (explained by percentageOfNodesToScore)",
    "scoredLower": "disagrees: scored lower", "infeasible": "disagrees: infeasible",
    "unschedulableSame": "unschedulable, same message",
    "unschedulableDifferent": "unschedulable, different",
    "preemptionSame": "preemption, same", "preemptionDifferent": "preemption, different",
    "notJudged": "not judged",
}
#: ``--fail-on`` metrics: the classes they count.
METRICS: dict[str, tuple[str, ...]] = {
    "agree": AGREEING, "disagree": DISAGREEING, "sampled": ("sampled",),
    "not_judged": ("notJudged",), "scored_lower": ("scoredLower",),
    "infeasible": ("infeasible",), "unschedulable_different": ("unschedulableDifferent",),
    "preemption_different": ("preemptionDifferent",),
}
MOMENT_RULE = ("each decision is judged against the cluster just before the event that records "
               "it (its binding, its PodScheduled=False status, its nomination or its first "
               "victim), or --latency earlier")


def _run_options(engine: Engine, run: RunSummary) -> dict[str, Any]:
    with engine.connect() as connection:
        options = connection.execute(select(Run.options).where(Run.id == run.id)).scalar_one()
    return orjson.loads(options) if options else {}


def is_audit(engine: Engine, ref: str) -> bool:
    """Whether run ``ref`` is an audit (known from its creation, finished or not)."""
    return "audit" in _run_options(engine, get_run(engine, ref))


def audit_report(engine: Engine, ref: str) -> dict[str, Any]:
    """The report of the audit run ``ref`` (name or id); :class:`InputError` for a run that is
    not an audit."""
    run = get_run(engine, ref)
    options = _run_options(engine, run)
    if "audit" not in options:
        raise InputError(f"run {run.name!r} is not an audit; `kaudit audit TRACE` makes one")
    with engine.connect() as connection:
        rows = connection.execute(
            select(RunEvent.ts_us, RunEvent.pod, RunEvent.node, RunEvent.data)
            .where(RunEvent.run_id == run.id, RunEvent.kind == RecordKind.AUDIT.value)
            .order_by(RunEvent.seq)).all()
    start = (run.summary or {}).get("startUs")
    first = rows[0].ts_us if rows else 0
    origin = _origin(engine, run.id, first if start is None else start)
    counts = dict.fromkeys(CLASSES, 0)
    decisions: list[dict[str, Any]] = []
    for ts_us, pod, node, data in rows:
        judged = orjson.loads(data)
        counts[judged["class"]] += 1
        decisions.append({"pod": pod, "recordedNode": node, "tUs": ts_us,
                          "t": (ts_us - origin) / 1e6, "time": format_timestamp(ts_us),
                          **judged})
    total = len(decisions)
    judged_count = total - counts["notJudged"]
    agreeing = sum(counts[c] for c in AGREEING)
    disagreeing = sum(counts[c] for c in DISAGREEING)
    others = [d for d in decisions if d["class"] not in AGREEING]
    return {
        "run": run.name, "trace": run.trace, "status": run.status,
        "config": run.config_source or "default",
        "kubernetesVersion": run.kubernetes_version,
        "latencySeconds": (options["audit"].get("latencyUs") or 0) / 1e6,
        "momentRule": MOMENT_RULE,
        "decisions": total, "judged": judged_count, "classes": counts,
        "agreeOrTie": agreeing,
        "windowSeconds": (options["audit"].get("windowUs") or 0) / 1e6,
        # --since/--until: only the decisions recorded in this interval were judged.
        "interval": {bound: format_timestamp(value) if value is not None else None
                     for bound, value in (("since", options["audit"].get("sinceUs")),
                                          ("until", options["audit"].get("untilUs")))},
        # Agreeing only in a state the scheduler could have seen when its view lagged the
        # recording (--window): said apart, so the window never hides how many they are.
        "agreeInLaggingView": sum(1 for d in decisions if d.get("laggingView")
                                  and d["class"] in AGREEING),
        "agreeShare": agreeing / judged_count if judged_count else None,
        "disagreeShare": disagreeing / judged_count if judged_count else None,
        "sampledShare": counts["sampled"] / judged_count if judged_count else None,
        "disagreements": [d for d in others if d["class"] in DISAGREEING],
        "sampled": [d for d in others if d["class"] == "sampled"],
        "notJudged": [d for d in others if d["class"] == "notJudged"],
        "groups": _groups(others),
    }


def _origin(engine: Engine, run_id: int, fallback: int) -> int:
    """The run's first moment (its first record), from which ``t`` counts."""
    with engine.connect() as connection:
        first = connection.execute(select(RunEvent.ts_us).where(RunEvent.run_id == run_id)
                                   .order_by(RunEvent.seq).limit(1)).scalar_one_or_none()
    return fallback if first is None else first


def _groups(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Decisions by (class, cause), the largest group first, with a few example pods."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for decision in decisions:
        key = (decision["class"], decision.get("cause") or decision.get("reason") or "")
        group = groups.setdefault(key, {"class": key[0], "cause": key[1], "count": 0,
                                        "examples": []})
        group["count"] += 1
        if len(group["examples"]) < 3:
            group["examples"].append(decision["pod"])
    return sorted(groups.values(), key=lambda g: (-g["count"], g["class"], g["cause"]))


# ----------------------------------------------------------------------------- --fail-on

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, "<": operator.lt}
_CONDITION = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|==|!=|>|<)\s*([0-9]+(?:\.[0-9]+)?)(%?)\s*$")


@dataclass(frozen=True)
class AuditCondition:
    text: str
    metric: str
    op: str
    value: float
    percent: bool


@dataclass(frozen=True)
class AuditVerdict:
    condition: AuditCondition
    actual: float
    failed: bool

    @property
    def message(self) -> str:
        c = self.condition
        shown = f"{self.actual:.2f}%" if c.percent else f"{self.actual:g}"
        return (f"{c.metric} is {shown}: {c.text} "
                f"{'holds, the audit fails' if self.failed else 'does not hold'}")


def parse_condition(text: str) -> AuditCondition:
    """``METRIC OP N`` (decisions) or ``METRIC OP N%`` (of judged decisions)."""
    match = _CONDITION.match(text)
    if match is None:
        raise InputError(f"--fail-on {text!r}: expected METRIC OP VALUE, e.g. 'disagree>0.5%' "
                         f"or 'infeasible>0'; metrics: {', '.join(METRICS)}")
    metric, op, value, pct = match.groups()
    if metric not in METRICS:
        raise InputError(f"--fail-on {text!r}: unknown metric {metric!r}; metrics: "
                         f"{', '.join(METRICS)}")
    return AuditCondition(text.strip(), metric, op, float(value), pct == "%")


def evaluate(report: dict[str, Any], conditions: list[AuditCondition]) -> list[AuditVerdict]:
    verdicts = []
    for condition in conditions:
        count = sum(report["classes"][c] for c in METRICS[condition.metric])
        if condition.percent:
            judged = report["judged"] if condition.metric != "not_judged" else report["decisions"]
            if not judged:
                raise InputError(f"--fail-on {condition.text!r}: no decision was judged, so "
                                 "no share can be measured")
            actual = 100.0 * count / judged
        else:
            actual = float(count)
        verdicts.append(AuditVerdict(condition, actual,
                                     _OPERATORS[condition.op](actual, condition.value)))
    return verdicts


# ----------------------------------------------------------------------------- formats

def _line(decision: dict[str, Any]) -> str:
    recorded = decision.get("recorded") or {}
    what = {"bind": f"bound to {decision.get('recordedNode') or '-'}",
            "unschedulable": "recorded unschedulable",
            "preemption": f"nominated {decision.get('recordedNode') or '-'}",
            "nodeName": "created with spec.nodeName"}.get(recorded.get("kind", ""), "")
    return (f"{moment(decision['t'], decision['tUs'])}  {decision['pod']}  {what}: "
            f"{decision['class']}: {decision.get('reason', '')}")


def _interval(report: dict[str, Any]) -> str | None:
    """What ``--since``/``--until`` limited the audit to, or None."""
    interval = report.get("interval") or {}
    if not (interval.get("since") or interval.get("until")):
        return None
    return (f"only the decisions recorded from {interval.get('since') or 'the start'} to "
            f"{interval.get('until') or 'the end'} of the trace were judged")


def as_text(report: dict[str, Any], verdicts: list[AuditVerdict], limit: int = 20) -> str:
    lines = [f"audit run '{report['run']}' of trace '{report['trace']}' "
             f"(configuration {report['config']}, Kubernetes "
             f"{report.get('kubernetesVersion') or 'unknown'})",
             f"  {report['decisions']:,} recorded decisions, {report['judged']:,} judged: "
             f"{report['agreeOrTie']:,} agree or tie ({percent(report['agreeShare'], 2)}"
             + (f"; {report['agreeInLaggingView']:,} of them only in a view lagging the "
                f"recording by up to {report['windowSeconds'] * 1000:g} ms"
                if report.get("agreeInLaggingView") else "") + "), "
             f"{sum(report['classes'][c] for c in DISAGREEING):,} disagree "
             f"({percent(report['disagreeShare'], 2)})"]
    if _interval(report):
        lines.append(f"  {_interval(report)}")
    if report["status"] != "complete":
        lines.append(f"  the audit is {report['status']}: this report holds only the decisions "
                     "judged before it stopped")
    for name in CLASSES:
        if report["classes"][name]:
            lines.append(f"    {report['classes'][name]:>8,}  {CLASS_LABELS[name]}")
    if report["groups"]:
        lines.append("  by cause:")
        for group in report["groups"][:limit]:
            lines.append(f"    {group['count']:>8,}  {group['class']}: {group['cause'] or '-'}"
                         f"  (e.g. {', '.join(group['examples'])})")
    if report["sampled"]:
        lines.append(f"  sampled: {len(report['sampled']):,} decision(s) explained by "
                     "percentageOfNodesToScore (--format json lists them)")
    if report["disagreements"]:
        lines.append("  disagreements:")
        lines.extend("    " + _line(d) for d in report["disagreements"][:limit])
        more = len(report["disagreements"]) - limit
        if more > 0:
            lines.append(f"    … and {more:,} more (--format json lists them all)")
    lines.append(f"  moment rule: {report['momentRule']}")
    lines.extend(f"  {'FAIL' if v.failed else 'ok'}: {v.message}" for v in verdicts)
    return "\n".join(lines)


def as_json(report: dict[str, Any], verdicts: list[AuditVerdict]) -> str:
    document = {**report, "conditions": [
        {"condition": v.condition.text, "actual": v.actual, "failed": v.failed,
         "message": v.message} for v in verdicts]}
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()


def markdown_cell(text: str) -> str:
    """``text`` as one Markdown table cell (pipes escaped, lines joined)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def as_markdown(report: dict[str, Any], verdicts: list[AuditVerdict]) -> str:
    lines = [f"## kaudit audit: {report['run']}", "",
             f"{report['decisions']:,} recorded decisions of trace `{report['trace']}`, "
             f"{report['judged']:,} judged: **{percent(report['agreeShare'], 2)}** agree or tie, "
             f"{percent(report['disagreeShare'], 2)} disagree.", "",
             f"Judged by kube-scheduler of Kubernetes "
             f"{report.get('kubernetesVersion') or 'unknown'} (configuration "
             f"`{report['config']}`).", "",
             *([f"**The audit is {report['status']}**: this report holds only the decisions "
                "judged before it stopped.", ""] if report["status"] != "complete" else []),
             *([f"{(_interval(report) or '').capitalize()}.", ""] if _interval(report) else []),
             "| class | decisions |", "| --- | ---: |"]
    lines.extend(f"| {CLASS_LABELS[c]} | {report['classes'][c]:,} |" for c in CLASSES
                 if report["classes"][c])
    if report["groups"]:
        lines += ["", "| decisions | class | cause | for example |", "| ---: | --- | --- | --- |"]
        lines.extend(f"| {g['count']:,} | {g['class']} | {markdown_cell(g['cause'] or '-')} | "
                     f"{markdown_cell(', '.join(g['examples']))} |" for g in report["groups"][:50])
    if verdicts:
        lines.append("")
        lines.extend(f"- {'❌' if v.failed else '✅'} `{v.condition.text}`: {v.message}"
                     for v in verdicts)
    return "\n".join(lines) + "\n"


def as_junit(report: dict[str, Any], verdicts: list[AuditVerdict]) -> str:
    suites = ET.Element("testsuites", name="kaudit audit")
    cases = report["disagreements"]
    skipped = report["notJudged"]
    suite = ET.SubElement(suites, "testsuite", name=f"kaudit audit {report['run']}",
                          tests=str(len(verdicts) + len(cases) + len(skipped)),
                          failures=str(sum(v.failed for v in verdicts) + len(cases)),
                          errors="0", skipped=str(len(skipped)))
    if report["status"] != "complete":
        suite.set("errors", "1")
        suite.set("tests", str(int(suite.get("tests") or 0) + 1))
        case = ET.SubElement(suite, "testcase", classname="kaudit.audit", name="audit run")
        ET.SubElement(case, "error", message=f"the audit is {report['status']}",
                      type="incomplete")
    for verdict in verdicts:
        case = ET.SubElement(suite, "testcase", classname="kaudit.conditions",
                             name=verdict.condition.text)
        if verdict.failed:
            ET.SubElement(case, "failure", message=verdict.message, type="audit").text = \
                verdict.message
    for decision in cases:
        case = ET.SubElement(suite, "testcase", classname=f"kaudit.audit.{decision['class']}",
                             name=f"{decision['pod']} at {decision['time']}")
        ET.SubElement(case, "failure", message=decision.get("reason", ""),
                      type=decision["class"]).text = _line(decision)
    for decision in skipped:
        case = ET.SubElement(suite, "testcase", classname="kaudit.audit.notJudged",
                             name=f"{decision['pod']} at {decision['time']}")
        ET.SubElement(case, "skipped", message=decision.get("reason", ""))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


FORMATS: dict[str, Callable[[dict[str, Any], list[AuditVerdict]], str]] = {
    "text": as_text, "json": as_json, "markdown": as_markdown, "junit": as_junit}
