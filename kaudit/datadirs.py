"""Locate the data directories kaudit ships: ``migrations/``, ``web/`` and ``traces/``.

In a source checkout (or an editable install) they sit at the repository root, beside the
``kaudit`` package. In a wheel they are force-included under ``kaudit/_data/``. Every caller
goes through :func:`data_dir` so both layouts work.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_NAMES = ("migrations", "web", "traces")


def data_dir(name: str) -> Path:
    """Return the directory holding the shipped ``name`` (one of migrations, web, traces)."""
    if name not in _NAMES:
        raise ValueError(f"unknown data directory {name!r}; expected one of {_NAMES}")
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"kaudit's {name}/ directory is missing: looked in {_PACKAGE_DIR / '_data'} "
        f"and {_PACKAGE_DIR.parent}; the installation is incomplete"
    )


def migrations_dir() -> Path:
    return data_dir("migrations")


def web_dir() -> Path:
    return data_dir("web")


def sample_trace() -> Path:
    """The sample trace used by ``kaudit demo`` and the tests."""
    return data_dir("traces") / "sample.jsonl"


def sample_config() -> Path:
    """A second scheduler configuration for the sample (bin packing), used by ``kaudit demo``."""
    return data_dir("traces") / "sample-bin-packing.yaml"
