"""Fixtures of the differential tests against upstream kube-scheduler's own code.

The oracle is two Go programs built from upstream's source (``tests/oracle/build.py``:
``build_oracle(version)`` gives the ``cycle`` and ``sequence`` programs). Without Go (or
without the module cache), :func:`build.skip_reason` says why and the suites skip, unless
``KAUDIT_REQUIRE_ORACLE=1`` makes that a failure (CI). ``KAUDIT_ORACLE_BIN`` may name a folder
holding both programs already built.

Scenario ids carry their seed (``cycle-17-preempt``, ``fresh-cycle-1234567-dra``); a case is
reproduced with ``KAUDIT_ORACLE_SEED=1234567`` (the fresh cases are then that seed only; a
cycle takes ``SEED:FLAVOUR``, as its failure message says). The
session writes ``artifacts/oracle-summary.json``: per version, per field, how many cases agree.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.oracle.release import VERSION

REQUIRE = os.environ.get("KAUDIT_REQUIRE_ORACLE") == "1"
SEED_ENV = "KAUDIT_ORACLE_SEED"
SUMMARY = Path(__file__).resolve().parents[2] / "artifacts" / "oracle-summary.json"

_programs: dict[str, Path] | None = None
_unavailable: str | None = None


def fresh_seeds(count: int) -> list[int]:
    """Seeds new on every run (``KAUDIT_ORACLE_SEED`` forces one)."""
    forced = os.environ.get(SEED_ENV)
    if forced:
        return [int(forced.partition(":")[0])]
    rng = random.Random()
    return [rng.randrange(1, 2**31) for _ in range(count)]


def _locate() -> dict[str, Path]:
    given = os.environ.get("KAUDIT_ORACLE_BIN")
    if given:
        programs = {name: Path(given) / name for name in ("cycle", "sequence")}
        missing = [str(p) for p in programs.values() if not p.is_file()]
        if missing:
            raise RuntimeError(f"KAUDIT_ORACLE_BIN: missing {', '.join(missing)}")
        return programs
    try:
        from tests.oracle.build import build_oracle, skip_reason
    except ImportError as exc:
        raise LookupError(f"the oracle's builder is not importable: {exc}") from None
    reason = skip_reason()
    if reason is not None:
        raise LookupError(reason)
    return dict(build_oracle(VERSION))


def oracle_programs() -> dict[str, Path]:
    """The built programs (built once per session); skips, or fails when required."""
    global _programs, _unavailable
    if _programs is None and _unavailable is None:
        try:
            _programs = _locate()
        except LookupError as exc:
            _unavailable = str(exc)
    if _programs is None:
        message = f"upstream oracle unavailable: {_unavailable}"
        if REQUIRE:
            pytest.fail(message + " (KAUDIT_REQUIRE_ORACLE=1)", pytrace=False)
        pytest.skip(message)
    return _programs


@pytest.fixture(scope="session")
def oracle() -> dict[str, Path]:
    return oracle_programs()


def run_cycles(program: Path, requests: list[dict[str, Any]], timeout: float = 900
               ) -> dict[str, dict[str, Any]]:
    """Send every request to one oracle process (``cycle``, or another that answers a JSON
    line per request line); its answers by id (each ``{"expect"}`` or ``{"error"}``)."""
    payload = b"".join(orjson.dumps(r) + b"\n" for r in requests)
    done = subprocess.run([str(program)], input=payload, capture_output=True, timeout=timeout,
                          check=False)
    answers: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.strip():
            answer = json.loads(line)
            answers[answer["id"]] = answer
    for request in requests:
        answers.setdefault(request["id"], {
            "id": request["id"],
            "error": f"no answer (exit {done.returncode}): {done.stderr.decode()[-2000:]}"})
    return answers


def run_sequence(program: Path, request: dict[str, Any], timeout: float = 300
                 ) -> dict[str, Any]:
    """One ``sequence`` run: ``{"pods": ...}`` or ``{"error": ...}``."""
    try:
        done = subprocess.run([str(program)], input=orjson.dumps(request), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        return {"error": f"exit {done.returncode}: {done.stdout.decode()[-500:]} "
                         f"{done.stderr.decode()[-2000:]}"}
    return answer


class Summary:
    """Per-field agreement counts, written to :data:`SUMMARY` at the end of the session."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, dict[str, dict[str, int]]] = {}

    def record(self, suite: str, diff: dict[str, list[str]]) -> None:
        with self.lock:
            fields = self.counts.setdefault(suite, {})
            for name, lines in diff.items():
                entry = fields.setdefault(name, {"agree": 0, "differ": 0})
                entry["differ" if lines else "agree"] += 1
            entry = fields.setdefault("(all fields)", {"agree": 0, "differ": 0})
            entry["differ" if any(diff.values()) else "agree"] += 1

    def write(self) -> None:
        if not self.counts:
            return
        SUMMARY.parent.mkdir(parents=True, exist_ok=True)
        existing: dict[str, Any] = {}
        if SUMMARY.is_file():
            try:
                existing = json.loads(SUMMARY.read_text())
            except ValueError:
                existing = {}
        version = existing.setdefault(VERSION, {})
        version.update(self.counts)
        SUMMARY.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="session")
def summary() -> Iterator[Summary]:
    collected = Summary()
    yield collected
    collected.write()
