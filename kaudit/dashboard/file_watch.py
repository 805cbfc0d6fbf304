"""Whether the dashboard's SQLite file is still the database it opened.

An SQLite connection holds its file open, so a file deleted (``rm kaudit.db*``) or replaced
under the server would go on answering the old data, and bytes written over it would answer
garbage or errors. :class:`SqliteFileWatch` looks at the path at most once per interval: the
file must exist and start with SQLite's header. A file replaced by another one (a new inode, or
a copy written over it in place, which changes the header's schema cookie) is reopened: the
pool's connections to the old file are closed and the answers cached about it forgotten, so a
valid database put back is served again (a database without kaudit's schema answers 503
through the schema check and the query errors, as a PostgreSQL database recreated empty does).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

log = logging.getLogger("kaudit.dashboard")

SQLITE_HEADER = b"SQLite format 3\x00"
#: Where the header keeps the schema cookie, which changes when the schema does (never while a
#: replay writes rows), so a different database copied over the file is told apart.
SCHEMA_COOKIE = slice(40, 44)

#: A file: its device and inode, and its schema cookie.
Identity = tuple[int, int, bytes]


class SqliteFileWatch:
    def __init__(self, engine: Engine, path: Path, interval_seconds: float,
                 on_reopen: Callable[[], None]) -> None:
        self.engine = engine
        self.path = path
        self.interval_seconds = interval_seconds
        self.on_reopen = on_reopen
        self._lock = threading.Lock()
        self._identity = self._stat_identity()
        self._checked_at = time.monotonic()
        self._problem: str | None = None

    def _stat_identity(self) -> Identity | None:
        try:
            with open(self.path, "rb") as file:
                stat = os.fstat(file.fileno())
                header = file.read(100)
        except OSError:
            return None
        return stat.st_dev, stat.st_ino, header[SCHEMA_COOKIE]

    def problem(self) -> str | None:
        """Why the database cannot be used now (None when it can), looked at afresh at most
        once per interval."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked_at >= self.interval_seconds:
                self._checked_at = now
                self._problem = self._look()
            return self._problem

    def _look(self) -> str | None:
        try:
            with open(self.path, "rb") as file:
                stat = os.fstat(file.fileno())
                header = file.read(100)
        except FileNotFoundError:
            self._forget(None)
            return f"the database file {self.path} was deleted"
        except OSError as exc:
            self._forget(None)
            return f"the database file {self.path} cannot be read: {exc.strerror}"
        if not header.startswith(SQLITE_HEADER):
            self._forget(None)
            return (f"the database file {self.path} is no longer an SQLite database "
                    "(its header was overwritten)")
        current = (stat.st_dev, stat.st_ino, header[SCHEMA_COOKIE])
        if current != self._identity:
            log.warning("the database file %s was replaced; reopening it", self.path)
            self._forget(current)
        return None

    def _forget(self, identity: Identity | None) -> None:
        """Close the connections to the file seen before and drop what was cached about it."""
        if identity == self._identity and identity is not None:
            return
        self._identity = identity
        self.engine.dispose()
        self.on_reopen()
