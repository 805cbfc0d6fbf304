"""Template helpers: links to runs and pods, number formats, the plotly.js asset."""

from __future__ import annotations

from typing import Any

from flask import Flask, url_for

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.dashboard.vendor import plotly_js_name


def run_url(run: str, endpoint: str = "runs.page", **values: Any) -> str:
    return url_for(endpoint, run=run, **values)


def pod_url(run: str, pod: str, **values: Any) -> str:
    namespace, _, name = pod.partition("/")
    return url_for("pods.page", run=run, namespace=namespace, name=name, **values)


def init_app(app: Flask) -> None:
    @app.context_processor
    def helpers() -> dict[str, Any]:
        return {"run_url": run_url, "pod_url": pod_url, "kaudit_version": __version__,
                "kubernetes_version": KUBERNETES_VERSION,
                "plotly_js": url_for("meta.vendor", filename=plotly_js_name())}
