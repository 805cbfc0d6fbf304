"""``--fail-on`` conditions for CI: ``unschedulable>0``, ``changed>5%``, ``p95_pending>+10s``,
``preempted>baseline``.

A condition is ``METRIC OP VALUE``. Metrics are read from the new run (B) of a diff:
``scheduled``, ``unschedulable``, ``preempted``, ``attempts``, ``nodes`` (nodes in use),
``p50_pending``, ``p95_pending``, ``max_pending`` (seconds), ``imbalance`` (the time-weighted
spread of node CPU utilisation), ``fragmented`` (waiting pods that fit the cluster's free
capacity in total but no single node), and the diff's own ``changed``
(pods that moved, were scheduled or preempted in one run only, or waited longer or shorter;
tie flips and their consequences excluded) and ``moved``. ``OP`` is one of
``> >= < <= == !=``. ``VALUE`` is a number; ``N%`` (of the pods compared, for ``changed`` and
``moved``); ``+N`` or ``+Ns`` (the baseline's value plus N); or ``baseline``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kaudit.errors import InputError

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, "<": operator.lt,
}
_PATTERN = re.compile(r"^\s*([a-z_0-9]+)\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$")
_AGGREGATES = {"scheduled": "scheduled", "unschedulable": "unschedulable",
               "preempted": "preempted", "attempts": "attempts", "nodes": "nodesInUse",
               "imbalance": "imbalance"}
_PENDING = {"p50_pending": "p50", "p95_pending": "p95", "max_pending": "max"}
_DIFF = {"changed", "moved"}
METRICS = sorted([*_AGGREGATES, *_PENDING, *_DIFF, "fragmented"])
REAL_CHANGES = ("moved", "scheduledOnlyInA", "scheduledOnlyInB", "preemptedOnlyInA",
                "preemptedOnlyInB", "pendingTimeChanged")


@dataclass(frozen=True)
class Condition:
    text: str
    metric: str
    op: str
    kind: str  # number, percent, relative, baseline
    value: float

    def describe(self) -> str:
        return self.text.replace(" ", "")


@dataclass(frozen=True)
class Verdict:
    condition: Condition
    actual: float | None
    threshold: float | None
    failed: bool
    message: str


def parse_condition(text: str) -> Condition:
    match = _PATTERN.match(text)
    if match is None:
        raise InputError(f"--fail-on {text!r}: expected METRIC OP VALUE, e.g. "
                         "unschedulable>0, changed>5%, p95_pending>+10s, preempted>baseline")
    metric, op, raw = match.groups()
    if metric not in METRICS:
        raise InputError(f"--fail-on {text!r}: unknown metric {metric!r}; one of "
                         f"{', '.join(METRICS)}")
    if raw == "baseline":
        return Condition(text, metric, op, "baseline", 0.0)
    kind, number = "number", raw
    if raw.endswith("%"):
        if metric not in _DIFF:
            raise InputError(f"--fail-on {text!r}: a percentage applies to changed or moved")
        kind, number = "percent", raw[:-1]
    elif raw.startswith("+"):
        kind, number = "relative", raw[1:].removesuffix("s")
    else:
        number = raw.removesuffix("s")
    try:
        value = float(number)
    except ValueError:
        raise InputError(f"--fail-on {text!r}: {raw!r} is not a number") from None
    return Condition(text, metric, op, kind, value)


def _metric(report: dict[str, Any], side: str, metric: str) -> float | None:
    aggregates = report["aggregates"][side]
    if metric in _AGGREGATES:
        value = aggregates.get(_AGGREGATES[metric])
    elif metric == "fragmented":
        value = (aggregates.get("fragmentation") or {}).get("pods")
    elif metric in _PENDING:
        value = aggregates["pendingSeconds"][_PENDING[metric]]
    elif metric == "moved":
        value = report["counts"]["moved"] if side == "b" else 0
    else:
        value = sum(report["counts"][k] for k in REAL_CHANGES) if side == "b" else 0
    return None if value is None else float(value)


def evaluate(condition: Condition, report: dict[str, Any]) -> Verdict:
    """Whether the condition holds for the diff ``report`` (B against the baseline A)."""
    actual = _metric(report, "b", condition.metric)
    base = _metric(report, "a", condition.metric)
    if condition.kind == "baseline":
        threshold = base
    elif condition.kind == "relative":
        threshold = None if base is None else base + condition.value
    elif condition.kind == "percent":
        threshold = report["compared"] * condition.value / 100
    else:
        threshold = condition.value
    if actual is None or threshold is None:
        return Verdict(condition, actual, threshold, False,
                       f"{condition.describe()}: not measurable (no value)")
    failed = _OPERATORS[condition.op](actual, threshold)
    return Verdict(condition, actual, threshold, failed,
                   f"{condition.describe()}: {condition.metric} = {actual:g} "
                   f"(threshold {threshold:g}) — {'FAILED' if failed else 'ok'}")
