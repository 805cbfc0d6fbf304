"""Template helpers: links to a run's pages, versions, the plotly.js asset."""

from __future__ import annotations

from typing import Any

from flask import Flask, url_for

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.dashboard.vendor import plotly_js_name


def run_url(run: str, endpoint: str = "runs.page", **values: Any) -> str:
    return url_for(endpoint, run=run, **values)


def init_app(app: Flask) -> None:
    @app.context_processor
    def helpers() -> dict[str, Any]:
        return {"run_url": run_url, "kaudit_version": __version__,
                "kubernetes_version": KUBERNETES_VERSION,
                "plotly_js": url_for("meta.vendor", filename=plotly_js_name())}
