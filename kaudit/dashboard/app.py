"""The application factory: configuration, the database, error pages, security headers,
metrics and the blueprints."""

from __future__ import annotations

from typing import Any

from flask import Flask

from kaudit.dashboard.jsonprovider import OrjsonProvider
from kaudit.datadirs import web_dir


class _Dashboard(Flask):
    json_provider_class = OrjsonProvider


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Build the dashboard. ``config`` may set ``KAUDIT_DB`` (a database URL or SQLite path;
    default ``$KAUDIT_DB`` or ``kaudit.db``), ``DATABASE_CHECK_SECONDS`` (how often an SQLite
    file is checked for having been deleted, replaced or overwritten) and any Flask
    setting."""
    web = web_dir()
    app = _Dashboard("kaudit.dashboard", template_folder=str(web / "templates"),
                     static_folder=str(web / "static"), static_url_path="/static")
    app.config.update(KAUDIT_DB=None, CACHE_ENTRIES=256, SEND_FILE_MAX_AGE_DEFAULT=3600,
                      DATABASE_CHECK_SECONDS=1.0)
    app.config.update(config or {})

    from kaudit.dashboard import database, errors, metrics, templating

    database.init_app(app)
    errors.init_app(app)
    metrics.init_app(app)
    templating.init_app(app)

    from kaudit.dashboard import audit, diff, events, gpu, history, home, meta, pods, runs, sweeps

    for blueprint in (home.bp, runs.bp, history.bp, pods.bp, events.bp, diff.bp, gpu.bp,
                      sweeps.bp, audit.bp, meta.bp):
        app.register_blueprint(blueprint)
    return app
