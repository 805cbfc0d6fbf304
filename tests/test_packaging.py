"""The wheel carries migrations, web assets and the sample trace, and works when installed."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kaudit.datadirs import data_dir, migrations_dir, sample_trace, web_dir

ROOT = Path(__file__).resolve().parents[1]


def test_data_directories_resolve_from_the_checkout() -> None:
    assert (migrations_dir() / "env.py").is_file()
    assert (web_dir() / "README.md").is_file()
    assert sample_trace().is_file()
    with pytest.raises(ValueError):
        data_dir("nope")


@pytest.mark.slow
def test_wheel_installs_and_migrates_in_a_clean_environment(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist),
                    str(ROOT)], check=True)
    wheel = next(dist.glob("kaudit-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kaudit/_data/migrations/env.py" in names
    assert "kaudit/_data/web/README.md" in names
    assert "kaudit/_data/traces/sample.jsonl" in names
    assert any(n.startswith("kaudit/_data/migrations/versions/0001") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([venv / "bin" / "pip", "install", "-q", str(wheel)], check=True)
    workdir = tmp_path / "work"
    workdir.mkdir()
    upgraded = subprocess.run([venv / "bin" / "kaudit", "db", "upgrade"], cwd=workdir,
                              capture_output=True, text=True, check=True)
    assert "to revision" in upgraded.stdout
    assert (workdir / "kaudit.db").is_file()
    demo = subprocess.run([venv / "bin" / "kaudit", "demo"], cwd=workdir, capture_output=True,
                          text=True, check=True)
    assert "Ingested the sample trace" in demo.stdout
    located = subprocess.run(
        [venv / "bin" / "python", "-c",
         "from kaudit.datadirs import migrations_dir; print(migrations_dir())"],
        cwd=workdir, capture_output=True, text=True, check=True)
    assert "site-packages/kaudit/_data/migrations" in located.stdout
