"""Scheduling cycles that take virtual time (``--cycle-duration``): the next pod is tried when
the cycle before it ends, after the API calls, trace events and timers due meanwhile."""

from __future__ import annotations

from typing import Any

from kaudit.eventlog.sink import MemorySink
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.scheduler.build import load, scheduler_factory
from kaudit.store.traces import StoredEvent
from kaudit.tracegen.builders import make_node, make_pod

SECOND = 1_000_000


def _events(*timed: tuple[int, dict[str, Any]]) -> list[StoredEvent]:
    return [StoredEvent(seq, ts, "ADDED", obj["kind"],
                        obj["metadata"].get("namespace", ""), obj["metadata"]["name"], obj)
            for seq, (ts, obj) in enumerate(timed)]


def _replay(events: list[StoredEvent], **options: Any) -> list[tuple[Any, ...]]:
    config, registry = load()
    sink = MemorySink()
    Replay(scheduler_factory(config, registry), sink, options_for(config, **options)).run(events)
    return sink.records


def _times(records: list[tuple[Any, ...]], kind: str) -> list[tuple[int, str]]:
    return [(r[1], r[3]) for r in records if r[2] == kind]


def test_cycles_at_one_instant_without_a_duration_and_one_after_another_with_one() -> None:
    events = _events((0, make_node("n1").capacity(cpu="8", memory="8Gi").obj()),
                     *((SECOND, make_pod(f"p{i}").req(cpu="1").obj()) for i in range(3)))
    instant = _times(_replay(events), "attempt")
    assert [t for t, _ in instant] == [SECOND] * 3
    spaced = _times(_replay(events, cycle_duration_us=10_000), "attempt")
    assert [t for t, _ in spaced] == [SECOND, SECOND + 10_000, SECOND + 20_000]
    assert [pod for _, pod in spaced] == [pod for _, pod in instant]


def test_a_victim_deleted_during_a_cycle_is_gone_for_the_next_pod() -> None:
    """With a cycle duration longer than the API latency and no termination time, the
    preemptor's victim is deleted before the next pod's cycle: that pod sees the room."""
    events = _events(
        (0, make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (0, make_pod("low").req(cpu="3").priority(1).node("n1").obj()),
        (SECOND, make_pod("high").req(cpu="3").priority(100).obj()),
        (SECOND, make_pod("next").req(cpu="500m").priority(100).obj()))
    timing = {"api_latency_us": 1_000, "victim_termination_us": 0}
    at_once = _replay(events, **timing)
    later = _replay(events, cycle_duration_us=5_000, **timing)

    def order(records: list[tuple[Any, ...]]) -> list[tuple[str, str | None]]:
        return [(r[2], r[3]) for r in records
                if r[2] in ("attempt", "delete") and r[3] in ("default/next", "default/low")]

    # Without a duration the next pod is tried at the preemptor's instant, before the
    # victim's deletion lands; with one, the deletion comes first.
    assert order(at_once)[:2] == [("attempt", "default/next"), ("delete", "default/low")]
    assert order(later)[:2] == [("delete", "default/low"), ("attempt", "default/next")]


def test_a_pod_is_bound_when_its_cycle_is_over() -> None:
    """Upstream binds after the scheduling cycle: the bind lands at the cycle's end plus the
    bind latency, after the next cycle has started only when the latency says so."""
    events = _events((0, make_node("n1").capacity(cpu="8", memory="8Gi").obj()),
                     *((SECOND, make_pod(f"p{i}").req(cpu="1").obj()) for i in range(2)))
    binds = _times(_replay(events, cycle_duration_us=100_000, bind_latency_us=10_000), "bind")
    assert binds == [(SECOND + 110_000, "default/p0"), (SECOND + 210_000, "default/p1")]
