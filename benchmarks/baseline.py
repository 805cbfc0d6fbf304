"""Run a benchmark against an earlier commit of kaudit in the same invocation, for ratios.

``--baseline REF`` on a benchmark exports kaudit's package and data directories at git
revision REF into a temporary directory, puts the current ``benchmarks`` package beside them,
and runs the same benchmark there in a child process (``python -m benchmarks.NAME ... --json``)
whose ``kaudit`` is REF's. Figures measured back to back on one machine compare fairly;
figures from different days often do not.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXPORTED = ("kaudit", "migrations", "web", "traces")


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """A directory holding kaudit as of ``ref`` and the current benchmarks."""
    try:
        archive = subprocess.run(["git", "archive", "--format=tar", ref, *EXPORTED],
                                 cwd=ROOT, check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        raise SystemExit(f"--baseline {ref}: cannot export it with git: "
                         f"{detail.decode(errors='replace').strip() or exc}") from exc
    with tempfile.TemporaryDirectory(prefix="kaudit-baseline-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        shutil.copytree(ROOT / "benchmarks", Path(tmp) / "benchmarks",
                        ignore=shutil.ignore_patterns("__pycache__"))
        yield Path(tmp)


def without_baseline(argv: list[str]) -> list[str]:
    """A benchmark's arguments to run again at the baseline: without ``--baseline REF`` and
    ``--json`` (``run_there`` asks for JSON itself)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--baseline":
            skip = True
        elif arg != "--json" and not arg.startswith("--baseline="):
            kept.append(arg)
    return kept


def run_there(directory: Path, module: str, args: list[str]) -> Any:
    """``python -m module args --json`` with ``directory``'s kaudit; its parsed output."""
    env = dict(os.environ, PYTHONPATH=str(directory))
    done = subprocess.run([sys.executable, "-m", module, *args, "--json"], cwd=directory,
                          env=env, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the baseline run of {module} failed (exit {done.returncode})")
    return json.loads(done.stdout)


def ratio(current: float | None, baseline: float | None) -> float | None:
    if not current or not baseline:
        return None
    return round(current / baseline, 2)
