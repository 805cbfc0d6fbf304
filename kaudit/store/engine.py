"""Open the event-log database: URL resolution, engine options, SQLite pragmas.

The URL comes from ``--db``, else ``KAUDIT_DB``, else the embedded SQLite file ``kaudit.db`` in
the working directory. A bare path is taken as an SQLite file, and ``postgresql://`` URLs use
psycopg 3. SQLite runs in WAL mode (readers never block the replay writing) with foreign keys on;
a write to an SQLite file that cannot be written (``chattr +i``, a read-only mount or directory)
raises :class:`DatabaseError` naming the file, not the driver's error.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError

from kaudit.errors import DatabaseError

ENV_VAR = "KAUDIT_DB"
DEFAULT_SQLITE_FILE = "kaudit.db"


def resolve_url(db: str | None = None) -> str:
    """The database URL to use: ``db``, else ``$KAUDIT_DB``, else ``sqlite:///kaudit.db``."""
    raw = db or os.environ.get(ENV_VAR) or DEFAULT_SQLITE_FILE
    if "://" not in raw:
        return f"sqlite:///{Path(raw).expanduser()}"
    if raw.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + raw.split("://", 1)[1]
    return raw


def display_url(url: str) -> str:
    """The URL with any password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


#: What SQLite says when it was opened read-only (it falls back to that silently when the file
#: or its directory cannot be written) and is then asked to write.
_READ_ONLY_MESSAGES = ("readonly database", "read-only database")


def _cannot_be_written(database: str) -> bool:
    """The file or its directory (where SQLite keeps its journal) refuses writes; a
    connection made read-only on purpose (the dashboard's ``query_only``) is not this."""
    path = Path(database).expanduser()
    return not (os.access(path, os.W_OK) and os.access(path.resolve().parent, os.W_OK))


def _refuse_read_only(database: str) -> Callable[[ExceptionContext], None]:
    """A ``handle_error`` listener turning SQLite's read-only refusal, when the file cannot be
    written, into a one-line :class:`DatabaseError` that names the file."""

    def check(context: ExceptionContext) -> None:
        original = context.original_exception
        if isinstance(original, sqlite3.OperationalError) and any(
                text in str(original) for text in _READ_ONLY_MESSAGES) and (
                _cannot_be_written(database)):
            raise DatabaseError(f"cannot write to {database}: the database is read-only "
                                f"({original})") from original

    return check


def make_engine(url: str, *, must_exist: bool = False) -> Engine:
    """Create an engine for ``url`` with kaudit's settings; raises :class:`DatabaseError`.

    With ``must_exist`` an SQLite file is opened read-write but never created, so a reader
    (the dashboard) whose file was deleted fails instead of recreating an empty one."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise DatabaseError(f"invalid database URL {url!r}: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            parent = Path(database).expanduser().resolve().parent
            if not parent.is_dir():
                raise DatabaseError(f"cannot create SQLite database {database}: "
                                    f"directory {parent} does not exist")
        if must_exist and database and database != ":memory:":
            uri = f"file:{quote(str(Path(database).expanduser().resolve()))}?mode=rw"
            engine = create_engine(parsed, creator=lambda: sqlite3.connect(
                uri, uri=True, check_same_thread=False))
        else:
            engine = create_engine(parsed)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "handle_error",
                     _refuse_read_only(str(Path(database or ":memory:").expanduser())))
        return engine
    if backend == "postgresql":
        try:
            return create_engine(parsed, pool_pre_ping=True)
        except ModuleNotFoundError as exc:
            raise DatabaseError(
                "PostgreSQL support needs psycopg 3: pip install 'kaudit[postgres]'"
            ) from exc
    raise DatabaseError(f"unsupported database {display_url(url)!r}: kaudit supports "
                        "SQLite and PostgreSQL")
