"""``python -m benchmarks.audit`` at a tiny size: it builds its recording once, audits it with
``kaudit audit``, and reports any decision of kaudit's own that the audit does not agree with."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.audit import CONSISTENT, main

NODES, PODS = 4, 12


def run_benchmark(cache: Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--nodes", str(NODES), "--pods", str(PODS), "--cache", str(cache),
                     "--json"])
    return code, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, dict[str, Any]]:
    cache = tmp_path_factory.mktemp("audit-bench-cache")
    return cache, *run_benchmark(cache)


def test_every_decision_of_kaudits_own_recording_agrees_ties_or_is_sampled(
        built: tuple[Path, int, dict[str, Any]]) -> None:
    _, code, result = built
    assert code == 0
    assert result["recordingBuilt"]["podsBound"] == PODS
    assert result["decisions"] == result["judged"] == PODS
    assert sum(result["classes"].values()) == PODS
    assert set(result["classes"]) <= CONSISTENT
    assert result["unexpected"] == []
    assert result["decisionsPerSecond"] > 0 and result["peakRSSMiB"] > 0


def test_a_rerun_audits_the_cached_recording_without_building_it(
        built: tuple[Path, int, dict[str, Any]]) -> None:
    cache, _, _ = built
    code, again = run_benchmark(cache)
    assert code == 0
    assert again["recordingBuilt"] is None
    assert again["decisions"] == PODS
    assert len(list(cache.iterdir())) == 1


def test_a_recorded_decision_the_audit_does_not_accept_is_named_and_fails_the_run(
        built: tuple[Path, int, dict[str, Any]], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(built[0], cache)
    (recording,) = cache.iterdir()
    lines = gzip.decompress(recording.read_bytes()).splitlines()
    for number, line in reversed(list(enumerate(lines))):  # the last binding: no aftermath
        event = orjson.loads(line)
        if event["object"]["kind"] == "Pod" and event["object"]["spec"].get("nodeName"):
            event["object"]["spec"]["nodeName"] = "node-absent"
            lines[number] = orjson.dumps(event)
            moved = f"bench/{event['object']['metadata']['name']}"
            break
    recording.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    code, result = run_benchmark(cache)
    assert code == 1
    assert [(d["pod"], d["class"]) for d in result["unexpected"]] == [(moved, "notJudged")]
    assert "Node node-absent" in result["unexpected"][0]["reason"]
