"""Diff: two runs of one trace (or a run against ``recorded``, the trace's own placements):
summary deltas, overlaid timelines, the changed pods (a page at a time) linking to their
explanations side by side."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import cached, get_engine
from kaudit.dashboard.params import integer, is_final, run_with_span, text
from kaudit.queries.diff import CHANCE, diff_runs, verdict_on_other_node
from kaudit.queries.outcomes import RECORDED
from kaudit.queries.runs import list_runs
from kaudit.queries.timeline import has_timeline, nodes_in_use, series

bp = Blueprint("diff", __name__)


def _sides() -> tuple[str, str]:
    a, b = text("a", required=True), text("b", required=True)
    assert a is not None and b is not None
    return a, b


@bp.get("/diff")
def page() -> ResponseReturnValue:
    runs = list_runs(get_engine())
    return render_template("diff.html", runs=runs, a=text("a"), b=text("b"))


@bp.get("/diff/pods/<namespace>/<name>")
def pod_page(namespace: str, name: str) -> ResponseReturnValue:
    a, b = _sides()
    for ref in (a, b):
        if ref != RECORDED:
            run_with_span(ref)  # 404 for an unknown run
    return render_template("diff_pod.html", a=a, b=b, pod=f"{namespace}/{name}")


def _report(a: str, b: str) -> dict[str, Any]:
    engine = get_engine()
    runs = {ref: run_with_span(ref) for ref in (a, b) if ref != RECORDED}
    final = all(is_final(run) for run, _ in runs.values())
    ids = tuple(runs[ref][0].id if ref in runs else RECORDED for ref in (a, b))

    def compute() -> dict[str, Any]:
        report = diff_runs(engine, a, b)
        timelines: dict[str, Any] = {}
        for side, ref in (("a", a), ("b", b)):
            if ref in runs:
                run, span = runs[ref]
                timelines[side] = ({**series(engine, run.id, span, limit=600),
                                    "nodesInUse": nodes_in_use(engine, run.id, span)}
                                   if has_timeline(engine, run.id) else None)
            else:
                timelines[side] = None
        report["timelines"] = timelines
        return report

    return cached(("diff", *ids), compute, final=final)


@bp.get("/api/v1/diff/pods/<namespace>/<name>")
def pod_change(namespace: str, name: str) -> ResponseReturnValue:
    """One pod's row of the diff (``change`` null when the pod did not change): what the diff
    pod page states, from the same report as the diff page's table; ``otherNode`` is each
    run's verdict on the node the other run chose, in the diff's words and exact amounts."""
    a, b = _sides()
    report = _report(a, b)
    pod = f"{namespace}/{name}"
    change = next((c for c in report["changes"] if c["pod"] == pod), None)
    engine = get_engine()
    other_node = {
        side: verdict_on_other_node(engine, ref, pod, change[other]["node"]) if change else None
        for side, other, ref in (("a", "b", a), ("b", "a", b))}
    return jsonify({"a": report["a"], "b": report["b"], "pod": pod, "change": change,
                    "otherNode": other_node})


@bp.get("/api/v1/diff")
def diff_json() -> ResponseReturnValue:
    a, b = _sides()
    report = _report(a, b)
    offset = integer("offset", 0)
    limit = integer("limit", 200, low=1, high=1000)
    change = text("change")
    changes = report["changes"]
    if change is not None:
        changes = [c for c in changes if c["change"] == change]
    else:
        changes = [c for c in changes if c["change"] not in CHANCE]
    return jsonify({**{k: v for k, v in report.items() if k != "changes"},
                    "changes": {"total": len(changes), "offset": offset, "limit": limit,
                                "items": changes[offset:offset + limit]}})
