"""A diff and its ``--fail-on`` verdicts as text, Markdown, JSON or JUnit XML.

Every format carries both sides' aggregates (JUnit as the suite's ``properties``). JUnit output
has one ``testsuite`` with a test case per condition (failed conditions carry a ``failure``)
and one per changed pod (its reason in ``system-out``), in the common JUnit schema that CI
systems read (``testsuites/testsuite/testcase[/failure|/system-out]``). A report given no
conditions says that nothing was checked; it never claims a pass.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import orjson

from kaudit.queries.conditions import Verdict

REAL = ("moved", "scheduled-only-in-a", "scheduled-only-in-b", "preempted-only-in-a",
        "preempted-only-in-b", "pending-time")


def _changed(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in report["changes"] if c["change"] in REAL]


#: The last line of a report given no conditions: nothing was checked, so nothing passed.
NO_CONDITIONS = "no conditions given (--fail-on): nothing checked"


def outcome(verdicts: list[Verdict]) -> str:
    """``failed``, ``passed`` or ``unchecked`` (no conditions)."""
    if not verdicts:
        return "unchecked"
    return "failed" if any(v.failed for v in verdicts) else "passed"


def release_of(report: dict[str, Any], side: str) -> str | None:
    """The Kubernetes release side ``a`` or ``b`` mirrored, when the two sides' differ (and
    the side is a run, not the recorded cluster): what a reader must be told."""
    releases = report.get("kubernetesVersions") or {}
    if releases.get("a") == releases.get("b"):
        return None
    release: str | None = releases.get(side)
    return release


def side_name(report: dict[str, Any], side: str) -> str:
    """Side ``a`` or ``b`` by its run, with its release when the two sides' differ."""
    release = release_of(report, side)
    return report[side] + (f" (Kubernetes {release})" if release else "")


def _aggregate_lines(report: dict[str, Any]) -> list[str]:
    """The aggregates of both sides and the change, one metric a line, aligned."""
    header = ("", report["a"], report["b"], "change")
    rows = [header, *((r["label"], r["aText"], r["bText"], r["deltaText"])
                      for r in report["rows"])]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return ["  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
            .rstrip() for row in rows]


#: Diff counts that are no change: the same node, scheduled in neither run, coin flips.
UNCHANGED_OR_CHANCE = ("same", "unscheduledInBoth", "tieFlips", "tieConsequences")


def as_json(report: dict[str, Any], verdicts: list[Verdict]) -> str:
    result = outcome(verdicts)
    return orjson.dumps({
        **report, "passed": None if result == "unchecked" else result == "passed",
        "result": result,
        "conditions": [{"condition": v.condition.text, "actual": v.actual,
                        "threshold": v.threshold, "failed": v.failed} for v in verdicts],
    }, option=orjson.OPT_INDENT_2).decode()


def as_text(report: dict[str, Any], verdicts: list[Verdict]) -> str:
    counts = report["counts"]
    lines = [f"{side_name(report, 'a')} → {side_name(report, 'b')}: {report['compared']} "
             "pods compared, "
             f"{sum(counts[k] for k in counts if k not in UNCHANGED_OR_CHANCE)}"
             f" changed, {counts['tieFlips']} tie flips"]
    lines += _aggregate_lines(report)
    lines += [f"  {v.message}" for v in verdicts]
    for change in _changed(report)[:20]:
        lines.append(f"  {change['pod']}: {change['change']} "
                     f"({change['a']['node'] or '-'} → {change['b']['node'] or '-'}) "
                     f"{change['reason']}".rstrip())
        if change.get("releaseCause"):
            lines.append(f"    release: {change['releaseCause']}")
    lines.append({"failed": "FAILED", "passed": "PASSED",
                  "unchecked": NO_CONDITIONS}[outcome(verdicts)])
    return "\n".join(lines)


def as_markdown(report: dict[str, Any], verdicts: list[Verdict]) -> str:
    verdict = {"failed": "❌ regression", "passed": "✅ pass",
               "unchecked": NO_CONDITIONS}[outcome(verdicts)]
    out = [f"### kaudit: {side_name(report, 'a')} → {side_name(report, 'b')} — {verdict}",
           "", "| metric | " + report["a"] + " | " + report["b"] + " |", "| --- | ---: | ---: |"]
    out[-2] = out[-2] + " change |"
    out[-1] = out[-1] + " ---: |"
    for row in report["rows"]:
        out.append(f"| {row['label']} | {row['aText']} | {row['bText']} | {row['deltaText']} |")
    if verdicts:
        out += ["", "| condition | value | threshold | result |", "| --- | ---: | ---: | --- |"]
        out += [f"| `{v.condition.text}` | {v.actual_text} | {v.threshold_text} | "
                f"{'❌ failed' if v.failed else '✅ ok'} |" for v in verdicts]
    changed = _changed(report)
    if changed:
        out += ["", f"<details><summary>{len(changed)} changed pods</summary>", "",
                "| pod | change | A | B | reason |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {c['pod']} | {c['change']} | {c['a']['node'] or '-'} | "
                f"{c['b']['node'] or '-'} | {c['reason']} |" for c in changed]
        out += ["", "</details>"]
    return "\n".join(out) + "\n"


def as_junit(report: dict[str, Any], verdicts: list[Verdict]) -> str:
    changed = _changed(report)
    suites = ET.Element("testsuites", name="kaudit")
    suite = ET.SubElement(suites, "testsuite", name=f"kaudit {report['a']} vs {report['b']}",
                          tests=str(len(verdicts) + len(changed)),
                          failures=str(sum(v.failed for v in verdicts)), errors="0",
                          skipped="0")
    properties = ET.SubElement(suite, "properties")
    for side in ("a", "b"):
        release = release_of(report, side)
        if release:
            ET.SubElement(properties, "property", name=f"kubernetes {report[side]}",
                          value=release)
    for row in report["rows"]:
        ET.SubElement(properties, "property", name=row["label"],
                      value=f"{row['aText']} → {row['bText']} ({row['deltaText']})")
    if not verdicts:
        ET.SubElement(properties, "property", name="conditions", value=NO_CONDITIONS)
    for verdict in verdicts:
        case = ET.SubElement(suite, "testcase", classname="kaudit.conditions",
                             name=verdict.condition.text)
        if verdict.failed:
            failure = ET.SubElement(case, "failure", message=verdict.message,
                                    type="regression")
            failure.text = verdict.message
    for change in changed:
        case = ET.SubElement(suite, "testcase", classname="kaudit.pods", name=change["pod"])
        out = ET.SubElement(case, "system-out")
        out.text = (f"{change['change']}: {change['a']['node'] or '-'} → "
                    f"{change['b']['node'] or '-'}. {change['reason']}").strip()
        if change.get("releaseCause"):
            out.text += f" Release: {change['releaseCause']}."
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


FORMATS = {"text": as_text, "markdown": as_markdown, "json": as_json, "junit": as_junit}
