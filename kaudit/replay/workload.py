"""What a replay reads from the whole trace before it starts: the recorded lifetimes of pods
(for ``--lifetime relative``) and the shape of every pod (the workload the FGD paper's plugins
and the GPU-sharing report expect, :mod:`kaudit.fgd.workload`)."""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.cluster.gpu_frag import PodShape, pod_shape
from kaudit.model.pod import FINISHED_PHASES, parse_pod
from kaudit.replay.feed import DATA_ERRORS
from kaudit.store.traces import StoredEvent


def recorded_lifetimes(events: Iterator[StoredEvent]) -> dict[str, tuple[int | None, int | None]]:
    """Per pod uid: the trace's bind time and deletion (or completion) time."""
    lifetimes: dict[str, tuple[int | None, int | None]] = {}
    for event in events:
        if event.kind != "Pod":
            continue
        uid = (event.object.get("metadata") or {}).get("uid") or f"{event.namespace}/{event.name}"
        bound, gone = lifetimes.get(uid, (None, None))
        if bound is None and (event.object.get("spec") or {}).get("nodeName"):
            bound = event.ts_us
        phase = (event.object.get("status") or {}).get("phase")
        if gone is None and (event.type == "DELETED" or phase in FINISHED_PHASES):
            gone = event.ts_us
        lifetimes[uid] = (bound, gone)
    return lifetimes


def workload_shapes(events: Iterator[StoredEvent]) -> list[PodShape]:
    """The shape (CPU, GPU-milli, GPU count, models) of every pod of the trace, once each:
    the workload whose typical pods FGD and the fragmentation measure expect."""
    shapes: list[PodShape] = []
    seen: set[str] = set()
    for event in events:
        if event.kind != "Pod" or event.type == "DELETED":
            continue
        uid = (event.object.get("metadata") or {}).get("uid") or f"{event.namespace}/{event.name}"
        if uid in seen:
            continue
        seen.add(uid)
        try:
            pod = parse_pod(event.object, priority=0)
        except DATA_ERRORS:
            continue  # ingest accepted it; the replay reports what is wrong with it
        shapes.append(pod_shape(pod.non_zero_cpu, pod.gpu))
    return shapes
