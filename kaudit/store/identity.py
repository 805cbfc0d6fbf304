"""An SQLite event log's identity: a random number kaudit writes into ``PRAGMA user_version``
when it creates the file (or, for a file made before, the first time it opens it for
writing), so a reader holding the path open (the dashboard) can tell another kaudit database
copied over it in place from the one it opened: both have the same schema, and a copy keeps the
inode. Databases made before carry none (0). A copy of the same database from another time (a
backup restored in place) has the same identity, so :class:`Identity` adds the newest trace, run
and sweep: :func:`still_holds` tells a database that only grew since (a replay added a run)
from one that lost what it held.

The identity is read with a query, never from the raw header: in WAL mode a PRAGMA's write
reaches the main file only at a checkpoint.
"""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass

from sqlalchemy import Engine

#: How long assigning an identity waits for a writer holding the database (a reader's open
#: must not hang behind a long replay transaction; the next open tries again).
_ASSIGN_BUSY_MILLISECONDS = 1000


def new_identity() -> int:
    """A random positive 31-bit number (``user_version`` is a signed 32-bit integer)."""
    return secrets.randbelow(2**31 - 1) + 1


def assign_identity(engine: Engine) -> None:
    """Give an SQLite database without an identity one; a file that cannot be written (or is
    busy) keeps none for now, which only the dashboard's in-place copy check misses."""
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return
    connection = engine.raw_connection()
    try:
        cursor = connection.cursor()
        if cursor.execute("PRAGMA user_version").fetchone()[0] != 0:
            return
        cursor.execute(f"PRAGMA busy_timeout={_ASSIGN_BUSY_MILLISECONDS}")
        try:
            cursor.execute(f"PRAGMA user_version={new_identity()}")
        except sqlite3.OperationalError:
            pass  # read-only or busy: stays without one until a later open
        finally:
            cursor.execute("PRAGMA busy_timeout=30000")
    finally:
        connection.close()


_TABLES = ("traces", "runs", "sweeps")

#: A row as the identity keeps it: id, name, creation time.
Row = tuple[object, ...]


@dataclass(frozen=True)
class Identity:
    number: int
    #: The newest trace, run and sweep (None: the table was empty).
    newest: tuple[Row | None, ...]


def read_identity(connection: sqlite3.Connection) -> Identity:
    """This database's identity. Raises the driver's error on a damaged file or one without
    kaudit's tables."""
    (number,) = connection.execute("PRAGMA user_version").fetchone()
    return Identity(int(number), tuple(
        connection.execute(f"SELECT id, name, created_at FROM {table} ORDER BY id DESC LIMIT 1")
        .fetchone() for table in _TABLES))


def still_holds(connection: sqlite3.Connection, known: Identity) -> bool:
    """The database behind ``connection`` is the one ``known`` was read from, or it with rows
    added since: the same number, and the newest trace, run and sweep of then still there as
    they were."""
    (number,) = connection.execute("PRAGMA user_version").fetchone()
    if number != known.number:
        return False
    return all(row is None or connection.execute(
        f"SELECT 1 FROM {table} WHERE id = ? AND name = ? AND created_at = ?", row).fetchone()
        is not None for table, row in zip(_TABLES, known.newest, strict=True))
