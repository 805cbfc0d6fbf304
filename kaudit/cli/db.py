"""``kaudit db``: inspect and migrate the event-log schema."""

from __future__ import annotations

import click
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from kaudit.cli.options import db_option, echo_json, json_option
from kaudit.errors import DatabaseError
from kaudit.store.engine import display_url, make_engine, resolve_url
from kaudit.store.schema import refuse_foreign, schema_status, upgrade


@click.group()
def db() -> None:
    """Manage the event-log database schema."""


@db.command("upgrade")
@db_option
def upgrade_command(db: str | None) -> None:
    """Create the schema, or migrate it to the newest revision."""
    url = resolve_url(db)
    engine = make_engine(url)
    try:
        before = schema_status(engine)
        if before.up_to_date:
            click.echo(f"{display_url(url)}: already at revision {before.head}")
            return
        refuse_foreign(before, display_url(url))
        try:
            upgrade(engine)
        except SQLAlchemyError as exc:
            raise DatabaseError(f"{display_url(url)}: the migration failed and was rolled "
                                f"back: {exc.orig if isinstance(exc, DBAPIError) else exc}"
                                ) from None
        click.echo(f"{display_url(url)}: migrated from {before.current or 'an empty database'} "
                   f"to revision {before.head}")
    finally:
        engine.dispose()


@db.command("current")
@db_option
@json_option
def current_command(db: str | None, as_json: bool) -> None:
    """Show the database's schema revision and the one this kaudit needs."""
    url = resolve_url(db)
    engine = make_engine(url)
    try:
        status = schema_status(engine)
    finally:
        engine.dispose()
    if as_json:
        echo_json({"database": display_url(url), "current": status.current,
                   "head": status.head, "upToDate": status.up_to_date})
        return
    state = "up to date" if status.up_to_date else "run `kaudit db upgrade`"
    click.echo(f"{display_url(url)}: revision {status.current or '(empty)'}, "
               f"kaudit needs {status.head} ({state})")
