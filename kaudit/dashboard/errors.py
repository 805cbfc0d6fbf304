"""Error answers and security headers.

API paths (``/api/…``, ``/-/…``) answer errors as JSON ``{"error", "status"}``; pages render
an error page. Bad parameters are 400 with the message, unknown traces, runs, pods or nodes
404; anything unexpected is logged and answered 500 without a stack trace. Every answer
carries a Content-Security-Policy that allows scripts from this server only (no inline
script); Plotly draws its own styles, so inline styles are allowed.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, g, jsonify, render_template, request
from sqlalchemy.exc import DBAPIError, OperationalError
from werkzeug.exceptions import HTTPException

from kaudit.dashboard.file_watch import sqlite_damage
from kaudit.errors import InputError, KauditError, UnknownObjectError

log = logging.getLogger("kaudit.dashboard")

# How long a browser may reuse an answer about a finished run (it can still be removed).
FINAL_MAX_AGE = 300
# PostgreSQL: undefined table, invalid catalog name (the database was dropped or recreated).
_MISSING_SCHEMA_CODES = {"42P01", "3D000"}


def database_damaged(exc: DBAPIError) -> bool:
    """SQLite found the file damaged past its header (only a query reads those pages)."""
    return exc.orig is not None and sqlite_damage(exc.orig)


def database_unavailable(exc: DBAPIError) -> bool:
    """The database is down, gone, damaged, or no longer holds kaudit's tables (not a bug of
    ours)."""
    if isinstance(exc, OperationalError) or exc.connection_invalidated or database_damaged(exc):
        return True
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return code in _MISSING_SCHEMA_CODES

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


def _wants_json() -> bool:
    return request.path.startswith(("/api/", "/-/", "/healthz", "/metrics"))


def _answer(status: int, message: str) -> Response | tuple[str, int]:
    if _wants_json():
        response = jsonify(error=message, status=status)
        response.status_code = status
        return response
    return render_template("error.html", status=status, message=message), status


def init_app(app: Flask) -> None:
    @app.errorhandler(UnknownObjectError)
    def unknown(exc: UnknownObjectError):  # type: ignore[no-untyped-def]
        return _answer(404, str(exc))

    @app.errorhandler(InputError)
    def bad_input(exc: InputError):  # type: ignore[no-untyped-def]
        return _answer(400, str(exc))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):  # type: ignore[no-untyped-def]
        return _answer(exc.code or 500, exc.description or exc.name)

    @app.errorhandler(KauditError)
    def kaudit_error(exc: KauditError):  # type: ignore[no-untyped-def]
        log.error("%s %s: %s", request.method, request.path, exc)
        return _answer(500, str(exc))

    @app.errorhandler(DBAPIError)
    def database_error(exc: DBAPIError):  # type: ignore[no-untyped-def]
        if database_unavailable(exc):
            log.error("%s %s: database unavailable: %s", request.method, request.path, exc.orig)
            if database_damaged(exc):
                return _answer(503, f"the event-log database is damaged ({exc.orig}); "
                                    "restore it from a copy")
            return _answer(503, "the event-log database is unavailable or no longer holds "
                                "kaudit's schema; the server log has the details")
        log.exception("%s %s failed", request.method, request.path)
        return _answer(500, "internal error: the server log has the details")

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):  # type: ignore[no-untyped-def]
        log.exception("%s %s failed", request.method, request.path)
        return _answer(500, "internal error: the server log has the details")

    @app.after_request
    def security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        if "Cache-Control" not in response.headers:
            # Answers about finished runs never change; anything else may change at any time.
            response.headers["Cache-Control"] = (
                f"private, max-age={FINAL_MAX_AGE}" if g.get("kaudit_final")
                and response.status_code == 200 else "no-store")
        return response
