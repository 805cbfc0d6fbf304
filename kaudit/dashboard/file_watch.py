"""Whether the dashboard's SQLite file is still the database it opened, and still readable.

An SQLite connection holds its file open, so a file deleted (``rm kaudit.db*``) or replaced
under the server would go on answering the old data, and bytes written over it would answer
garbage or errors; in WAL mode a pooled connection even keeps answering from its page cache,
since nothing in the WAL index says the file changed. :class:`SqliteFileWatch` looks at the
path at most once per interval: the file must exist and start with SQLite's header. When the
file changed since the last look (its size, modification time or header: a replay's
checkpoint, a copy written over it, random bytes) it is inspected through a fresh connection:
its identity (:mod:`kaudit.store.identity`) and the last row of every table
(:func:`kaudit.store.schema.probe_tables`); then the pool's connections are closed, their page
caches with them (at most once per interval, so a replay's checkpoints cost little).

- Another database there (a new inode, another identity: a kaudit database copied over the
  file in place, or a copy of the same one that lost its newest rows: a backup restored in
  place) is reopened: the answers cached about the old one are forgotten too, so the database
  now there is served (one without kaudit's schema
  answers 503 through the schema check and the query errors, as a PostgreSQL database
  recreated empty does).
- A damaged file (SQLite's "database disk image is malformed", found by the inspection or by
  any query of a connection opened since the last reopen) makes every answer 503 with the
  reason until the file changes again and its inspection passes.

The header is read through a descriptor the watch opens once per file and keeps: closing any
descriptor of a file releases every POSIX lock this process holds on it, the SQLite
connections' included, and a replay checkpointing meanwhile would then make their reads
``malformed`` (SQLite's own connections, the inspection's included, share the locks safely).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, event
from sqlalchemy.engine import ExceptionContext

from kaudit.store.identity import Identity, read_identity, still_holds
from kaudit.store.schema import probe_statements

log = logging.getLogger("kaudit.dashboard")

SQLITE_HEADER = b"SQLite format 3\x00"
HEADER_BYTES = 100
#: SQLite's words for a file damaged past its header.
DAMAGED_SQLITE = ("database disk image is malformed", "file is not a database")
#: Which reopen a pooled connection was made after (its errors say nothing about a later file).
_GENERATION = "kaudit.file_generation"

#: The file as seen without opening it as a database: size, modification time, header.
FileState = tuple[int, int, bytes]


def sqlite_damage(exc: BaseException) -> bool:
    """SQLite found the file damaged past its header (only a query reads those pages)."""
    return isinstance(exc, sqlite3.DatabaseError) and any(
        text in str(exc) for text in DAMAGED_SQLITE)


class _HeldFile:
    """A descriptor of one file (one inode), kept open while it is the database's."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        stat = os.fstat(self.fd)
        self.inode = (stat.st_dev, stat.st_ino)

    def header(self) -> bytes:
        return os.pread(self.fd, HEADER_BYTES, 0)

    def close(self) -> None:
        os.close(self.fd)


class SqliteFileWatch:
    def __init__(self, engine: Engine, path: Path, interval_seconds: float,
                 on_reopen: Callable[[], None]) -> None:
        self.engine = engine
        self.path = path
        self.interval_seconds = interval_seconds
        self.on_reopen = on_reopen
        self._lock = threading.Lock()
        self._generation = 0
        self._held: _HeldFile | None = self._hold()
        self._inspected: FileState | None = None
        self._identity: Identity | None = None
        self._damaged: str | None = None
        self._first_inspection = True
        self._file_problem: str | None = None
        event.listen(engine, "connect", self._stamp)
        event.listen(engine, "handle_error", self._on_error)
        with self._lock:
            self._file_problem = self._look()
        self._checked_at = time.monotonic()

    def _hold(self) -> _HeldFile | None:
        try:
            return _HeldFile(self.path)
        except OSError:
            return None

    def problem(self) -> str | None:
        """Why the database cannot be used now (None when it can), looked at afresh at most
        once per interval."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked_at >= self.interval_seconds:
                self._checked_at = now
                before = self._file_problem or self._damaged
                self._file_problem = self._look()
                if before is not None and (self._file_problem or self._damaged) is None:
                    self._forget()  # what the connections read while it was broken is stale
            return self._file_problem or self._damaged

    def _stamp(self, _dbapi_connection: Any, record: Any) -> None:
        record.info[_GENERATION] = self._generation

    def _on_error(self, context: ExceptionContext) -> None:
        """A query found the file damaged: so it is, for every answer, until it changes."""
        if not sqlite_damage(context.original_exception):
            return
        connection = context.connection  # None: while connecting, so to the file now there
        with self._lock:
            if connection is None or connection.info.get(_GENERATION) == self._generation:
                self._damaged = self._damage(context.original_exception)

    def _damage(self, exc: BaseException) -> str:
        return f"the database file {self.path} is damaged ({exc}); restore it from a copy"

    def _look(self) -> str | None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return f"the database file {self.path} was deleted"
        except OSError as exc:
            return f"the database file {self.path} cannot be read: {exc.strerror}"
        held = self._held
        if held is None or held.inode != (stat.st_dev, stat.st_ino):
            self._reopen()
            held = self._held
            if held is None:
                return f"the database file {self.path} cannot be read"
        try:
            header = held.header()
        except OSError as exc:
            return f"the database file {self.path} cannot be read: {exc.strerror}"
        if not header.startswith(SQLITE_HEADER):
            return (f"the database file {self.path} is no longer an SQLite database "
                    "(its header was overwritten)")
        state = (stat.st_size, stat.st_mtime_ns, header)
        if state != self._inspected:
            self._inspect(state)
        return None

    def _inspect(self, state: FileState) -> None:
        """Read the file's identity and probe its tables through a connection of its own,
        then close the pooled connections: their page caches may hold what was there before
        (nothing in the WAL index tells them of bytes written over the file)."""
        uri = f"file:{quote(str(self.path))}?mode=ro"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=1.0)
        except sqlite3.Error:
            return  # not there for a moment; the next look tries again
        identity: Identity | None = None
        damaged: str | None = None
        try:
            same = self._identity is not None and still_holds(connection, self._identity)
            identity = read_identity(connection)
            for statement in probe_statements():
                connection.execute(statement).fetchone()
        except sqlite3.DatabaseError as exc:
            same = False  # not kaudit's database (its queries answer 503 themselves) ...
            if sqlite_damage(exc):  # ... or one whose content cannot be told now
                damaged = self._damage(exc)
        finally:
            connection.close()
        self._settle(state, identity, same, damaged)

    def _settle(self, state: FileState, identity: Identity | None, same: bool,
                damaged: str | None) -> None:
        """Record what the inspection found; after the first, refresh the pool, and forget
        the cached answers unless the database is the one inspected before (maybe grown)."""
        first, self._first_inspection = self._first_inspection, False
        self._inspected, self._damaged, self._identity = state, damaged, identity
        if first:
            return
        self._refresh_pool()
        if not same and damaged is None:
            log.warning("the database file %s was overwritten by another; reopening it",
                        self.path)
            self.on_reopen()

    def _reopen(self) -> None:
        """The path names another file: close what was open on the old one, hold the new."""
        log.warning("the database file %s was replaced; reopening it", self.path)
        if self._held is not None:
            self._held.close()  # the old file only: its locks no longer matter
        self._held = self._hold()
        self._inspected, self._damaged = None, None
        self._forget()

    def _refresh_pool(self) -> None:
        """Close the pooled connections; errors of those still in use no longer count."""
        self._generation += 1
        self.engine.dispose()

    def _forget(self) -> None:
        self._refresh_pool()
        self.on_reopen()
