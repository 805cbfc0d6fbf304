"""Schema revisions: the Alembic configuration built in code, upgrade and the revision check.

The migrations live in ``migrations/`` (resolved from a checkout or an installed wheel), so an
installed kaudit can migrate without an ``alembic.ini``. ``kaudit db upgrade`` migrates
explicitly; :func:`open_database` creates and migrates an empty database on first use and
refuses one at another revision with a message that names ``kaudit db upgrade``; an SQLite
database opened so gets an identity (:mod:`kaudit.store.identity`) if it has none.
:func:`probe_tables` is the health check's cheap look past the schema table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from kaudit.datadirs import migrations_dir
from kaudit.errors import DatabaseError, SchemaOutOfDateError
from kaudit.store.engine import display_url, make_engine, resolve_url
from kaudit.store.identity import assign_identity
from kaudit.store.models import Base


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` pointing at kaudit's migrations; ``connection`` is reused if given."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@cache
def head_revision() -> str:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise DatabaseError(f"kaudit's migrations have {len(heads)} heads; expected exactly one")
    return heads[0]


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


@cache
def _known_revisions() -> frozenset[str]:
    script = ScriptDirectory.from_config(alembic_config())
    return frozenset(rev.revision for rev in script.walk_revisions())


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision``."""
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), revision)


@dataclass(frozen=True)
class SchemaStatus:
    current: str | None
    head: str
    empty: bool
    kaudit_tables: tuple[str, ...] = ()

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head


def schema_status(engine: Engine) -> SchemaStatus:
    try:
        with engine.connect() as connection:
            current = current_revision(connection)
            tables = set(inspect(connection).get_table_names())
    except OperationalError as exc:
        raise DatabaseError(f"cannot open database {display_url(str(engine.url))}: "
                            f"{exc.orig}") from exc
    kaudit_tables = tables & set(Base.metadata.tables)
    return SchemaStatus(current=current, head=head_revision(),
                        empty=current is None and not kaudit_tables,
                        kaudit_tables=tuple(sorted(kaudit_tables)))


def probe_statements() -> list[str]:
    """Queries reading the last row of every kaudit table (through its primary key): a few
    pages each, so a file damaged past its header fails them (the driver's error) rather than
    only the query that happens to read a damaged page."""
    statements = []
    for table in Base.metadata.sorted_tables:
        key = ", ".join(column.name for column in table.primary_key.columns)
        statements.append(f"SELECT {key} FROM {table.name} ORDER BY {key} DESC LIMIT 1")
    return statements


def probe_tables(connection: Connection) -> None:
    """The health check's cheap look past the schema table (see :func:`probe_statements`)."""
    for statement in probe_statements():
        connection.execute(text(statement)).first()


def refuse_foreign(status: SchemaStatus, where: str) -> None:
    """Refuse a database kaudit did not create: tables with kaudit's names but no schema
    revision, or a revision of someone else's migrations. Nothing is written to it."""
    if status.current is None and not status.empty:
        raise DatabaseError(f"database {where} holds tables named as kaudit's "
                            f"({', '.join(status.kaudit_tables)}) but no kaudit schema "
                            "revision: it was not created by kaudit; use another database")
    if status.current is not None and status.current not in _known_revisions():
        raise DatabaseError(f"database {where} is at schema revision {status.current}, which "
                            f"this kaudit does not know (newest known: {status.head}): it "
                            "belongs to another application or a newer kaudit")


def check_schema(engine: Engine, *, create: bool = True) -> None:
    """Make sure the schema is at head: migrate an empty database, refuse any other."""
    status = schema_status(engine)
    if status.up_to_date:
        return
    where = display_url(str(engine.url))
    if status.empty:
        if create:
            upgrade(engine)
            return
        raise SchemaOutOfDateError(f"database {where} is empty; run `kaudit db upgrade`")
    refuse_foreign(status, where)
    if status.current in _known_revisions():
        raise SchemaOutOfDateError(
            f"database {where} is at schema revision {status.current}, but this kaudit needs "
            f"{status.head}: run `kaudit db upgrade` to migrate it (back it up first)"
        )
    raise DatabaseError(f"database {where} is at schema revision {status.current}, which this "
                        f"kaudit does not know (newest known: {status.head}); upgrade kaudit")


def open_database(db: str | None = None, *, create: bool = True) -> Engine:
    """Resolve ``db``, create the engine and check (or create) the schema."""
    engine = make_engine(resolve_url(db), must_exist=not create)
    try:
        check_schema(engine, create=create)
        if create:
            assign_identity(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise DatabaseError(f"cannot open database {display_url(str(engine.url))}: "
                            f"{exc}") from exc
    except BaseException:
        engine.dispose()
        raise
    return engine
