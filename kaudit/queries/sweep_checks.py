"""``kaudit check --sweep``: ``--fail-on`` conditions over a sweep, failing only beyond noise.

A condition names a metric of the sweep report (``p95_pending``, ``pending_at_end``,
``gpu_unallocated``, ...) and is checked for every configuration other than the baseline, on
each trace (and over all traces when there are several):

* ``p95_pending>baseline`` fails when the 95 % interval of the paired difference
  (candidate − baseline, by trace and seed) lies entirely above 0;
* ``p95_pending>+10s`` fails when that interval lies entirely above 10;
* ``pending_at_end>5`` fails when the interval of the candidate's mean lies entirely above 5.

``<`` and ``<=`` mirror these (the interval entirely below); ``!=`` fails when the interval
excludes the value. With a single seed there is no interval and the value itself is compared.
``==`` and percentages (``changed>5%``) have no meaning over seeds and are refused. An
absolute threshold (``pending_at_end>5``) is checked on every configuration, the baseline
too; a condition that cannot be checked (a metric no cell has, a configuration or a pair of
cells without it, or a comparison in a sweep of one configuration) is an input error rather
than a silent pass. The interval of a candidate's mean is the report's, cut at what the metric
can be (:func:`kaudit.queries.sweeps.interval`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from kaudit.errors import InputError
from kaudit.queries.conditions import Condition, parse_condition
from kaudit.queries.sweeps import ALL, BY_CONDITION, in_unit


@dataclass(frozen=True)
class SweepVerdict:
    condition: str
    config: str
    trace: str
    failed: bool
    message: str


def parse_sweep_condition(text: str) -> Condition:
    condition = parse_condition(text, BY_CONDITION)
    if condition.kind == "percent":
        raise InputError(f"--fail-on {text!r}: percentages apply to one diff, not a sweep")
    if condition.op == "==":
        raise InputError(f"--fail-on {text!r}: == cannot be decided beyond noise; use != or "
                         "an inequality")
    return condition


def _beyond(op: str, low: float, high: float, threshold: float) -> bool:
    if op in (">", ">="):
        return low > threshold if op == ">" else low >= threshold
    if op in ("<", "<="):
        return high < threshold if op == "<" else high <= threshold
    return not low <= threshold <= high  # !=


def _bounds(stats: dict[str, Any]) -> tuple[float, float] | None:
    if stats.get("mean") is None:
        return None
    if stats.get("low") is None:
        return stats["mean"], stats["mean"]
    return stats["low"], stats["high"]


def evaluate_sweep(condition: Condition, report: dict[str, Any]) -> list[SweepVerdict]:
    """The verdicts of ``condition`` on ``report``: an absolute threshold on every
    configuration, a comparison on every configuration other than the baseline; on each
    trace, and over all traces when there are several. :class:`InputError` when there is
    nothing to check (the metric is in no cell, or no configuration to compare)."""
    metric = BY_CONDITION[condition.metric]
    if metric.key not in {m["key"] for m in report["metrics"]}:
        raise InputError(f"--fail-on {condition.text!r}: no cell of sweep {report['sweep']} has "
                         f"{metric.label}" + (" (replay with gpuReport: true)"
                                              if metric.key.startswith("gpu") else ""))
    verdicts = []
    if condition.kind == "number":
        for row in report["rows"]:
            stats = row["values"].get(metric.key) or {"mean": None}
            verdicts.append(_verdict(condition, metric.unit, stats, row["config"], row["trace"],
                                     condition.value, f"{metric.label} of {row['config']}"))
        return verdicts
    if not report["comparisons"]:
        raise InputError(f"--fail-on {condition.text!r}: sweep {report['sweep']} has no "
                         "configuration to compare with its baseline "
                         f"({report['baseline']}); give an absolute threshold instead")
    for comparison in report["comparisons"]:
        stats = comparison["difference"].get(metric.key) or {"mean": None}
        threshold = condition.value if condition.kind == "relative" else 0.0
        verdicts.append(_verdict(condition, metric.unit, stats, comparison["config"],
                                 comparison["trace"], threshold,
                                 f"{metric.label}: {comparison['config']} − "
                                 f"{comparison['baseline']}"))
    return verdicts


def _verdict(condition: Condition, unit: str, stats: dict[str, Any], config: str, trace: str,
             threshold: float, what: str) -> SweepVerdict:
    where = "all traces" if trace == ALL else f"trace {trace}"
    if stats.get("mean") is None:
        raise InputError(f"--fail-on {condition.text!r} cannot be evaluated on {where}: "
                         f"{what} has no value (no complete cell of {config} measured it"
                         + (", or none pairs with a baseline cell by trace and seed"
                            if " − " in what else "") + ")")
    if stats.get("low") is None:
        low = high = stats["mean"]
        shown = f"{_show(unit, low)} (one seed: no interval)"
    else:
        low, high = stats["low"], stats["high"]
        shown = f"{_show(unit, low)} to {_show(unit, high)} (95 % interval)"
    failed = _beyond(condition.op, low, high, threshold)
    return SweepVerdict(condition.text, config, trace, failed,
                        f"{condition.describe()} on {where}: {what} = {shown}; threshold "
                        f"{_show(unit, threshold)} — {'FAILED beyond noise' if failed else 'ok'}")


def _show(unit: str, value: float) -> str:
    """Enough digits that a bound and a threshold never read equal when they differ."""
    return in_unit(unit, value, digits=3)


def as_junit(report: dict[str, Any], verdicts: list[SweepVerdict]) -> str:
    """The verdicts as a JUnit report: one test case per condition, configuration and
    trace."""
    suites = ET.Element("testsuites", name="kaudit")
    suite = ET.SubElement(suites, "testsuite", name=f"kaudit sweep {report['sweep']}",
                          tests=str(len(verdicts)),
                          failures=str(sum(v.failed for v in verdicts)), errors="0",
                          skipped="0")
    for verdict in verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"kaudit.sweep.{verdict.config}",
                             name=f"{verdict.condition} on {verdict.trace}")
        if verdict.failed:
            failure = ET.SubElement(case, "failure", message=verdict.message,
                                    type="regression")
            failure.text = verdict.message
        else:
            ET.SubElement(case, "system-out").text = verdict.message
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"
