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
``==`` and percentages (``changed>5%``) have no meaning over seeds and are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kaudit.errors import InputError
from kaudit.queries.conditions import Condition, parse_condition
from kaudit.queries.sweeps import ALL, BY_CONDITION, format_metric


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
    """The verdicts of ``condition`` for each candidate configuration of ``report``."""
    metric = BY_CONDITION[condition.metric]
    rows = {(r["config"], r["trace"]): r for r in report["rows"]}
    verdicts = []
    for comparison in report["comparisons"]:
        config, trace = comparison["config"], comparison["trace"]
        if condition.kind == "number":
            stats = rows[(config, trace)]["values"].get(metric.key) or {"mean": None}
            threshold, what = condition.value, f"{metric.label} of {config}"
        else:
            stats = comparison["difference"].get(metric.key) or {"mean": None}
            threshold = condition.value if condition.kind == "relative" else 0.0
            what = f"{metric.label}: {config} − {comparison['baseline']}"
        where = "all traces" if trace == ALL else f"trace {trace}"
        bounds = _bounds(stats)
        if bounds is None:
            verdicts.append(SweepVerdict(condition.text, config, trace, False,
                                         f"{condition.describe()} on {where}: not measurable "
                                         f"({what} has no value)"))
            continue
        failed = _beyond(condition.op, *bounds, threshold)
        interval = (f"{_show(metric.unit, bounds[0])} to {_show(metric.unit, bounds[1])}"
                    if bounds[0] != bounds[1] else f"{_show(metric.unit, bounds[0])} (one "
                                                  "seed: no interval)")
        verdicts.append(SweepVerdict(
            condition.text, config, trace, failed,
            f"{condition.describe()} on {where}: {what} = {interval} (95 % interval; "
            f"threshold {_show(metric.unit, threshold)}) — "
            f"{'FAILED beyond noise' if failed else 'ok'}"))
    return verdicts


def _show(unit: str, value: float) -> str:
    return format_metric(unit, value)
