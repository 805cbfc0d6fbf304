"""Introspection, as a service is expected to have: ``/-/versions``, ``/-/config/RUN`` (the
run's effective scheduler configuration), ``/healthz``, ``/metrics``, and the vendored
plotly.js."""

from __future__ import annotations

import platform
from importlib.metadata import version

import yaml
from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    jsonify,
    render_template,
    request,
    send_file,
)
from flask.typing import ResponseReturnValue
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.exc import DBAPIError

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.config import FeatureGates
from kaudit.dashboard.database import get_engine
from kaudit.dashboard.params import run_with_span
from kaudit.dashboard.vendor import plotly_js_gzip, plotly_js_name, plotly_js_path
from kaudit.errors import DatabaseError
from kaudit.queries.runs import run_configuration
from kaudit.services.versions import exact_release, fallback_release, supported_names
from kaudit.store.engine import display_url
from kaudit.store.schema import current_revision, probe_tables, schema_status

bp = Blueprint("meta", __name__)


@bp.get("/-/versions")
def versions() -> ResponseReturnValue:
    engine = get_engine()
    with engine.connect() as connection:
        revision = current_revision(connection)
    return jsonify({
        "kaudit": __version__, "kubernetes": KUBERNETES_VERSION,
        "kubernetesReleases": supported_names(), "schemaRevision": revision,
        "database": {"backend": engine.dialect.name, "url": display_url(str(engine.url))},
        "python": platform.python_version(),
        "packages": {name: version(name) for name in
                     ("flask", "sqlalchemy", "alembic", "plotly", "numpy")},
        "plotlyJs": plotly_js_name(),
    })


@bp.get("/-/config/<run>")
def config(run: str) -> ResponseReturnValue:
    found, _ = run_with_span(run)
    configuration, gates = run_configuration(get_engine(), found.id)
    return jsonify({"run": found.name, "source": found.config_source,
                    "kubernetesVersion": found.kubernetes_version,
                    "featureGates": gates, "configuration": configuration})


@bp.get("/runs/<run>/config")
def config_page(run: str) -> ResponseReturnValue:
    """The run's effective configuration as readable YAML (its JSON twin: ``/-/config/RUN``)."""
    found, _ = run_with_span(run)
    configuration, gates = run_configuration(get_engine(), found.id)
    text = yaml.safe_dump(configuration, sort_keys=False, default_flow_style=False, width=100)
    # The gates the run changed from its own release's defaults (the default release's when
    # kaudit no longer mirrors the run's).
    release = exact_release(found.kubernetes_version) or fallback_release()
    defaults = FeatureGates(version=release)
    changed = {name: on for name, on in sorted(gates.items())
               if name not in defaults or defaults.enabled(name) != on}
    return render_template("config.html", run=found, text=text, gates=changed,
                           gates_release=release.name)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """Ok only when the database answers, holds kaudit's schema at this kaudit's revision and
    the last row of each table reads (a deleted or damaged SQLite file or a recreated
    PostgreSQL database is not ok)."""
    try:
        status = schema_status(get_engine())
        if status.up_to_date:
            with get_engine().connect() as connection:
                probe_tables(connection)
    except (DatabaseError, DBAPIError) as exc:  # down, unreachable, or its file is gone
        return _unavailable(str(exc.orig) if isinstance(exc, DBAPIError) else str(exc))
    except Exception as exc:
        return _unavailable(type(exc).__name__)
    if not status.up_to_date:
        return _unavailable(f"schema revision {status.current or '(none)'}, "
                            f"expected {status.head}")
    return jsonify(status="ok", schemaRevision=status.current)


def _unavailable(error: str) -> ResponseReturnValue:
    response = jsonify(status="unavailable", error=error)
    response.status_code = 503
    return response


@bp.get("/metrics")
def metrics() -> ResponseReturnValue:
    current_app.extensions["kaudit.metrics.refresh"]()
    return Response(generate_latest(current_app.extensions["kaudit.metrics"]),
                    content_type=CONTENT_TYPE_LATEST)


@bp.get("/static/vendor/<filename>")
def vendor(filename: str) -> ResponseReturnValue:
    if filename != plotly_js_name():
        abort(404, description=f"no vendored asset {filename!r}")
    if "gzip" not in request.headers.get("Accept-Encoding", ""):
        return send_file(plotly_js_path(), mimetype="text/javascript", max_age=31_536_000)
    response = Response(plotly_js_gzip(), mimetype="text/javascript")
    response.headers["Content-Encoding"] = "gzip"
    response.headers["Vary"] = "Accept-Encoding"
    response.cache_control.public = True
    response.cache_control.max_age = 31_536_000
    return response
