"""The run timeline: what the tables say the cluster was agrees with the replay itself."""

from __future__ import annotations

from collections import defaultdict

import orjson
from sqlalchemy import Engine, select

from kaudit.queries.runs import get_run
from kaudit.queries.timeline import run_span, state_at
from kaudit.store.models import RunEvent, RunPlacement, RunQueueSpan, RunSeries


def _series(engine: Engine, run_id: int) -> list[tuple]:  # type: ignore[type-arg]
    with engine.connect() as connection:
        return connection.execute(
            select(RunSeries.ts_us, RunSeries.active, RunSeries.backoff,
                   RunSeries.unschedulable, RunSeries.gated, RunSeries.bound,
                   RunSeries.allocation)
            .where(RunSeries.run_id == run_id).order_by(RunSeries.ts_us)).all()


def test_series_agrees_with_placements_and_nodes(sample_runs: Engine) -> None:
    """At every sampled instant, the allocation the replay measured equals the sum of the
    placements live then over the nodes live then, and the counts agree too."""
    for name in ("default", "packing"):
        run = get_run(sample_runs, name)
        span = run_span(sample_runs, run.id)
        rows = _series(sample_runs, run.id)
        assert len(rows) > 20
        checked = 0
        for ts_us, active, backoff, unschedulable, gated, bound, allocation in rows[::7]:
            state = state_at(sample_runs, run.id, span, (ts_us - span.start_us) / 1e6)
            totals = state["totals"]
            shares = orjson.loads(allocation)
            if totals["cpuAllocatable"]:
                assert abs(totals["cpuRequested"] / totals["cpuAllocatable"]
                           - shares["cpu"]) < 1e-6
                assert abs(totals["memoryRequested"] / totals["memoryAllocatable"]
                           - shares["memory"]) < 1e-6
            assert totals["pods"] <= bound  # pods on a removed node are not drawn
            queues = state["queues"]
            assert (queues["active"]["count"], queues["backoff"]["count"],
                    queues["unschedulable"]["count"], queues["gated"]["count"]) == (
                active, backoff, unschedulable, gated)
            checked += 1
        assert checked > 3


def test_queue_spans_follow_the_logged_transitions(sample_runs: Engine) -> None:
    run = get_run(sample_runs, "default")
    with sample_runs.connect() as connection:
        transitions = connection.execute(
            select(RunEvent.ts_us, RunEvent.pod, RunEvent.data)
            .where(RunEvent.run_id == run.id, RunEvent.kind == "queue")
            .order_by(RunEvent.seq)).all()
        spans = connection.execute(
            select(RunQueueSpan.pod, RunQueueSpan.queue, RunQueueSpan.start_us,
                   RunQueueSpan.end_us).where(RunQueueSpan.run_id == run.id)).all()
    expected: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for ts_us, pod, data in transitions:
        target = orjson.loads(data)["to"]
        expected[pod].append((target, ts_us))
    for pod, queue, start, end in spans:
        entered = [ts for target, ts in expected[pod] if target == queue]
        assert start in entered, (pod, queue, start)
        assert end is None or end > start
    # a pod left unschedulable at the end has an open span there
    open_unschedulable = {pod for pod, queue, _, end in spans
                          if queue == "unschedulable" and end is None}
    assert {"web/ssd-cache", "data/scratch-worker"} <= open_unschedulable


def test_placements_match_binds_and_removals(sample_runs: Engine) -> None:
    run = get_run(sample_runs, "packing")
    with sample_runs.connect() as connection:
        binds = connection.execute(
            select(RunEvent.pod, RunEvent.node).where(RunEvent.run_id == run.id,
                                                      RunEvent.kind == "bind")).all()
        placements = connection.execute(
            select(RunPlacement.pod, RunPlacement.node, RunPlacement.end_us, RunPlacement.by)
            .where(RunPlacement.run_id == run.id)).all()
        preempted = set(connection.scalars(select(RunEvent.pod).where(
            RunEvent.run_id == run.id, RunEvent.kind == "preempt")))
    assert {(p, n) for p, n in binds} == {(p, n) for p, n, _, _ in placements}
    assert {by for *_, by in placements} == {"kaudit", "trace"}
    closed = {p for p, _, end, _ in placements if end is not None}
    assert preempted <= closed
