"""The dashboard's database: one read-only engine per application, a cache of answers about
finished runs (a complete run never changes, so its pages can be computed once), and, on
SQLite, a watch on the file (:mod:`kaudit.dashboard.file_watch`): while the file is deleted,
overwritten or damaged, every answer but the static files is 503 with the reason."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from flask import Flask, current_app, g, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from sqlalchemy import Engine, event

from kaudit.dashboard.file_watch import SqliteFileWatch
from kaudit.store.schema import open_database

T = TypeVar("T")


def _read_only(engine: Engine) -> None:
    """Every connection refuses writes: ``query_only`` on SQLite, read-only transactions on
    PostgreSQL."""
    backend = engine.dialect.name

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        if backend == "sqlite":
            cursor.execute("PRAGMA query_only=ON")
        elif backend == "postgresql":
            cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            dbapi_connection.commit()
        cursor.close()

    event.listen(engine, "connect", on_connect)


class ResultCache:
    """A small thread-safe LRU of computed answers. Clients asking for the same answer at once
    wait for one computation instead of each making their own."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[tuple[Any, ...], threading.Lock] = {}

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def _cached(self, key: tuple[Any, ...]) -> tuple[bool, Any]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
            return False, None

    def get(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        if self.entries == 0:
            return compute()
        found, value = self._cached(key)
        if found:
            return value  # type: ignore[no-any-return]
        with self._lock:
            computing = self._computing.setdefault(key, threading.Lock())
        with computing:
            found, value = self._cached(key)  # computed while this one waited
            if found:
                return value  # type: ignore[no-any-return]
            try:
                value = compute()
            except BaseException:
                with self._lock:
                    self._computing.pop(key, None)
                raise
            with self._lock:
                self._items[key] = value
                while len(self._items) > self.entries:
                    self._items.popitem(last=False)
                self._computing.pop(key, None)
        return value  # type: ignore[no-any-return]


def init_app(app: Flask) -> None:
    engine = open_database(app.config["KAUDIT_DB"], create=False)
    _read_only(engine)
    engine.dispose()  # connections made from here on get the read-only listener
    cache = ResultCache(app.config["CACHE_ENTRIES"])
    app.extensions["kaudit.engine"] = engine
    app.extensions["kaudit.cache"] = cache
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and database != ":memory:":
        watch = SqliteFileWatch(engine, Path(database).expanduser().resolve(),
                                app.config["DATABASE_CHECK_SECONDS"], cache.clear)
        app.before_request(lambda: _refuse_while_unusable(watch))


def _refuse_while_unusable(watch: SqliteFileWatch) -> ResponseReturnValue | None:
    """503 with the reason while the SQLite file is gone, overwritten or damaged (None: go
    on)."""
    if request.path.startswith("/static/"):
        return None
    problem = watch.problem()
    if problem is None:
        return None
    message = f"the event-log database is unavailable: {problem}"
    if request.path == "/healthz":
        response = jsonify(status="unavailable", error=message)
    elif request.path.startswith(("/api/", "/-/", "/metrics")):
        response = jsonify(error=message, status=503)
    else:
        return render_template("error.html", status=503, message=message), 503
    response.status_code = 503
    return response


def get_engine() -> Engine:
    return current_app.extensions["kaudit.engine"]  # type: ignore[no-any-return]


def cached(key: tuple[Any, ...], compute: Callable[[], T], *, final: bool) -> T:
    """``compute()``, remembered under ``key`` when ``final`` (the data can no longer change)."""
    if not final:
        return compute()
    g.kaudit_final = True
    cache: ResultCache = current_app.extensions["kaudit.cache"]
    return cache.get(key, compute)
