"""The cluster states the audit judges a decision in besides the recorded one.

Each is a context manager that changes the audit's cluster and puts it back: without some
bound pods (decided after the judged one), before the last few recorded changes (not seen
yet by a scheduler whose view lagged the recording), with some of the scheduler's own writes
recorded just after (assumed or nominated before the API recorded them), and with changes
recorded just after that it had already seen (the recorder's watch lagging the scheduler's
informer: each watcher receives events in its own time, ``staging/src/k8s.io/client-go/tools/
cache/reflector.go``). :func:`overcommitted` says whether a state is possible at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kaudit.cluster.objects import apply_object, pod_info
from kaudit.cluster.state import ClusterState
from kaudit.model.pod import PodInfo
from kaudit.model.resources import PODS
from kaudit.replay.audit_changes import Change, Write
from kaudit.replay.audit_plan import BIND
from kaudit.scheduler.nominator import Nominator


@contextmanager
def without(cluster: ClusterState, keys: list[str]) -> Iterator[dict[str, PodInfo]]:
    """The cluster without the bound pods ``keys`` (``namespace/name``), put back afterwards;
    yields the pods taken away, by key."""
    removed = []
    for key in keys:
        namespace, _, name = key.partition("/")
        uid = next((uid for uid, pod in cluster.pods_by_namespace.get(namespace, {}).items()
                    if pod.name == name), None)
        pod = cluster.remove_pod(uid) if uid is not None else None
        if pod is not None:
            removed.append(pod)
    try:
        yield {pod.key: pod for pod in removed}
    finally:
        for pod in removed:
            cluster.add_pod(pod)


@contextmanager
def keeping_node_order(cluster: ClusterState) -> Iterator[None]:
    """Whatever a view does, the node tree's order and each node's pod order as they were
    afterwards (a node or a pod a view removes and adds back would otherwise move to the end
    of its zone or of its node's pods for good, and preemption reads both orders)."""
    with cluster.keeping_order():
        yield


@contextmanager
def rewound(cluster: ClusterState, changes: list[Change],
            accounted: dict[tuple[str, str], dict[str, Any]]) -> Iterator[list[str]]:
    """The cluster as it was before ``changes`` (the latest recorded ones), redone afterwards,
    each object as last recorded (``accounted``); yields the pods put back on a node and the
    pods on nodes taken back to an earlier state (to check that none over-commits)."""
    for change in reversed(changes):
        change.undo(cluster)
    touched = [uid for change in changes for uid in change.uids_to_check(cluster)]
    try:
        yield touched
    finally:
        for change in changes:
            change.redo(cluster)
        # A change keeps its object as of that change; writes recorded since that changed
        # nothing it tracks (a pod's start time, a terminating pod's deletionTimestamp) are
        # in the last recorded object, which preemption's victim order reads.
        for key in dict.fromkeys((change.kind, change.key) for change in changes):
            latest = accounted.get(key)
            if latest is not None:
                apply_object(cluster, latest)


@contextmanager
def seen_early(cluster: ClusterState, changes: list[Change]) -> Iterator[list[str]]:
    """The cluster with ``changes`` (recorded just after the moment) already made, undone
    afterwards; yields the pods on nodes they change (to check that none over-commits)."""
    for change in changes:
        change.redo(cluster)
    names = {(change.after.get("metadata") or {}).get("name") or ""
             for change in changes if change.kind == "Node" and change.after is not None}
    touched = [uid for name in names if name in cluster.slot_of
               for uid in list(cluster.pods_on[cluster.slot_of[name]])[:1]]
    try:
        yield touched
    finally:
        for change in reversed(changes):
            change.undo(cluster)


@contextmanager
def assuming(cluster: ClusterState, nominator: Nominator, pending: dict[str, dict[str, Any]],
             ahead: list[Write]) -> Iterator[bool]:
    """The cluster with ``ahead`` (other pods' bindings and nominations) made, undone
    afterwards; yields whether that state is possible (no node holds more than it can). A pod
    assumed on a node is no longer nominated (``assume`` deletes its nomination,
    ``pkg/scheduler/schedule_one.go``)."""
    added: list[str] = []
    nominated: list[tuple[str, str, str | None]] = []
    try:
        for kind, pod, node in ahead:
            obj = pending[pod]
            uid = (obj.get("metadata") or {}).get("uid") or pod
            if kind == BIND and uid not in cluster.pods and node in cluster.slot_of:
                apply_object(cluster, {**obj, "spec": {**obj["spec"], "nodeName": node}})
                added.append(uid)
                if nominator.node_of(uid) is not None:
                    nominated.append((uid, pod, nominator.node_of(uid)))
                    nominator.delete(uid)
            elif kind != BIND and node in cluster.slot_of:
                nominated.append((uid, pod, nominator.node_of(uid)))
                nominator.add(pod_info(cluster, {
                    **obj, "status": {**(obj.get("status") or {}),
                                      "nominatedNodeName": node}}), node, cluster)
        yield not overcommitted(cluster, added)
    finally:
        for uid in added:
            cluster.remove_pod(uid)
        for uid, pod, before in reversed(nominated):
            nominator.delete(uid)
            if before is not None:
                nominator.add(pod_info(cluster, pending[pod]), before, cluster)


def overcommitted(cluster: ClusterState, uids: list[str]) -> bool:
    """Whether a node of the pods ``uids`` holds more than its allocatable."""
    for uid in uids:
        pod = cluster.pods.get(uid)
        slot = cluster.slot_of.get(pod.node_name) if pod is not None else None
        if slot is None:
            continue
        pods = cluster.resources[PODS]
        left = cluster.allocatable[slot] - cluster.requested[slot]
        left[pods] = cluster.allocatable[slot, pods] - cluster.pod_count[slot]
        if (left < 0).any():
            return True
    return False
