"""Fast bulk inserts: rows as plain tuples through one driver-level ``INSERT``.

Ingest writes trace events and the replay writes its event log this way: batches of tuples skip
SQLAlchemy's per-row statement compilation, which would otherwise dominate both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection


def insert_sql(connection: Connection, table: str, columns: Sequence[str]) -> str:
    """The driver-level ``INSERT`` of ``columns`` into ``table``, in the driver's paramstyle."""
    style = connection.dialect.paramstyle
    marks = ", ".join("?" if style == "qmark" else "%s" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


def insert_rows(connection: Connection, table: str, columns: Sequence[str],
                rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` (tuples in ``columns`` order) into ``table`` in one call."""
    if rows:
        connection.exec_driver_sql(insert_sql(connection, table, columns), list(rows))
