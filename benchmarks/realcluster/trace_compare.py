"""Compare two traces of one cluster, as ``kaudit ingest`` stored them: the recording of
``kaudit record`` (list and watch) and the API server's audit log. Both must hold the same
objects and the same transitions; the times differ (the watch stamps arrival, the audit log
the server's answer), so the comparison is of what happened, object by object, not when.

Per object (kind, namespace, name, uid): whether it was created and deleted in the window, and
its *transitions*, the distinct consecutive values of what the scheduler reads:

- pods: node, nominated node, finished or not, the ``PodScheduled`` condition (status,
  reason, message), the ``DisruptionTarget`` condition, whether deletion started;
- nodes: ``spec.unschedulable``, taints, labels, allocatable;
- PodDisruptionBudgets: ``status.disruptionsAllowed``;
- everything else: its ``spec`` (when it has one).

And the scheduler's decisions as the audit finds them in each trace
(:func:`kaudit.replay.audit_plan.plan_decisions`): binds, unschedulable messages,
preemptions' nominated nodes (their victims are compared as the victims' DisruptionTarget
transitions).

Objects that exist before the recording starts appear in the recording as ``ADDED`` at its
start and in the audit log at their creation, which may be earlier than the log's window: an
object is compared from the first state both traces hold of it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kaudit.replay.audit_plan import plan_decisions
from kaudit.store.traces import StoredEvent

ObjectKey = tuple[str, str, str, str]  # kind, namespace, name, uid
#: The cluster's own objects and kinds outside the workload that neither trace needs to agree
#: on in time (the API server's bootstrap writes them before any recording can start).
IGNORED_NAMESPACES = frozenset({"kube-node-lease"})


def _condition(obj: dict[str, Any], kind: str) -> tuple[str, str, str] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return (str(condition.get("status")), str(condition.get("reason") or ""),
                    str(condition.get("message") or ""))
    return None


def _canonical(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def state_of(kind: str, obj: dict[str, Any]) -> tuple[Any, ...]:
    """What the comparison holds of ``obj``: the fields of its kind the scheduler reads."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    metadata = obj.get("metadata") or {}
    if kind == "Pod":
        # Finished or not, not the phase: the scheduler counts a bound pod on its node until it
        # finishes, whatever the kubelet reports meanwhile (and the audit log cannot order a
        # kubelet's status patch against a concurrent delete: neither carries its commit).
        finished = status.get("phase") in ("Succeeded", "Failed")
        return (spec.get("nodeName") or "", status.get("nominatedNodeName") or "",
                finished, _condition(obj, "PodScheduled"),
                _condition(obj, "DisruptionTarget"), metadata.get("deletionTimestamp") is not None)
    if kind == "Node":
        return (bool(spec.get("unschedulable")), _canonical(spec.get("taints") or []),
                _canonical(metadata.get("labels") or {}),
                _canonical(status.get("allocatable") or {}))
    if kind == "PodDisruptionBudget":
        return (_canonical(spec), status.get("disruptionsAllowed"))
    return (_canonical(spec),) if spec else ()


#: The state after a deletion: an object that changes after it came back (a trace's error).
DELETED: tuple[Any, ...] = ("deleted",)


@dataclass
class ObjectHistory:
    """One object's life in one trace."""

    created: bool = False
    deleted: bool = False
    first_us: int = 0
    last_us: int = 0
    states: list[tuple[Any, ...]] = field(default_factory=list)

    def see(self, state: tuple[Any, ...]) -> None:
        if not self.states or self.states[-1] != state:
            self.states.append(state)


def histories(events: Iterable[StoredEvent]) -> dict[ObjectKey, ObjectHistory]:
    """Every object's history in a trace, by (kind, namespace, name, uid)."""
    found: dict[ObjectKey, ObjectHistory] = defaultdict(ObjectHistory)
    for event in events:
        if event.namespace in IGNORED_NAMESPACES:
            continue
        uid = str((event.object.get("metadata") or {}).get("uid") or "")
        history = found[(event.kind, event.namespace, event.name, uid)]
        if not history.first_us:
            history.first_us = event.ts_us
        history.last_us = event.ts_us
        if event.type == "ADDED":
            history.created = True
        if event.type == "DELETED":
            history.deleted = True
            history.see(DELETED)
        else:
            history.see(state_of(event.kind, event.object))
    return dict(found)


def _aligned(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> tuple[list[Any], list[Any]]:
    """Both state lists from the first state both hold (a trace that starts later begins
    with the object as it then was)."""
    for start_a, state in enumerate(a):
        if state in b:
            return a[start_a:], b[b.index(state):]
    return a, b


@dataclass
class TraceComparison:
    """What differs between the two traces; empty lists when they agree."""

    objects: dict[str, int]
    only_in_recording: list[str]
    only_in_audit_log: list[str]
    different_transitions: list[str]
    different_deletions: list[str]
    decisions: dict[str, int]
    different_decisions: list[str]

    @property
    def agree(self) -> bool:
        return not (self.only_in_recording or self.only_in_audit_log
                    or self.different_transitions or self.different_deletions
                    or self.different_decisions)

    def as_json(self) -> dict[str, Any]:
        return {"agree": self.agree, "objects": self.objects,
                "onlyInRecording": self.only_in_recording,
                "onlyInAuditLog": self.only_in_audit_log,
                "differentTransitions": self.different_transitions,
                "differentDeletions": self.different_deletions,
                "decisions": self.decisions, "differentDecisions": self.different_decisions}


def _label(key: ObjectKey) -> str:
    kind, namespace, name, _ = key
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def _decision_keys(events: list[StoredEvent]) -> list[tuple[str, str, str, str, str]]:
    # Not a preemption's victims: which nomination a victim belongs to is the audit plan's
    # inference from times (the recording does not say), and the two traces' times differ.
    # Which pods were preempted is compared as their DisruptionTarget transitions.
    plan = plan_decisions(events)
    return sorted((d.pod, d.uid, d.kind, d.node or "", d.message or "") for d in plan.decisions)


def compare_traces(recording: list[StoredEvent], audit_log: list[StoredEvent]) -> TraceComparison:
    """Compare the recording with the audit log (both whole traces, in replay order)."""
    left, right = histories(recording), histories(audit_log)
    start = min((e.ts_us for e in recording), default=0)
    end = max((e.ts_us for e in recording), default=0)
    only_left = sorted(_label(k) for k in left.keys() - right.keys())
    # The audit log may hold objects that lived and went before the recording started, or
    # that came after it stopped: the recording cannot have seen them.
    only_right = sorted(_label(k) for k in right.keys() - left.keys()
                        if right[k].last_us >= start and right[k].first_us <= end)
    transitions, deletions = [], []
    for key in sorted(left.keys() & right.keys()):
        # Only an object that existed before the recording started may begin later in it.
        existed = right[key].first_us < start or not right[key].created
        if not existed and left[key].created != right[key].created:
            deletions.append(f"{_label(key)}: created in "
                             f"{'the recording' if left[key].created else 'the audit log'} only")
        a, b = (_aligned(left[key].states, right[key].states) if existed
                else (left[key].states, right[key].states))
        if a != b:
            transitions.append(f"{_label(key)}: recording {a} vs audit log {b}")
        if left[key].deleted != right[key].deleted:
            deletions.append(f"{_label(key)}: deleted in "
                             f"{'the recording' if left[key].deleted else 'the audit log'} only")
    decisions_left, decisions_right = _decision_keys(recording), _decision_keys(audit_log)
    only_recording = set(decisions_left) - set(decisions_right)
    only_audit_log = set(decisions_right) - set(decisions_left)
    different = sorted({f"recording only: {d}" for d in only_recording}
                       | {f"audit log only: {d}" for d in only_audit_log})
    objects: dict[str, int] = defaultdict(int)
    for kind, *_ in left.keys() & right.keys():
        objects[kind] += 1
    counts: dict[str, int] = defaultdict(int)
    for _, _, kind, *_ in decisions_left:
        counts[kind] += 1
    return TraceComparison(dict(sorted(objects.items())), only_left, only_right, transitions,
                           deletions, dict(sorted(counts.items())), different)
