"""Whether the dashboard's SQLite file is still the database it opened.

An SQLite connection holds its file open, so a file deleted (``rm kaudit.db*``) or replaced
under the server would go on answering the old data, and bytes written over it would answer
garbage or errors. :class:`SqliteFileWatch` looks at the path at most once per interval: the
file must exist and start with SQLite's header. A file replaced by another one (a new inode, or
a copy written over it in place, which changes the header's schema cookie) is reopened: the
pool's connections to the old file are closed and the answers cached about it forgotten, so a
valid database put back is served again (a database without kaudit's schema answers 503
through the schema check and the query errors, as a PostgreSQL database recreated empty does).

The header is read through a descriptor the watch opens once per file and keeps: closing any
descriptor of a file releases every POSIX lock this process holds on it, the SQLite
connections' included, and a replay checkpointing meanwhile would then make their reads
``malformed``.
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
HEADER_BYTES = 100


class _HeldFile:
    """A descriptor of one file (one inode), kept open while it is the database's."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        stat = os.fstat(self.fd)
        self.inode = (stat.st_dev, stat.st_ino)
        self.cookie = self.header()[SCHEMA_COOKIE]

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
        self._held: _HeldFile | None = self._hold()
        self._checked_at = time.monotonic()
        self._problem: str | None = None

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
                before, self._problem = self._problem, self._look()
                if before is not None and self._problem is None:
                    self._forget()  # what the connections read while it was broken is stale
            return self._problem

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
        if header[SCHEMA_COOKIE] != held.cookie:
            log.warning("the database file %s was overwritten by another; reopening it",
                        self.path)
            held.cookie = header[SCHEMA_COOKIE]
            self._forget()
        return None

    def _reopen(self) -> None:
        """The path names another file: close what was open on the old one, hold the new."""
        log.warning("the database file %s was replaced; reopening it", self.path)
        if self._held is not None:
            self._held.close()  # the old file only: its locks no longer matter
        self._held = self._hold()
        self._forget()

    def _forget(self) -> None:
        self.engine.dispose()
        self.on_reopen()
