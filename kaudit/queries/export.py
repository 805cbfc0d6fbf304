"""A replayed run as the watch events of the cluster it simulated (``kaudit export``).

The run's event log orders everything that happened: each trace event it applied (``watch``
records name the trace event), and kaudit's own actions. Folding the two gives the trace the
replayed cluster would have produced:

* a pod kaudit scheduled carries kaudit's node from kaudit's bind on (a ``MODIFIED`` at the bind
  time) and no node before; the trace's own recorded binding is not repeated, nor the recorded
  scheduler's nomination of it or its preemption (``PreemptionByScheduler``): kaudit's stand;
* a pod kaudit preempted terminates (a ``MODIFIED`` with ``deletionTimestamp`` and the
  ``DisruptionTarget`` condition) when its deletion is accepted; it, or a pod deleted at the end
  of its relative lifetime, is ``DELETED`` when gone, and the trace's later events for it are
  left out;
* a pod kaudit created in place of a preempted one (as its controller would) is ``ADDED``;
* a ResourceClaim kaudit wrote (generated from a template, allocated and reserved, released)
  is exported as written (``claim`` records), in place of the trace's versions of it (a
  claim whose status is kaudit's is exported as kaudit kept it; one kaudit deleted is not
  brought back by the trace's later updates), and the pods carry the claims kaudit generated
  for them;
* everything else is the trace's event as recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.cluster.state import object_key
from kaudit.errors import DatabaseError
from kaudit.model.pod import FINISHED_PHASES, terminating_object
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.runs import get_run
from kaudit.store.models import Run, RunEvent
from kaudit.store.traces import iter_events

#: Deletions of kaudit's own making (the trace's are exported as the trace's events).
OWN_DELETIONS = frozenset({"preempted", "lifetime"})


@dataclass(frozen=True)
class ExportedEvent:
    ts_us: int
    type: str
    object: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.object.get("kind"))


@dataclass(frozen=True)
class RunSource:
    """What an export needs to know about the run."""

    run_id: int
    name: str
    trace_id: int
    status: str
    config: dict[str, Any]
    lifetime: str = "recorded"
    #: The Kubernetes release the run was replayed as (an export's header names it).
    kubernetes_version: str | None = None


def run_source(engine: Engine, ref: str) -> RunSource:
    run = get_run(engine, ref)
    with engine.connect() as connection:
        trace_id, config, release = connection.execute(
            select(Run.trace_id, Run.config, Run.kubernetes_version)
            .where(Run.id == run.id)).one()
    return RunSource(run.id, run.name, int(trace_id), run.status, orjson.loads(config),
                     run.lifetime, release)


def _uid(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("uid") or object_key(obj)


def _on_node(obj: dict[str, Any], node: str | None) -> dict[str, Any]:
    spec = dict(obj.get("spec") or {})
    if node:
        spec["nodeName"] = node
    else:
        spec.pop("nodeName", None)
    return {**obj, "spec": spec}


def _scheduled_by_kaudit(engine: Engine, run_id: int) -> set[str]:
    """Pods kaudit queued: their placement is kaudit's, not the trace's."""
    with engine.connect() as connection:
        return set(connection.scalars(
            select(RunEvent.pod).distinct()
            .where(RunEvent.run_id == run_id, RunEvent.kind == "queue")))


def _log(engine: Engine, run_id: int, batch: int = 5000) -> Iterator[tuple[Any, ...]]:
    kinds = ("watch", "bind", "terminate", "delete", "create", "claim")
    last = -1
    while True:
        with engine.connect() as connection:
            rows = connection.execute(
                select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.pod, RunEvent.node,
                       RunEvent.data)
                .where(RunEvent.run_id == run_id, RunEvent.seq > last,
                       RunEvent.kind.in_(kinds))
                .order_by(RunEvent.seq).limit(batch)).all()
        if not rows:
            return
        yield from rows
        last = rows[-1][0]


def _with_claim_statuses(pod: dict[str, Any], generated: dict[str, str] | None
                         ) -> dict[str, Any]:
    """The pod with the claims kaudit generated for it (pod claim entry → claim name) in
    ``status.resourceClaimStatuses``, in place of any the trace named."""
    if not generated:
        return pod
    statuses = [s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
                if s.get("name") not in generated]
    statuses += [{"name": entry, "resourceClaimName": name}
                 for entry, name in generated.items()]
    return {**pod, "status": {**(pod.get("status") or {}), "resourceClaimStatuses": statuses}}


def _reserved_for_managed(claim: dict[str, Any], managed: set[str]) -> bool:
    namespace = (claim.get("metadata") or {}).get("namespace") or ""
    return any(f"{namespace}/{ref.get('name')}" in managed
               for ref in (claim.get("status") or {}).get("reservedFor") or [])


def exported_events(engine: Engine, source: RunSource) -> Iterator[ExportedEvent]:
    """The replayed cluster's watch events, in order (see the module docstring)."""
    managed = _scheduled_by_kaudit(engine, source.run_id)
    trace = iter_events(engine, source.trace_id)
    last: dict[str, dict[str, Any]] = {}  # pod key -> its latest object (kaudit's node on it)
    node_of: dict[str, str] = {}  # pod key -> kaudit's node
    removed: set[str] = set()  # uids kaudit deleted: the trace's later events are left out
    victims: dict[str, dict[str, Any]] = {}  # preempted pods, for their replacements
    seen: set[str] = set()
    placed_by_trace: set[str] = set()
    generated_for: dict[str, dict[str, str]] = {}  # pod key -> its claims kaudit generated
    claims_kept: set[str] = set()  # claims whose status is kaudit's (their claim records)
    claims_gone: set[str] = set()  # claims kaudit deleted
    for _seq, ts_us, kind, pod, node, data in _log(engine, source.run_id):
        document = orjson.loads(data)
        if kind == "watch":
            wanted = document["traceSeq"]
            event = next(trace, None)
            while event is not None and event.seq < wanted:
                event = next(trace, None)
            if event is None or event.seq != wanted:
                raise DatabaseError(f"run {source.name!r} refers to event {wanted} of its trace, "
                                    "which is not stored")
            obj = event.object
            if event.kind == "ResourceClaim":
                claim_key = object_key(obj)
                if claim_key in claims_gone and event.type != "ADDED":
                    continue  # updates of a claim kaudit deleted are not applied
                claims_gone.discard(claim_key)
                if event.type != "DELETED" and (claim_key in claims_kept or
                                                _reserved_for_managed(obj, managed)):
                    continue  # kaudit's version follows (a claim record)
            if event.kind != "Pod":
                yield ExportedEvent(ts_us, event.type, obj)
                continue
            key, uid = object_key(obj), _uid(obj)
            if uid in removed:
                continue
            if uid not in seen:
                seen.add(uid)
                if (obj.get("spec") or {}).get("nodeName"):
                    placed_by_trace.add(uid)  # created bound: the trace's placement stands
            if source.lifetime == "relative" and key in node_of and (
                    event.type == "DELETED" or _finished(obj)):
                continue  # kaudit keeps the pod for its recorded run time from its own bind
            if key in managed and uid not in placed_by_trace:
                obj = _without_recorded_scheduling(_on_node(obj, node_of.get(key)))
                obj = _with_claim_statuses(obj, generated_for.get(key))
            if event.type == "DELETED":
                last.pop(key, None)
                node_of.pop(key, None)
            else:
                last[key] = obj
            yield ExportedEvent(ts_us, event.type, obj)
        elif kind == "bind" and document.get("by") == "kaudit" and pod in last:
            node_of[pod] = node
            last[pod] = _on_node(last[pod], node)
            yield ExportedEvent(ts_us, "MODIFIED", last[pod])
        elif kind == "terminate" and pod in last:
            obj = last[pod] = terminating_object(last[pod], format_timestamp(ts_us))
            victims[pod] = obj
            yield ExportedEvent(ts_us, "MODIFIED", obj)
        elif kind == "delete" and document.get("reason") in OWN_DELETIONS and pod in last:
            obj = last.pop(pod)
            node_of.pop(pod, None)
            removed.add(_uid(obj))
            if document["reason"] == "preempted":
                victims[pod] = obj
            yield ExportedEvent(ts_us, "DELETED", obj)
        elif kind == "claim":
            claim = document["object"]
            claim_key = object_key(claim)
            if document["type"] == "DELETED":
                claims_kept.discard(claim_key)
                claims_gone.add(claim_key)
            else:
                claims_kept.add(claim_key)
                claims_gone.discard(claim_key)
            entry = ((claim.get("metadata") or {}).get("annotations") or {}).get(
                "resource.kubernetes.io/pod-claim-name")
            if document["type"] == "ADDED" and entry and pod:
                generated_for.setdefault(pod, {})[entry] = claim["metadata"]["name"]
                if pod in last:  # shown with the pod's next event (its binding)
                    last[pod] = _with_claim_statuses(last[pod], generated_for[pod])
            yield ExportedEvent(ts_us, document["type"], claim)
        elif kind == "create" and pod and (document.get("replaces") in victims
                                           or document.get("replaces") in last):
            # The controller creates the replacement once the victim's deletion is accepted,
            # which may be before the victim is gone (or the trace deletes it first).
            replaced = document["replaces"]
            victim = victims[replaced] if replaced in victims else last[replaced]
            obj = _with_claim_statuses(_replacement(victim, pod), generated_for.get(pod))
            last[pod] = obj
            yield ExportedEvent(ts_us, "ADDED", obj)


def _without_recorded_scheduling(obj: dict[str, Any]) -> dict[str, Any]:
    """A pod kaudit scheduled, without the recorded scheduler's own decisions about it (its
    nomination and a preemption by that scheduler): kaudit's replace them in the export."""
    status = obj.get("status") or {}
    conditions = status.get("conditions") or []
    kept = [c for c in conditions if c.get("reason") != "PreemptionByScheduler"]
    if "nominatedNodeName" not in status and len(kept) == len(conditions):
        return obj
    cleaned = {k: v for k, v in status.items() if k != "nominatedNodeName"}
    if conditions:
        cleaned["conditions"] = kept
    return {**obj, "status": cleaned}


def _finished(obj: dict[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") in FINISHED_PHASES


def _replacement(victim: dict[str, Any], key: str) -> dict[str, Any]:
    """The pod a controller creates in place of a preempted one, as the replay made it."""
    namespace, _, name = key.rpartition("/")
    metadata = {k: v for k, v in (victim.get("metadata") or {}).items()
                if k not in ("deletionTimestamp", "deletionGracePeriodSeconds",
                             "resourceVersion", "creationTimestamp")}
    metadata.update(name=name, uid="kaudit-" + hashlib.sha1(key.encode()).hexdigest()[:24])
    if namespace:
        metadata["namespace"] = namespace
    return {**_on_node(victim, None), "metadata": metadata, "status": {"phase": "Pending"}}
