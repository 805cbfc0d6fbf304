"""The recorded changes a lagging view of the audit may undo (a node added, updated or
removed; a pod counted on a node or no longer: bound, finished, deleted; a
PodDisruptionBudget's allowed disruptions), and the views to try.

A change keeps the object before and after it, so the audit can put the cluster back as it was
just before the last few changes (the ones a scheduler whose view lags the recording had not
seen yet) and redo them afterwards. Only changes to what kube-scheduler reads are kept: a node's
schedulability, taints, labels and allocatable (``nodeSchedulingPropertiesChange`` in
``pkg/scheduler/eventhandlers.go``, Kubernetes v1.34), a pod's node, a budget's spec and
``disruptionsAllowed`` (preemption's PDB violations); a status write that changes none of them
changes no decision.

:func:`lagging_views` lists the states a scheduler whose view lags the recording could have
seen, most plausible first (the fewest changes moved): the last few changes not yet seen (a
suffix of the recording), or
the last few of one kind only (the scheduler watches pods, nodes and budgets through separate
informers, each with its own lag), or the last few other than bindings (it assumed its own
bindings before the API recorded them); its own writes recorded just after already made, the
first few or one alone (bindings run in parallel goroutines and commit in any order); and both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from kaudit.cluster.objects import apply_object
from kaudit.cluster.state import ClusterState
from kaudit.model.pod import FINISHED_PHASES

#: The kinds whose changes a lagging view may undo.
TRACKED_KINDS = frozenset({"Pod", "Node", "PodDisruptionBudget"})

Write = tuple[str, str, str]  # (kind of write, pod, node)
View = tuple[list["Change"], list[Write]]


def counted_on_node(pod: dict[str, Any]) -> bool:
    """Whether the scheduler's cache counts ``pod`` on a node: bound and not finished."""
    return bool((pod.get("spec") or {}).get("nodeName")) and \
        (pod.get("status") or {}).get("phase") not in FINISHED_PHASES


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def scheduling_state(kind: str, obj: dict[str, Any] | None) -> tuple[Any, ...] | None:
    """What the scheduler reads of a node or a counted pod (None: absent, or not counted)."""
    if obj is None:
        return None
    spec = obj.get("spec") or {}
    if kind == "PodDisruptionBudget":
        return (_canonical(spec), (obj.get("status") or {}).get("disruptionsAllowed"))
    if kind == "Pod":
        return (spec.get("nodeName"), _canonical(spec.get("containers")),
                _canonical(spec.get("initContainers")), _canonical(spec.get("overhead")))
    metadata = obj.get("metadata") or {}
    return (bool(spec.get("unschedulable")), _canonical(spec.get("taints")),
            _canonical(metadata.get("labels")),
            _canonical((obj.get("status") or {}).get("allocatable")))


@dataclass(frozen=True)
class Change:
    """One recorded change of a node or of a pod counted on a node."""

    ts_us: int
    kind: str  # "Pod" or "Node"
    key: str  # namespace/name ("/name" for a node)
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    event: str = "MODIFIED"  # the trace event's type

    @property
    def is_binding(self) -> bool:
        """A pod bound: counted on a node from now on, not before."""
        return self.kind == "Pod" and self.before is None and self.after is not None

    def describe(self) -> str:
        name = self.key.lstrip("/")
        if self.kind == "PodDisruptionBudget":
            return f"update PodDisruptionBudget {name}"
        if self.kind == "Node":
            verb = "add" if self.before is None else "remove" if self.after is None else "update"
            return f"{verb} Node {name}"
        if self.after is None:
            node = ((self.before or {}).get("spec") or {}).get("nodeName")
            verb = "delete" if self.event == "DELETED" else "finish"
            return f"{verb} {name} on {node}"
        return f"bind {name} {(self.after.get('spec') or {}).get('nodeName')}"

    def uids_to_check(self, cluster: ClusterState) -> list[str]:
        """After :meth:`undo`: the pods whose node may now hold more than it can (a pod put
        back; one pod of a node taken back to an earlier allocatable)."""
        if self.kind == "Pod" and self.before is not None:
            return [str((self.before.get("metadata") or {}).get("uid") or "")]
        if self.kind == "Node" and self.before is not None:
            slot = cluster.slot_of.get((self.before.get("metadata") or {}).get("name") or "")
            return [] if slot is None else list(cluster.pods_on[slot])[:1]
        return []

    def undo(self, cluster: ClusterState) -> None:
        _put(cluster, self.before, self.after)

    def redo(self, cluster: ClusterState) -> None:
        _put(cluster, self.after, self.before)


def _put(cluster: ClusterState, state: dict[str, Any] | None,
         other: dict[str, Any] | None) -> None:
    if state is not None:
        apply_object(cluster, state)
    elif other is not None:
        apply_object(cluster, other, deleted=True)


def _suffixes(changes: list[Change]) -> list[list[Change]]:
    return [changes[len(changes) - n:] for n in range(1, len(changes) + 1)]


def lagging_views(unseen: list[Change], in_flight: list[Write]) -> list[View]:
    """The views to try, most plausible first, each once: ``unseen`` are the changes recorded
    within the window before the decision (oldest first), ``in_flight`` the scheduler's own
    writes recorded within the window after it (in recorded order)."""
    backs = _suffixes(unseen)
    kinds = sorted({change.kind for change in unseen})
    if len(kinds) > 1:
        for kind in kinds:
            backs += _suffixes([change for change in unseen if change.kind == kind])
    # The scheduler assumes its own bindings in its cache before the API records them: the
    # changes it had not seen may be the last few others (deletions, node updates), its
    # bindings recorded among them already known.
    others = [change for change in unseen if not change.is_binding]
    if len(others) < len(unseen):
        backs += _suffixes(others)
    aheads = [in_flight[:n] for n in range(1, len(in_flight) + 1)]
    aheads += [[write] for write in in_flight[1:]]
    views: list[View] = [(back, []) for back in backs]
    views += [([], ahead) for ahead in aheads]
    views += [(back, ahead) for ahead in aheads for back in backs]
    # The fewer changes a view moves, the smaller the lag it supposes: those come first,
    # whatever their family, so a cap on the views tried keeps the most plausible of each.
    views.sort(key=lambda view: len(view[0]) + len(view[1]))
    seen: set[tuple[tuple[int, ...], tuple[Write, ...]]] = set()
    unique = []
    for back, ahead in views:
        key = (tuple(id(change) for change in back), tuple(ahead))
        if key not in seen:
            seen.add(key)
            unique.append((back, ahead))
    return unique
