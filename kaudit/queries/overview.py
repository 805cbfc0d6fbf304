"""What a trace holds: its nodes and the fate of its pods, folded from the stored events."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from kaudit.k8s.well_known import LABEL_TOPOLOGY_ZONE
from kaudit.quantity import parse_quantity
from kaudit.store.traces import iter_events


@dataclass
class NodeOverview:
    name: str
    zone: str
    cpu_milli: int
    memory_bytes: int
    extended: dict[str, int]
    taints: list[str]
    unschedulable: bool
    added_us: int
    removed_us: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "zone": self.zone, "cpuMilli": self.cpu_milli,
                "memoryBytes": self.memory_bytes, "extended": self.extended,
                "taints": self.taints, "unschedulable": self.unschedulable,
                "added": self.added_us, "removed": self.removed_us}


@dataclass
class TraceOverview:
    nodes: list[NodeOverview] = field(default_factory=list)
    pods_created: int = 0
    pods_recorded_bound: int = 0
    pods_deleted: int = 0
    pods_never_bound: list[str] = field(default_factory=list)
    pods_by_namespace: dict[str, int] = field(default_factory=dict)
    schedulers: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"nodes": [n.as_json() for n in self.nodes], "pods": {
            "created": self.pods_created, "recordedBound": self.pods_recorded_bound,
            "deleted": self.pods_deleted, "neverBound": self.pods_never_bound,
            "byNamespace": self.pods_by_namespace, "schedulers": self.schedulers}}


def _amount(resources: dict[str, str], name: str, milli: bool = False) -> int:
    text = resources.get(name)
    if text is None:
        return 0
    quantity = parse_quantity(str(text))
    return quantity.milli_value() if milli else quantity.value()


def _node(obj: dict[str, Any], ts_us: int) -> NodeOverview:
    labels = obj["metadata"].get("labels") or {}
    allocatable = (obj.get("status") or {}).get("allocatable") or {}
    spec = obj.get("spec") or {}
    return NodeOverview(
        name=obj["metadata"]["name"],
        zone=labels.get(LABEL_TOPOLOGY_ZONE, ""),
        cpu_milli=_amount(allocatable, "cpu", milli=True),
        memory_bytes=_amount(allocatable, "memory"),
        extended={k: _amount(allocatable, k) for k in allocatable if "/" in k},
        taints=[f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
                for t in spec.get("taints") or []],
        unschedulable=bool(spec.get("unschedulable")),
        added_us=ts_us,
    )


def trace_overview(engine: Engine, trace_id: int) -> TraceOverview:
    """Fold a trace's events into its nodes and the recorded fate of its pods."""
    nodes: dict[str, NodeOverview] = {}
    bound: set[str] = set()
    seen: set[str] = set()
    live: set[str] = set()
    namespaces: Counter[str] = Counter()
    schedulers: Counter[str] = Counter()
    overview = TraceOverview()
    for event in iter_events(engine, trace_id):
        if event.kind == "Node":
            if event.type == "DELETED":
                if event.name in nodes:
                    nodes[event.name].removed_us = event.ts_us
            else:
                added = nodes[event.name].added_us if event.name in nodes else event.ts_us
                nodes[event.name] = _node(event.object, added)
        elif event.kind == "Pod":
            key = f"{event.namespace}/{event.name}"
            if key not in seen:
                seen.add(key)
                namespaces[event.namespace] += 1
                schedulers[(event.object.get("spec") or {}).get("schedulerName",
                                                                "default-scheduler")] += 1
            if event.type == "DELETED":
                overview.pods_deleted += 1
                live.discard(key)
            else:
                live.add(key)
            if (event.object.get("spec") or {}).get("nodeName"):
                bound.add(key)
    overview.nodes = sorted(nodes.values(), key=lambda n: (n.zone, n.name))
    overview.pods_created = len(seen)
    overview.pods_recorded_bound = len(bound)
    overview.pods_never_bound = sorted(live - bound)
    overview.pods_by_namespace = dict(sorted(namespaces.items()))
    overview.schedulers = dict(schedulers)
    return overview
