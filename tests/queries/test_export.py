"""``kaudit export``: a replayed run written back out as a trace, in kaudit's format and the
simulator's, and read again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import orjson
from click.testing import Result
from sqlalchemy import Engine

from kaudit.queries.diff import diff_runs
from kaudit.queries.export import exported_events, run_source
from kaudit.queries.outcomes import run_outcomes
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.readers.simulator import read_records
from kaudit.readers.snapshot import read_snapshot
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load_object_config
from kaudit.store.traces import get_trace
from tests.conftest import V1_34, gates_at, replay_sample_twice


def test_exported_trace_replays_to_the_same_placements(engine: Engine, tmp_path: Path,
                                                       run_kaudit: Callable[..., Result]) -> None:
    replay_sample_twice(engine)
    out = tmp_path / "packing.jsonl"
    result = run_kaudit("export", "packing", "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["events"] > 0 and report["kinds"]["Pod"] > 0

    source = run_source(engine, "packing")
    events = list(exported_events(engine, source))
    binds = [e for e in events if e.kind == "Pod" and e.type == "MODIFIED"
             and e.object["spec"].get("nodeName")]
    assert binds, "the export binds pods"
    assert [e for e in events if e.type == "DELETED"]

    ingested = ingest_trace(engine, [TraceInput(out)], name="packing-export")
    # Its header names the release the run was replayed as: replaying it mirrors that release.
    assert json.loads(out.read_text().splitlines()[0])["type"] == "BOOKMARK"
    assert source.kubernetes_version == V1_34  # the sample's header names it
    assert get_trace(engine, ingested.name).kubernetes_version == source.kubernetes_version
    config, registry = load_object_config(source.config, "packing",
                                          gates_at(source.kubernetes_version or V1_34))
    # The export holds the pods the controllers created in place of the victims: replaying
    # it must not create them a second time.
    replay_trace(engine, get_trace(engine, ingested.name), config, registry, name="again",
                 recreate_preempted=False)
    again = diff_runs(engine, "again", "recorded")
    # Replaying the exported trace under the same configuration and seed makes the same
    # decisions, which the export recorded as the cluster's placements.
    assert again["counts"]["moved"] == 0
    assert again["counts"]["tieFlips"] == 0
    assert again["counts"]["scheduledOnlyInA"] == 0
    assert again["counts"]["scheduledOnlyInB"] == 0
    # the trace's own record of a preemption is not kept for pods kaudit did not preempt
    assert again["counts"]["preemptedOnlyInA"] == again["counts"]["preemptedOnlyInB"] == 0
    before = run_outcomes(engine, "packing").pods
    after = run_outcomes(engine, "again").pods
    assert {k: p.node for k, p in before.items()} == {k: p.node for k, p in after.items()}


def test_export_in_the_simulator_formats(sample_runs: Engine, tmp_path: Path,
                                         run_kaudit: Callable[..., Result]) -> None:
    records = tmp_path / "record.jsonl.gz"
    assert run_kaudit("export", "default", "--format", "simulator", "-o",
                      str(records)).exit_code == 0
    items = list(read_records(records, StreamStats()))
    assert items and not [i for i in items if isinstance(i, Rejected)]
    events = [i for i in items if isinstance(i, WatchEvent)]
    assert {e.kind for e in events} <= {"Namespace", "PriorityClass", "StorageClass",
                                        "PersistentVolumeClaim", "Node", "PersistentVolume",
                                        "Pod"}
    deletes = [e for e in events if e.type == "DELETED"]
    assert deletes and all(set(e.object) == {"apiVersion", "kind", "metadata"}
                           for e in deletes)

    snapshot = tmp_path / "snapshot.json"
    assert run_kaudit("export", "default", "--format", "simulator-snapshot", "-o",
                      str(snapshot)).exit_code == 0
    document = orjson.loads(snapshot.read_bytes())
    assert set(document) == {"pods", "nodes", "pvs", "pvcs", "storageClasses",
                             "priorityClasses", "namespaces", "schedulerConfig"}
    assert "kind" not in document["schedulerConfig"]
    assert all("kind" not in pod for pod in document["pods"])
    stats = StreamStats()
    objects = [e for e in read_snapshot(snapshot, 0, stats) if isinstance(e, WatchEvent)]
    assert len(objects) == sum(len(v) for k, v in document.items() if k != "schedulerConfig")
    assert stats.scheduler_config is not None
    load_object_config(stats.scheduler_config, "export")

    early = tmp_path / "early.json"
    assert run_kaudit("export", "default", "--format", "simulator-snapshot", "--at",
                      "2026-01-05T09:00:00Z", "-o", str(early)).exit_code == 0
    assert len(orjson.loads(early.read_bytes())["pods"]) < len(document["pods"])


def test_export_refuses_to_overwrite_and_bad_options(sample_runs: Engine, tmp_path: Path,
                                                     run_kaudit: Callable[..., Result]) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("keep me")
    refused = run_kaudit("export", "default", "-o", str(out))
    assert refused.exit_code == 2 and "exists (use --force" in refused.output
    assert out.read_text() == "keep me"
    assert run_kaudit("export", "default", "-o", str(out), "--force").exit_code == 0
    assert out.read_text() != "keep me" and not out.with_name("out.jsonl.partial").exists()
    packed = tmp_path / "out.jsonl.gz"
    assert run_kaudit("export", "default", "-o", str(packed)).exit_code == 0
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert run_kaudit("export", "nope", "-o", str(tmp_path / "x")).exit_code == 2
    assert run_kaudit("export", "default", "--at", "5").exit_code == 2
    assert run_kaudit("export", "default", "--json").exit_code == 2
    stdout = run_kaudit("export", "default")
    assert stdout.exit_code == 0
    first = orjson.loads(stdout.stdout_bytes.splitlines()[0])
    assert set(first) == {"ts", "type", "object"}


def test_relative_lifetimes_are_exported_as_kaudit_kept_them(
        engine: Engine, run_kaudit: Callable[..., Result], sample_path: Path) -> None:
    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    assert run_kaudit("replay", "sample", "--name", "rel", "--lifetime", "relative").exit_code == 0
    events = list(exported_events(engine, run_source(engine, "rel")))
    bound: dict[str, int] = {}
    for event in events:
        key = event.object["metadata"].get("name")
        if event.type == "MODIFIED" and event.object.get("spec", {}).get("nodeName"):
            bound.setdefault(key, event.ts_us)
    deletions = [e for e in events if e.type == "DELETED" and e.kind == "Pod"]
    assert deletions
    # No pod is deleted twice, and none before kaudit bound it.
    names = [e.object["metadata"]["name"] for e in deletions]
    assert len(names) == len(set(names))
