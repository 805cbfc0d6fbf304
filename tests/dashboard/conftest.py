"""Fixtures of the dashboard tests: the app on a database holding the sample trace replayed
under two configurations, and its test client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine

from kaudit.dashboard import create_app


@pytest.fixture
def app(sample_runs: Engine, db_url: str) -> Iterator[Flask]:
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    yield app
    app.extensions["kaudit.engine"].dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()
