"""Preemption's dry run held column-wise: every candidate node's victims at once, in arrays.

``SelectVictimsOnNode`` (``pkg/scheduler/framework/preemption/preemption.go`` and
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``, Kubernetes
v1.34) for a block of nodes, with the potential victims taken from the cluster state's pod
columns instead of each node's pod map:

1. the lower-priority pods of every node, ordered most important first (higher priority,
   then earlier start; equal pods as Go's ``sort.Slice`` leaves them from upstream's
   ``NodeInfo.Pods`` order, ``VictimColumns.place``: in that order up to 12 pods (those
   without a start time in reverse), as ``preemption_go_sort`` reorders them past 12);
2. split against copies of the PodDisruptionBudgets' budgets, node by node, in that order;
3. all of them taken off their nodes' sums at once, one filter run over the nodes;
4. reprieve rounds, violating pods first: round *r* gives every node its *r*-th pod back and
   one filter run judges them all; a node where the pod no longer fits loses that pod again;
5. each node's victims, most important first (violating before non-violating among equals).

It applies when the cluster state keeps pod columns, no filter reads the pods on a node for
this preemptor (``FilterPlugin.reads_node_pods``) and every potential victim requests only
cpu, memory and ephemeral storage; otherwise the caller takes the pod-by-pod path. Both give
every node the outcome of its own dry run (``tests/plugins/test_preemption_batched.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.cluster.victim_columns import NO_START_TIME
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.status import Status
from kaudit.model.pod import PodInfo
from kaudit.model.selectors import LabelSelector, SelectorError
from kaudit.plugins.preemption_go_sort import INSERTION_SORT_MAX, go_sort, started_now

TieFinder = Callable[[], tuple[tuple[str, ...], ...]]
#: What one node's dry run found: (victims, PDB violations, status, victim ties).
Outcome = tuple[list[PodInfo], int, Status, TieFinder]


def no_ties() -> tuple[tuple[str, ...], ...]:
    return ()


def tie_groups(keys: Sequence[tuple[int, ...]], ranked: Sequence[PodInfo],
               evicted: Sequence[bool], violating: Sequence[bool]
               ) -> tuple[tuple[str, ...], ...]:
    """Groups of equally ranked pods (``MoreImportantPod`` cannot order them) whose fates
    (evicted or not, counted against a PodDisruptionBudget or not) differ. ``ranked`` is in
    order of ``keys``; the other sequences run beside it."""
    if len(set(keys)) == len(keys):
        return ()
    groups: dict[tuple[int, ...], list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    return tuple(tuple(ranked[i].key for i in members) for members in groups.values()
                 if len(members) > 1
                 and len({(evicted[i], violating[i]) for i in members}) > 1)


def select_victims_by_columns(state: CycleState, pod: PodInfo, cluster: ClusterState,
                              slots: list[int], pdbs: Sequence[dict[str, Any]],
                              framework: Any, nominator: Any, now: int, no_victims: Status,
                              fixed_unstarted: bool = False) -> list[Outcome] | None:
    """One outcome per slot of ``slots`` (``no_victims`` for a node without lower-priority
    pods), or None when the column-wise path does not apply. ``now`` is the start time of a
    pod without one; ``fixed_unstarted`` (v1.37) leaves pods without one to the per-node
    path."""
    columns = cluster.victim_columns
    if columns is None or framework.filters_read_node_pods(state, pod):
        return None
    node_slots = np.asarray(slots, dtype=np.int64)
    count = cluster.pod_rows
    position = np.full(cluster.capacity, -1, dtype=np.int64)
    position[node_slots] = np.arange(len(slots))
    positions = position[cluster.pod_row_slot[:count]]
    rows = np.flatnonzero(columns.live[:count] & (columns.priority[:count] < pod.priority)
                          & (positions >= 0))
    if not columns.plain[rows].all():
        return None
    node = positions[rows]
    priority = columns.priority[rows]
    start = columns.start[rows]
    unstarted = start == NO_START_TIME
    if fixed_unstarted and unstarted.any():
        return None  # v1.37 orders unstarted pods by their build: the per-node path does
    start = np.where(unstarted, now, start)
    place = columns.place[rows]
    # Pods without a start time come after those that started now, and, equal among
    # themselves, in the reverse of their place order (an insertion sort whose comparison
    # says each is more important than the other: ``preemption_go_sort``).
    ranked = np.lexsort((np.where(unstarted, -place, place), unstarted, start, -priority,
                         node))
    rows, node, priority, start, unstarted = (rows[ranked], node[ranked], priority[ranked],
                                              start[ranked], unstarted[ranked])
    sizes = np.bincount(node, minlength=len(slots))
    firsts = np.cumsum(sizes) - sizes
    go_order = _as_go_sorts(place[ranked], priority, start, unstarted, sizes, firsts)
    if go_order is not None:
        rows, node, priority, start, unstarted = (
            rows[go_order], node[go_order], priority[go_order], start[go_order],
            unstarted[go_order])
    base = columns.base[rows]

    state = state.clone()
    forked = cluster.fork((), nodes_only=True)
    forked.move_rows(node_slots[node], base, priority, -1)
    holding = np.flatnonzero(sizes)
    fits_without = framework.run_filter_with_nominated(state, pod, forked, node_slots[holding],
                                                       nominator)
    feasible = np.zeros(len(slots), dtype=bool)
    feasible[holding] = fits_without.feasible
    planned = feasible[node]
    pods: list[PodInfo] = [columns.pods[r] for r in rows.tolist()]  # type: ignore[misc]
    violating = np.zeros(len(rows), dtype=bool)
    if pdbs and planned.any():
        violating = pdb_violators(pods, node, firsts, planned, parse_budgets(pdbs))
    evicted = _reprieve(state, pod, forked, node_slots, node, base, priority, violating,
                        firsts, planned, framework, nominator)

    # Victims most important first; among equals, PodDisruptionBudget violators first.
    new_key = np.ones(len(rows), dtype=bool)
    new_key[1:] = ((node[1:] != node[:-1]) | (priority[1:] != priority[:-1])
                   | (start[1:] != start[:-1]) | (unstarted[1:] != unstarted[:-1]))
    key_group = np.cumsum(new_key)
    chosen = np.flatnonzero(evicted)
    chosen = chosen[np.lexsort((chosen, ~violating[chosen], key_group[chosen]))]
    victim_counts = np.bincount(node[chosen], minlength=len(slots)).tolist()
    violation_counts = np.bincount(node[evicted & violating], minlength=len(slots)).tolist()
    victim_order = chosen.tolist()

    outcomes: list[Outcome] = []
    statuses = dict(zip(holding.tolist(), range(len(holding)), strict=True))
    at = 0
    for k, (size, first) in enumerate(zip(sizes.tolist(), firsts.tolist(), strict=True)):
        if not size:
            outcomes.append(([], 0, no_victims, no_ties))
            continue
        if not feasible[k]:
            outcomes.append(([], 0, fits_without.status(statuses[k]), no_ties))
            continue
        taken = victim_counts[k]
        chosen_here = victim_order[at:at + taken]
        at += taken
        if (taken > INSERTION_SORT_MAX or unstarted[first:first + size].any()) \
                and 0 < violating[first:first + size].sum() < size:
            chosen_here = _victims_as_go_sorts(chosen_here, violating, priority, start,
                                               unstarted)
        victims = [pods[i] for i in chosen_here]
        outcomes.append((victims, violation_counts[k], Status.success(),
                         _tie_finder(pods, priority, start, unstarted, evicted, violating,
                                     first, first + size)))
    return outcomes


def _as_go_sorts(place: np.ndarray, priority: np.ndarray, start: np.ndarray,
                 unstarted: np.ndarray, sizes: np.ndarray, firsts: np.ndarray
                 ) -> np.ndarray | None:
    """The permutation that turns each node's ranked pods (equals in their place order,
    those without a start time in reverse) into the order ``sort.Slice`` leaves them in, or
    None when it changes nothing: only a node of more than 12 potential victims with equals
    among them can differ."""
    long_nodes = np.flatnonzero(sizes > INSERTION_SORT_MAX)
    if not len(long_nodes):
        return None
    equal_next = np.zeros(len(place), dtype=bool)
    equal_next[:-1] = ((priority[1:] == priority[:-1]) & (start[1:] == start[:-1])
                       & (unstarted[1:] == unstarted[:-1]))
    order: np.ndarray | None = None
    priorities, starts, unstarts = priority.tolist(), start.tolist(), unstarted.tolist()
    for k in long_nodes.tolist():
        lo, hi = int(firsts[k]), int(firsts[k] + sizes[k])
        if not equal_next[lo:hi - 1].any():
            continue
        if order is None:
            order = np.arange(len(place))
        listed = (lo + np.argsort(place[lo:hi], kind="stable")).tolist()
        go_sort(listed, lambda i: (-priorities[i], starts[i], int(unstarts[i])), started_now)
        order[lo:hi] = listed
    return order


def _victims_as_go_sorts(chosen: list[int], violating: np.ndarray, priority: np.ndarray,
                         start: np.ndarray, unstarted: np.ndarray) -> list[int]:
    """A node's victims (indices in ranked order) as upstream lists them when it held both
    PodDisruptionBudget violators and others: reprieved violators first, each group in
    ranked order, then ``sort.Slice`` by importance."""
    appended = sorted(chosen, key=lambda i: (not violating[i], i))
    go_sort(appended, lambda i: (-int(priority[i]), int(start[i]), int(unstarted[i])),
            started_now)
    return appended


def _reprieve(state: CycleState, pod: PodInfo, forked: ClusterState, node_slots: np.ndarray,
              node: np.ndarray, base: np.ndarray, priority: np.ndarray,
              violating: np.ndarray, firsts: np.ndarray, planned_mask: np.ndarray,
              framework: Any, nominator: Any) -> np.ndarray:
    """Give each feasible node (where ``planned_mask`` holds its pods) its potential victims
    back one round at a time, violators first; whether each pod (in ranked order) stays
    evicted."""
    evicted = np.zeros(len(node), dtype=bool)
    planned = np.flatnonzero(planned_mask)
    if not len(planned):
        return evicted
    # Reprieve order within a node: violators first, each group in ranked order.
    planned = planned[np.lexsort((planned, ~violating[planned], node[planned]))]
    plan_node = node[planned]
    per_node = np.bincount(plan_node, minlength=len(firsts))
    turn = np.arange(len(planned)) - (np.cumsum(per_node) - per_node)[plan_node]
    by_round = np.lexsort((plan_node, turn))
    planned, plan_node, turn = planned[by_round], plan_node[by_round], turn[by_round]
    bounds = np.searchsorted(turn, np.arange(int(turn[-1]) + 2)).tolist()
    for lo, hi in itertools.pairwise(bounds):
        pods_back = planned[lo:hi]
        slots_back = node_slots[plan_node[lo:hi]]
        forked.move_rows(slots_back, base[pods_back], priority[pods_back], 1)
        check = framework.run_filter_with_nominated(state, pod, forked, slots_back, nominator)
        failed = np.flatnonzero(~check.feasible)
        if len(failed):
            out = pods_back[failed]
            forked.move_rows(slots_back[failed], base[out], priority[out], -1)
            evicted[out] = True
    return evicted


def _tie_finder(pods: list[PodInfo], priority: np.ndarray, start: np.ndarray,
                unstarted: np.ndarray, evicted: np.ndarray, violating: np.ndarray, lo: int,
                hi: int) -> TieFinder:
    """The node's victim ties, worked out only when asked (for the chosen node)."""
    def find() -> tuple[tuple[str, ...], ...]:
        keys = list(zip((-priority[lo:hi]).tolist(), start[lo:hi].tolist(),
                        unstarted[lo:hi].astype(np.int64).tolist(), strict=True))
        return tie_groups(keys, pods[lo:hi], evicted[lo:hi].tolist(),
                          violating[lo:hi].tolist())
    return find


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget as ``filterPodsWithPDBViolation`` reads it."""

    namespace: str | None
    #: None for a selector that is empty, selects nothing or does not parse.
    selector: LabelSelector | None
    allowed: int
    disrupted: frozenset[str]

    def counts(self, pod: PodInfo) -> bool:
        """Whether evicting ``pod`` uses up one of this budget's disruptions."""
        return (self.selector is not None and bool(pod.labels)
                and pod.namespace == self.namespace and self.selector.matches(pod.labels)
                and pod.name not in self.disrupted)


#: The last PDB objects parsed and their budgets: one preemption's dry run asks once per
#: node for the same objects (replaced, never changed in place, when a PDB changes).
_parsed: list[tuple[tuple[dict[str, Any], ...], list[Budget]]] = []


def parse_budgets(pdbs: Sequence[dict[str, Any]]) -> list[Budget]:
    if _parsed and len(_parsed[0][0]) == len(pdbs) \
            and all(a is b for a, b in zip(_parsed[0][0], pdbs, strict=True)):
        return _parsed[0][1]
    budgets = []
    for pdb in pdbs:
        status = pdb.get("status") or {}
        try:
            selector = LabelSelector.parse((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            selector = None
        if selector is not None and (selector.nothing or selector.empty):
            selector = None
        budgets.append(Budget((pdb.get("metadata") or {}).get("namespace"), selector,
                              int(status.get("disruptionsAllowed") or 0),
                              frozenset(status.get("disruptedPods") or {})))
    _parsed[:] = [(tuple(pdbs), budgets)]
    return budgets


def pdb_violators(ranked: list[PodInfo], node: np.ndarray, firsts: np.ndarray,
                  where: np.ndarray, budgets: list[Budget]) -> np.ndarray:
    """``filterPodsWithPDBViolation`` node by node over pods in ranked order (only those
    ``where`` holds): a pod violates when some budget it counts against is exhausted by it
    and the node's more important pods."""
    violating = np.zeros(len(ranked), dtype=bool)
    counted: dict[int, list[int]] = {}
    budgets_of = _budget_index(budgets)
    for i in np.flatnonzero(where).tolist():
        pod = ranked[i]
        if not pod.labels:
            continue
        for b in budgets_of(pod):
            if budgets[b].counts(pod):
                counted.setdefault(b, []).append(i)
    for b, members in counted.items():
        counts = np.zeros(len(ranked), dtype=bool)
        counts[members] = True
        running = np.cumsum(counts)
        before = np.concatenate(([0], running))[firsts[node]]
        violating |= counts & (running - before > budgets[b].allowed)
    return violating


def _budget_index(budgets: list[Budget]) -> Callable[[PodInfo], list[int]]:
    """The budgets a pod may count against: those of its namespace whose selector's first
    requirement, when an ``In`` (every ``matchLabels`` entry is one), its labels meet, and
    those of its namespace whose selector starts otherwise. Each budget is checked in full
    afterwards; the index only spares matching every pod against every budget."""
    indexed: dict[tuple[str | None, str, str], list[int]] = {}
    general: dict[str | None, list[int]] = {}
    keys: set[str] = set()
    for b, budget in enumerate(budgets):
        selector = budget.selector
        if selector is None:
            continue
        first = selector.requirements[0] if selector.requirements else None
        if first is not None and first.operator == "In":
            keys.add(first.key)
            for value in first.values:
                indexed.setdefault((budget.namespace, first.key, value), []).append(b)
        else:
            general.setdefault(budget.namespace, []).append(b)

    def budgets_of(pod: PodInfo) -> list[int]:
        found = list(general.get(pod.namespace, ()))
        for key in keys:
            value = pod.labels.get(key)
            if value is not None:
                found += indexed.get((pod.namespace, key, value), ())
        return found

    return budgets_of
