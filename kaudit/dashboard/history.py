"""History replay: the cluster at any moment of a run (nodes by zone, queues, the log around
that moment), and one node's pods."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import get_engine
from kaudit.dashboard.params import run_with_span, seconds
from kaudit.queries.timeline import node_at, state_at

bp = Blueprint("history", __name__)


@bp.get("/runs/<run>/history")
def page(run: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    return render_template("history.html", run=found, span=span.as_json(),
                           t=seconds("t", 0.0))


@bp.get("/api/v1/runs/<run>/state")
def state(run: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    return jsonify(state_at(get_engine(), found.id, span, seconds("t", 0.0) or 0.0))


@bp.get("/api/v1/runs/<run>/nodes/<node>")
def node(run: str, node: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    return jsonify(node_at(get_engine(), found.id, span, node, seconds("t", 0.0) or 0.0))
