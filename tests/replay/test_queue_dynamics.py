"""Replay dynamics that follow upstream v1.34: queueing hints decide which events retry a pod,
and preemption's victims go in the background while other pods are scheduled."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace


def replay(run_kaudit: Callable[..., Result], trace: Path, *options: str) -> dict[str, Any]:
    assert run_kaudit("ingest", str(trace), "--name", trace.stem).exit_code == 0
    result = run_kaudit("replay", trace.stem, "--json", *options)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def story(run_kaudit: Callable[..., Result], run: dict[str, Any], pod: str) -> dict[str, Any]:
    result = run_kaudit("explain", run["name"], pod, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def seconds(stamp: str) -> float:
    """Seconds after 09:00 of a ``2026-01-05T09:MM:SS.ffffffZ`` time."""
    minutes, rest = stamp[14:].rstrip("Z").split(":")
    return int(minutes) * 60 + float(rest)


def node(name: str, cpu: str) -> dict[str, Any]:
    return make_node(name).capacity(cpu=cpu, memory="8Gi").obj()


@pytest.mark.parametrize(("release", "retried"), [("v1.34.2", True), ("v1.37.2", False)])
def test_a_nominated_pod_binding_retries_lower_priority_pods_short_of_resources(
        run_kaudit: Callable[..., Result], tmp_path: Path, release: str, retried: bool) -> None:
    """When a nominated pod is bound its nomination goes (``deletePodFromSchedulingQueue``):
    in v1.34, pods of lower or equal priority that NodeResourcesFit rejected are retried then;
    from v1.35 the binding only takes the pod out of the queue and moves no pods."""
    never = make_pod("waiting").req(cpu="3").priority(100).obj()
    never["spec"]["preemptionPolicy"] = "Never"
    trace = write_trace(
        tmp_path / "nominated.jsonl",
        (0, "ADDED", node("n1", "4")), (0, "ADDED", node("n2", "1")),
        (0, "ADDED", make_pod("victim").node("n1").req(cpu="3").priority(0).obj()),
        (1, "ADDED", make_pod("preemptor").req(cpu="2").priority(1000).obj()),
        (2.2, "ADDED", never))
    run = replay(run_kaudit, trace, "--bind-latency", "0.5", "--kubernetes-version", release)
    preemptor = story(run_kaudit, run, "default/preemptor")
    assert preemptor["boundNode"] == "n1"
    bound_at = seconds(preemptor["boundTime"])
    waiting = story(run_kaudit, run, "default/waiting")
    tried = [seconds(a["time"]) for a in waiting["attempts"]]
    assert tried[0] == 2.2
    assert (bound_at in tried) is retried, (bound_at, tried)
    if retried:
        retry = next(q for q in waiting["queue"] if seconds(q["time"]) == bound_at)
        assert retry["event"] == "AssignedPodDelete"


def test_a_pod_rejected_by_anti_affinity_ignores_unrelated_binds(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    """InterPodAffinity's hint skips an added pod that matches none of the waiting pod's
    terms; the deletion of the pod it conflicts with requeues it."""
    holder = make_pod("holder").node("n1").req(cpu="100m").label("app", "db").obj()
    shy = make_pod("shy").req(cpu="100m").obj()
    term = {"labelSelector": {"matchLabels": {"app": "db"}},
            "topologyKey": "kubernetes.io/hostname"}
    shy["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    trace = write_trace(
        tmp_path / "anti.jsonl",
        (0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (0, "ADDED", holder),
        (1, "ADDED", shy),
        *((10 + i, "ADDED", make_pod(f"web-{i}").req(cpu="100m").label("app", "web").obj())
          for i in range(3)),
        (30, "DELETED", holder))
    run = replay(run_kaudit, trace)
    told = story(run_kaudit, run, "default/shy")
    tried = [seconds(a["time"]) for a in told["attempts"]]
    assert tried == [1.0, 30.0], tried
    assert told["boundNode"] == "n1"


def test_a_pod_created_after_a_preemptor_does_not_take_the_space_being_freed(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    """Victims terminate in the background (asynchronous preemption): a lower-priority pod
    scheduled meanwhile still sees them, and the preemptor's nomination."""
    late = (make_pod("late").req(cpu="1").priority(0)
            .preferred_node_affinity(100, "kubernetes.io/hostname", "In", ["n1"]).obj())
    trace = write_trace(
        tmp_path / "async.jsonl",
        (0, "ADDED", node("n1", "4")), (0, "ADDED", node("n2", "1")),
        (0, "ADDED", make_pod("victim").node("n1").req(cpu="4").priority(0).obj()),
        (1, "ADDED", make_pod("preemptor").req(cpu="3").priority(1000).obj()),
        (1.01, "ADDED", late))
    run = replay(run_kaudit, trace)
    assert story(run_kaudit, run, "default/late")["boundNode"] == "n2"
    preemptor = story(run_kaudit, run, "default/preemptor")
    assert preemptor["boundNode"] == "n1"
    logged = run_kaudit("events", run["name"], "--pod", "default/victim")
    events = {e["kind"]: e for e in map(json.loads, logged.output.splitlines())}
    assert seconds(events["preempt"]["time"]) == 1.0
    terminated, gone = seconds(events["terminate"]["time"]), seconds(events["delete"]["time"])
    assert terminated == 1.04 and gone == 2.04  # two API calls of 20 ms, 1 s terminating
    assert seconds(preemptor["boundTime"]) >= gone

    # With the victims deleted at once (the synchronous preemption of earlier releases), the
    # late pod takes the space the victim left beside the nomination.
    synchronous = run_kaudit("replay", "async", "--json", "--victim-termination", "0",
                             "--feature-gates", "SchedulerAsyncPreemption=false")
    assert synchronous.exit_code == 0, synchronous.output
    assert story(run_kaudit, json.loads(synchronous.output), "default/late")["boundNode"] == "n1"


def test_a_victim_kaudit_placed_counts_on_its_node_until_gone(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    """Victims kaudit bound itself terminate on their node; the preemptor, requeued when the
    first victims go, is not eligible while the last one still terminates and binds after."""
    trace = write_trace(
        tmp_path / "placed.jsonl",
        (0, "ADDED", node("n1", "4")),
        *((1, "ADDED", make_pod(f"low-{i}").req(cpu="900m").priority(1).obj())
          for i in range(4)),
        (2, "ADDED", make_pod("high").req(cpu="3").priority(10).obj()))
    run = replay(run_kaudit, trace)
    assert run["summary"]["podsScheduled"] == 5 and run["summary"]["podsPreempted"] == 3
    high = story(run_kaudit, run, "default/high")
    times = [seconds(a["time"]) for a in high["attempts"]]
    assert times == [2.0, 3.04, 3.08]
    assert high["attempts"][1]["message"].endswith(
        "preemption: not eligible due to a terminating pod on the nominated node.")
    assert high["boundNode"] == "n1" and seconds(high["boundTime"]) == 3.08
