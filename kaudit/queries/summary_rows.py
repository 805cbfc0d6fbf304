"""The summary metrics of a run and of a diff, named once, with their units.

Every view that shows them (``kaudit runs``, ``kaudit replay``, ``kaudit diff``, ``kaudit
check``/``compare`` reports, the dashboard's home, run and diff pages, and ``--fail-on``
conditions) reads the names, labels and formatting from here, so a number means the same thing
and reads the same way everywhere:

* **pending at end** (``pendingAtEnd``, ``--fail-on pending_at_end``): pods never bound that
  are still waiting when the trace ends, whether kaudit tried them or PreEnqueue held them
  back (a pod waiting for a missing ResourceClaim, or with scheduling gates, is pending in
  Kubernetes too);
* **held back at end** (``heldBack``, ``--fail-on held_back``): of those, the pods never tried,
  held back by a PreEnqueue plugin until the end (unknown for the recorded cluster);
* **never scheduled** (``neverScheduled``, ``--fail-on never_scheduled``): pods never bound,
  counting also those the trace deleted while they waited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kaudit.queries import units


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    #: count, seconds or ratio (0–1, shown as percent)
    unit: str
    read: Callable[[dict[str, Any]], Any]
    #: The ``--fail-on`` name.
    condition: str | None = None


def _nested(*path: str) -> Callable[[dict[str, Any]], Any]:
    def read(aggregates: dict[str, Any]) -> Any:
        value: Any = aggregates
        for part in path:
            value = (value or {}).get(part) if isinstance(value, dict) else None
        return value
    return read


DIFF_METRICS: tuple[Metric, ...] = (
    Metric("scheduled", "scheduled", "count", _nested("scheduled"), "scheduled"),
    Metric("pendingAtEnd", "pending at end", "count", _nested("pendingAtEnd"), "pending_at_end"),
    Metric("heldBack", "held back at end", "count", _nested("heldBack"), "held_back"),
    Metric("neverScheduled", "never scheduled", "count", _nested("neverScheduled"),
           "never_scheduled"),
    Metric("preempted", "preempted", "count", _nested("preempted"), "preempted"),
    Metric("attempts", "attempts", "count", _nested("attempts"), "attempts"),
    Metric("nodesInUse", "nodes in use", "count", _nested("nodesInUse"), "nodes"),
    Metric("pendingP50", "pending p50", "seconds", _nested("pendingSeconds", "p50"),
           "p50_pending"),
    Metric("pendingP95", "pending p95", "seconds", _nested("pendingSeconds", "p95"),
           "p95_pending"),
    Metric("pendingMax", "pending max", "seconds", _nested("pendingSeconds", "max"),
           "max_pending"),
    Metric("cpuAllocated", "cpu allocated, mean", "ratio", _nested("allocation", "cpu", "mean")),
    Metric("memoryAllocated", "memory allocated, mean", "ratio",
           _nested("allocation", "memory", "mean")),
    Metric("imbalance", "imbalance (cpu)", "ratio", _nested("imbalance"), "imbalance"),
    Metric("fragmentedPods", "fragmented pods", "count", _nested("fragmentation", "pods"),
           "fragmented"),
)


def format_value(unit: str, value: Any) -> str:
    if value is None:
        return "–"
    if unit == "ratio":
        return units.percent(value)
    if unit == "seconds":
        return units.seconds(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def format_delta(unit: str, a: Any, b: Any) -> str:
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return "–"
    delta = b - a
    if unit == "ratio":
        return f"{delta * 100:+.1f} pp"
    if unit == "seconds":
        return f"{delta:+.2f} s".replace(".00 s", " s")
    return f"{delta:+g}"


def diff_rows(aggregates_a: dict[str, Any], aggregates_b: dict[str, Any]
              ) -> list[dict[str, Any]]:
    """One row per metric: raw values of both sides, their text and the change."""
    rows = []
    for metric in DIFF_METRICS:
        a, b = metric.read(aggregates_a), metric.read(aggregates_b)
        rows.append({"key": metric.key, "label": metric.label, "unit": metric.unit,
                     "condition": metric.condition, "a": a, "b": b,
                     "aText": format_value(metric.unit, a), "bText": format_value(metric.unit, b),
                     "deltaText": format_delta(metric.unit, a, b)})
    return rows


def run_counts(summary: dict[str, Any] | None) -> dict[str, Any]:
    """A stored run summary's counts under today's names (runs stored before the two
    "unschedulable" metrics were named hold only ``podsUnschedulable``, pending at end)."""
    summary = summary or {}
    pending = summary.get("podsPendingAtEnd", summary.get("podsUnschedulable"))
    return {"scheduled": summary.get("podsScheduled"), "pendingAtEnd": pending,
            "heldBack": summary.get("podsHeldBack"),
            "neverScheduled": summary.get("podsNeverScheduled"),
            "preempted": summary.get("podsPreempted"), "attempts": summary.get("attempts")}
