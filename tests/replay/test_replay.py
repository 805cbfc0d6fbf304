"""Replaying the sample trace: the story of each pod, preemption, determinism across backends."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.eventlog.sink import MemorySink, digest
from kaudit.queries.explain import explain_pod
from kaudit.queries.runs import get_run
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for, replay_trace
from kaudit.scheduler.build import build_scheduler, load, scheduler_factory
from kaudit.store.traces import get_trace, iter_events
from tests.conftest import stored_digest


@pytest.fixture
def sample(engine: Engine, sample_path: Path) -> Engine:
    ingest_trace(engine, [TraceInput(sample_path)])
    return engine


def _memory_digest(engine: Engine, seed: int) -> str:
    config, registry = load()
    sink = MemorySink()
    trace = get_trace(engine, "sample")
    Replay(scheduler_factory(config, registry, seed=seed), sink,
           options_for(config, seed=seed)).run(iter_events(engine, trace.id))
    return digest(iter(sink.records))


def test_replay_tells_each_pods_story(sample: Engine, run_kaudit: Callable[..., Result]) -> None:
    result = run_kaudit("replay", "sample", "--json")
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)
    assert run["status"] == "complete"
    summary = run["summary"]
    assert summary["podsScheduled"] > 50 and summary["podsPreempted"] >= 1
    assert summary["podsUnschedulable"] == 2  # ssd-cache and scratch-worker never fit

    story = explain_pod(sample, run["name"], "web/payments-0")
    # Rejected (then preempting), it waits in unschedulablePods until its victims' deletions
    # requeue it (NodeResourcesFit's hint for an assigned pod's deletion).
    assert [q["to"] for q in story["queue"]][:3] == ["active", "in-flight", "unschedulable"]
    assert any(q["event"] == "AssignedPodDelete" for q in story["queue"])
    first, second = story["attempts"][0], story["attempts"][-1]
    assert first["selectedNode"] is None
    assert first["message"].startswith("0/11 nodes are available:")
    assert first["preemption"]["victims"] and first["preemption"]["nominatedNode"]
    assert second["selectedNode"] == first["preemption"]["nominatedNode"] == story["boundNode"]
    assert second["evaluatedNodes"] == 1  # the nominated node is tried first
    # recorded with the default scheduler, the sample put it where the replay does
    assert story["recordedNode"] == story["boundNode"] == "node-c3"

    stuck = explain_pod(sample, run["name"], "web/ssd-cache")
    assert stuck["boundNode"] is None
    assert "node(s) didn't match Pod's node affinity/selector" in stuck["attempts"][0]["message"]
    scheduled = explain_pod(sample, run["name"], "data/postgres-1")
    attempt = scheduled["attempts"][-1]
    assert attempt["selectedNode"] == scheduled["boundNode"]
    node = attempt["nodes"][attempt["selectedNode"]]
    assert node["feasible"] and node["total"] == sum(s["weighted"] for s in
                                                     node["score"].values())
    text = run_kaudit("explain", run["name"], "payments-0")
    assert "preemption nominated" in text.output
    assert "The recorded cluster placed it on node-c3 (the same node)." in text.output
    events = run_kaudit("events", run["name"], "--kind", "preempt")
    lines = [json.loads(line) for line in events.output.splitlines()]
    assert len(lines) == summary["podsPreempted"]
    # batch/report-gen (priority 1000) preempts a batch pod when its gate lifts at 200 s
    assert {line["preemptor"] for line in lines} == {"web/payments-0", "batch/report-gen"}


def test_same_inputs_same_event_log(sample: Engine) -> None:
    config, registry = load()
    trace = get_trace(sample, "sample")
    first, _ = replay_trace(sample, trace, config, registry, seed=3)
    second, _ = replay_trace(sample, trace, config, registry, seed=3)
    stored = stored_digest(sample, first)
    assert stored == stored_digest(sample, second)
    # Written and read back from this backend, the log equals the in-memory log: so SQLite
    # and PostgreSQL (this test runs on both) hold the same bytes.
    assert stored == _memory_digest(sample, 3)
    assert get_run(sample, str(first)).status == "complete"


def test_failed_replays_are_marked_failed(sample: Engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    config, registry = load()
    trace = get_trace(sample, "sample")

    def explode(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk full")

    monkeypatch.setattr("kaudit.replay.apply.Informer.apply", explode)
    with pytest.raises(RuntimeError):
        replay_trace(sample, trace, config, registry, name="broken")
    run = get_run(sample, "broken")
    assert run.status == "failed" and "disk full" in (run.error or "")


def _run_in_memory(engine: Engine, **options) -> tuple[MemorySink, Replay]:  # type: ignore[no-untyped-def]
    config, registry = load()
    sink = MemorySink()
    trace = get_trace(engine, "sample")
    lifetimes = None
    if options.get("lifetime") == "relative":
        from kaudit.replay.workload import recorded_lifetimes
        lifetimes = recorded_lifetimes(iter_events(engine, trace.id))
    replay = Replay(scheduler_factory(config, registry), sink, options_for(config, **options),
                    lifetimes)
    replay.run(iter_events(engine, trace.id))
    return sink, replay


def test_bind_latency_holds_resources_until_bound(sample: Engine) -> None:
    sink, _ = _run_in_memory(sample, bind_latency_us=500_000)
    attempts = {r[3]: r[1] for r in sink.records if r[2] == "attempt" and r[4]}
    binds = {r[3]: r[1] for r in sink.records if r[2] == "bind" and '"kaudit"' in r[5]}
    assert binds and all(binds[pod] - attempts[pod] == 500_000 for pod in binds)


def test_relative_lifetimes_keep_recorded_run_times(sample: Engine) -> None:
    sink, _ = _run_in_memory(sample, lifetime="relative")
    reasons = [orjson_loads(r[5]).get("reason") for r in sink.records if r[2] == "delete"]
    assert "lifetime" in reasons
    recorded = [orjson_loads(r[5]).get("reason") for r in
                _run_in_memory(sample)[0].records if r[2] == "delete"]
    assert "lifetime" not in recorded


def orjson_loads(text: str) -> dict:
    return orjson.loads(text)


def test_replayed_attempt_matches_whatif_on_the_same_state(
        sample: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first attempt of the preemptor, and whatif on the cluster kaudit had then."""
    from kaudit.cluster.objects import cluster_from_objects, pod_info
    from kaudit.replay.cycle import SchedulingCycles

    config, registry = load()
    trace = get_trace(sample, "sample")
    captured: dict = {}
    schedule = SchedulingCycles._schedule

    def capturing(self: SchedulingCycles, queued: Any) -> None:
        if queued.pod.name == "payments-0" and "objects" not in captured:
            nodes = [self.cluster.node(s).obj for s in self.cluster.order]
            pods = [{**p.obj, "spec": {**p.obj["spec"], "nodeName": p.node_name}}
                    for p in self.cluster.pods.values()]
            others = [o for kind, objs in self.cluster.objects.items() for o in objs.values()]
            captured["objects"] = [*others, *nodes, *pods]
            captured["pod"] = queued.pod.obj
        schedule(self, queued)

    monkeypatch.setattr(SchedulingCycles, "_schedule", capturing)
    sink = MemorySink()
    Replay(scheduler_factory(config, registry), sink, options_for(config)).run(
        iter_events(sample, trace.id))
    replayed = next(r for r in sink.records if r[2] == "attempt" and r[3] == "web/payments-0")
    cluster, _ = cluster_from_objects(captured["objects"])
    whatif = build_scheduler(config, registry).schedule(
        cluster, pod_info(cluster, captured["pod"]), exhaustive=True)
    assert orjson_loads(replayed[5])["message"] == whatif.message


@pytest.mark.parametrize("backend", ["postgresql"])
def test_sqlite_and_postgresql_hold_the_same_log(sample: Engine, tmp_path: Path) -> None:
    """The same replay written to PostgreSQL (this test's database) and to SQLite."""
    from kaudit.store.schema import open_database

    config, registry = load()
    lite = open_database(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        ingest_trace(lite, [TraceInput(Path(get_trace(sample, "sample").sources[0]["path"]))])
        pg_run, _ = replay_trace(sample, get_trace(sample, "sample"), config, registry, seed=9)
        lite_run, _ = replay_trace(lite, get_trace(lite, "sample"), config, registry, seed=9)
        assert stored_digest(sample, pg_run) == stored_digest(lite, lite_run)
    finally:
        lite.dispose()


def test_gated_pods_wait_until_their_gates_are_lifted(sample: Engine) -> None:
    config, registry = load()
    trace = get_trace(sample, "sample")
    replay_trace(sample, trace, config, registry, name="gates")
    story = explain_pod(sample, "gates", "batch/report-gen")
    steps = [(q["from"], q["to"], q["event"]) for q in story["queue"]]
    assert steps[0] == ("none", "gated", "PodAdd")
    assert ("gated", "active", "UnschedulablePodUpdatePodSchedulingGatesEliminated") in steps
    assert story["queue"][1]["time"] == "2026-01-05T09:03:20Z"  # when the trace lifts the gate
    assert story["boundNode"] is not None


def test_the_collector_runs_at_the_replay_pace_only_while_replaying(sample: Engine) -> None:
    import gc

    from kaudit.replay.collector import REPLAY_THRESHOLDS
    config, registry = load()
    trace = get_trace(sample, "sample")
    seen: list[tuple[int, ...]] = []
    before = gc.get_threshold()
    Replay(scheduler_factory(config, registry), MemorySink(), options_for(config)).run(
        iter_events(sample, trace.id), tick=lambda: seen.append(gc.get_threshold()))
    assert seen and all(t[0] >= REPLAY_THRESHOLDS[0] for t in seen)
    assert gc.get_threshold() == before
