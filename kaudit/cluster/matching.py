"""Selectors evaluated over many nodes at once, on the cluster's interned label columns.

The vector form of :mod:`kaudit.model.selectors`: same semantics, one boolean per slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.k8s.labels import parse_int64
from kaudit.model.selectors import NodeSelector, NodeSelectorTerm, Requirement


def _numbers(values: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each label value as ``strconv.ParseInt(v, 10, 64)`` reads it, and whether it can."""
    numbers = np.zeros(len(values) + 1, dtype=np.int64)
    valid = np.zeros(len(values) + 1, dtype=bool)
    for i, value in enumerate(values):
        number = parse_int64(value)
        if number is not None:
            numbers[i] = number
            valid[i] = True
    return numbers, valid


def requirement_mask(cluster: ClusterState, slots: np.ndarray, requirement: Requirement,
                     ) -> np.ndarray:
    topology = cluster.topology_codes(requirement.key)
    codes: np.ndarray = topology.codes[slots]
    op = requirement.operator
    if op in ("In", "NotIn"):
        wanted = [topology.index[v] for v in requirement.values if v in topology.index]
        inside = np.isin(codes, wanted) if wanted else np.zeros(len(codes), dtype=bool)
        return inside if op == "In" else ~inside
    if op == "Exists":
        exists: np.ndarray = codes >= 0
        return exists
    if op == "DoesNotExist":
        absent: np.ndarray = codes < 0
        return absent
    numbers, valid = _numbers(topology.values)
    bound = parse_int64(next(iter(requirement.values), ""))
    if bound is None:
        return np.zeros(len(codes), dtype=bool)
    present = codes >= 0
    value = numbers[codes]  # -1 picks the padding slot, masked out below
    compare = value > bound if op == "Gt" else value < bound
    matched: np.ndarray = present & valid[codes] & compare
    return matched


def _field_mask(cluster: ClusterState, slots: np.ndarray, requirement: Requirement
                ) -> np.ndarray:
    named = [cluster.slot_of[n] for n in requirement.values if n in cluster.slot_of]
    inside = np.isin(slots, named) if named else np.zeros(len(slots), dtype=bool)
    if requirement.operator == "In":
        return inside
    if requirement.operator == "NotIn":
        return ~inside
    return np.zeros(len(slots), dtype=bool)


def term_mask(cluster: ClusterState, slots: np.ndarray, term: NodeSelectorTerm) -> np.ndarray:
    if term.error is not None or (not term.expressions and not term.fields):
        return np.zeros(len(slots), dtype=bool)
    mask = np.ones(len(slots), dtype=bool)
    for requirement in term.expressions:
        mask &= requirement_mask(cluster, slots, requirement)
    for requirement in term.fields:
        mask &= _field_mask(cluster, slots, requirement)
    return mask


def node_selector_mask(cluster: ClusterState, slots: np.ndarray, selector: NodeSelector
                       ) -> np.ndarray:
    mask = np.zeros(len(slots), dtype=bool)
    for term in selector.terms:
        mask |= term_mask(cluster, slots, term)
    return mask


def label_map_mask(cluster: ClusterState, slots: np.ndarray, labels: Mapping[str, str]
                   ) -> np.ndarray:
    """Nodes carrying every ``key: value`` of ``labels`` (a pod's ``nodeSelector``)."""
    mask = np.ones(len(slots), dtype=bool)
    for key, value in labels.items():
        mask &= requirement_mask(cluster, slots, Requirement(key, "In", frozenset([value])))
    return mask


def required_node_affinity_mask(cluster: ClusterState, slots: np.ndarray,
                                node_selector: Mapping[str, str],
                                required: NodeSelector | None) -> np.ndarray:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match``: nodeSelector AND required terms."""
    mask = label_map_mask(cluster, slots, node_selector)
    if required is not None:
        mask &= node_selector_mask(cluster, slots, required)
    return mask


def weighted_terms_score(cluster: ClusterState, slots: np.ndarray,
                         terms: Iterable[tuple[int, NodeSelectorTerm]]) -> np.ndarray:
    """Σ weight of the preferred terms each node matches (``PreferredSchedulingTerms.Score``)."""
    score = np.zeros(len(slots), dtype=np.int64)
    for weight, term in terms:
        if weight == 0:
            continue
        score += np.where(term_mask(cluster, slots, term), weight, 0)
    return score
