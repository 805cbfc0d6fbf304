"""Replays of clusters upstream handles without fuss: no nodes at all, a node removed under its
pods, a pod bound without the extended resource it requests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

import kaudit.replay.guard as guard_module
from kaudit.replay.apply import Informer
from kaudit.scheduler.queue import QueuedPod, SchedulingQueue
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace

GPU = "nvidia.com/gpu"


def replay(run_kaudit: Callable[..., Result], trace: Path) -> dict[str, Any]:
    ingested = run_kaudit("ingest", str(trace), "--name", trace.stem)
    assert ingested.exit_code == 0, ingested.output
    result = run_kaudit("replay", trace.stem, "--json")
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)
    assert run["status"] == "complete"
    return run


def story(run_kaudit: Callable[..., Result], run: dict[str, Any], pod: str) -> dict[str, Any]:
    result = run_kaudit("explain", run["name"], pod, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_no_nodes_the_pod_waits_then_binds_when_a_node_arrives(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "late-node.jsonl",
                        (0, "ADDED", make_pod("p").req(cpu="1").obj()),
                        (20, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()))
    run = replay(run_kaudit, trace)
    assert run["summary"]["podsScheduled"] == 1
    told = story(run_kaudit, run, "default/p")
    failures = told["attempts"][:-1]
    assert failures and all(a["message"] == "no nodes available to schedule pods"
                            and a["nodes"] == {} for a in failures)
    # No rejecting plugin: each failure counts as an error and backs off (1 s, 2 s, 4 s, 8 s,
    # then the 10 s cap), the end truncated to a second and the pod released at the next
    # once-a-second flush, as upstream v1.34. The node's arrival moves only unschedulablePods
    # and a pod backing off after an error is never popped early, so the pod is bound when
    # its backoff ends.
    assert [a["time"][17:19] for a in failures] == ["00", "02", "05", "10", "19"]
    assert told["boundNode"] == "n1" and told["boundTime"].endswith("09:00:30Z")


def test_no_nodes_ever_ends_with_the_pods_unschedulable(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "empty.jsonl",
                        (0, "ADDED", make_pod("a").req(cpu="1").obj()),
                        (5, "ADDED", make_pod("b").req(cpu="1").obj()))
    run = replay(run_kaudit, trace)
    assert run["summary"]["podsUnschedulable"] == 2
    assert run["summary"]["attempts"] < 10  # retried during the trace, not for ever


def test_a_node_removed_under_its_pods_leaves_no_nodes(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    node = make_node("n1").capacity(cpu="4", memory="8Gi").obj()
    trace = write_trace(tmp_path / "gone.jsonl",
                        (0, "ADDED", node),
                        (1, "ADDED", make_pod("bound").node("n1").req(cpu="1").obj()),
                        (2, "DELETED", node),
                        (3, "ADDED", make_pod("p").req(cpu="1").obj()))
    run = replay(run_kaudit, trace)
    assert run["summary"]["podsUnschedulable"] == 1
    told = story(run_kaudit, run, "default/p")
    assert told["attempts"][0]["message"] == "no nodes available to schedule pods"


def test_a_pod_bound_without_its_gpu_is_counted_on_its_node(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    trace = write_trace(
        tmp_path / "stale-gpu.jsonl",
        (0, "ADDED", make_node("cpu-only").capacity(cpu="4", memory="8Gi").obj()),
        (0, "ADDED", make_node("gpu").capacity(cpu="4", memory="8Gi").extended(GPU, "1").obj()),
        (1, "ADDED", make_pod("stale").node("cpu-only").req(cpu="1").extended(GPU, "1").obj()),
        (2, "ADDED", make_pod("trainer").req(cpu="1").extended(GPU, "1").obj()),
        (3, "ADDED", make_pod("second").req(cpu="1").extended(GPU, "1").obj()),
        (4, "ADDED", make_pod("web").req(cpu="3").obj()))
    run = replay(run_kaudit, trace)
    # "stale" was bound by the trace; kaudit places trainer and web.
    assert run["summary"]["podsScheduled"] == 2 and run["summary"]["podsUnschedulable"] == 1
    assert story(run_kaudit, run, "default/trainer")["boundNode"] == "gpu"
    second = story(run_kaudit, run, "default/second")["attempts"][0]
    assert second["nodes"]["cpu-only"]["filter"]["NodeResourcesFit"]["code"] == \
        "UnschedulableAndUnresolvable"
    assert second["message"].startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    web = story(run_kaudit, run, "default/web")["attempts"][0]
    # 3 cores fit beside the stale pod's 1: its GPU request blocks only GPU pods.
    assert web["nodes"]["cpu-only"]["feasible"] and web["nodes"]["gpu"]["feasible"]


def test_every_attempt_json_carries_the_preemption_facts(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    trace = write_trace(
        tmp_path / "preempt.jsonl",
        (0, "ADDED", make_node("n1").capacity(cpu="2", memory="4Gi").obj()),
        (1, "ADDED", make_pod("low").node("n1").req(cpu="2").priority(10).obj()),
        (2, "ADDED", make_pod("high").req(cpu="2").priority(1000).obj()))
    run = replay(run_kaudit, trace)
    told = story(run_kaudit, run, "default/high")
    preempting = told["attempts"][0]
    assert preempting["postFilter"]["code"] == "Success"
    assert preempting["preemption"] == {
        "eligible": True, "nominatedNode": "n1", "victims": ["default/low"],
        "pdbViolations": 0, "candidates": 1, "potentialNodes": 1, "examinedNodes": 1,
        "tiedNodes": ["n1"], "victimTies": [],
        "candidateNodes": [{"node": "n1", "victims": ["default/low"], "pdbViolations": 0}]}
    assert told["boundNode"] == "n1"


def test_a_replay_that_stops_advancing_in_virtual_time_fails_clearly(
        run_kaudit: Callable[..., Result], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress guard: were a bug to send a failed pod straight back to activeQ, the
    replay would retry it at one virtual instant for ever; the guard ends it as failed."""
    monkeypatch.setattr(guard_module, "INSTANT_WORK_BASE", 50)
    monkeypatch.setattr(guard_module, "INSTANT_WORK_PER_POD", 0)

    def straight_back(self: SchedulingQueue, now: int, queued: QueuedPod, *_: Any) -> None:
        self._move_to_active(now, queued, "Bug")

    monkeypatch.setattr(SchedulingQueue, "requeue", straight_back)
    trace = write_trace(tmp_path / "cycle.jsonl",
                        (0, "ADDED", make_node("n1").capacity(cpu="1", memory="1Gi").obj()),
                        (1, "ADDED", make_pod("big").req(cpu="2").obj()))
    assert run_kaudit("ingest", str(trace), "--name", "cycle").exit_code == 0
    result = run_kaudit("replay", "cycle")
    assert result.exit_code == 1
    assert "made no progress in virtual time" in result.output
    assert "default/big (" in result.output and "Traceback" not in result.output
    listed = json.loads(run_kaudit("runs", "--json").output)
    assert [(r["status"], r["error"].split(":")[0]) for r in listed] == \
        [("failed", "ReplayStalledError")]


def test_an_event_the_replay_cannot_use_is_named_by_file_and_line(
        run_kaudit: Callable[..., Result], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingest refuses what replay cannot use; should something slip through, the replay
    fails naming the trace's file and line, and the run is stored as failed."""
    trace = write_trace(tmp_path / "slipped.jsonl",
                        (0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
                        (1, "ADDED", make_pod("p").req(cpu="1").obj()))
    assert run_kaudit("ingest", str(trace), "--name", "slipped").exit_code == 0

    def broken(*_: Any) -> None:
        raise ValueError("a value the replay cannot use")

    monkeypatch.setattr(Informer, "_apply_pod", broken)
    result = run_kaudit("replay", "slipped")
    assert result.exit_code == 2
    assert result.output == (f"kaudit: error: {trace}:2: cannot replay this ADDED Pod event: "
                             "ValueError: a value the replay cannot use\n")
    listed = json.loads(run_kaudit("runs", "--json").output)
    assert [(r["status"], r["error"]) for r in listed] == \
        [("failed", result.output.removeprefix("kaudit: error: ").strip())]
