"""The replay's controllers: owners replace preempted pods that kaudit schedules."""

from __future__ import annotations

from kaudit.eventlog.sink import MemorySink
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.scheduler.build import load, scheduler_factory
from kaudit.store.traces import StoredEvent
from kaudit.tracegen.builders import make_node, make_pod

SECOND = 1_000_000


def test_a_victim_of_another_scheduler_is_not_recreated_into_kaudits_queue() -> None:
    """A ReplicaSet's pod placed by another scheduler is preempted; where that scheduler would
    put its replacement is in no trace, so kaudit does not schedule one (it used to, and the
    cycle failed for want of a profile)."""
    objects = [(0, make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
               (0, make_pod("other").req(cpu="3").priority(0).scheduler("other-scheduler")
                .owner("ReplicaSet", "rs").node("n1").obj()),
               (0, make_pod("mine").req(cpu="500m").priority(0).owner("ReplicaSet", "rs2")
                .node("n1").obj()),
               (SECOND, make_pod("high").req(cpu="3").priority(100).obj())]
    events = [StoredEvent(i, t, "ADDED", o["kind"], o["metadata"].get("namespace", ""),
                          o["metadata"]["name"], o) for i, (t, o) in enumerate(objects)]
    config, registry = load()
    sink = MemorySink()
    summary = Replay(scheduler_factory(config, registry), sink,
                     options_for(config, victim_termination_us=0)).run(events)
    assert summary.pods_scheduled == 1 and summary.pods_preempted == 1
    assert [r[3] for r in sink.records if r[2] == "preempt"] == ["default/other"]
    assert not [r for r in sink.records if r[2] == "create"]
