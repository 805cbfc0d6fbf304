"""Run: timelines over virtual time (pending pods, attempts and outcomes, allocation,
preemptions) and the attempts table (the event log's attempts, a page at a time)."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import cached, get_engine
from kaudit.dashboard.params import is_final, run_with_span
from kaudit.queries import units
from kaudit.queries.timeline import has_timeline, histograms, series

bp = Blueprint("runs", __name__)


@bp.get("/runs/<run>")
def page(run: str) -> ResponseReturnValue:
    found, _ = run_with_span(run)
    return render_template("run.html", run=found)


@bp.get("/api/v1/runs/<run>")
def run_json(run: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    wall = (found.summary or {}).get("wallSeconds")
    # Spans of time as every door writes them (units.duration), for the page's cards.
    return jsonify(run=found.as_json(), span=span.as_json(),
                   spanText=units.duration(span.seconds),
                   wallText=units.duration(wall) if isinstance(wall, int | float) else "–",
                   timeline=has_timeline(get_engine(), found.id))


@bp.get("/api/v1/runs/<run>/timeline")
def timeline(run: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    engine = get_engine()

    def compute() -> dict[str, object]:
        return {"run": found.name, "span": span.as_json(),
                "timeline": has_timeline(engine, found.id),
                "series": series(engine, found.id, span),
                "histograms": histograms(engine, found.id, span)}

    return jsonify(cached(("timeline", found.id), compute, final=is_final(found)))
