"""Pod: its lifecycle, each attempt's message, filter matrix, score breakdown and decision,
and the placement the recorded cluster made.

The page and its API share one story (:func:`kaudit.queries.pods.pod_story`): the page renders
the verdict block and the other events from it on the server, in the sentences the API carries,
so the page states what ``kaudit explain`` states without a script composing its own words.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from kaudit.dashboard.audit import pod_verdicts
from kaudit.dashboard.database import cached, get_engine
from kaudit.dashboard.params import is_final, run_with_span
from kaudit.queries.pods import attempt_detail, pod_story, require_pod
from kaudit.queries.runs import RunSummary

bp = Blueprint("pods", __name__)


def _story(run: RunSummary, key: str) -> dict[str, Any]:
    return cached(("story", run.id, key), lambda: pod_story(get_engine(), run.name, key),
                  final=is_final(run))


@bp.get("/runs/<run>/pods/<namespace>/<name>")
def page(run: str, namespace: str, name: str) -> ResponseReturnValue:
    found, _ = run_with_span(run)
    key = require_pod(get_engine(), found, f"{namespace}/{name}")  # 404 when unknown
    return render_template("pod.html", run=found, pod=key, story=_story(found, key),
                           audit=pod_verdicts(found, key))


@bp.get("/api/v1/runs/<run>/pods/<namespace>/<name>")
def story(run: str, namespace: str, name: str) -> ResponseReturnValue:
    found, _ = run_with_span(run)
    return jsonify(_story(found, f"{namespace}/{name}"))


@bp.get("/api/v1/runs/<run>/pods/<namespace>/<name>/attempts/<int:number>")
def attempt(run: str, namespace: str, name: str, number: int) -> ResponseReturnValue:
    """Attempt ``number`` (from 1, as ``kaudit explain`` and the records number them)."""
    found, _ = run_with_span(run)
    key = f"{namespace}/{name}"
    return jsonify(cached(("attempt", found.id, key, number),
                          lambda: attempt_detail(get_engine(), found.name, key, number),
                          final=is_final(found)))
