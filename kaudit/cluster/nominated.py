"""Nominated pods' load on their nodes, kept as they are nominated and released.

Upstream's ``RunFilterPluginsWithNominatedPods`` (``pkg/scheduler/framework/runtime/
framework.go``, Kubernetes v1.34) judges a node with the pods nominated to it of equal or
higher priority than the pod being scheduled added (``addGENominatedPods``). Doing that by
adding every nominated pod to a fork of the cluster costs a pass over all nominations in
every cycle, and a cluster preempting at scale holds thousands. This module keeps each
priority's nominated pods summed per node instead (requests, non-zero requests, pod counts
and the pods themselves), updated once per nomination, so that :meth:`NominatedLoad.view`
gives the cluster as a cycle's nominated pass sees it with a few vector additions.

Only pods whose effect on a node is those sums are kept that way: a nominated pod with host
ports, GPUs or a resource no node advertises makes the view decline (``None``), and the
caller adds the pods one by one as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from kaudit.model.pod import PodInfo

if TYPE_CHECKING:
    from kaudit.cluster.state import ClusterState


@dataclass
class _Bucket:
    """The nominated pods of one priority, summed per slot."""

    requested: np.ndarray
    non_zero: np.ndarray
    count: np.ndarray
    pods: dict[int, dict[str, PodInfo]] = field(default_factory=dict)
    #: Pods the sums cannot stand for (host ports, GPUs, unknown resources).
    irregular: int = 0
    size: int = 0

    def fit(self, capacity: int, columns: int) -> None:
        rows, cols = self.requested.shape
        if rows < capacity or cols < columns:
            grown = np.zeros((max(rows, capacity), max(cols, columns)), np.int64)
            grown[:rows, :cols] = self.requested
            self.requested = grown
            self.non_zero = np.concatenate(
                [self.non_zero, np.zeros((max(rows, capacity) - rows, 2), np.int64)])
            self.count = np.concatenate(
                [self.count, np.zeros(max(rows, capacity) - rows, np.int64)])


@dataclass(frozen=True)
class _Entry:
    placed: PodInfo
    slot: int
    #: (column, amount) pairs, or None for an irregular pod.
    amounts: tuple[tuple[int, int], ...] | None


class NominatedLoad:
    """Nominated pods placed on their nominated nodes, summed per priority."""

    def __init__(self) -> None:
        self._buckets: dict[int, _Bucket] = {}
        self._entries: dict[str, _Entry] = {}
        #: Pods nominated to a node the cluster does not hold (yet): no filter reads them.
        self._unplaced: dict[str, tuple[PodInfo, str]] = {}
        #: Bumped on every change.
        self.version = 0

    def __len__(self) -> int:
        return len(self._entries) + len(self._unplaced)

    def add(self, pod: PodInfo, node: str, cluster: ClusterState) -> None:
        """``pod`` is nominated to ``node`` (replacing any nomination it had)."""
        self.remove(pod.uid)
        self.version += 1
        slot = cluster.slot_of.get(node)
        if slot is None:
            self._unplaced[pod.uid] = (pod, node)
            return
        placed = replace(pod, node_name=node)
        amounts: tuple[tuple[int, int], ...] | None = None
        if not pod.host_ports and pod.gpu is None and \
                all(resource in cluster.resources for resource in pod.requests):
            amounts = tuple((cluster.resources[resource], amount)
                            for resource, amount in pod.requests.items())
        entry = _Entry(placed, slot, amounts)
        self._entries[pod.uid] = entry
        self._apply(entry, 1, cluster)

    def remove(self, uid: str) -> None:
        if self._unplaced.pop(uid, None) is not None:
            self.version += 1
            return
        entry = self._entries.pop(uid, None)
        if entry is not None:
            self.version += 1
            self._apply(entry, -1, None)

    def _bucket(self, priority: int, cluster: ClusterState | None) -> _Bucket:
        bucket = self._buckets.get(priority)
        if bucket is None:
            assert cluster is not None, "a removed pod's bucket exists"
            bucket = self._buckets[priority] = _Bucket(
                np.zeros((cluster.capacity, len(cluster.resources)), np.int64),
                np.zeros((cluster.capacity, 2), np.int64),
                np.zeros(cluster.capacity, np.int64))
        return bucket

    def _apply(self, entry: _Entry, sign: int, cluster: ClusterState | None) -> None:
        pod, slot = entry.placed, entry.slot
        bucket = self._bucket(pod.priority, cluster)
        bucket.size += sign
        on_slot = bucket.pods.setdefault(slot, {})
        if sign > 0:
            on_slot[pod.uid] = pod
        else:
            on_slot.pop(pod.uid, None)
            if not on_slot:
                del bucket.pods[slot]
        if entry.amounts is None:
            bucket.irregular += sign
            return
        if cluster is not None:
            bucket.fit(cluster.capacity, len(cluster.resources))
        for column, amount in entry.amounts:
            bucket.requested[slot, column] += sign * amount
        bucket.non_zero[slot, 0] += sign * pod.node_non_zero_cpu
        bucket.non_zero[slot, 1] += sign * pod.node_non_zero_memory
        bucket.count[slot] += sign

    def _place_waiting(self, cluster: ClusterState) -> None:
        for uid, (pod, node) in list(self._unplaced.items()):
            if node in cluster.slot_of:
                del self._unplaced[uid]
                self.add(pod, node, cluster)

    def view(self, cluster: ClusterState, pod: PodInfo) -> ClusterState | None:
        """``cluster`` with the pods nominated at ``pod``'s priority or above (``pod`` itself
        aside) on their nodes: ``cluster`` itself when there are none, None when one of them
        is irregular. The view is for reading (filters, forks), not for changing."""
        if self._unplaced:
            self._place_waiting(cluster)
        own = self._entries.get(pod.uid)
        if own is not None and own.placed.priority < pod.priority:
            own = None
        included = [(priority, bucket) for priority, bucket in self._buckets.items()
                    if priority >= pod.priority and bucket.size]
        if sum(bucket.size for _, bucket in included) - (own is not None) == 0:
            return cluster
        irregular = sum(bucket.irregular for _, bucket in included)
        if own is not None and own.amounts is None:
            irregular -= 1
        if irregular:
            return None
        view = cluster.fork((), nodes_only=True)
        capacity, columns = view.requested.shape
        for priority, bucket in included:
            bucket.fit(capacity, columns)
            rows, cols = bucket.requested.shape
            if rows > capacity or cols > columns:
                return None  # the cluster shrank its columns: never, but not worth a guess
            view.requested += bucket.requested
            view.non_zero += bucket.non_zero
            view.pod_count += bucket.count
            view.priority_counts[priority] = (view.priority_counts.get(priority, 0)
                                              + bucket.count)
        if own is not None and own.amounts is not None:  # an irregular one was never summed
            slot = own.slot
            for column, amount in own.amounts:
                view.requested[slot, column] -= amount
            view.non_zero[slot, 0] -= own.placed.node_non_zero_cpu
            view.non_zero[slot, 1] -= own.placed.node_non_zero_memory
            view.pod_count[slot] -= 1
            view.priority_counts[own.placed.priority][slot] -= 1
        view.pods_on = MergedPods(view.pods_on, [bucket.pods for _, bucket in included],
                                  pod.uid)  # type: ignore[assignment]
        return view


class MergedPods:
    """Each slot's pods with the nominated pods on it added, merged when first read."""

    def __init__(self, base: list[dict[str, PodInfo]],
                 extras: list[dict[int, dict[str, PodInfo]]], exclude: str) -> None:
        self._base = base
        self._extras = extras
        self._exclude = exclude
        self._merged: dict[int, dict[str, PodInfo]] = {}

    def __len__(self) -> int:
        return len(self._base)

    def __getitem__(self, slot: int) -> dict[str, PodInfo]:
        merged = self._merged.get(slot)
        if merged is not None:
            return merged
        parts = [extra[slot] for extra in self._extras if slot in extra]
        if not parts:
            return self._base[slot]
        merged = dict(self._base[slot])
        for part in parts:
            merged.update(part)
        merged.pop(self._exclude, None)
        self._merged[slot] = merged
        return merged

    def __iter__(self) -> Iterator[dict[str, PodInfo]]:
        for slot in range(len(self._base)):
            yield self[slot]
