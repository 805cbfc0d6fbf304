"""Template helpers: links to a run's pages, versions, the plotly.js asset."""

from __future__ import annotations

from typing import Any

from flask import Flask, url_for

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.dashboard.database import cached, get_engine
from kaudit.dashboard.vendor import plotly_js_name
from kaudit.queries.audit import is_audit


def run_url(run: str, endpoint: str = "runs.page", **values: Any) -> str:
    return url_for(endpoint, run=run, **values)


def is_audit_run(run: str) -> bool:
    """Whether the run is an audit: its options say so from its creation, so a running or
    failed audit is known as one too (and the answer never changes)."""
    return cached(("is-audit", run), lambda: is_audit(get_engine(), run), final=True)


def init_app(app: Flask) -> None:
    @app.context_processor
    def helpers() -> dict[str, Any]:
        return {"run_url": run_url, "is_audit_run": is_audit_run,
                "kaudit_version": __version__,
                "kubernetes_version": KUBERNETES_VERSION,
                "plotly_js": url_for("meta.vendor", filename=plotly_js_name())}
