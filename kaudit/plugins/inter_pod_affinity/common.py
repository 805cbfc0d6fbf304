"""What InterPodAffinity's filtering and scoring share: terms, the pod index, topology-pair
counting and the terms' parse errors.

Mirrors, for Kubernetes v1.34, the helpers of ``interpodaffinity/plugin.go``
(``mergeAffinityTermNamespacesIfNotEmpty``, ``GetNamespaceLabelsSnapshot``),
``AffinityTerm.Matches`` and ``NewPodInfo`` from ``pkg/scheduler/framework/types.go``; the
label-selector errors ``NewPodInfo`` reports are :func:`kaudit.k8s.labels.selector_error`'s.

Counters are kept as upstream keeps them, ``{(topologyKey, value): count}``, so that the
PreFilter extensions and ``clone()`` behave the same. They are *built* per topology key: the
slots of the matching existing pods are turned into interned label codes
(``ClusterState.topology_codes``) and counted with ``np.bincount``; Filter and Score map the
counters back to an array per key and index it with ``codes[slots]``.

Only the incoming pod's terms need every existing pod, and only those in the namespaces the
terms name. Existing pods' own terms are read from the pods that have (anti-)affinity, found
by one pass over the cluster's pods per cluster generation (see :class:`PodIndex`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState, TopologyCodes
from kaudit.gostrings import aggregate
from kaudit.k8s.labels import selector_error
from kaudit.model.pod import AffinityTerm, PodInfo
from kaudit.model.selectors import LabelSelector
from kaudit.plugins import names

PRE_FILTER_STATE_KEY = "PreFilter" + names.INTER_POD_AFFINITY
PRE_SCORE_STATE_KEY = "PreScore" + names.INTER_POD_AFFINITY

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]


# --------------------------------------------------------------------------- terms

@dataclass(frozen=True, slots=True)
class IncomingTerm:
    """A term of the pod being scheduled, its namespaceSelector unrolled into namespaces.

    ``mergeAffinityTermNamespacesIfNotEmpty``: a non-empty selector is replaced by the
    namespaces it selects now; an empty one (``{}``) keeps matching every namespace.
    """

    selector: LabelSelector
    namespaces: frozenset[str]
    all_namespaces: bool
    topology_key: str
    weight: int = 0

    def matches(self, pod: PodInfo) -> bool:
        if self.all_namespaces or pod.namespace in self.namespaces:
            return self.selector.matches(pod.labels)
        return False


def incoming_term(term: AffinityTerm, cluster: ClusterState) -> IncomingTerm:
    selector = term.namespace_selector
    namespaces = term.namespaces
    if not selector.empty and not selector.nothing:
        namespaces = namespaces | {name for name, labels in cluster.namespaces.items()
                                   if selector.matches(labels)}
    return IncomingTerm(term.selector, namespaces, selector.empty, term.topology_key,
                        term.weight)


def incoming_terms(terms: Iterable[AffinityTerm], cluster: ClusterState
                   ) -> tuple[IncomingTerm, ...]:
    return tuple(incoming_term(term, cluster) for term in terms)


def matches_all(terms: tuple[IncomingTerm, ...], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    return bool(terms) and all(term.matches(pod) for term in terms)


# --------------------------------------------------------------------------- pod index

@dataclass
class NamespaceGroup:
    """Pods of one namespace on live nodes, and their slots."""

    pods: list[PodInfo]
    slots: np.ndarray


@dataclass
class PodIndex:
    """Pods on live nodes, grouped as the plugin reads them; valid for one generation.

    Upstream's NodeInfo keeps ``PodsWithAffinity`` and ``PodsWithRequiredAntiAffinity`` and the
    snapshot lists the nodes that have them; ClusterState has no such index, so this one is
    rebuilt (one pass over the pods) whenever the cluster's generation moves.
    """

    generation: int
    with_affinity: list[tuple[int, PodInfo]]
    with_required_anti_affinity: list[tuple[int, PodInfo]]

    def groups(self, cluster: ClusterState, namespaces: frozenset[str] | None
               ) -> Iterator[NamespaceGroup]:
        """The groups of ``namespaces`` (every namespace for None)."""
        names = cluster.pods_by_namespace if namespaces is None else namespaces
        for namespace in names:
            group = namespace_group(cluster, namespace)
            if group is not None:
                yield group


def _live_slots(cluster: ClusterState, pods: Iterable[PodInfo]
                ) -> Iterator[tuple[int, PodInfo]]:
    """(slot, pod) for the pods bound to live nodes (removed nodes keep their pods' slots)."""
    pods = list(pods)
    if not pods:
        return
    live = cluster.live.tolist()
    slot_of = cluster.slot_of
    for pod in pods:
        slot = slot_of.get(pod.node_name)
        if slot is not None and live[slot]:
            yield slot, pod


_GROUPS: weakref.WeakKeyDictionary[ClusterState, dict[str, tuple[tuple[int, int],
                                                                  NamespaceGroup]]] = (
    weakref.WeakKeyDictionary())


def namespace_group(cluster: ClusterState, namespace: str) -> NamespaceGroup | None:
    """The namespace's pods on live nodes with their slots, cached until they change."""
    pods = cluster.pods_by_namespace.get(namespace)
    if not pods:
        return None
    key = (cluster.namespace_generation[namespace], cluster.node_generation)
    cache = _GROUPS.setdefault(cluster, {})
    cached = cache.get(namespace)
    if cached is not None and cached[0] == key:
        return cached[1]
    pairs = list(_live_slots(cluster, pods.values()))
    group = NamespaceGroup([p for _, p in pairs],
                           np.asarray([s for s, _ in pairs], dtype=np.int64))
    cache[namespace] = (key, group)
    return group


_INDEXES: weakref.WeakKeyDictionary[ClusterState, PodIndex] = weakref.WeakKeyDictionary()


def pod_index(cluster: ClusterState) -> PodIndex:
    index = _INDEXES.get(cluster)
    if index is not None and index.generation == cluster.generation:
        return index
    with_affinity = list(_live_slots(cluster, cluster.affinity_pods.values()))
    anti = list(_live_slots(cluster, cluster.anti_affinity_pods.values()))
    index = PodIndex(cluster.generation, with_affinity, anti)
    _INDEXES[cluster] = index
    return index


# --------------------------------------------------------------------------- counting

def count_pairs(cluster: ClusterState, key: str, slots: np.ndarray) -> Counts:
    """How many of ``slots`` (one per matching pod) lie in each value of label ``key``."""
    if len(slots) == 0:
        return {}
    topology = cluster.topology_codes(key)
    codes = topology.codes[slots]
    codes = codes[codes >= 0]
    if len(codes) == 0:
        return {}
    counts = np.bincount(codes, minlength=len(topology.values))
    return {(key, topology.values[i]): int(counts[i]) for i in np.flatnonzero(counts).tolist()}


def merge(into: Counts, counts: Counts) -> None:
    for pair, count in counts.items():
        into[pair] = into.get(pair, 0) + count


def bump(counts: Counts, labels: Mapping[str, str], key: str, delta: int) -> None:
    """``topologyToMatchedTermCount.update``: entries that reach zero are deleted."""
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + delta
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


def count_array(counts: Counts, key: str, topology: TopologyCodes) -> np.ndarray:
    """``counts`` of ``key`` per value code, with a trailing 0 that code -1 picks."""
    array = np.zeros(len(topology.values) + 1, dtype=np.int64)
    for (pair_key, value), count in counts.items():
        if pair_key == key:
            code = topology.index.get(value)
            if code is not None:
                array[code] = count
    return array


def _slots_matching_all(terms: tuple[IncomingTerm, ...], index: PodIndex,
                        cluster: ClusterState) -> np.ndarray:
    namespaces: frozenset[str] | None = None
    for term in terms:
        if not term.all_namespaces:
            namespaces = term.namespaces if namespaces is None else namespaces & term.namespaces
    chunks = []
    for group in index.groups(cluster, namespaces):
        mask = np.fromiter((all(t.selector.matches(p.labels) for t in terms)
                            for p in group.pods), bool, count=len(group.pods))
        chunks.append(group.slots[mask])
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)


def matching_slots(term: IncomingTerm, index: PodIndex, cluster: ClusterState) -> np.ndarray:
    """Slots of the existing pods ``term`` matches, one entry per pod."""
    return _slots_matching_all((term,), index, cluster)


def existing_anti_affinity_counts(pod: PodInfo, namespace_labels: Mapping[str, str],
                                  index: PodIndex, cluster: ClusterState) -> Counts:
    """Existing pods' required anti-affinity terms that match the incoming pod."""
    slots_by_key: dict[str, list[int]] = {}
    for slot, existing in index.with_required_anti_affinity:
        for term in existing.required_anti_affinity:
            if term.matches(pod, namespace_labels):
                slots_by_key.setdefault(term.topology_key, []).append(slot)
    counts: Counts = {}
    for key, slots in slots_by_key.items():
        merge(counts, count_pairs(cluster, key, np.asarray(slots, dtype=np.int64)))
    return counts


def incoming_counts(affinity: tuple[IncomingTerm, ...], anti: tuple[IncomingTerm, ...],
                    index: PodIndex, cluster: ClusterState) -> tuple[Counts, Counts]:
    """Existing pods matching all the incoming affinity terms (counted once per term), and
    existing pods matching each incoming anti-affinity term."""
    affinity_counts: Counts = {}
    anti_counts: Counts = {}
    if affinity:
        slots = _slots_matching_all(affinity, index, cluster)
        for term in affinity:
            merge(affinity_counts, count_pairs(cluster, term.topology_key, slots))
    for term in anti:
        merge(anti_counts, count_pairs(cluster, term.topology_key,
                                       matching_slots(term, index, cluster)))
    return affinity_counts, anti_counts


# --------------------------------------------------------------------------- parse errors
# ``NewPodInfo`` rejects label selectors that ``metav1.LabelSelectorAsSelector`` cannot build.

def _terms_error(terms: Iterable[Any]) -> str | None:
    for term in terms:
        if isinstance(term, dict):
            error = (selector_error(term.get("labelSelector"))
                     or selector_error(term.get("namespaceSelector")))
            if error:
                return error
    return None


def affinity_parse_error(pod: PodInfo) -> str | None:
    """``NewPodInfo``'s error for the pod's (anti-)affinity terms, or None."""
    affinity = ((pod.obj.get("spec") or {}).get("affinity") or {}) if pod.obj else {}
    if not isinstance(affinity, dict):
        return None
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    sections: dict[str, dict[str, Any]] = {
        kind: section if isinstance(section := affinity.get(kind), dict) else {}
        for kind in ("podAffinity", "podAntiAffinity")}
    if not any(sections.values()):
        return None
    groups = (
        ("requiredAffinityTerms", sections["podAffinity"].get(required) or []),
        ("requiredAntiAffinityTerms", sections["podAntiAffinity"].get(required) or []),
        ("preferredAffinityTerms", [t.get("podAffinityTerm") or {} for t in
                                    sections["podAffinity"].get(preferred) or []]),
        ("preferredAntiAffinityTerms", [t.get("podAffinityTerm") or {} for t in
                                        sections["podAntiAffinity"].get(preferred) or []]),
    )
    errors = []
    for label, terms in groups:
        error = _terms_error(terms)
        if error:
            errors.append(f"{label}: {error}")
    return aggregate(errors) if errors else None
