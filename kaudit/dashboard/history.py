"""History replay: the cluster at any moment of a run (nodes by zone, queues, the log around
that moment), and one node's pods."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template, request
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import cached, get_engine
from kaudit.dashboard.params import is_final, moment, run_with_span, text
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.timeline import cluster_at, events_around, last_change, node_at
from kaudit.services.versions import supported_names
from kaudit.services.whatif import (
    MAX_MANIFEST,
    POD_MANIFEST,
    VERSION_FIELD,
    check_manifest_size,
    evaluate_pod_at,
    parse_pod_manifest,
)

bp = Blueprint("history", __name__)


@bp.get("/runs/<run>/history")
def page(run: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    return render_template("history.html", run=found, span=span.as_json(),
                           t=moment("t", span, 0.0), releases=supported_names())


@bp.get("/api/v1/runs/<run>/state")
def state(run: str) -> ResponseReturnValue:
    """The answer of :func:`kaudit.queries.timeline.state_at`; the cluster part is cached per
    logged instant, since it is the same for every moment up to the next record."""
    found, span = run_with_span(run)
    engine = get_engine()
    ts_us = span.at(moment("t", span, 0.0) or 0.0)
    instant = last_change(engine, found.id, ts_us)
    at = ts_us if instant is None else instant
    cluster = cached(("cluster", found.id, at), lambda: cluster_at(engine, found.id, span, at),
                     final=is_final(found))
    return jsonify({"t": span.t(ts_us), "time": format_timestamp(ts_us),
                    "span": span.as_json(), **cluster,
                    "events": events_around(engine, found.id, span, ts_us)})


@bp.get("/api/v1/runs/<run>/nodes/<node>")
def node(run: str, node: str) -> ResponseReturnValue:
    found, span = run_with_span(run)
    return jsonify(node_at(get_engine(), found.id, span, node, moment("t", span, 0.0) or 0.0))


@bp.post("/api/v1/runs/<run>/whatif")
def whatif(run: str) -> ResponseReturnValue:
    """Where the Pod manifest in the request body (JSON or YAML) would go in the run's cluster
    at ``t``: ``kaudit whatif --json``'s evaluation. Nothing is stored. ``kubernetesVersion``
    evaluates it as another release than the run's (a supported one; else 400 naming it)."""
    found, _span = run_with_span(run)
    release = text(VERSION_FIELD, max_length=64)
    check_manifest_size(request.content_length or 0, POD_MANIFEST)
    # Read one byte past the limit at most, so that a body sent without a length is bounded.
    pod = parse_pod_manifest(request.stream.read(MAX_MANIFEST + 1), POD_MANIFEST)
    return jsonify(evaluate_pod_at(get_engine(), found.name, request.args.get("t"), pod,
                                   kubernetes_version=release))
