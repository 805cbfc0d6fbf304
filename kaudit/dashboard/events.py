"""Event log: every record of a run, filtered by kind, pod, node, plugin and time, a page at
a time."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import get_engine
from kaudit.dashboard.params import integer, moment, run_with_span, text
from kaudit.queries.eventlog import KINDS, MAX_LIMIT, EventFilter, events_page

bp = Blueprint("events", __name__)


@bp.get("/runs/<run>/events")
def page(run: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    return render_template("events.html", run=found, kinds=KINDS, span=span.as_json())


@bp.get("/api/v1/runs/<run>/events")
def events(run: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    where = EventFilter(kind=text("kind"), pod=text("pod"), node=text("node"),
                        plugin=text("plugin"), since=moment("since", span),
                        until=moment("until", span))
    return jsonify(events_page(get_engine(), found.id, span, where,
                               offset=integer("offset", 0),
                               limit=integer("limit", 100, low=1, high=MAX_LIMIT)))
