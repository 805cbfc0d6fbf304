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
terms name: they are evaluated over the cluster's pod rows at once
(:mod:`kaudit.cluster.pod_columns`; terminating pods count, as upstream's NodeInfo lists
them). Existing pods' own terms are read from the pods that have (anti-)affinity, grouped by
distinct term (see :class:`PodIndex`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.pod_columns import pods_in_namespaces, pods_matching
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
    namespaces it selects now; an empty one (``{}``) keeps matching every namespace (and,
    before v1.37, so does one that matches an empty label set, :func:`incoming_term`).
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


def incoming_term(term: AffinityTerm, cluster: ClusterState,
                  selector_kept: bool = False) -> IncomingTerm:
    """The term with its namespaceSelector unrolled. ``selector_kept`` (v1.34 to v1.36):
    upstream's ``mergeAffinityTermNamespacesIfNotEmpty`` has a value receiver, so the
    selector it means to replace stays on the term, and ``Matches`` tries it on an empty label
    set: a selector that holds there (only ``NotIn`` / ``DoesNotExist`` requirements) matches
    pods in every namespace. v1.37 fixed it (a pointer receiver)."""
    selector = term.namespace_selector
    namespaces = term.namespaces
    all_namespaces = selector.empty
    if not selector.empty and not selector.nothing:
        namespaces = namespaces | {name for name, labels in cluster.namespaces.items()
                                   if selector.matches(labels)}
        all_namespaces = selector_kept and selector.matches({})
    return IncomingTerm(term.selector, namespaces, all_namespaces, term.topology_key,
                        term.weight)


def incoming_terms(terms: Iterable[AffinityTerm], cluster: ClusterState,
                   selector_kept: bool = False) -> tuple[IncomingTerm, ...]:
    return tuple(incoming_term(term, cluster, selector_kept) for term in terms)


def matches_all(terms: tuple[IncomingTerm, ...], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    return bool(terms) and all(term.matches(pod) for term in terms)


# --------------------------------------------------------------------------- pod index

#: The sections of an existing pod's terms that score: (attribute, weight sign); a required
#: affinity term's weight is ``hardPodAffinityWeight``.
SCORING_SECTIONS = (("required_affinity", 0), ("preferred_affinity", 1),
                    ("preferred_anti_affinity", -1))


@dataclass
class PodIndex:
    """Existing pods' terms on live nodes, each distinct term with the slots of the pods
    that have it; valid while no pod with terms comes or goes and no node changes.

    Upstream's NodeInfo keeps ``PodsWithAffinity`` and ``PodsWithRequiredAntiAffinity`` and
    the plugin tries each of their terms against the incoming pod. The pods of one workload
    share their terms, so each distinct term is tried once and counts for all its pods.
    """

    generation: tuple[int, int]
    #: (section of :data:`SCORING_SECTIONS`, term) -> slots, one entry per pod.
    scoring_terms: dict[tuple[int, AffinityTerm], list[int]]
    #: Required anti-affinity term -> slots, one entry per pod.
    anti_affinity_terms: dict[AffinityTerm, list[int]]


_INDEXES: weakref.WeakKeyDictionary[ClusterState, PodIndex] = weakref.WeakKeyDictionary()


def pod_index(cluster: ClusterState) -> PodIndex:
    generation = (cluster.affinity_generation, cluster.node_generation)
    index = _INDEXES.get(cluster)
    if index is not None and index.generation == generation:
        return index
    live = cluster.live.tolist()
    slot_of = cluster.slot_of
    scoring: dict[tuple[int, AffinityTerm], list[int]] = {}
    for pod in cluster.affinity_pods.values():
        slot = slot_of.get(pod.node_name)
        if slot is None or not live[slot]:  # removed nodes keep their pods' slots
            continue
        for section, (attribute, _) in enumerate(SCORING_SECTIONS):
            for term in getattr(pod, attribute):
                scoring.setdefault((section, term), []).append(slot)
    anti: dict[AffinityTerm, list[int]] = {}
    for pod in cluster.anti_affinity_pods.values():
        slot = slot_of.get(pod.node_name)
        if slot is not None and live[slot]:
            for term in pod.required_anti_affinity:
                anti.setdefault(term, []).append(slot)
    index = PodIndex(generation, scoring, anti)
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


def _slots_matching_all(terms: tuple[IncomingTerm, ...], cluster: ClusterState
                        ) -> np.ndarray:
    namespaces: frozenset[str] | None = None
    for term in terms:
        if not term.all_namespaces:
            namespaces = term.namespaces if namespaces is None else namespaces & term.namespaces
    rows = pods_matching(cluster, (term.selector for term in terms),
                         pods_in_namespaces(cluster, namespaces))
    slots: np.ndarray = cluster.pod_row_slot[rows]
    return slots


def matching_slots(term: IncomingTerm, cluster: ClusterState) -> np.ndarray:
    """Slots of the existing pods ``term`` matches, one entry per pod."""
    return _slots_matching_all((term,), cluster)


def existing_anti_affinity_counts(pod: PodInfo, namespace_labels: Mapping[str, str],
                                  index: PodIndex, cluster: ClusterState) -> Counts:
    """Existing pods' required anti-affinity terms that match the incoming pod."""
    slots_by_key: dict[str, list[int]] = {}
    for term, slots in index.anti_affinity_terms.items():
        if term.matches(pod, namespace_labels):
            slots_by_key.setdefault(term.topology_key, []).extend(slots)
    counts: Counts = {}
    for key, slots in slots_by_key.items():
        merge(counts, count_pairs(cluster, key, np.asarray(slots, dtype=np.int64)))
    return counts


def incoming_counts(affinity: tuple[IncomingTerm, ...], anti: tuple[IncomingTerm, ...],
                    cluster: ClusterState) -> tuple[Counts, Counts]:
    """Existing pods matching all the incoming affinity terms (counted once per term), and
    existing pods matching each incoming anti-affinity term."""
    affinity_counts: Counts = {}
    anti_counts: Counts = {}
    if affinity:
        slots = _slots_matching_all(affinity, cluster)
        for term in affinity:
            merge(affinity_counts, count_pairs(cluster, term.topology_key, slots))
    for term in anti:
        merge(anti_counts, count_pairs(cluster, term.topology_key,
                                       matching_slots(term, cluster)))
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
