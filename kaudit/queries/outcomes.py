"""What became of each pod in a run, or in the recorded cluster (the ``recorded`` pseudo-run).

For a replay run the outcome is read from its event log; for ``recorded`` it is folded from the
trace itself: the first event that sets ``spec.nodeName`` of a pod created without one is the
recorded placement, and a pod whose conditions say ``PreemptionByScheduler`` was preempted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.queries.runs import get_run
from kaudit.store.models import Run, RunEvent, Trace
from kaudit.store.traces import get_trace, iter_events

RECORDED = "recorded"


@dataclass
class PodOutcome:
    key: str
    created_us: int | None = None
    node: str | None = None
    bound_us: int | None = None
    attempts: int = 0
    preempted: bool = False
    #: seq of the attempt that bound the pod, and of its last attempt (replay runs only).
    binding_attempt: int | None = None
    last_attempt: int | None = None
    tied: list[str] = field(default_factory=list)
    #: Its last nomination's candidate nodes tied after all of upstream's criteria, and
    #: whether that dry run stopped early (its candidates depended on a random offset).
    nomination_tied: list[str] = field(default_factory=list)
    nomination_partial: bool = False
    #: Whether it was evicted or spared was decided by a tie among equally ranked victims (or
    #: among tied nodes) of some preemption.
    preempted_by_tie: bool = False
    #: Deleted by the trace while it waited for a node (never bound).
    deleted_pending: bool = False
    #: Bound by the trace (another scheduler, spec.nodeName) rather than by kaudit.
    bound_elsewhere: bool = False

    @property
    def pending_at_end(self) -> bool:
        """Never bound, still waiting when the trace ends (tried or held back by PreEnqueue)."""
        return (self.node is None and not self.preempted and not self.deleted_pending
                and not self.bound_elsewhere)

    @property
    def never_scheduled(self) -> bool:
        """Never bound: waiting at the end or deleted while waiting."""
        return self.pending_at_end or (self.node is None and not self.preempted
                                       and self.deleted_pending)

    @property
    def pending_us(self) -> int | None:
        if self.created_us is None or self.bound_us is None:
            return None
        return self.bound_us - self.created_us

    def as_json(self) -> dict[str, Any]:
        return {"pod": self.key, "node": self.node, "attempts": self.attempts,
                "preempted": self.preempted,
                "pendingSeconds": None if self.pending_us is None else self.pending_us / 1e6}


@dataclass
class Outcomes:
    name: str
    trace_id: int
    run_id: int | None
    pods: dict[str, PodOutcome]
    #: The run's effective configuration and feature gates (JSON text); None for ``recorded``.
    config: str | None = None
    #: Allocation, imbalance and fragmentation over the run (see kaudit.replay.allocation);
    #: for ``recorded``, None until the trace has been replayed once.
    utilisation: dict[str, Any] | None = None
    #: The Kubernetes release whose kube-scheduler the run mirrored; None for ``recorded``.
    kubernetes_version: str | None = None


def run_outcomes(engine: Engine, run_ref: str, trace_ref: str | None = None) -> Outcomes:
    """Outcomes of a run by name, or of ``recorded`` (then ``trace_ref`` names the trace)."""
    if run_ref == RECORDED:
        if trace_ref is None:
            raise ValueError("the recorded pseudo-run needs a trace")
        trace = get_trace(engine, trace_ref)
        return Outcomes(RECORDED, trace.id, None, _recorded(engine, trace.id),
                        utilisation=_recorded_utilisation(engine, trace.id))
    run = get_run(engine, run_ref)
    with engine.connect() as connection:
        trace_id, config, options, summary = connection.execute(
            select(Run.trace_id, Run.config, Run.options, Run.summary)
            .where(Run.id == run.id)).one()
    gates = orjson.loads(options).get("featureGates")
    identity = orjson.dumps([orjson.loads(config), gates], option=orjson.OPT_SORT_KEYS).decode()
    summary_json = orjson.loads(summary) if summary else {}
    utilisation = {k: summary_json[k] for k in ("allocation", "imbalance", "fragmentation")
                   if k in summary_json}
    return Outcomes(run.name, int(trace_id), run.id, _replayed(engine, run.id), identity,
                    utilisation or None, run.kubernetes_version)


def _replayed(engine: Engine, run_id: int) -> dict[str, PodOutcome]:
    pods: dict[str, PodOutcome] = {}
    with engine.connect() as connection:
        rows = connection.execute(
            select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.pod, RunEvent.node,
                   RunEvent.data)
            .where(RunEvent.run_id == run_id,
                   RunEvent.kind.in_(("queue", "attempt", "bind", "preempt", "nominate")))
            .order_by(RunEvent.seq)).all()
    for seq, ts_us, kind, pod, node, data in rows:
        if pod is None:
            continue
        outcome = pods.setdefault(pod, PodOutcome(pod))
        if kind == "queue":
            if outcome.created_us is None:
                outcome.created_us = ts_us
            transition = orjson.loads(data)
            if transition["to"] == "none" and transition["event"] == "PodDelete":
                outcome.deleted_pending = outcome.node is None
        elif kind == "attempt":
            outcome.attempts += 1
            outcome.last_attempt = seq
            if node:
                outcome.binding_attempt = seq
        elif kind == "bind":
            if orjson.loads(data).get("by") == "kaudit":
                outcome.node, outcome.bound_us = node, ts_us
            else:
                outcome.bound_elsewhere = True
        elif kind == "preempt":
            outcome.preempted = True
            outcome.preempted_by_tie = bool(orjson.loads(data).get("tie"))
        elif kind == "nominate":
            facts = orjson.loads(data)
            outcome.nomination_tied = facts.get("tiedNodes") or []
            outcome.nomination_partial = bool(facts.get("partialDryRun"))
            for spared in facts.get("tiedVictims") or ():
                pods.setdefault(spared, PodOutcome(spared)).preempted_by_tie = True
    # A pod kaudit queued but never tried (held back by PreEnqueue) is kept: it waited too.
    return {k: v for k, v in pods.items()
            if v.attempts or v.preempted or (v.created_us is not None and not v.bound_elsewhere)}


def _recorded(engine: Engine, trace_id: int) -> dict[str, PodOutcome]:
    pods: dict[str, PodOutcome] = {}
    created_bound: set[str] = set()
    for event in iter_events(engine, trace_id):
        if event.kind != "Pod":
            continue
        key = f"{event.namespace}/{event.name}"
        spec = event.object.get("spec") or {}
        if key not in pods:
            pods[key] = PodOutcome(key, created_us=event.ts_us)
            if spec.get("nodeName"):
                created_bound.add(key)
        outcome = pods[key]
        if spec.get("nodeName") and outcome.node is None and key not in created_bound:
            outcome.node, outcome.bound_us = spec["nodeName"], event.ts_us
        if event.type == "DELETED" and outcome.node is None:
            outcome.deleted_pending = True
        for condition in (event.object.get("status") or {}).get("conditions") or []:
            if condition.get("reason") == "PreemptionByScheduler":
                outcome.preempted = True
    return {k: v for k, v in pods.items() if k not in created_bound}


def _recorded_utilisation(engine: Engine, trace_id: int) -> dict[str, Any] | None:
    """Allocation of the recorded cluster, stored by the trace's first replay (None before)."""
    with engine.connect() as connection:
        stored = connection.execute(select(Trace.recorded_utilisation)
                                    .where(Trace.id == trace_id)).scalar_one_or_none()
    return None if stored is None else orjson.loads(stored)  # type: ignore[no-any-return]
