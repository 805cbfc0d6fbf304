"""An SQLite event log's identity: random, written when kaudit creates the file or first opens
an older one for writing, never by a reader."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kaudit.store.schema import open_database


def _identity(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute("PRAGMA user_version").fetchone()[0])


def _create(path: Path) -> None:
    open_database(f"sqlite:///{path}").dispose()


def test_every_new_database_gets_an_identity_of_its_own(tmp_path: Path) -> None:
    for name in ("a.db", "b.db"):
        _create(tmp_path / name)
    first, second = _identity(tmp_path / "a.db"), _identity(tmp_path / "b.db")
    assert first != 0 and second != 0 and first != second
    _create(tmp_path / "a.db")  # opened again: kept
    assert _identity(tmp_path / "a.db") == first


def test_a_database_made_before_gets_one_when_opened_for_writing_only(tmp_path: Path) -> None:
    older = tmp_path / "older.db"
    _create(older)
    with sqlite3.connect(older) as connection:
        connection.execute("PRAGMA user_version=0")  # as made by a kaudit without identities
    open_database(f"sqlite:///{older}", create=False).dispose()  # a reader: the dashboard
    assert _identity(older) == 0
    _create(older)
    assert _identity(older) != 0
