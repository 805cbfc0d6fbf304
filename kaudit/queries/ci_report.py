"""A diff and its ``--fail-on`` verdicts as text, Markdown, JSON or JUnit XML.

JUnit output has one ``testsuite`` with a test case per condition (failed conditions carry a
``failure``) and one per changed pod (its reason in ``system-out``), in the common JUnit schema
that CI systems read (``testsuites/testsuite/testcase[/failure|/system-out]``).
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


def as_json(report: dict[str, Any], verdicts: list[Verdict]) -> str:
    return orjson.dumps({
        **report, "passed": not any(v.failed for v in verdicts),
        "conditions": [{"condition": v.condition.text, "actual": v.actual,
                        "threshold": v.threshold, "failed": v.failed} for v in verdicts],
    }, option=orjson.OPT_INDENT_2).decode()


def as_text(report: dict[str, Any], verdicts: list[Verdict]) -> str:
    counts = report["counts"]
    lines = [f"{report['a']} → {report['b']}: {report['compared']} pods compared, "
             f"{sum(counts[k] for k in counts if k not in ('same', 'tieFlips', 'tieConsequences'))}"
             f" changed, {counts['tieFlips']} tie flips"]
    lines += [f"  {v.message}" for v in verdicts]
    for change in _changed(report)[:20]:
        lines.append(f"  {change['pod']}: {change['change']} "
                     f"({change['a']['node'] or '-'} → {change['b']['node'] or '-'}) "
                     f"{change['reason']}".rstrip())
    lines.append("FAILED" if any(v.failed for v in verdicts) else "PASSED")
    return "\n".join(lines)


def as_markdown(report: dict[str, Any], verdicts: list[Verdict]) -> str:
    failed = any(v.failed for v in verdicts)
    verdict = "❌ regression" if failed else "✅ pass"
    out = [f"### kaudit: {report['a']} → {report['b']} — {verdict}",
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
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


FORMATS = {"text": as_text, "markdown": as_markdown, "json": as_json, "junit": as_junit}
