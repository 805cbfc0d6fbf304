"""A pod kaudit binds starts when the trace says the kubelet started it: preemption ranks
victims by start time (``MoreImportantPod``), and upstream reads a pod without one as starting
``time.Now()`` at each comparison (``GetPodStartTime``, ``pkg/scheduler/util/utils.go``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaudit.eventlog.records import RecordKind
from kaudit.eventlog.sink import MemorySink
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.scheduler.build import load, scheduler_factory
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace, iter_events
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import gates_at, write_trace


def _started(obj: dict[str, Any], node: str, at: str) -> dict[str, Any]:
    return {**obj, "spec": {**obj["spec"], "nodeName": node},
            "status": {"phase": "Running", "startTime": at}}


def _victims(tmp_path: Path, with_start_times: bool, release: str | None = None
             ) -> list[str | None]:
    """Node n holds two 1-CPU pods kaudit binds, a then b; the trace records a starting at
    09:00:01 and b at 09:00:02 (or neither start); a 1-CPU pod of higher priority comes."""
    node = make_node("n").capacity(cpu="2", memory="8Gi", pods="10").obj()
    a = make_pod("a").req(cpu="1").priority(0).obj()
    b = make_pod("b").req(cpu="1").priority(0).obj()
    high = make_pod("high").req(cpu="1").priority(100).obj()
    steps: list[tuple[float, str, dict[str, Any]]] = [
        (0, "ADDED", node), (1, "ADDED", a), (2, "ADDED", b)]
    if with_start_times:
        steps += [(1.5, "MODIFIED", _started(a, "n", "2026-01-05T09:00:01Z")),
                  (2.5, "MODIFIED", _started(b, "n", "2026-01-05T09:00:02Z"))]
    steps.append((10, "ADDED", high))
    steps.sort(key=lambda step: step[0])
    trace_path = write_trace(tmp_path / f"starts-{with_start_times}.jsonl", *steps)
    engine = open_database(f"sqlite:///{tmp_path / f'k-{with_start_times}.db'}")
    try:
        trace = get_trace(engine, ingest_trace(engine, [TraceInput(trace_path)]).trace_id)
        config, registry = load(None, None if release is None else gates_at(release))
        sink = MemorySink()
        Replay(scheduler_factory(config, registry), sink, options_for(config)).run(
            iter_events(engine, trace.id))
    finally:
        engine.dispose()
    return [r[3] for r in sink.records if r[2] == RecordKind.PREEMPT]


def test_the_later_started_pod_is_the_victim(tmp_path: Path) -> None:
    assert _victims(tmp_path, with_start_times=True) == ["default/b"]


@pytest.mark.parametrize(("release", "victims"), [
    # Both read as starting now, afresh at each comparison: sort.Slice puts b (listed last)
    # first, so b is reprieved and a evicted.
    ("v1.34.2", ["default/a"]),
    # v1.37 reads the clock once per victim, as it is built in the node's pod order: a, built
    # first, is the more important, so b is evicted.
    ("v1.37.2", ["default/b"]),
])
def test_pods_never_started_are_reprieved_as_upstream_s_clock_orders_them(
        tmp_path: Path, release: str, victims: list[str]) -> None:
    assert _victims(tmp_path, with_start_times=False, release=release) == victims
