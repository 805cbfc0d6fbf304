"""Prometheus metrics at ``/metrics``: requests by endpoint and status, their durations, and
the size of what is stored (traces, runs), on a registry of the application's own."""

from __future__ import annotations

import time

from flask import Flask, g, request
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from sqlalchemy import func, select

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.store.models import Run, Trace

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0)


def init_app(app: Flask) -> None:
    registry = CollectorRegistry()
    requests = Counter("kaudit_http_requests", "HTTP requests answered",
                       ["endpoint", "method", "status"], registry=registry)
    duration = Histogram("kaudit_http_request_duration_seconds", "Time to answer a request",
                         ["endpoint"], buckets=BUCKETS, registry=registry)
    Info("kaudit", "kaudit build", registry=registry).info(
        {"version": __version__, "kubernetes": KUBERNETES_VERSION})
    stored = Gauge("kaudit_stored_objects", "Objects in the event-log database", ["kind"],
                   registry=registry)
    app.extensions["kaudit.metrics"] = registry

    def count_stored() -> None:
        engine = app.extensions["kaudit.engine"]
        with engine.connect() as connection:
            stored.labels("trace").set(connection.scalar(select(func.count(Trace.id))) or 0)
            stored.labels("run").set(connection.scalar(select(func.count(Run.id))) or 0)

    app.extensions["kaudit.metrics.refresh"] = count_stored

    @app.before_request
    def started() -> None:
        g.kaudit_started = time.perf_counter()

    @app.after_request
    def observed(response):  # type: ignore[no-untyped-def]
        endpoint = request.url_rule.rule if request.url_rule is not None else "unmatched"
        requests.labels(endpoint, request.method, str(response.status_code)).inc()
        if hasattr(g, "kaudit_started"):
            duration.labels(endpoint).observe(time.perf_counter() - g.kaudit_started)
        return response
