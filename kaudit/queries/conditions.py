"""``--fail-on`` conditions for CI: ``pending_at_end>0``, ``changed>5%``,
``p95_pending>+10s``, ``preempted>baseline``.

A condition is ``METRIC OP VALUE``. Metrics are read from the new run (B) of a diff, under the
names of :mod:`kaudit.queries.summary_rows`: ``scheduled``, ``pending_at_end`` (never bound,
still waiting when the trace ends, tried or held back by PreEnqueue), ``held_back`` (of those,
never tried), ``never_scheduled`` (also counting pods deleted while waiting), ``preempted``,
``attempts``, ``nodes`` (nodes in use), ``p50_pending``, ``p95_pending``, ``max_pending``
(seconds), ``imbalance`` (the time-weighted spread of node CPU utilisation, 0–1),
``fragmented`` (waiting pods that fit the cluster's free capacity in total but no single node),
and the diff's own ``changed`` (pods that moved, were scheduled or
preempted in one run only, or waited longer or shorter; tie flips and their consequences
excluded) and ``moved``. ``unschedulable``, the column ``kaudit runs`` once showed, is
refused with its new name (it meant ``pending_at_end``). ``OP`` is one of
``> >= < <= == !=``. ``VALUE`` is a number; ``N%`` (of the pods compared, for ``changed`` and
``moved``); ``+N`` or ``+Ns`` (the baseline's value plus N); or ``baseline``.

A condition is evaluated or it is an error: a metric either side lacks (the recorded cluster
has no attempts; a summary that does not store it) raises :class:`InputError` naming the
condition, the side and why, so a CI gate never passes on what it could not measure.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from kaudit.errors import InputError
from kaudit.queries.outcomes import RECORDED
from kaudit.queries.summary_rows import DIFF_METRICS, Metric, format_value

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, "<": operator.lt,
}
_PATTERN = re.compile(r"^\s*([a-z_0-9]+)\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$")
_AGGREGATES: dict[str, Metric] = {m.condition: m for m in DIFF_METRICS if m.condition}
#: Former names, refused with the new one.
_RENAMED = {"unschedulable": "pending_at_end"}
_DIFF = {"changed", "moved"}
METRICS = sorted([*_AGGREGATES, *_DIFF])
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
    actual_text: str = "–"
    threshold_text: str = "–"


def parse_condition(text: str, known: Collection[str] | None = None) -> Condition:
    """Parse ``METRIC OP VALUE``; ``known`` replaces the metrics a diff knows (a sweep's)."""
    match = _PATTERN.match(text)
    if match is None:
        raise InputError(f"--fail-on {text!r}: expected METRIC OP VALUE, e.g. "
                         "pending_at_end>0, changed>5%, p95_pending>+10s, preempted>baseline")
    metric, op, raw = match.groups()
    if metric in _RENAMED:
        renamed = _RENAMED[metric]
        raise InputError(f"--fail-on {text!r}: {metric!r} was renamed to {renamed!r} (pods "
                         f"still waiting when the trace ends): write "
                         f"{text.replace(metric, renamed, 1)!r}")
    names = sorted(known) if known is not None else METRICS
    if metric not in names:
        raise InputError(f"--fail-on {text!r}: unknown metric {metric!r}; one of "
                         f"{', '.join(names)}")
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


def _unit(metric: str) -> str:
    return _AGGREGATES[metric].unit if metric in _AGGREGATES else "count"


def _metric(report: dict[str, Any], side: str, metric: str) -> float | None:
    if metric in _AGGREGATES:
        value = _AGGREGATES[metric].read(report["aggregates"][side])
    elif metric == "moved":
        value = report["counts"]["moved"] if side == "b" else 0
    else:
        value = sum(report["counts"][k] for k in REAL_CHANGES) if side == "b" else 0
    return None if value is None else float(value)


def _why_missing(report: dict[str, Any], side: str, metric: str) -> str:
    """Why side ``side`` of the diff has no value of ``metric``."""
    name = report[side]
    if name == RECORDED:
        if metric in ("attempts", "held_back"):
            return ("the recorded cluster's scheduling attempts are not in the trace; "
                    f"compare two runs for {metric}")
        return (f"the recorded cluster's {metric} is measured by the trace's first replay; "
                "replay the trace once")
    if side == "a" and report.get("baselineSource"):
        return (f"the baseline {report['baselineSource']} does not store it; regenerate it "
                "with `kaudit replay ... --summary-out FILE`")
    if metric in ("p50_pending", "p95_pending", "max_pending"):
        return "no pod of it was bound, so no pod has a pending time"
    return "the run did not measure it"


def evaluate(condition: Condition, report: dict[str, Any]) -> Verdict:
    """Whether the condition holds for the diff ``report`` (B against the baseline A);
    :class:`InputError` when it cannot be evaluated."""
    actual = _metric(report, "b", condition.metric)
    base = _metric(report, "a", condition.metric)
    unit = _unit(condition.metric)
    needs_base = condition.kind in ("baseline", "relative")
    for side, value, role in (("b", actual, "the checked run"), ("a", base, "the baseline")):
        if value is None and (side == "b" or needs_base):
            raise InputError(f"--fail-on {condition.text!r} cannot be evaluated: {role} "
                             f"({report[side]}) has no {condition.metric} value: "
                             f"{_why_missing(report, side, condition.metric)}")
    if condition.kind == "baseline":
        threshold = base
        described = f"{report['a']}'s {format_value(unit, base)}"
    elif condition.kind == "relative":
        assert base is not None
        threshold = base + condition.value
        described = f"{report['a']}'s {format_value(unit, base)} + {condition.value:g}"
    elif condition.kind == "percent":
        threshold = report["compared"] * condition.value / 100
        described = (f"{condition.value:g}% of {report['compared']} pods compared = "
                     f"{threshold:g} pods")
    else:
        threshold = condition.value
        described = format_value(unit, threshold)
    assert actual is not None and threshold is not None
    actual_text = format_value(unit, actual)
    failed = _OPERATORS[condition.op](actual, threshold)
    return Verdict(condition, actual, threshold, failed,
                   f"{condition.describe()}: {condition.metric} = {actual_text} "
                   f"(threshold {described}) — {'FAILED' if failed else 'ok'}",
                   actual_text, described)


def evaluate_all(conditions: list[Condition], report: dict[str, Any]) -> list[Verdict]:
    """Every condition's verdict; one :class:`InputError` naming every condition that cannot
    be evaluated."""
    verdicts, errors = [], []
    for condition in conditions:
        try:
            verdicts.append(evaluate(condition, report))
        except InputError as exc:
            errors.append(str(exc))
    if errors:
        raise InputError("; ".join(errors) if len(errors) == 1 else
                         f"{len(errors)} conditions cannot be evaluated:\n  "
                         + "\n  ".join(errors))
    return verdicts
