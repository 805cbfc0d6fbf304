"""``kaudit serve`` as a user starts it, and the run names the dashboard can address."""

from __future__ import annotations

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
