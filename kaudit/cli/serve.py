"""``kaudit serve``: the dashboard, on waitress (a production WSGI server), read-only."""

from __future__ import annotations

import errno
import ipaddress
from pathlib import Path

import click
from sqlalchemy.engine import make_url

from kaudit.cli.options import db_option
from kaudit.errors import InputError
from kaudit.store.engine import display_url, resolve_url


def _check_sqlite_file(url: str) -> None:
    """The dashboard never creates a database: a missing SQLite file is a mistake."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database).expanduser()
        if not path.is_file():
            raise InputError(f"no kaudit database at {path}: run `kaudit demo`, or "
                             "`kaudit ingest` and `kaudit replay`, first (or pass --db)")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback exposes the event log to the "
                   "network (the dashboard has no authentication).")
@click.option("--port", type=click.IntRange(0, 65535), default=5000, show_default=True,
              help="Port to listen on (0 picks a free one).")
@click.option("--threads", type=click.IntRange(1, 64), default=8, show_default=True,
              help="Requests answered at once.")
@click.option("--cache", "cache_entries", type=click.IntRange(0, 100_000), default=256,
              show_default=True,
              help="Answers about finished runs kept in memory (a finished run never "
                   "changes); 0 turns the cache off.")
def serve(db: str | None, host: str, port: int, threads: int, cache_entries: int) -> None:
    """Open the event log in the browser: runs, history replay, pod explanations, diffs.

    Read-only: the dashboard's database connections refuse writes. Every page has a JSON
    twin under /api/v1/; /-/versions, /healthz and /metrics (Prometheus) are there too.
    """
    from waitress.server import create_server

    from kaudit.dashboard import create_app

    url = resolve_url(db)
    _check_sqlite_file(url)
    app = create_app({"KAUDIT_DB": url, "CACHE_ENTRIES": cache_entries})
    if not _loopback(host):
        click.echo(f"kaudit: warning: listening on {host}: anyone who can reach it can read "
                   "the event log", err=True)
    try:
        server = create_server(app, host=host, port=port, threads=threads, ident="kaudit")
    except OSError as exc:
        app.extensions["kaudit.engine"].dispose()
        busy = exc.errno == errno.EADDRINUSE
        raise InputError(f"cannot listen on {host}:{port}: "
                         + ("the port is in use (choose another with --port, or --port 0 for "
                            "any free one)" if busy else exc.strerror or str(exc))) from None
    bound = server.effective_port  # type: ignore[union-attr]
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"kaudit dashboard on http://{shown}:{bound}/ (database "
               f"{display_url(url)}); Ctrl-C stops it", err=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
