"""The scheduler's view of the cluster: column-wise node state, updated incrementally.

Plays the part of kube-scheduler's cache and snapshot (``pkg/scheduler/backend/cache/
{cache.go,snapshot.go,node_tree.go}``, Kubernetes v1.34), shaped for NumPy: every node has a
*slot*, and per-node numbers live in arrays indexed by slot — allocatable, requested and
non-zero requested resources, pod counts — so that a plugin evaluates all nodes in one vector
expression. Label values are interned per topology key (``topology_codes``) for the same reason.

Node order follows upstream's node tree: zones in order of first appearance, nodes within a
zone in insertion order, interleaved round-robin; the order is rebuilt only when nodes are
added or removed. A removed node keeps its slot (and any pods still bound to it) but leaves the
order, as upstream keeps a NodeInfo while pods remain.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kaudit.cluster.gpus import GpuDevices
from kaudit.cluster.victim_columns import VictimColumns, remove_from_node
from kaudit.model.gpu import GPU_MODEL_KEY, NVIDIA_GPU
from kaudit.model.node import NodeInfo, parse_node
from kaudit.model.pod import HostPort, PodInfo, Taint
from kaudit.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, SPEC_ONLY, StatusOptions

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
_INITIAL_CAPACITY = 64


@dataclass(eq=False)  # blocks are told apart by identity
class _OrderJournal:
    """What :meth:`ClusterState.keeping_order` puts back: each node's pods in their order and
    each node as it was, for the slots changed since it began (the first change only)."""

    pod_orders: dict[int, tuple[str, ...]] = field(default_factory=dict)
    nodes: dict[int, tuple[NodeInfo | None, bool]] = field(default_factory=dict)


@dataclass(frozen=True)
class TopologyCodes:
    """Interned label values of one key over all slots: ``codes[slot]`` indexes ``values``;
    -1 where the node lacks the key (or the slot is not a live node)."""

    codes: np.ndarray
    values: tuple[str, ...]
    index: dict[str, int]


class ClusterState:
    """Nodes, the pods assigned to them, and the other objects plugins read."""

    def __init__(self) -> None:
        #: What the pods on nodes are accounted with of their resize status (the release's
        #: ``calculateResource`` options; from the spec alone unless set).
        self.status_options: StatusOptions = SPEC_ONLY
        self.nodes: list[NodeInfo | None] = []
        self.slot_of: dict[str, int] = {}
        #: Each slot's node name (``slot_of`` inverted).
        self.slot_names: list[str] = []
        self.live = np.zeros(_INITIAL_CAPACITY, dtype=bool)
        self.resources: dict[str, int] = {name: i for i, name in enumerate(BASE_RESOURCES)}
        self.allocatable = np.zeros((_INITIAL_CAPACITY, len(BASE_RESOURCES)), dtype=np.int64)
        self.requested = np.zeros_like(self.allocatable)
        self.non_zero = np.zeros((_INITIAL_CAPACITY, 2), dtype=np.int64)
        self.pod_count = np.zeros(_INITIAL_CAPACITY, dtype=np.int64)
        #: Pods per slot by priority: which nodes hold pods a preemptor may evict.
        self.priority_counts: dict[int, np.ndarray] = {}
        self.unschedulable = np.zeros(_INITIAL_CAPACITY, dtype=bool)
        #: Distinct taint lists, and each slot's index into them.
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_index: dict[tuple[Taint, ...], int] = {(): 0}
        self.taint_group = np.zeros(_INITIAL_CAPACITY, dtype=np.int32)
        self.pods_on: list[dict[str, PodInfo]] = []
        self.ports_on: list[list[HostPort]] = []
        self.pods: dict[str, PodInfo] = {}
        #: Pods with any (anti-)affinity term, and with required anti-affinity, by uid
        #: (upstream's ``PodsWithAffinity`` / ``PodsWithRequiredAntiAffinity``).
        self.affinity_pods: dict[str, PodInfo] = {}
        self.anti_affinity_pods: dict[str, PodInfo] = {}
        #: Assigned pods by namespace.
        self.pods_by_namespace: dict[str, dict[str, PodInfo]] = {}
        self._shared_namespaces: set[str] = set()
        #: Assigned pods as rows of columns (for plugins that count pods by selector, such as
        #: PodTopologySpread): slot, namespace code (-1 for removed or terminating pods; in
        #: ``pod_row_any_namespace`` -1 for removed pods only, as InterPodAffinity counts
        #: terminating pods) and labels; label values are interned per key on demand and
        #: kept up to date.
        self.pod_row: dict[str, int] = {}
        self.pod_row_slot = np.zeros(_INITIAL_CAPACITY, dtype=np.int64)
        self.pod_row_namespace = np.full(_INITIAL_CAPACITY, -1, dtype=np.int32)
        self.pod_row_any_namespace = np.full(_INITIAL_CAPACITY, -1, dtype=np.int32)
        self.pod_row_labels: list[dict[str, str]] = []
        #: Preemption's view of the pod rows; None in a fork.
        self.victim_columns: VictimColumns | None = VictimColumns(_INITIAL_CAPACITY)
        self.namespace_codes: dict[str, int] = {}
        self._label_columns: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self._zones: dict[str, list[int]] = {}
        self._order: list[int] | None = []
        self._order_array: np.ndarray | None = np.zeros(0, dtype=np.int64)
        self._topology: dict[str, TopologyCodes] = {}
        #: Open :meth:`keeping_order` blocks, innermost last.
        self._journals: list[_OrderJournal] = []
        self.image_nodes: dict[str, int] = defaultdict(int)
        # Other API objects, keyed by name or "namespace/name".
        self.namespaces: dict[str, dict[str, str]] = {}
        self.objects: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        #: Bumped whenever an object of the kind is set or deleted (for plugins that keep
        #: what they derived from a kind's objects, such as DynamicResources).
        self.kind_generation: dict[str, int] = defaultdict(int)
        #: Each node's GPUs as devices, and the devices GPU pods hold (``cluster/gpus.py``).
        self.gpus = GpuDevices(_INITIAL_CAPACITY)
        #: A ``fork(nodes_only=True)``: cluster-wide pod indexes are shared, not kept.
        self._nodes_only = False
        self.generation = 0
        #: Bumped when nodes are added, removed or changed.
        self.node_generation = 0
        #: Moves when a pod with (anti-)affinity terms comes or goes (``affinity_pods``).
        self.affinity_generation = 0

    # ------------------------------------------------------------------ nodes

    @property
    def capacity(self) -> int:
        return len(self.live)

    def _grow(self, slots: int) -> None:
        if slots <= self.capacity:
            return
        new = max(slots, self.capacity * 2)
        extra = new - self.capacity
        self.live = np.concatenate([self.live, np.zeros(extra, dtype=bool)])
        self.allocatable = np.vstack([self.allocatable,
                                      np.zeros((extra, self.allocatable.shape[1]), np.int64)])
        self.requested = np.vstack([self.requested,
                                    np.zeros((extra, self.requested.shape[1]), np.int64)])
        self.non_zero = np.vstack([self.non_zero, np.zeros((extra, 2), np.int64)])
        self.pod_count = np.concatenate([self.pod_count, np.zeros(extra, np.int64)])
        self.priority_counts = {priority: np.concatenate([counts, np.zeros(extra, np.int64)])
                                for priority, counts in self.priority_counts.items()}
        self.unschedulable = np.concatenate([self.unschedulable, np.zeros(extra, bool)])
        self.taint_group = np.concatenate([self.taint_group, np.zeros(extra, np.int32)])
        self.gpus.grow(new)

    def column(self, resource: str) -> int:
        """The column of ``resource``, added (all zero) when first seen."""
        index = self.resources.get(resource)
        if index is None:
            index = len(self.resources)
            self.resources[resource] = index
            pad = np.zeros((self.capacity, 1), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.requested = np.hstack([self.requested, pad])
        return index

    def _slot(self, name: str) -> int:
        slot = self.slot_of.get(name)
        if slot is None:
            slot = len(self.nodes)
            self._grow(slot + 1)
            self.nodes.append(None)
            self.pods_on.append({})
            self.ports_on.append([])
            self.slot_of[name] = slot
            self.slot_names.append(name)
        return slot

    def add_node(self, obj: dict[str, Any] | NodeInfo) -> int:
        """Add or update a node; returns its slot."""
        node = obj if isinstance(obj, NodeInfo) else parse_node(obj)
        slot = self._slot(node.name)
        previous = self.nodes[slot]
        was_live = bool(self.live[slot])
        for journal in self._journals:
            journal.nodes.setdefault(slot, (previous, was_live))
        for image in previous.images if previous is not None else ():
            self.image_nodes[image] -= 1
        for image in node.images:
            self.image_nodes[image] += 1
        self.nodes[slot] = node
        row = np.zeros(self.allocatable.shape[1], dtype=np.int64)
        for resource, amount in node.allocatable.items():
            column = self.column(resource)
            if column >= len(row):
                row = np.pad(row, (0, column + 1 - len(row)))
            row[column] = amount
        self.allocatable[slot] = row
        self.unschedulable[slot] = node.unschedulable
        group = self._taint_index.get(node.taints)
        if group is None:
            group = self._taint_index[node.taints] = len(self.taint_sets)
            self.taint_sets.append(node.taints)
        self.taint_group[slot] = group
        gpus = node.allocatable.get(NVIDIA_GPU, 0)
        if gpus or self.gpus.count(slot):
            self.gpus.set_node(slot, gpus, node.labels.get(GPU_MODEL_KEY, ""))
        if not was_live or previous is None or previous.zone != node.zone:
            if was_live and previous is not None:
                self._zone_remove(previous.zone, slot)
            self._zones.setdefault(node.zone, []).append(slot)
            self._order = None
        self.live[slot] = True
        # Codes read while the slot was gone leave it out, whatever labels it comes back with.
        if previous is None or not was_live or previous.labels != node.labels:
            self._topology.clear()
        self.generation += 1
        self.node_generation += 1
        return slot

    def zone_lists(self) -> dict[str, list[int]]:
        """The node tree's zones and their nodes, in order (a copy, for
        :meth:`restore_zone_lists`)."""
        return {zone: list(members) for zone, members in self._zones.items()}

    def restore_zone_lists(self, zones: dict[str, list[int]]) -> None:
        """Put the node tree's order back as :meth:`zone_lists` saved it: a node removed and
        added again goes to the end of its zone (``NodeTree`` in upstream's
        ``pkg/scheduler/backend/cache/node_tree.go``), which a what-if that only pretends
        to remove it must not leave behind."""
        if list(zones.items()) == list(self._zones.items()):
            return
        if {zone: set(members) for zone, members in zones.items()} != \
                {zone: set(members) for zone, members in self._zones.items()}:
            return  # not the same nodes: their new order is the true one
        self._zones = {zone: list(members) for zone, members in zones.items()}
        self._order = None
        self.generation += 1
        self.node_generation += 1

    @contextmanager
    def keeping_order(self) -> Iterator[None]:
        """Whatever the block does, the node tree's order, each node's pods in their order,
        and the interned topology codes as they were before it, wherever the block put the
        same nodes and pods back: a node or a pod removed and added again goes to the end of
        its zone or of its node's pods (``NodeTree`` and ``NodeInfo.RemovePod`` in upstream's
        ``pkg/scheduler/backend/cache/``), which orders preemption's equally important
        victims, and a what-if that only pretends to move them must not leave that behind.
        Only the slots the block changed are compared, so a block costs what it changes."""
        zones, topology, capacity = self.zone_lists(), dict(self._topology), self.capacity
        journal = _OrderJournal()
        self._journals.append(journal)
        try:
            yield
        finally:
            self._journals.remove(journal)
            self.restore_zone_lists(zones)
            self._restore_pod_orders(journal.pod_orders)
            if journal.nodes and self.capacity == capacity and all(
                    bool(self.live[slot]) == was_live and (
                        not was_live or (node is not None and self.nodes[slot] is not None
                                         and self.node(slot).labels == node.labels))
                    for slot, (node, was_live) in journal.nodes.items()):
                # The same nodes with the same labels, in the same order: the same codes.
                self._topology = topology

    def _journal_pods(self, slot: int) -> None:
        for journal in self._journals:
            if slot not in journal.pod_orders:
                journal.pod_orders[slot] = tuple(self.pods_on[slot])

    def _restore_pod_orders(self, orders: dict[int, tuple[str, ...]]) -> None:
        """Put each node's pods back in the order saved, where they are the same pods. The
        victim columns' places follow."""
        columns = self.victim_columns
        for slot, order in orders.items():
            pods = self.pods_on[slot]
            if tuple(pods) != order and len(pods) == len(order) and all(
                    uid in pods for uid in order):
                self.pods_on[slot] = {uid: pods[uid] for uid in order}
                if columns is not None:
                    # Preemption reads the order from the places: the pods keep the places
                    # they have between them, handed out again in the restored order.
                    rows = [self.pod_row[uid] for uid in order]
                    columns.place[rows] = np.sort(columns.place[rows])

    def _zone_remove(self, zone: str, slot: int) -> None:
        members = self._zones.get(zone, [])
        if slot in members:
            members.remove(slot)
        if not members:
            self._zones.pop(zone, None)

    def remove_node(self, name: str) -> None:
        slot = self.slot_of.get(name)
        if slot is None or not self.live[slot]:
            return
        node = self.nodes[slot]
        assert node is not None
        for journal in self._journals:
            journal.nodes.setdefault(slot, (node, True))
        for image in node.images:
            self.image_nodes[image] -= 1
        self._zone_remove(node.zone, slot)
        self.live[slot] = False
        self.allocatable[slot] = 0
        self.gpus.clear_node(slot)
        self._order = None
        self._topology.clear()
        self.generation += 1
        self.node_generation += 1

    def free_by_node(self) -> dict[str, dict[str, int]]:
        """Each live node's free amount of every resource column (allocatable less requested;
        ``pods``: pod slots less pods), the shape of the replay's timeline read back."""
        pods = self.resources[PODS]
        free: dict[str, dict[str, int]] = {}
        for slot in self.order:
            left = self.allocatable[slot] - self.requested[slot]
            entry = {name: int(left[column]) for name, column in self.resources.items()
                     if column != pods}
            entry[PODS] = int(self.allocatable[slot, pods] - self.pod_count[slot])
            free[self.slot_names[slot]] = entry
        return free

    def node(self, slot: int) -> NodeInfo:
        node = self.nodes[slot]
        assert node is not None
        return node

    @property
    def order(self) -> list[int]:
        """Live slots in node-tree order (zones interleaved round-robin)."""
        if self._order is None:
            zones = [list(members) for members in self._zones.values()]
            order: list[int] = []
            depth = 0
            while True:
                row = [members[depth] for members in zones if depth < len(members)]
                if not row:
                    break
                order.extend(row)
                depth += 1
            self._order = order
            self._order_array = np.asarray(order, dtype=np.int64)
        return self._order

    @property
    def order_array(self) -> np.ndarray:
        self.order  # noqa: B018 - builds the array when stale
        assert self._order_array is not None
        return self._order_array

    @property
    def node_count(self) -> int:
        return len(self.order)

    def topology_codes(self, key: str) -> TopologyCodes:
        """Interned values of label ``key`` over every slot (cached until labels change)."""
        cached = self._topology.get(key)
        if cached is not None:
            return cached
        codes = np.full(self.capacity, -1, dtype=np.int32)
        index: dict[str, int] = {}
        order, nodes = self.order, self.nodes
        values = [nodes[slot].labels.get(key) for slot in order]  # type: ignore[union-attr]
        numbered = [-1 if value is None else index.setdefault(value, len(index))
                    for value in values]
        codes[self.order_array] = numbered
        result = TopologyCodes(codes, tuple(index), index)
        self._topology[key] = result
        return result

    def names(self, slots: Iterable[int]) -> list[str]:
        return list(map(self.slot_names.__getitem__, slots))

    # ------------------------------------------------------------------ pods

    def add_pod(self, pod: PodInfo) -> None:
        """Account an assigned (or assumed) pod on its node."""
        self._account(self._enter(pod), pod, 1)
        self.generation += 1

    def add_pods(self, pods: Iterable[PodInfo]) -> None:
        """``add_pod`` for many pods, their resources accounted in one vector operation."""
        if not self._nodes_only:
            entered = [(self._enter(pod), pod) for pod in pods]
        else:  # the same steps, inlined: preemption's dry run moves thousands of pods
            entered = []
            slot_of, pods_on = self.slot_of, self.pods_on
            for pod in pods:
                slot = slot_of.get(pod.node_name)
                if slot is None or pod.host_ports or pod.gpu is not None:
                    slot = self._enter(pod)
                else:
                    pods_on[slot][pod.uid] = pod
                entered.append((slot, pod))
        self._account_many(entered, 1)
        self.generation += 1

    def _enter(self, pod: PodInfo) -> int:
        """Everything ``add_pod`` does but the resource accounting; the pod's slot. A pod
        assigned again without leaving first replaces its old object."""
        if not self._nodes_only:
            old = self.pods.get(pod.uid)
            if old is not None:
                self._account(self._leave(old), old, -1)
        slot = self._slot(pod.node_name)
        if self._journals:
            self._journal_pods(slot)
        self.pods_on[slot][pod.uid] = pod
        if not self._nodes_only:
            self.pods[pod.uid] = pod
            if pod.has_affinity:
                self.affinity_pods[pod.uid] = pod
                self.affinity_generation += 1
                if pod.required_anti_affinity:
                    self.anti_affinity_pods[pod.uid] = pod
            self._namespace_pods(pod.namespace)[pod.uid] = pod
            self._add_pod_row(pod, slot)
        if pod.host_ports:
            self.ports_on[slot].extend(pod.host_ports)
        if pod.gpu is not None:
            self._hold_gpus(slot, pod)
        return slot

    def remove_pod(self, uid: str) -> PodInfo | None:
        if self._nodes_only:
            raise ValueError("a nodes-only fork removes pods with remove_pods")
        pod = self.pods.get(uid)
        if pod is None:
            return None
        slot = self._leave(pod)
        self._account(slot, pod, -1)
        self.generation += 1
        return pod

    def remove_pods(self, pods: Iterable[PodInfo]) -> None:
        """``remove_pod`` for many assigned pods (those not on their node are passed over),
        their resources accounted in one vector operation."""
        left = []
        slot_of, pods_on = self.slot_of, self.pods_on
        held = self.gpus.assigned
        for pod in pods:
            slot = slot_of.get(pod.node_name)
            if slot is None:
                continue
            uid = pod.uid
            on_node = pods_on[slot]
            stored = on_node.get(uid)
            if stored is None:
                continue
            if self._nodes_only and not stored.host_ports and uid not in held:
                del on_node[uid]  # the same steps as _leave, inlined for the dry run
            else:
                self._leave(stored)
            left.append((slot, stored))
        self._account_many(left, -1)
        self.generation += 1

    def move_sums(self, pods: Iterable[tuple[int, PodInfo]], sign: int) -> None:
        """Change only the per-node sums (requested and non-zero resources, pod counts, pods
        by priority) as if each (slot, assigned pod) came (+1) or went (-1), leaving the pods
        on the nodes as they are: for a nodes-only fork whose filters read no node's pods
        (``FilterPlugin.reads_node_pods``), as preemption's dry run has."""
        if not self._nodes_only:
            raise ValueError("only a nodes-only fork moves sums without pods")
        self._account_many(list(pods), sign)
        self.generation += 1

    def move_rows(self, slots: np.ndarray, rows: np.ndarray, priorities: np.ndarray,
                  sign: int) -> None:
        """``move_sums`` for pods given as their ``PodInfo.base_row`` (cpu, memory and
        ephemeral-storage requests, non-zero cpu and memory) and priorities, on ``slots``:
        one vector step whatever their number."""
        if not self._nodes_only:
            raise ValueError("only a nodes-only fork moves sums without pods")
        if len(slots):
            self._account_rows(slots, rows, sign)
            np.add.at(self.pod_count, slots, sign)
            for priority in np.unique(priorities).tolist():
                np.add.at(self._priority_column(priority), slots[priorities == priority], sign)
        self.generation += 1

    def _leave(self, pod: PodInfo) -> int:
        """Everything ``remove_pod`` does but the resource accounting; the pod's slot."""
        uid = pod.uid
        slot = self.slot_of[pod.node_name]
        if self._journals:
            self._journal_pods(slot)
        moved = remove_from_node(self.pods_on[slot], uid)
        if not self._nodes_only:
            self.pods.pop(uid, None)
            if self.affinity_pods.pop(uid, None) is not None:
                self.affinity_generation += 1
            self.anti_affinity_pods.pop(uid, None)
            self._namespace_pods(pod.namespace).pop(uid, None)
            row = self.pod_row.pop(uid, None)
            if row is not None:
                self.pod_row_namespace[row] = -1
                self.pod_row_any_namespace[row] = -1
                if self.victim_columns is not None:
                    self.victim_columns.leave(row, None if moved is None
                                              else self.pod_row.get(moved))
        self.gpus.release(uid)
        if pod.host_ports:
            ports = self.ports_on[slot]
            for port in pod.host_ports:
                ports.remove(port)
        return slot

    def holds_lower_priority(self, slots: np.ndarray, priority: int) -> np.ndarray:
        """Per slot, whether the node holds a pod of lower priority than ``priority``."""
        found = np.zeros(len(slots), dtype=bool)
        for other, counts in self.priority_counts.items():
            if other < priority:
                found |= counts[slots] > 0
        return found

    def _hold_gpus(self, slot: int, pod: PodInfo) -> None:
        """Give the pod its GPU devices: those a policy chose for it at Reserve
        (``pod.extra["gpuDevices"]``), else the lowest-numbered that fit. A pod bound by the
        trace onto devices too full for it holds none: the trace's binding stands, and the
        devices are never counted past 1000 milli."""
        demand = pod.gpu
        assert demand is not None
        devices = pod.extra.get("gpuDevices") or self.gpus.first_fit(slot, demand)
        if devices is not None:
            self.gpus.assign(pod.uid, slot, tuple(devices), demand.milli)

    @property
    def pod_rows(self) -> int:
        """How many rows the pod columns hold (removed pods keep theirs, marked -1)."""
        return len(self.pod_row_labels)

    def _add_pod_row(self, pod: PodInfo, slot: int) -> None:
        row = len(self.pod_row_labels)
        if row >= len(self.pod_row_slot):
            extra = len(self.pod_row_slot)
            self.pod_row_slot = np.concatenate([self.pod_row_slot, np.zeros(extra, np.int64)])
            self.pod_row_namespace = np.concatenate(
                [self.pod_row_namespace, np.full(extra, -1, np.int32)])
            self.pod_row_any_namespace = np.concatenate(
                [self.pod_row_any_namespace, np.full(extra, -1, np.int32)])
            for key, (codes, index) in list(self._label_columns.items()):
                self._label_columns[key] = (
                    np.concatenate([codes, np.full(extra, -1, np.int64)]), index)
        self.pod_row[pod.uid] = row
        self.pod_row_slot[row] = slot
        code = self.namespace_codes.setdefault(pod.namespace, len(self.namespace_codes))
        self.pod_row_namespace[row] = -1 if pod.terminating else code
        self.pod_row_any_namespace[row] = code
        self.pod_row_labels.append(pod.labels)
        if self.victim_columns is not None:
            self.victim_columns.enter(row, pod)
        for key, (codes, index) in self._label_columns.items():
            value = pod.labels.get(key)
            codes[row] = -1 if value is None else index.setdefault(value, len(index))

    def pod_label_column(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Interned values of pod label ``key`` per pod row (-1 without it), kept current."""
        column = self._label_columns.get(key)
        if column is None:
            index: dict[str, int] = {}
            codes = np.full(len(self.pod_row_slot), -1, dtype=np.int64)
            for row, labels in enumerate(self.pod_row_labels):
                value = labels.get(key)
                if value is not None:
                    codes[row] = index.setdefault(value, len(index))
            column = self._label_columns[key] = (codes, index)
        return column

    def _namespace_pods(self, namespace: str) -> dict[str, PodInfo]:
        """The namespace's pod map, ready to change (copied first in a fork)."""
        pods = self.pods_by_namespace.get(namespace)
        if pods is None:
            pods = self.pods_by_namespace[namespace] = {}
        elif namespace in self._shared_namespaces:
            pods = self.pods_by_namespace[namespace] = dict(pods)
            self._shared_namespaces.discard(namespace)
        return pods

    def _account(self, slot: int, pod: PodInfo, sign: int) -> None:
        resources = self.resources
        requested = self.requested
        for resource, amount in pod.requests.items():
            # column() may widen the arrays: look the column up before indexing them. A pod
            # may request a resource no node advertises (bound with nodeName, or its node's
            # device plugin went away); upstream counts it on the node all the same.
            column = resources.get(resource)
            if column is None:
                column = self.column(resource)
                requested = self.requested
            requested[slot, column] += sign * amount
        non_zero = self.non_zero[slot]
        non_zero[0] += sign * pod.node_non_zero_cpu
        non_zero[1] += sign * pod.node_non_zero_memory
        self.pod_count[slot] += sign
        self._priority_column(pod.priority)[slot] += sign

    def _account_many(self, entries: list[tuple[int, PodInfo]], sign: int) -> None:
        if not entries:
            return
        resources = self.resources
        row_slots: list[int] = []
        rows: list[tuple[int, int, int, int, int]] = []
        slots: list[int] = []
        columns: list[int] = []
        amounts: list[int] = []
        non_zero_slots: list[int] = []
        non_zero: list[tuple[int, int]] = []
        by_priority: dict[int, list[int]] = defaultdict(list)
        for slot, pod in entries:
            by_priority[pod.priority].append(slot)
            row = pod.base_row
            if row is not None:
                row_slots.append(slot)
                rows.append(row)
                continue
            for resource, amount in pod.requests.items():
                column = resources.get(resource)
                if column is None:
                    column = self.column(resource)
                slots.append(slot)
                columns.append(column)
                amounts.append(amount)
            non_zero_slots.append(slot)
            non_zero.append((pod.node_non_zero_cpu, pod.node_non_zero_memory))
        if rows:
            self._account_rows(np.asarray(row_slots), np.asarray(rows, dtype=np.int64), sign)
        if slots:
            np.add.at(self.requested, (slots, columns),
                      sign * np.asarray(amounts, dtype=np.int64))
        if non_zero_slots:
            np.add.at(self.non_zero, non_zero_slots, sign * np.asarray(non_zero, np.int64))
        np.add.at(self.pod_count, [slot for slot, _ in entries], sign)
        for priority, slots_of_priority in by_priority.items():
            np.add.at(self._priority_column(priority), slots_of_priority, sign)

    def _account_rows(self, slots: np.ndarray, rows: np.ndarray, sign: int) -> None:
        """Add (or take away) pods given as ``PodInfo.base_row`` rows on ``slots``."""
        signed = rows if sign > 0 else -rows
        # cpu, memory and ephemeral-storage are the first columns of every state.
        np.add.at(self.requested, (slots[:, None], np.arange(3)), signed[:, :3])
        np.add.at(self.non_zero, slots, signed[:, 3:])

    def _priority_column(self, priority: int) -> np.ndarray:
        """Pods of ``priority`` per slot (all zero when first seen)."""
        counts = self.priority_counts.get(priority)
        if counts is None:
            counts = self.priority_counts[priority] = np.zeros(self.capacity, np.int64)
        return counts

    def fork(self, slots: int | Iterable[int], *, nodes_only: bool = False) -> ClusterState:
        """A copy whose nodes ``slots`` can take or lose pods without touching this state.

        ``nodes_only`` makes a cheaper copy for filters that read only their node (see
        ``FilterPlugin.reads_only_its_node``): pods added (``add_pods``) or removed
        (``remove_pods``) change the nodes' pods, ports, devices and requested resources, but
        not the cluster-wide maps (``pods``, pods by namespace, pod columns, pods with
        affinity), which it shares with this state.
        """
        if self._nodes_only and not nodes_only:
            raise ValueError("a nodes-only fork cannot be forked in full")
        clone = copy.copy(self)
        clone._journals = []
        # The clone may meet a resource this state has not seen (column() widens its arrays
        # and registers the name): it must not register it here too.
        clone.resources = dict(self.resources)
        clone.requested = self.requested.copy()
        clone.non_zero = self.non_zero.copy()
        clone.pod_count = self.pod_count.copy()
        clone.priority_counts = {priority: counts.copy()
                                 for priority, counts in self.priority_counts.items()}
        clone.pods_on = list(self.pods_on)
        clone.ports_on = list(self.ports_on)
        for slot in (slots,) if isinstance(slots, (int, np.integer)) else slots:
            clone.pods_on[slot] = dict(self.pods_on[slot])
            clone.ports_on[slot] = list(self.ports_on[slot])
        clone.gpus = self.gpus.fork()
        clone._nodes_only = nodes_only
        clone.victim_columns = None
        if nodes_only:
            return clone
        clone.pods = dict(self.pods)
        clone.affinity_pods = dict(self.affinity_pods)
        clone.anti_affinity_pods = dict(self.anti_affinity_pods)
        clone.pods_by_namespace = dict(self.pods_by_namespace)
        clone._shared_namespaces = set(self.pods_by_namespace)
        clone.pod_row = dict(self.pod_row)
        clone.pod_row_slot = self.pod_row_slot.copy()
        clone.pod_row_namespace = self.pod_row_namespace.copy()
        clone.pod_row_any_namespace = self.pod_row_any_namespace.copy()
        clone.pod_row_labels = list(self.pod_row_labels)
        clone.namespace_codes = dict(self.namespace_codes)
        clone._label_columns = {key: (codes.copy(), dict(index))
                                for key, (codes, index) in self._label_columns.items()}
        return clone

    # ------------------------------------------------------------------ other objects

    def set_object(self, kind: str, obj: dict[str, Any]) -> None:
        metadata = obj.get("metadata") or {}
        key = _object_key(metadata)
        self.objects[kind][key] = obj
        if kind == "Namespace":
            self.namespaces[metadata.get("name") or ""] = dict(metadata.get("labels") or {})
        self.kind_generation[kind] += 1
        self.generation += 1

    def delete_object(self, kind: str, obj: dict[str, Any]) -> None:
        metadata = obj.get("metadata") or {}
        self.objects[kind].pop(_object_key(metadata), None)
        if kind == "Namespace":
            self.namespaces.pop(metadata.get("name") or "", None)
        self.kind_generation[kind] += 1
        self.generation += 1

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self.namespaces.get(namespace, {})

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects[kind].get(f"{namespace}/{name}" if namespace else name)


def object_key(obj: dict[str, Any]) -> str:
    """The key an object is stored under in ``ClusterState.objects``: ``namespace/name``, or
    the name of a cluster-scoped object."""
    return _object_key(obj.get("metadata") or {})


def _object_key(metadata: dict[str, Any]) -> str:
    namespace = metadata.get("namespace")
    name = metadata.get("name") or ""
    return f"{namespace}/{name}" if namespace else name
