"""A read-only SQLite file (``chattr +i``): commands that write say so in one line naming the
file and exit 2; nothing is half-written."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kaudit.cli import cli


def _chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.fixture
def immutable_db(tmp_path: Path, sample_path: Path) -> Iterator[Path]:
    """An SQLite event log holding the sample trace as ``s``, made immutable."""
    db = tmp_path / "frozen.db"
    stored = CliRunner().invoke(cli, ["ingest", str(sample_path), "--name", "s", "--db", str(db)])
    assert stored.exit_code == 0, stored.output
    if not _chattr("+i", db):
        pytest.skip("chattr +i is not available on this file system")
    try:
        yield db
    finally:
        _chattr("-i", db)


@pytest.mark.parametrize("command", ["replay", "ingest"])
def test_writing_to_a_read_only_database_is_one_line_and_exit_2(
        immutable_db: Path, sample_path: Path, tmp_path: Path, command: str) -> None:
    if command == "replay":
        args = ["replay", "s"]
    else:
        other = tmp_path / "other.jsonl"
        other.write_text("".join(sample_path.read_text().splitlines(keepends=True)[:5]))
        args = ["ingest", str(other)]
    result = CliRunner().invoke(cli, [*args, "--db", str(immutable_db)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.splitlines() == [
        f"kaudit: error: cannot write to {immutable_db}: the database is read-only "
        "(attempt to write a readonly database)"]
    _chattr("-i", immutable_db)
    listed = CliRunner().invoke(cli, ["runs", "--json", "--db", str(immutable_db)])
    assert listed.exit_code == 0 and listed.output.strip() == "[]"
