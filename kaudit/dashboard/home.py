"""Home: the stored traces and runs with their summaries."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import get_engine
from kaudit.queries import units
from kaudit.queries.runs import list_runs
from kaudit.queries.traces import list_traces

bp = Blueprint("home", __name__)


@bp.get("/")
def page() -> ResponseReturnValue:
    return render_template("home.html")


@bp.get("/api/v1/traces")
def traces() -> ResponseReturnValue:
    # The span as every door writes a span of time (units.duration).
    return jsonify(traces=[{**t.as_json(), "spanText": units.duration(t.span_seconds)}
                           for t in list_traces(get_engine())])


@bp.get("/api/v1/runs")
def runs() -> ResponseReturnValue:
    return jsonify(runs=[r.as_json() for r in list_runs(get_engine())])
