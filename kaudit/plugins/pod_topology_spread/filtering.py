"""PodTopologySpread's PreFilter, Filter and PreFilter extensions.

Mirrors ``podtopologyspread/filtering.go`` of Kubernetes v1.34:

* **PreFilter/Filter**: nodes carrying every constraint key and passing the constraint's node
  inclusion policies register their domain; ``skew = count(domain) + selfMatch - min`` with
  ``min = 0`` below ``minDomains``; U above ``maxSkew``, UU when the node lacks the key.
  Skip without hard constraints.
* **AddPod/RemovePod** (``updateWithPod``): like upstream they test the selector directly, so a
  terminating pod or an empty selector is counted there although the from-scratch count skips it.
  The global minimum is recomputed exactly from the domain counts; upstream keeps two "critical
  paths", which agree whenever the changes touch one node, as the framework guarantees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kaudit.cluster.matching import required_node_affinity_mask
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    NodeVerdicts,
    PreFilterResult,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo, SpreadConstraint
from kaudit.model.selectors import SelectorError
from kaudit.model.taints import untolerated_taint
from kaudit.plugins.pod_topology_spread.common import (
    _FILTER_REASONS,
    _MAX_INT32,
    _REASON_LABEL,
    _REASON_SKEW,
    DO_NOT_SCHEDULE,
    HONOR,
    PRE_FILTER_STATE_KEY,
    NodeInclusion,
    _all_keys_present,
    _domain_counts,
    _error_verdicts,
    codes_at,
    padded_codes,
)

if TYPE_CHECKING:
    from kaudit.plugins.pod_topology_spread.plugin import PodTopologySpread


@dataclass
class PreFilterState:
    """Matching-pod counts per domain of each hard constraint.

    ``match_num[i]`` and ``present[i]`` are indexed by the topology code of constraint ``i``'s
    key, with one extra trailing entry (always 0 / absent) that code -1 picks.
    """

    constraints: tuple[SpreadConstraint, ...]
    codes: list[np.ndarray]
    values: list[dict[str, int]]
    match_num: list[np.ndarray]
    present: list[np.ndarray]

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, self.codes, self.values,
                              [m.copy() for m in self.match_num],
                              [p.copy() for p in self.present])

    def domains(self, i: int) -> dict[str, int]:
        """``TpValueToMatchNum[i]``: count per registered domain value."""
        return {value: int(self.match_num[i][code]) for value, code in self.values[i].items()
                if self.present[i][code]}

    def min_match_num(self, i: int) -> int:
        present = self.present[i]
        domains = int(present.sum())
        if domains < self.constraints[i].min_domains:
            return 0
        if domains == 0:
            return _MAX_INT32
        return int(self.match_num[i][present].min())


def pre_filter(plugin: PodTopologySpread, state: CycleState, pod: PodInfo, cluster: ClusterState
               ) -> tuple[PreFilterResult | None, Status]:
    plugin._cluster = cluster
    try:
        constraints = plugin.constraints(pod, cluster, DO_NOT_SCHEDULE)
    except SelectorError as exc:
        return None, Status.of(Code.ERROR, "get constraints from pod: obtaining pod's hard "
                                           f"topology spread constraints: {exc}")
    if not constraints:
        return None, Status.of(Code.SKIP)
    state.write(PRE_FILTER_STATE_KEY, plugin.pre_filter_state(pod, cluster, constraints))
    return None, Status.success()


def pre_filter_state(plugin: PodTopologySpread, pod: PodInfo, cluster: ClusterState,
                     constraints: tuple[SpreadConstraint, ...]) -> PreFilterState:
    """``calPreFilterState`` over every node of the cluster."""
    capacity = cluster.capacity
    keyed = [padded_codes(cluster, c.topology_key) for c in constraints]
    with_keys = _all_keys_present((codes for codes, _ in keyed), capacity)
    inclusion = NodeInclusion(cluster, pod)
    table = plugin.pod_table(cluster)
    match_num, present = [], []
    for constraint, (codes, index) in zip(constraints, keyed, strict=True):
        nodes = with_keys & inclusion.mask(constraint)
        per_slot = table.count_per_slot(constraint.selector, pod.namespace, capacity)
        counts, seen = _domain_counts(codes, per_slot, nodes, len(index) + 1)
        match_num.append(counts)
        present.append(seen)
    return PreFilterState(constraints, [codes for codes, _ in keyed],
                          [index for _, index in keyed], match_num, present)


def filter(plugin: PodTopologySpread, state: CycleState, pod: PodInfo, cluster: ClusterState,
           slots: np.ndarray) -> NodeVerdicts:
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return _error_verdicts(len(slots), f'reading "{PRE_FILTER_STATE_KEY}" from '
                                           "cycleState: not found")
    count = len(slots)
    codes = np.zeros(count, np.int8)
    reason_ids = np.zeros(count, np.int32)
    undecided = np.ones(count, dtype=bool)
    for i, constraint in enumerate(s.constraints):
        domain = codes_at(s.codes[i], slots)
        missing = undecided & (domain < 0)
        codes[missing] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        reason_ids[missing] = _REASON_LABEL
        undecided &= ~missing
        self_match = 1 if constraint.selector.matches(pod.labels) else 0
        skew = s.match_num[i][domain] + self_match - s.min_match_num(i)
        failed = undecided & (skew > constraint.max_skew)
        codes[failed] = Code.UNSCHEDULABLE
        reason_ids[failed] = _REASON_SKEW
        undecided &= ~failed
    return NodeVerdicts(codes, reason_ids, list(_FILTER_REASONS))


def add_pod(plugin: PodTopologySpread, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
            slot: int,
            cluster: ClusterState) -> Status:
    return plugin._update_with_pod(state, pod, pod_to_add, slot, cluster, 1)


def remove_pod(plugin: PodTopologySpread, state: CycleState, pod: PodInfo,
               pod_to_remove: PodInfo, slot: int,
               cluster: ClusterState) -> Status:
    return plugin._update_with_pod(state, pod, pod_to_remove, slot, cluster, -1)


def _update_with_pod(plugin: PodTopologySpread, state: CycleState, pod: PodInfo,
                     updated: PodInfo, slot: int,
                     cluster: ClusterState, delta: int) -> Status:
    """``updateWithPod``: the pod's labels are tested directly (no terminating check)."""
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return Status.of(Code.ERROR, f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: '
                                     "not found")
    if updated.namespace != pod.namespace or slot >= len(cluster.nodes):
        return Status.success()
    if cluster.nodes[slot] is None:
        return Status.success()
    domains = [int(codes_at(codes, np.asarray([slot]))[0]) for codes in s.codes]
    if min(domains, default=0) < 0:
        return Status.success()
    where = np.asarray([slot])
    affinity = bool(required_node_affinity_mask(
        cluster, where, pod.node_selector, pod.required_node_affinity)[0])
    taints = cluster.taint_sets[int(cluster.taint_group[slot])]
    tolerated = untolerated_taint(taints, pod.tolerations) is None
    for i, constraint in enumerate(s.constraints):
        if not constraint.selector.matches(updated.labels):
            continue
        if constraint.node_affinity_policy == HONOR and not affinity:
            continue
        if constraint.node_taints_policy == HONOR and not tolerated:
            continue
        s.match_num[i][domains[i]] += delta
        s.present[i][domains[i]] = True
    return Status.success()
