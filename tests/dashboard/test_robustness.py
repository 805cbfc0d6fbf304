"""The dashboard under hostile or unlucky requests: out-of-range numbers answer 400 or 404
(never 500), answers say how long they may be cached, and a database that disappears under
the server is reported as unavailable (503) by ``/healthz`` and the data endpoints."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import Result
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import create_engine, text, update
from sqlalchemy.engine import make_url

from kaudit.dashboard import create_app
from kaudit.dashboard.database import ResultCache
from kaudit.store.models import Run
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import POSTGRES_ADMIN_URL, write_trace


@pytest.fixture
def small_app(run_kaudit: Callable[..., Result], db_url: str, tmp_path: Path
              ) -> Iterator[Flask]:
    trace = write_trace(tmp_path / "small.jsonl",
                        (0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
                        (1, "ADDED", make_pod("p").req(cpu="1").obj()))
    assert run_kaudit("ingest", str(trace), "--name", "small").exit_code == 0
    assert run_kaudit("replay", "small", "--name", "r").exit_code == 0
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    yield app
    app.extensions["kaudit.engine"].dispose()


@pytest.mark.parametrize("url, status", [
    ("/api/v1/runs/r/state?t=1e308", 400),
    ("/api/v1/runs/r/state?t=1e19", 400),
    ("/api/v1/runs/r/state?t=-1", 400),
    ("/api/v1/runs/r/state?t=nan", 400),
    ("/api/v1/runs/r/events?since=1e308", 400),
    ("/api/v1/runs/r/events?until=1e19", 400),
    ("/api/v1/runs/r/pods/default/p/attempts/99999999999999999999", 404),
    ("/api/v1/runs/r/pods/default/p/attempts/9223372036854775807", 404),
    ("/api/v1/runs/r/pods/default/p/attempts/7", 404),
])
def test_out_of_range_numbers_are_refused(small_app: Flask, url: str, status: int) -> None:
    answer = small_app.test_client().get(url)
    assert answer.status_code == status, answer.data[:300]
    assert answer.is_json and answer.get_json()["error"]


def test_answers_say_how_long_they_may_be_cached(small_app: Flask) -> None:
    client: FlaskClient = small_app.test_client()
    final = client.get("/api/v1/runs/r/timeline")
    assert final.status_code == 200
    assert final.headers["Cache-Control"] == "private, max-age=300"  # a complete run
    for url in ("/api/v1/runs", "/healthz", "/metrics", "/api/v1/runs/nope"):
        assert client.get(url).headers["Cache-Control"] == "no-store", url


def test_a_database_gone_is_unavailable_not_an_error(small_app: Flask, db_url: str) -> None:
    client = small_app.test_client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/v1/runs").status_code == 200
    small_app.extensions["kaudit.engine"].dispose()
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        assert url.database
        os.remove(url.database)
    else:  # dropped and recreated empty, as a careless restore would
        admin = create_engine(make_url(POSTGRES_ADMIN_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{url.database}" WITH (FORCE)'))
            connection.execute(text(f'CREATE DATABASE "{url.database}"'))
        admin.dispose()
    health = client.get("/healthz")
    assert health.status_code == 503 and health.get_json()["status"] == "unavailable"
    if url.get_backend_name() == "sqlite":
        error = health.get_json()["error"]
        assert "unable to open database file" in error or "was deleted" in error
        assert url.database and not os.path.exists(url.database)  # not recreated empty
    else:
        assert "expected 0009" in health.get_json()["error"]
    for path in ("/api/v1/runs", "/api/v1/runs/r/timeline", "/api/v1/traces"):
        answer = client.get(path)
        assert answer.status_code == 503, (path, answer.data[:300])
        assert "unavailable" in answer.get_json()["error"]


@pytest.fixture
def sqlite_file(db_url: str) -> Path:
    url = make_url(db_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        pytest.skip("an SQLite file's fate")
    return Path(url.database)


def _answers(client: FlaskClient) -> dict[str, tuple[int, str]]:
    """Status and error (if any) of a page, the health check and data APIs (one of them about
    a finished run, whose answer the server caches)."""
    found = {}
    for path in ("/healthz", "/api/v1/runs", "/api/v1/runs/r/timeline", "/runs/r"):
        answer = client.get(path)
        error = (answer.get_json() or {}).get("error", "") if answer.is_json else (
            answer.get_data(as_text=True))
        found[path] = (answer.status_code, error)
    return found


def _remove_with_its_journal(sqlite_file: Path) -> None:
    for leftover in sqlite_file.parent.glob(sqlite_file.name + "*"):
        leftover.unlink()  # rm kaudit.db*


def test_an_sqlite_file_deleted_overwritten_or_replaced_under_the_server_is_noticed(
        run_kaudit: Callable[..., Result], small_app: Flask, sqlite_file: Path,
        tmp_path: Path) -> None:
    app = create_app({"KAUDIT_DB": str(sqlite_file), "TESTING": True,
                      "DATABASE_CHECK_SECONDS": 0.0})
    client = app.test_client()
    backup = tmp_path / "backup.db"
    with sqlite3.connect(sqlite_file) as source, sqlite3.connect(backup) as copy:
        source.backup(copy)
    try:
        assert {status for status, _ in _answers(client).values()} == {200}

        _remove_with_its_journal(sqlite_file)
        answers = _answers(client)
        assert {status for status, _ in answers.values()} == {503}, answers
        assert all("was deleted" in error for _, error in answers.values()), answers
        assert not sqlite_file.exists()  # not recreated empty

        shutil.copy(backup, sqlite_file)  # a valid database is back
        assert {status for status, _ in _answers(client).values()} == {200}

        size = sqlite_file.stat().st_size
        with open(sqlite_file, "r+b") as file:  # random bytes over the file, in place
            file.write(random.Random(7).randbytes(size))
        answers = _answers(client)
        assert {status for status, _ in answers.values()} == {503}, answers
        assert all("no longer an SQLite database" in error for _, error in answers.values())

        empty = tmp_path / "empty.db"
        sqlite3.connect(empty).close()
        with sqlite3.connect(empty) as other:
            other.execute("CREATE TABLE unrelated (x)")
        os.replace(empty, sqlite_file)  # replaced by a database that is not kaudit's
        answers = _answers(client)
        assert {status for status, _ in answers.values()} == {503}, answers

        _remove_with_its_journal(sqlite_file)
        shutil.copy(backup, sqlite_file)
        assert {status for status, _ in _answers(client).values()} == {200}
    finally:
        app.extensions["kaudit.engine"].dispose()


def test_an_sqlite_file_damaged_past_its_header_is_unavailable_not_an_error(
        run_kaudit: Callable[..., Result], small_app: Flask, sqlite_file: Path) -> None:
    """Random bytes over every page but the first: the header still reads as SQLite's, so
    only a query finds the damage ("database disk image is malformed"); that is the
    database's state, not a bug of ours: 503 with the reason, never 500."""
    app = create_app({"KAUDIT_DB": str(sqlite_file), "TESTING": True,
                      "DATABASE_CHECK_SECONDS": 0.0})
    client = app.test_client()
    try:
        assert {status for status, _ in _answers(client).values()} == {200}
        with sqlite3.connect(sqlite_file) as connection:
            page_size = connection.execute("PRAGMA page_size").fetchone()[0]
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = sqlite_file.stat().st_size
        with open(sqlite_file, "r+b") as file:
            file.seek(page_size)
            file.write(random.Random(11).randbytes(size - page_size))
        app.extensions["kaudit.engine"].dispose()  # no page of the old file in a cache
        answers = _answers(client)
        assert {status for status, _ in answers.values()} == {503}, answers
        assert all("damaged" in error or "malformed" in error
                   for _, error in answers.values()), answers
    finally:
        app.extensions["kaudit.engine"].dispose()


def _write_back_the_wal(sqlite_file: Path) -> None:
    """As a database is when no replay writes to it: every page in the main file."""
    with sqlite3.connect(sqlite_file) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _damage_past_the_header(sqlite_file: Path, seed: int) -> None:
    """Random bytes over every page but the first (``dd … seek=1 conv=notrunc``)."""
    with sqlite3.connect(sqlite_file) as connection:
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    size = sqlite_file.stat().st_size
    with open(sqlite_file, "r+b") as file:
        file.seek(page_size)
        file.write(random.Random(seed).randbytes(size - page_size))


def _backup(sqlite_file: Path, copy: Path) -> None:
    with sqlite3.connect(sqlite_file) as source, sqlite3.connect(copy) as target:
        source.backup(target)


def test_a_file_damaged_under_a_warm_server_answers_503_everywhere_until_restored(
        run_kaudit: Callable[..., Result], small_app: Flask, sqlite_file: Path,
        tmp_path: Path) -> None:
    """The pooled connections have read the pages before the damage; nothing tells them the
    file changed, so they would go on answering from their caches: the watch inspects the
    changed file itself, and every answer, ``/healthz``'s included, is 503 until a copy is
    put back."""
    _write_back_the_wal(sqlite_file)
    app = create_app({"KAUDIT_DB": str(sqlite_file), "TESTING": True,
                      "DATABASE_CHECK_SECONDS": 0.0})
    client = app.test_client()
    backup = tmp_path / "backup.db"
    _backup(sqlite_file, backup)
    try:
        for _ in range(2):  # the pages in the connections' caches, the finished run cached
            assert {status for status, _ in _answers(client).values()} == {200}
        _damage_past_the_header(sqlite_file, seed=13)
        answers = _answers(client)
        assert {status for status, _ in answers.values()} == {503}, answers
        assert all("malformed" in error for _, error in answers.values()), answers

        shutil.copyfile(backup, sqlite_file)  # restored in place
        assert {status for status, _ in _answers(client).values()} == {200}
    finally:
        app.extensions["kaudit.engine"].dispose()


def test_a_query_finding_the_file_damaged_makes_every_answer_503(
        run_kaudit: Callable[..., Result], small_app: Flask, sqlite_file: Path) -> None:
    """Between two looks of the watch, the first query that reads a damaged page marks the
    file damaged: the health check and every other page say so too."""
    _write_back_the_wal(sqlite_file)
    app = create_app({"KAUDIT_DB": str(sqlite_file), "TESTING": True,
                      "DATABASE_CHECK_SECONDS": 3600.0})
    client = app.test_client()
    try:
        assert client.get("/healthz").status_code == 200
        _damage_past_the_header(sqlite_file, seed=17)
        app.extensions["kaudit.engine"].dispose()  # the query reads the damaged pages
        assert client.get("/api/v1/runs/r/timeline").status_code == 503
        for path in ("/healthz", "/api/v1/runs", "/runs/r", "/metrics"):
            answer = client.get(path)
            assert answer.status_code == 503, (path, answer.data[:300])
            assert (f"unavailable: the database file {sqlite_file} is damaged (database disk "
                    "image is malformed)") in answer.get_data(as_text=True), (path, answer.data)
    finally:
        app.extensions["kaudit.engine"].dispose()


def test_another_database_copied_over_the_file_in_place_is_served_not_the_old_one(
        run_kaudit: Callable[..., Result], small_app: Flask, sqlite_file: Path,
        tmp_path: Path) -> None:
    """``cat other.db > kaudit.db``: same inode, same schema. The server forgets what it
    read and cached of the old database and answers the new one's data; so too for a copy of
    the same database from another time (a backup restored in place)."""
    trace = write_trace(tmp_path / "other.jsonl",
                        (0, "ADDED", make_node("n9").capacity(cpu="2", memory="4Gi").obj()),
                        (1, "ADDED", make_pod("q").req(cpu="1").obj()))
    other = tmp_path / "other.db"
    for command in (("ingest", str(trace), "--name", "other"), ("replay", "other", "--name", "o")):
        assert run_kaudit(*command, "--db", str(other), db=False).exit_code == 0
    earlier = tmp_path / "earlier.db"
    _backup(sqlite_file, earlier)
    app = create_app({"KAUDIT_DB": str(sqlite_file), "TESTING": True,
                      "DATABASE_CHECK_SECONDS": 0.0})
    client = app.test_client()

    def runs() -> list[str]:
        answer = client.get("/api/v1/runs")
        assert answer.status_code == 200, answer.data[:300]
        return sorted(run["name"] for run in answer.get_json()["runs"])

    try:
        assert client.get("/api/v1/runs/r/timeline").status_code == 200  # cached: finished
        assert runs() == ["r"]
        with open(other, "rb") as source, open(sqlite_file, "r+b") as target:
            target.truncate(0)
            shutil.copyfileobj(source, target)
        assert runs() == ["o"]
        assert client.get("/api/v1/runs/r/timeline").status_code == 404
        assert client.get("/api/v1/runs/o/timeline").status_code == 200
        assert client.get("/healthz").status_code == 200

        shutil.copyfile(earlier, sqlite_file)  # the first database again, as it was
        assert runs() == ["r"]
        assert run_kaudit("replay", "small", "--name", "r2").exit_code == 0
        assert runs() == ["r", "r2"]
        assert client.get("/api/v1/runs/r2/timeline").status_code == 200
        _write_back_the_wal(sqlite_file)  # quiet again: r2 is in the main file
        shutil.copyfile(earlier, sqlite_file)  # a backup of itself from before r2
        assert runs() == ["r"]
        assert client.get("/api/v1/runs/r2/timeline").status_code == 404
    finally:
        app.extensions["kaudit.engine"].dispose()


def test_a_run_whose_owner_is_gone_shows_as_abandoned(small_app: Flask, db_url: str) -> None:
    """A replay killed without a word leaves its run "running"; the dashboard says what it
    really is (the CLI's and the API's shared query layer decides)."""
    writer = create_engine(make_url(db_url))
    try:
        with writer.begin() as connection:
            connection.execute(update(Run).where(Run.name == "r").values(
                status="running", owner_host="another-host", owner_pid=1,
                heartbeat_at=datetime.now(UTC) - timedelta(minutes=5)))
    finally:
        writer.dispose()
    client = small_app.test_client()
    (listed,) = client.get("/api/v1/runs").get_json()["runs"]
    assert listed["status"] == "abandoned" and "another-host" in listed["error"]
    assert client.get("/api/v1/runs/r/timeline").headers["Cache-Control"] == "no-store"
    page = client.get("/runs/r").get_data(as_text=True)
    assert "status <b>abandoned</b>" in page


def test_clients_asking_for_one_answer_at_once_wait_for_one_computation() -> None:
    """Eight clients opening the same heavy page of a finished run (a diff) compute it once,
    not eight times over on two cores."""
    cache = ResultCache(4)
    computations: list[int] = []

    def compute() -> int:
        computations.append(1)
        time.sleep(0.2)
        return 42

    answers: list[int] = []
    clients = [threading.Thread(target=lambda: answers.append(cache.get(("diff",), compute)))
               for _ in range(8)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    assert answers == [42] * 8
    assert len(computations) == 1
