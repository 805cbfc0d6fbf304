"""Alembic environment for kaudit's event log.

kaudit builds its Alembic ``Config`` in code (``kaudit.store.schema``) and hands over an open
connection in ``config.attributes["connection"]``. Developers running the ``alembic`` command
from a checkout get the URL from ``KAUDIT_DB`` (or ``sqlite:///kaudit.db``) instead.
Batch mode lets one set of migrations serve SQLite and PostgreSQL.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from kaudit.store.engine import make_engine, resolve_url
from kaudit.store.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=resolve_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    engine = make_engine(resolve_url())
    with engine.begin() as own_connection:
        _configure(own_connection)
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
