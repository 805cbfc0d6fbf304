"""``kaudit serve`` as a user starts it, and the run names the dashboard can address."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner, Result

from kaudit.cli import cli


def test_serve_refuses_a_missing_database(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "nothing.db")])
    assert result.exit_code == 2
    assert "no kaudit database at" in result.output and "kaudit demo" in result.output
    assert not (tmp_path / "nothing.db").exists()


def test_serve_help_names_the_endpoints() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    for words in ("--host", "--port", "Read-only", "/api/v1/", "/metrics"):
        assert words in result.output


def test_run_names_must_fit_in_a_url(run_kaudit: Callable[..., Result],
                                     sample_path: Path) -> None:
    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    result = run_kaudit("replay", "sample", "--name", "a/b")
    assert result.exit_code == 2 and "without '/'" in result.output


def test_serve_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    from sqlalchemy import Engine

    from kaudit.store.schema import open_database

    url = f"sqlite:///{tmp_path / 'kaudit.db'}"
    engine: Engine = open_database(url)
    engine.dispose()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--db", url, "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (f"kaudit: error: cannot listen on 127.0.0.1:{port}: the "
                                     "port is in use (choose another with --port, or --port 0 "
                                     "for any free one)")
