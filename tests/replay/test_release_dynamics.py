"""Replay dynamics that changed between mirrored releases (``kaudit.versions``): the same
trace replayed as v1.34.2 and as v1.35.4 differs where upstream's scheduler does."""

from __future__ import annotations

from typing import Any

from kaudit.config import parse_feature_gates
from kaudit.eventlog.records import RecordKind
from kaudit.eventlog.sink import MemorySink
from kaudit.readers.validate import validate_object
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.scheduler.build import load, scheduler_factory
from kaudit.store.traces import StoredEvent
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.versions import KubernetesVersion
from kaudit.versions.v1_34 import V1_34_2
from kaudit.versions.v1_35 import V1_35_4

Timed = tuple[float, dict[str, Any]]


def replay(version: KubernetesVersion, objects: list[Timed], *, gates: str = "",
           **options: Any) -> tuple[MemorySink, Replay]:
    config, registry = load(None, parse_feature_gates(gates, version))
    sink = MemorySink()
    engine = Replay(scheduler_factory(config, registry), sink,
                    options_for(config, recreate_preempted=False, **options))
    events = []
    for seq, (seconds, obj) in enumerate(objects):
        kind, namespace, name, _ = validate_object(obj, "ADDED")
        events.append(StoredEvent(seq, int(seconds * 1e6), "ADDED", kind, namespace, name,
                                  obj))
    engine.run(events)
    return sink, engine


def records(sink: MemorySink, kind: RecordKind, pod: str | None = None) -> list[Any]:
    return [r for r in sink.records if r[2] == kind and (pod is None or r[3] == pod)]


def node(name: str, cpu: str) -> dict[str, Any]:
    return make_node(name).capacity(cpu=cpu, memory="8Gi").obj()


def test_a_nominated_pods_binding_moves_lower_priority_pods_only_in_v1_34() -> None:
    """v1.34's filtered pod handler saw the preemptor's binding as the pending pod's deletion
    and moved the pods of lower priority; v1.35's one handler does not."""
    never = make_pod("waiting").req(cpu="3").priority(100).obj()
    never["spec"]["preemptionPolicy"] = "Never"
    trace = [(0, node("n1", "4")), (0, node("n2", "1")),
             (0, make_pod("victim").node("n1").req(cpu="3").priority(0).obj()),
             (1, make_pod("preemptor").req(cpu="2").priority(1000).obj()),
             (2.2, never)]
    tries = {}
    for version in (V1_34_2, V1_35_4):
        sink, _ = replay(version, trace, bind_latency_us=500_000)
        tries[version.name] = len(records(sink, RecordKind.ATTEMPT, "default/waiting"))
    assert tries["v1.34.2"] == tries["v1.35.4"] + 1, tries


def test_a_victim_already_terminating_gets_no_second_preemption_from_v1_35() -> None:
    """Two preemptors in turn pick the same victim while it terminates: v1.35 sends it no
    second API call (no status patch, no deletion, no ``Preempted`` event)."""
    trace = [(0, node("n1", "4")),
             (0, make_pod("victim").node("n1").req(cpu="3").priority(0).obj()),
             (1, make_pod("first").req(cpu="3").priority(1000).obj()),
             (2, make_pod("second").req(cpu="3").priority(2000).obj())]
    preempted = {}
    for version in (V1_34_2, V1_35_4):
        sink, _ = replay(version, trace, victim_termination_us=30_000_000,
                         gates="SchedulerAsyncPreemption=false")
        preempted[version.name] = len(records(sink, RecordKind.PREEMPT, "default/victim"))
    assert preempted == {"v1.34.2": 2, "v1.35.4": 1}, preempted
