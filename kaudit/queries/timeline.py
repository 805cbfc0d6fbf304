"""A run over virtual time: its series, attempt and preemption histograms, the cluster at any
moment, and the pods on one node.

Reads the tables the replay's :mod:`kaudit.eventlog.timeline` wrote. Times in answers are
seconds since the run's first record (``t``), with the absolute RFC 3339 time where one moment
is meant. Everything is aggregated here, server-side, so that a 5,000-node run answers in a
few hundred kilobytes: series are thinned to a bounded number of points keeping every peak.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, and_, func, or_, select, union_all

from kaudit.errors import UnknownObjectError
from kaudit.eventlog.records import RecordKind
from kaudit.eventlog.timeline import QUEUES
from kaudit.model.gpu import MILLI_PER_GPU, NVIDIA_GPU
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.record_text import log_line
from kaudit.store.models import RunEvent, RunNode, RunPlacement, RunQueueSpan, RunSeries

#: Most points a series sends; more are thinned keeping each bucket's low and high.
MAX_POINTS = 1200
#: Pods listed per queue in a moment's state.
QUEUE_PODS = 50
#: Records of the event log shown around a moment, and their kinds.
EVENTS_AROUND = 40
AROUND_KINDS = tuple(kind.value for kind in RecordKind
                     if kind not in (RecordKind.NODE, RecordKind.WATCH))


@dataclass(frozen=True)
class Span:
    """The run's first and last record times (microseconds)."""

    start_us: int
    end_us: int

    @property
    def seconds(self) -> float:
        return (self.end_us - self.start_us) / 1e6

    def t(self, ts_us: int | None) -> float | None:
        return None if ts_us is None else round((ts_us - self.start_us) / 1e6, 6)

    def at(self, seconds: float) -> int:
        return self.start_us + round(seconds * 1e6)

    def as_json(self) -> dict[str, Any]:
        return {"start": format_timestamp(self.start_us), "end": format_timestamp(self.end_us),
                "seconds": self.seconds}


def run_span(engine: Engine, run_id: int) -> Span:
    # Two ordered look-ups rather than MIN and MAX in one query, which SQLite answers by
    # scanning the run's whole index range.
    times = select(RunEvent.ts_us).where(RunEvent.run_id == run_id)
    with engine.connect() as connection:
        low = connection.scalar(times.order_by(RunEvent.ts_us).limit(1))
        high = connection.scalar(times.order_by(RunEvent.ts_us.desc()).limit(1))
    if low is None or high is None:
        return Span(0, 0)
    return Span(int(low), int(high))


def has_timeline(engine: Engine, run_id: int) -> bool:
    """Runs replayed before the timeline existed have none (replay them again)."""
    with engine.connect() as connection:
        return connection.scalar(select(RunSeries.id).where(RunSeries.run_id == run_id)
                                 .limit(1)) is not None


def _thin(count: int, values: list[int], limit: int) -> list[int]:
    """Indexes of at most ``limit`` points: per bucket the first, the lowest, the highest and
    the last, in time order, so a step chart keeps its shape and every spike."""
    if count <= limit:
        return list(range(count))
    buckets = max(1, limit // 4)
    size = count / buckets
    keep: set[int] = set()
    for b in range(buckets):
        lo, hi = int(b * size), min(count, int((b + 1) * size))
        if lo >= hi:
            continue
        window = range(lo, hi)
        keep.update((lo, hi - 1, min(window, key=values.__getitem__),
                     max(window, key=values.__getitem__)))
    return sorted(keep)


def series(engine: Engine, run_id: int, span: Span, limit: int = MAX_POINTS) -> dict[str, Any]:
    """Queue lengths, placed pods and allocation after each instant, thinned to ``limit``.

    Allocation is given for the resources some pod of the run requests at some instant (a
    resource allocatable on the nodes but requested by nobody, such as ephemeral-storage
    often is, would only draw a flat 0 % line)."""
    with engine.connect() as connection:
        rows = connection.execute(
            select(RunSeries.ts_us, RunSeries.active, RunSeries.backoff, RunSeries.unschedulable,
                   RunSeries.gated, RunSeries.bound, RunSeries.allocation)
            .where(RunSeries.run_id == run_id).order_by(RunSeries.ts_us, RunSeries.id)).all()
    pending = [r[1] + r[2] + r[3] + r[4] for r in rows]
    keep = _thin(len(rows), pending, limit)
    shares = [orjson.loads(row[6]) for row in rows]
    requested = {name for share in shares for name, value in share.items() if value}
    allocation: dict[str, list[float | None]] = {}
    chosen = [rows[i] for i in keep]
    for position, index in enumerate(keep):
        for name, value in shares[index].items():
            if name in requested:
                allocation.setdefault(name, [None] * len(chosen))[position] = value
    return {
        "points": len(rows),
        "t": [span.t(r[0]) for r in chosen],
        "pending": [pending[i] for i in keep],
        **{queue: [r[1 + q] for r in chosen] for q, queue in enumerate(QUEUES)},
        "bound": [r[5] for r in chosen],
        "allocation": dict(sorted(allocation.items())),
    }


def nodes_in_use(engine: Engine, run_id: int, span: Span) -> dict[str, Any]:
    """How many nodes hold at least one pod kaudit placed, after each instant that changed it
    (the count ``kaudit diff`` calls nodes in use, over time)."""
    with engine.connect() as connection:
        rows = connection.execute(
            select(RunPlacement.node, RunPlacement.start_us, RunPlacement.end_us)
            .where(RunPlacement.run_id == run_id, RunPlacement.by == "kaudit")).all()
    changes: list[tuple[int, int, str]] = []
    for node, start, end in rows:
        changes.append((start, 1, node))
        if end is not None:
            changes.append((end, -1, node))
    changes.sort(key=lambda change: (change[0], -change[1]))
    held: dict[str, int] = defaultdict(int)
    in_use = 0
    times: list[int] = []
    counts: list[int] = []
    for ts_us, step, node in changes:
        before = held[node]
        held[node] = before + step
        in_use += (before == 0 and held[node] > 0) - (before > 0 and held[node] == 0)
        if times and times[-1] == ts_us:
            counts[-1] = in_use
        else:
            times.append(ts_us)
            counts.append(in_use)
    keep = _thin(len(counts), counts, MAX_POINTS)
    return {"t": [span.t(times[i]) for i in keep], "nodes": [counts[i] for i in keep]}


def _bucket_seconds(span: Span, buckets: int) -> float:
    raw = max(span.seconds / buckets, 0.001)
    for step in (0.001, 0.01, 0.1, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 21600, 86400):
        if step >= raw:
            return step
    return raw


def histograms(engine: Engine, run_id: int, span: Span, buckets: int = 120) -> dict[str, Any]:
    """Attempts per time bucket by result, and preemptions per bucket."""
    width = _bucket_seconds(span, buckets)
    width_us = round(width * 1e6)
    bucket = ((RunEvent.ts_us - span.start_us) // width_us).label("bucket")
    with engine.connect() as connection:
        rows = connection.execute(
            select(bucket, RunEvent.kind, RunEvent.node.is_not(None), func.count())
            .where(RunEvent.run_id == run_id, RunEvent.kind.in_(("attempt", "preempt")))
            .group_by(bucket, RunEvent.kind, RunEvent.node.is_not(None))).all()
    scheduled: dict[int, int] = defaultdict(int)
    failed: dict[int, int] = defaultdict(int)
    preempted: dict[int, int] = defaultdict(int)
    for index, kind, has_node, count in rows:
        index = int(index)
        if kind == "preempt":
            preempted[index] += count
        elif has_node:
            scheduled[index] += count
        else:
            failed[index] += count
    used = sorted(set(scheduled) | set(failed) | set(preempted))
    return {
        "bucketSeconds": width,
        "t": [round(i * width, 6) for i in used],
        "scheduled": [scheduled.get(i, 0) for i in used],
        "failed": [failed.get(i, 0) for i in used],
        "preemptions": [preempted.get(i, 0) for i in used],
    }


def _live(model: Any, run_id: int, ts_us: int) -> Any:
    return and_(model.run_id == run_id, model.start_us <= ts_us,
                or_(model.end_us.is_(None), model.end_us > ts_us))


def last_change(engine: Engine, run_id: int, ts_us: int) -> int | None:
    """The time of the run's last record at or before ``ts_us``: every change of the
    timeline is logged, so the cluster at ``ts_us`` is the cluster at that instant (one cache
    entry serves every moment up to the next record)."""
    with engine.connect() as connection:
        return connection.scalar(
            select(RunEvent.ts_us).where(RunEvent.run_id == run_id, RunEvent.ts_us <= ts_us)
            .order_by(RunEvent.ts_us.desc()).limit(1))


def cluster_at(engine: Engine, run_id: int, span: Span, ts_us: int) -> dict[str, Any]:
    """Every node's allocatable and requested resources and pod count at ``ts_us`` (nodes
    ordered by zone, then name), the totals and the queues."""
    with engine.connect() as connection:
        nodes = connection.execute(
            select(RunNode.name, RunNode.zone, RunNode.cpu_milli, RunNode.memory_bytes,
                   RunNode.pods, RunNode.extended, RunNode.unschedulable)
            .where(_live(RunNode, run_id, ts_us)).order_by(RunNode.zone, RunNode.name)).all()
        live = _live(RunPlacement, run_id, ts_us)
        per_node = connection.execute(
            select(RunPlacement.node, func.sum(RunPlacement.cpu_milli),
                   func.sum(RunPlacement.memory_bytes), func.count())
            .where(live).group_by(RunPlacement.node)).all()
        # Extended resources are rare (GPUs): only those placements are read one by one.
        with_extended = connection.execute(
            select(RunPlacement.node, RunPlacement.extended)
            .where(live, RunPlacement.extended != "{}")).all()
        queue_counts = dict(connection.execute(
            select(RunQueueSpan.queue, func.count()).where(_live(RunQueueSpan, run_id, ts_us))
            .group_by(RunQueueSpan.queue)).all())
        queue_pods: dict[str, list[dict[str, Any]]] = {}
        for queue in QUEUES:
            if not queue_counts.get(queue):
                queue_pods[queue] = []
                continue
            queue_pods[queue] = [
                {"pod": pod, "since": span.t(start)} for pod, start in connection.execute(
                    select(RunQueueSpan.pod, RunQueueSpan.start_us)
                    .where(_live(RunQueueSpan, run_id, ts_us), RunQueueSpan.queue == queue)
                    .order_by(RunQueueSpan.start_us, RunQueueSpan.pod).limit(QUEUE_PODS))]
    index = {row.name: i for i, row in enumerate(nodes)}
    cpu = [0] * len(nodes)
    memory = [0] * len(nodes)
    pods = [0] * len(nodes)
    extended_requested: dict[str, list[int]] = {}
    for node, cpu_milli, memory_bytes, count in per_node:
        i = index.get(node)
        if i is None:
            continue  # pods still held by a removed node
        cpu[i], memory[i], pods[i] = int(cpu_milli), int(memory_bytes), int(count)
    for node, extended in with_extended:
        i = index.get(node)
        if i is not None:
            for name, amount in orjson.loads(extended).items():
                extended_requested.setdefault(name, [0] * len(nodes))[i] += amount
    extended_allocatable: dict[str, list[int]] = {}
    for i, row in enumerate(nodes):
        if row.extended != "{}":
            for name, amount in orjson.loads(row.extended).items():
                extended_allocatable.setdefault(name, [0] * len(nodes))[i] = amount
    extended_columns = {name: {"allocatable": extended_allocatable.get(name, [0] * len(nodes)),
                       "requested": extended_requested.get(name, [0] * len(nodes))}
                for name in sorted(set(extended_allocatable) | set(extended_requested))}
    return {
        "nodes": {
            "name": [r.name for r in nodes], "zone": [r.zone for r in nodes],
            "unschedulable": [bool(r.unschedulable) for r in nodes],
            "cpuAllocatable": [r.cpu_milli for r in nodes], "cpuRequested": cpu,
            "memoryAllocatable": [r.memory_bytes for r in nodes], "memoryRequested": memory,
            "podsAllocatable": [r.pods for r in nodes], "pods": pods,
            "extended": extended_columns,
        },
        "totals": {"nodes": len(nodes), "pods": sum(pods),
                   "cpuAllocatable": sum(r.cpu_milli for r in nodes), "cpuRequested": sum(cpu),
                   "memoryAllocatable": sum(r.memory_bytes for r in nodes),
                   "memoryRequested": sum(memory)},
        "queues": {queue: {"count": queue_counts.get(queue, 0), "pods": queue_pods[queue]}
                   for queue in QUEUES},
    }


def events_around(engine: Engine, run_id: int, span: Span, ts_us: int) -> list[dict[str, Any]]:
    """The records of the event log just before and after ``ts_us`` (slot and watch records
    left out); ``current`` says which had happened by then."""
    # Kind by kind, each straight from the (run, kind, time) index (a trace's watch records
    # can outnumber everything else at one instant by thousands), in one round trip. Rows are
    # inserted in log order, so the row id orders the records of one instant; unlike seq it
    # is part of every SQLite index, and the sort needs no table scan.
    half = EVENTS_AROUND // 2
    parts = []
    for kind in AROUND_KINDS:
        around = (select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.pod,
                         RunEvent.node, RunEvent.data)
                  .where(RunEvent.run_id == run_id, RunEvent.kind == kind))
        for part in (around.where(RunEvent.ts_us <= ts_us)
                     .order_by(RunEvent.ts_us.desc(), RunEvent.id.desc()).limit(half),
                     around.where(RunEvent.ts_us > ts_us)
                     .order_by(RunEvent.ts_us, RunEvent.id).limit(half)):
            parts.append(select(part.subquery()))
    with engine.connect() as connection:
        rows = connection.execute(union_all(*parts)).all()
    earlier = sorted((r for r in rows if r.ts_us <= ts_us), key=lambda r: r.seq)[-half:]
    later = sorted((r for r in rows if r.ts_us > ts_us), key=lambda r: r.seq)[:half]
    events = [*earlier, *later]
    out = []
    for seq, ts, kind, pod, node, data in events:
        document = orjson.loads(data)
        out.append({"seq": seq, "t": span.t(ts), "time": format_timestamp(ts), "kind": kind,
                    "pod": pod, "node": node, "text": log_line(kind, node, document),
                    "data": document, "current": ts <= ts_us})
    return out


def state_at(engine: Engine, run_id: int, span: Span, seconds: float) -> dict[str, Any]:
    """The cluster at ``seconds`` into the run (:func:`cluster_at`) and the event log around
    that moment (:func:`events_around`)."""
    ts_us = span.at(seconds)
    return {"t": span.t(ts_us), "time": format_timestamp(ts_us), "span": span.as_json(),
            **cluster_at(engine, run_id, span, ts_us),
            "events": events_around(engine, run_id, span, ts_us)}




def node_at(engine: Engine, run_id: int, span: Span, node: str, seconds: float
            ) -> dict[str, Any]:
    """One node at ``seconds``: its allocatable, labels and the pods it holds."""
    ts_us = span.at(seconds)
    with engine.connect() as connection:
        row = connection.execute(
            select(RunNode.__table__).where(RunNode.run_id == run_id, RunNode.name == node,
                                            RunNode.start_us <= ts_us)
            .order_by(RunNode.start_us.desc()).limit(1)).first()
        if row is None:
            raise UnknownObjectError(f"no node {node!r} in this run at t={seconds:g}s")
        pods = connection.execute(
            select(RunPlacement.pod, RunPlacement.start_us, RunPlacement.by,
                   RunPlacement.priority, RunPlacement.cpu_milli, RunPlacement.memory_bytes,
                   RunPlacement.extended)
            .where(_live(RunPlacement, run_id, ts_us), RunPlacement.node == node)
            .order_by(RunPlacement.start_us, RunPlacement.pod)).all()
        held = _gpus_held(connection, run_id, node, [pod for pod, *_ in pods], ts_us)
    live = row.end_us is None or row.end_us > ts_us
    allocatable = {"cpu": row.cpu_milli, "memory": row.memory_bytes, "pods": row.pods,
                   **orjson.loads(row.extended)}
    whole_gpus = {pod: int(orjson.loads(extended).get(NVIDIA_GPU, 0))
                  for pod, *_, extended in pods}
    return {
        "t": span.t(ts_us), "node": row.name, "zone": row.zone, "present": live,
        "since": span.t(row.start_us), "until": span.t(row.end_us),
        "allocatable": allocatable,
        "gpus": _gpu_devices(int(allocatable.get(NVIDIA_GPU, 0) or 0), held, whole_gpus),
        "labels": orjson.loads(row.labels), "unschedulable": bool(row.unschedulable),
        "taints": row.taints,
        "pods": [{"pod": pod, "since": span.t(start), "by": by, "priority": priority,
                  "cpu": cpu_milli, "memory": memory_bytes, "extended": orjson.loads(extended)}
                 for pod, start, by, priority, cpu_milli, memory_bytes, extended in pods],
    }


def _gpus_held(connection: Any, run_id: int, node: str, pods: list[str], ts_us: int
               ) -> dict[str, dict[str, Any]]:
    """The GPU devices each of ``pods`` (placed on ``node``) holds at ``ts_us``: those its
    latest binding there records."""
    held: dict[str, dict[str, Any]] = {}
    for start in range(0, len(pods), 500):
        rows = connection.execute(
            select(RunEvent.pod, RunEvent.data)
            .where(RunEvent.run_id == run_id, RunEvent.kind == RecordKind.BIND,
                   RunEvent.node == node, RunEvent.ts_us <= ts_us,
                   RunEvent.pod.in_(pods[start:start + 500]))
            .order_by(RunEvent.seq)).all()
        for pod, data in rows:
            gpus = orjson.loads(data).get("gpus") if data else None
            if gpus:
                held[pod] = gpus
            else:
                held.pop(pod, None)
    return held


def _gpu_devices(count: int, held: dict[str, dict[str, Any]], whole: dict[str, int]
                 ) -> list[dict[str, Any]]:
    """Each GPU device of a node of ``count`` devices: the milli its pods hold and the pods.

    ``held`` are the devices the replay gave GPU-sharing pods (their bind records);
    ``whole`` the ``nvidia.com/gpu`` each pod requests. kube-scheduler only counts such
    whole GPUs (which devices a pod gets is the kubelet's device plugin's choice), so a pod
    without devices of its own is shown on the lowest wholly free devices, marked
    ``deviceAssumed``: the panel then holds as many GPUs as the allocation chart counts.
    """
    devices: list[dict[str, Any]] = [{"device": i, "heldMilli": 0, "pods": []}
                                     for i in range(count)]

    def device(index: int) -> dict[str, Any]:
        while index >= len(devices):  # a device the node no longer advertises
            devices.append({"device": len(devices), "heldMilli": 0, "pods": []})
        return devices[index]

    for pod, gpus in sorted(held.items()):
        for index in gpus.get("devices") or []:
            device(index)["heldMilli"] += int(gpus.get("milli") or 0)
            device(index)["pods"].append({"pod": pod, "milli": int(gpus.get("milli") or 0)})
    for pod, number in sorted(whole.items()):
        if pod in held or number <= 0:
            continue
        free = [d["device"] for d in devices if d["heldMilli"] == 0][:number]
        free += range(len(devices), len(devices) + number - len(free))  # more than the node has
        for index in free:
            device(index)["heldMilli"] += MILLI_PER_GPU
            device(index)["pods"].append({"pod": pod, "milli": MILLI_PER_GPU,
                                          "deviceAssumed": True})
    for entry in devices:
        entry["freeMilli"] = max(MILLI_PER_GPU - entry["heldMilli"], 0)
    return devices
