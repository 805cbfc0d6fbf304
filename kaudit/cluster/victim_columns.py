"""Per pod row, what preemption's dry run reads of every assigned pod, as arrays.

The cluster state gives every pod it accounts a row (``ClusterState.pod_row``); a removed pod's
row stays, marked. Beside the rows' slots, namespaces and labels, a cluster state keeps these
columns for ``kaudit/plugins/preemption_columns.py``: whether the row's pod is still assigned,
its priority, its start time (``NO_START_TIME`` without one), its ``PodInfo.base_row`` (and
whether it has one), its place among its node's pods (``place``) and the pod itself, released
when it leaves. Only the state a replay or ``whatif`` schedules against keeps them: forks share
nothing here and keep none.

A node's pods are kept in upstream's ``NodeInfo.Pods`` order (:func:`remove_from_node`): the
order ``SelectVictimsOnNode`` collects potential victims in, which breaks the ties of equally
important ones (same priority and start time).
"""

from __future__ import annotations

import numpy as np

from kaudit.model.pod import PodInfo
from kaudit.model.timestamps import start_time_us

#: ``start`` of a pod without a start time (the scheduler counts it as starting now).
NO_START_TIME = np.iinfo(np.int64).min


def remove_from_node(pods_on_node: dict[str, PodInfo], uid: str) -> str | None:
    """Remove pod ``uid`` from its node's pods as upstream's ``NodeInfo.RemovePod`` does
    (``removeFromSlice``, ``pkg/scheduler/framework/types.go``): the node's last pod takes the
    removed pod's place. Returns the uid of the pod that moved, if one did.

    An update is a removal and an addition at the end (the scheduler cache's ``updatePod``,
    ``pkg/scheduler/backend/cache/cache.go``), so a node's pod order follows its history;
    ``SelectVictimsOnNode`` collects potential victims in that order and ``sort.Slice``
    (an insertion sort, stable, up to 12 pods) keeps it among equally important ones."""
    if uid not in pods_on_node:
        return None
    last = next(reversed(pods_on_node))
    if last == uid:
        del pods_on_node[uid]
        return None
    moved = pods_on_node.pop(last)
    kept = [(last, moved) if key == uid else (key, pod) for key, pod in pods_on_node.items()]
    pods_on_node.clear()
    pods_on_node.update(kept)
    return last


class VictimColumns:
    def __init__(self, capacity: int) -> None:
        self.live = np.zeros(capacity, dtype=bool)
        self.priority = np.zeros(capacity, dtype=np.int64)
        self.start = np.zeros(capacity, dtype=np.int64)
        self.base = np.zeros((capacity, 5), dtype=np.int64)
        self.plain = np.zeros(capacity, dtype=bool)
        #: Orders the pods of one node as their ``NodeInfo.Pods`` slice does.
        self.place = np.zeros(capacity, dtype=np.int64)
        self.pods: list[PodInfo | None] = []

    def enter(self, row: int, pod: PodInfo) -> None:
        """Fill row ``row`` (the next one) with ``pod``."""
        if row >= len(self.live):
            extra = len(self.live)
            self.live = np.concatenate([self.live, np.zeros(extra, bool)])
            self.priority = np.concatenate([self.priority, np.zeros(extra, np.int64)])
            self.start = np.concatenate([self.start, np.zeros(extra, np.int64)])
            self.base = np.vstack([self.base, np.zeros((extra, 5), np.int64)])
            self.plain = np.concatenate([self.plain, np.zeros(extra, bool)])
            self.place = np.concatenate([self.place, np.zeros(extra, np.int64)])
        assert row == len(self.pods), "rows are filled in order"
        self.pods.append(pod)
        self.live[row] = True
        self.place[row] = row  # after every pod already on the node
        self.priority[row] = pod.priority
        started = start_time_us(pod.start_time)
        self.start[row] = NO_START_TIME if started is None else started
        if pod.base_row is None:
            self.base[row] = 0
            self.plain[row] = False
        else:
            self.base[row] = pod.base_row
            self.plain[row] = True

    def leave(self, row: int, moved_row: int | None = None) -> None:
        """Row ``row``'s pod left its node; the node's pod of ``moved_row`` took its place
        (:func:`remove_from_node`)."""
        if moved_row is not None:
            self.place[moved_row] = self.place[row]
        self.live[row] = False
        self.pods[row] = None
