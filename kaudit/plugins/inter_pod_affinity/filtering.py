"""InterPodAffinity's PreFilter, PreFilter extensions and Filter.

Mirrors ``interpodaffinity/filtering.go`` of Kubernetes v1.34: the three PreFilter counters,
Skip, AddPod/RemovePod, the Filter order, reasons and codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kaudit.cluster.state import ClusterState, TopologyCodes
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    NodeVerdicts,
    PreFilterResult,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins.inter_pod_affinity.common import (
    PRE_FILTER_STATE_KEY,
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
    Counts,
    IncomingTerm,
    affinity_parse_error,
    bump,
    count_array,
    existing_anti_affinity_counts,
    incoming_counts,
    incoming_terms,
    matches_all,
    pod_index,
)

if TYPE_CHECKING:
    from kaudit.plugins.inter_pod_affinity.plugin import InterPodAffinity


# --------------------------------------------------------------------------- PreFilter state

@dataclass
class PreFilterState:
    """``preFilterState``: the three counters, the incoming pod's terms and namespace labels."""

    existing_anti_affinity_counts: Counts
    affinity_counts: Counts
    anti_affinity_counts: Counts
    pod: PodInfo
    affinity_terms: tuple[IncomingTerm, ...]
    anti_affinity_terms: tuple[IncomingTerm, ...]
    namespace_labels: Mapping[str, str]
    matches_own_affinity: bool
    _arrays: dict[tuple[str, str], tuple[TopologyCodes, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False)

    def clone(self) -> PreFilterState:
        return PreFilterState(dict(self.existing_anti_affinity_counts),
                              dict(self.affinity_counts), dict(self.anti_affinity_counts),
                              self.pod, self.affinity_terms, self.anti_affinity_terms,
                              self.namespace_labels, self.matches_own_affinity)

    def update_with_pod(self, other: PodInfo, node_labels: Mapping[str, str],
                        multiplier: int) -> None:
        """``updateWithPod``: account ``other`` (added or removed) on a node with these labels."""
        self._arrays.clear()
        for term in other.required_anti_affinity:
            if term.matches(self.pod, self.namespace_labels):
                bump(self.existing_anti_affinity_counts, node_labels, term.topology_key,
                     multiplier)
        if matches_all(self.affinity_terms, other):
            for incoming in self.affinity_terms:
                bump(self.affinity_counts, node_labels, incoming.topology_key, multiplier)
        for incoming in self.anti_affinity_terms:
            if incoming.matches(other):
                bump(self.anti_affinity_counts, node_labels, incoming.topology_key, multiplier)

    def per_slot(self, which: str, key: str, cluster: ClusterState,
                 slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(label code, counter value) of every slot for counter ``which`` and label ``key``."""
        topology = cluster.topology_codes(key)
        cached = self._arrays.get((which, key))
        if cached is None or cached[0] is not topology:
            counts: Counts = getattr(self, which)
            cached = (topology, count_array(counts, key, topology))
            self._arrays[(which, key)] = cached
        codes = topology.codes[slots]
        return codes, cached[1][codes]


# --------------------------------------------------------------------------- Filter checks

def affinity_failures(prefilter: PreFilterState, cluster: ClusterState,
                      slots: np.ndarray) -> np.ndarray:
    """``satisfyPodAffinity`` negated: a term's key is missing, or some term has no matching
    pod in the node's domain (forgiven when nothing matches anywhere and the pod matches all
    its own terms)."""
    missing = np.zeros(len(slots), dtype=bool)
    if not prefilter.affinity_terms:
        return missing
    pods_exist = np.ones(len(slots), dtype=bool)
    for term in prefilter.affinity_terms:
        codes, counts = prefilter.per_slot("affinity_counts", term.topology_key, cluster, slots)
        missing |= codes < 0
        pods_exist &= counts > 0
    if not prefilter.affinity_counts and prefilter.matches_own_affinity:
        return missing
    return missing | ~pods_exist


def anti_affinity_failures(prefilter: PreFilterState, cluster: ClusterState,
                           slots: np.ndarray) -> np.ndarray:
    """``satisfyPodAntiAffinity`` negated."""
    failed = np.zeros(len(slots), dtype=bool)
    if not prefilter.anti_affinity_counts:
        return failed
    for term in prefilter.anti_affinity_terms:
        codes, counts = prefilter.per_slot("anti_affinity_counts", term.topology_key, cluster,
                                           slots)
        failed |= (codes >= 0) & (counts > 0)
    return failed


def existing_anti_affinity_failures(prefilter: PreFilterState, cluster: ClusterState,
                                    slots: np.ndarray) -> np.ndarray:
    """``satisfyExistingPodsAntiAffinity`` negated: any of the node's labels is a pair with a
    positive count."""
    failed = np.zeros(len(slots), dtype=bool)
    counts = prefilter.existing_anti_affinity_counts
    for key in sorted({key for (key, _), count in counts.items() if count > 0}):
        codes, per_slot = prefilter.per_slot("existing_anti_affinity_counts", key, cluster,
                                             slots)
        failed |= (codes >= 0) & (per_slot > 0)
    return failed


def pre_filter(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, cluster: ClusterState
               ) -> tuple[PreFilterResult | None, Status]:
    error = affinity_parse_error(pod)
    if error is not None:
        return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {error}")
    kept = plugin.namespace_selector_kept
    affinity = incoming_terms(pod.required_affinity, cluster, kept)
    anti = incoming_terms(pod.required_anti_affinity, cluster, kept)
    namespace_labels = dict(cluster.namespace_labels(pod.namespace))
    index = pod_index(cluster)
    existing = existing_anti_affinity_counts(pod, namespace_labels, index, cluster)
    affinity_counts, anti_counts = incoming_counts(affinity, anti, cluster)
    if not existing and not affinity and not anti:
        return None, Status.of(Code.SKIP)
    state.write(PRE_FILTER_STATE_KEY, PreFilterState(
        existing, affinity_counts, anti_counts, pod, affinity, anti, namespace_labels,
        matches_all(affinity, pod)))
    return None, Status.success()


def _update(plugin: InterPodAffinity, state: CycleState, other: PodInfo, slot: int,
            cluster: ClusterState,
            multiplier: int) -> Status:
    prefilter = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(prefilter, PreFilterState):
        return Status.of(Code.ERROR, f'error reading "{PRE_FILTER_STATE_KEY}" from '
                                     "cycleState: not found")
    prefilter.update_with_pod(other, cluster.node(slot).labels, multiplier)
    return Status.success()


def add_pod(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
            slot: int,
            cluster: ClusterState) -> Status:
    return plugin._update(state, pod_to_add, slot, cluster, 1)


def remove_pod(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
               slot: int,
               cluster: ClusterState) -> Status:
    return plugin._update(state, pod_to_remove, slot, cluster, -1)


def filter(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, cluster: ClusterState,
           slots: np.ndarray) -> NodeVerdicts:
    slots = np.asarray(slots, dtype=np.int64)
    prefilter = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(prefilter, PreFilterState):
        message = f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
        return NodeVerdicts(np.full(len(slots), np.int8(Code.ERROR)),
                            np.ones(len(slots), np.int32), [(), (message,)])
    affinity = affinity_failures(prefilter, cluster, slots)
    anti = ~affinity & anti_affinity_failures(prefilter, cluster, slots)
    existing = ~affinity & ~anti & existing_anti_affinity_failures(prefilter, cluster, slots)
    codes = np.zeros(len(slots), dtype=np.int8)
    codes[affinity] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    codes[anti | existing] = Code.UNSCHEDULABLE
    reason_ids = (affinity * 1 + anti * 2 + existing * 3).astype(np.int32)
    return NodeVerdicts(codes, reason_ids, [(), (REASON_AFFINITY,), (REASON_ANTI_AFFINITY,),
                                            (REASON_EXISTING_ANTI_AFFINITY,)])
