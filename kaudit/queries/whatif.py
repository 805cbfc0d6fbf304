"""A run at a moment, as a what-if reads it: the objects of the cluster the run simulated at
time t and the run's configuration.

The objects are :func:`kaudit.queries.export.exported_events` folded up to t (the trace's
objects with kaudit's own placements); evaluating a pod against them is a use case,
:func:`kaudit.services.whatif.evaluate_pod_at`. Read-only: nothing is stored, and nothing
here builds a scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from kaudit.model.timestamps import format_timestamp
from kaudit.queries.export import exported_events, run_source
from kaudit.queries.instants import resolve_instant
from kaudit.queries.runs import get_run, run_configuration
from kaudit.queries.timeline import run_span


@dataclass(frozen=True)
class RunMoment:
    """The cluster of run ``run`` at ``t`` seconds from its start, and its configuration."""

    run: str
    t: float | None
    time: str
    #: The objects alive at that instant (nodes, pods on their nodes, namespaces, ...).
    objects: list[dict[str, Any]]
    #: The run's stored effective KubeSchedulerConfiguration.
    config: Any
    #: The feature gates the run was replayed with, as ``kube-scheduler --feature-gates``.
    feature_gates: str
    #: The same gates, by name.
    gate_values: dict[str, bool]
    #: The Kubernetes release whose kube-scheduler the run mirrored (None when unknown).
    kubernetes_version: str | None


def run_moment(engine: Engine, run_ref: str, t: str | None) -> RunMoment:
    """The run's cluster at ``t`` (seconds from the run's start or RFC 3339; the end when
    None)."""
    source = run_source(engine, run_ref)
    span = run_span(engine, source.run_id)
    at_us = resolve_instant(t, span, "t")
    at_us = span.end_us if at_us is None else at_us
    alive: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event in exported_events(engine, source):
        if event.ts_us > at_us:
            break
        metadata = event.object.get("metadata") or {}
        key = (event.kind, metadata.get("namespace") or "", metadata.get("name") or "")
        if event.type == "DELETED":
            alive.pop(key, None)
        else:
            alive[key] = event.object
    _, gates = run_configuration(engine, source.run_id)
    return RunMoment(run=source.name, t=span.t(at_us), time=format_timestamp(at_us),
                     objects=list(alive.values()), config=source.config,
                     feature_gates=",".join(f"{name}={'true' if on else 'false'}"
                                            for name, on in gates.items()),
                     gate_values=dict(gates),
                     kubernetes_version=get_run(engine, source.name).kubernetes_version)
