"""Schema migrations: one head, models in sync, first-use creation, refusal of old revisions."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import Result
from sqlalchemy import create_engine, inspect, text

from kaudit.errors import DatabaseError, SchemaOutOfDateError
from kaudit.store.engine import make_engine, resolve_url
from kaudit.store.models import Base
from kaudit.store.schema import alembic_config, head_revision, open_database, schema_status, upgrade


def test_exactly_one_head() -> None:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1
    assert head_revision() == heads[0]


def test_models_match_migrations(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        with engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(
                connection, opts={"compare_type": True}), Base.metadata)
        assert diff == []
    finally:
        engine.dispose()


def test_empty_database_is_created_on_first_use(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        status = schema_status(engine)
        assert status.up_to_date and status.current == head_revision()
        assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_older_revision_is_refused_then_upgraded(db_url: str,
                                                 run_kaudit: Callable[..., Result]) -> None:
    engine = make_engine(resolve_url(db_url))
    try:
        upgrade(engine, "0001")
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO traces (id, name, content_hash, sources, created_at, "
                "kaudit_version, event_count, kind_counts) VALUES (7, 'old', 'abc', '[]', "
                "'2026-01-01 00:00:00', '0.0.1', 0, '{}')"))
        with pytest.raises(SchemaOutOfDateError, match="kaudit db upgrade"):
            open_database(db_url)

        result = run_kaudit("traces")
        assert result.exit_code == 2
        assert "kaudit db upgrade" in result.output

        result = run_kaudit("db", "upgrade")
        assert result.exit_code == 0, result.output
        assert "migrated from 0001" in result.output
        listing = run_kaudit("traces", "--json")
        assert listing.exit_code == 0
        assert '"name": "old"' in listing.output and '"rejected": 0' in listing.output
    finally:
        engine.dispose()


def test_unknown_revision_is_refused(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = 'fffffffff'"))
        with pytest.raises(DatabaseError, match="does not know"):
            open_database(db_url)
    finally:
        engine.dispose()


def test_db_upgrade_is_idempotent(run_kaudit: Callable[..., Result]) -> None:
    first = run_kaudit("db", "upgrade")
    assert first.exit_code == 0 and f"to revision {head_revision()}" in first.output
    again = run_kaudit("db", "upgrade")
    assert again.exit_code == 0 and "already at revision" in again.output
    current = run_kaudit("db", "current", "--json")
    assert '"upToDate": true' in current.output


@pytest.mark.parametrize("backend", ["sqlite"])
def test_sqlite_runs_in_wal_mode_with_foreign_keys(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    finally:
        engine.dispose()


def test_database_url_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAUDIT_DB", raising=False)
    assert resolve_url(None) == "sqlite:///kaudit.db"
    assert resolve_url("/tmp/x.db") == "sqlite:////tmp/x.db"
    assert resolve_url("postgresql://u@h/d") == "postgresql+psycopg://u@h/d"
    monkeypatch.setenv("KAUDIT_DB", "sqlite:///env.db")
    assert resolve_url(None) == "sqlite:///env.db"
    assert resolve_url("other.db") == "sqlite:///other.db"


def test_unreachable_database_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DatabaseError, match="does not exist"):
        open_database(str(tmp_path / "missing" / "kaudit.db"))
    with pytest.raises(DatabaseError, match="unsupported database"):
        open_database("mysql://root@localhost/x")


@pytest.mark.parametrize("foreign", [
    ["CREATE TABLE traces (x integer)", "CREATE TABLE users (id integer)"],
    ["CREATE TABLE alembic_version (version_num varchar(32) primary key)",
     "INSERT INTO alembic_version VALUES ('someoneelse1')"],
])
def test_db_upgrade_refuses_a_database_that_is_not_kaudits(
        foreign: list[str], db_url: str, run_kaudit: Callable[..., Result]) -> None:
    engine = create_engine(db_url)
    try:
        with engine.begin() as connection:
            for statement in foreign:
                connection.execute(text(statement))
        tables = set(inspect(engine).get_table_names())
        result = run_kaudit("db", "upgrade")
        assert result.exit_code == 2, result.output
        assert result.output.startswith("kaudit: error: database ")
        assert "Traceback" not in result.output
        assert set(inspect(engine).get_table_names()) == tables  # nothing written
    finally:
        engine.dispose()


def test_0009_keeps_releases_and_backfills_the_runs_before_it(db_url: str) -> None:
    """Runs made before 0009 were all replayed as v1.34.2, the one release kaudit mirrored:
    they get it; traces keep none (their sources never said)."""
    engine = make_engine(resolve_url(db_url))
    try:
        upgrade(engine, "0008")
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO traces (id, name, content_hash, sources, created_at, "
                "kaudit_version, event_count, kind_counts) VALUES (7, 'old', 'abc', '[]', "
                "'2026-01-01 00:00:00', '0.0.1', 0, '{}')"))
            connection.execute(text(
                "INSERT INTO runs (id, name, trace_id, status, seed, lifetime, config, options, "
                "created_at, kaudit_version) VALUES (3, 'old-1', 7, 'complete', 0, 'recorded', "
                "'{}', '{}', '2026-01-01 00:00:00', '0.0.1')"))
        upgrade(engine)
        with engine.connect() as connection:
            assert connection.execute(text(
                "SELECT kubernetes_version FROM runs")).scalar_one() == "v1.34.2"
            assert connection.execute(text(
                "SELECT kubernetes_version FROM traces")).scalar_one() is None
            column = {c["name"]: c for c in inspect(connection).get_columns("runs")}
            assert column["kubernetes_version"]["nullable"]
        with engine.begin() as connection:  # and back down
            command.downgrade(alembic_config(connection), "0008")
        with engine.connect() as connection:
            assert "kubernetes_version" not in {
                c["name"] for c in inspect(connection).get_columns("runs")}
    finally:
        engine.dispose()
