"""The InterPodAffinity plugin: its args, events and queueing hints.

Mirrors ``interpodaffinity/plugin.go`` of Kubernetes v1.34; the extension points live in
:mod:`.filtering` and :mod:`.scoring`, as upstream's methods live in those files.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Status
from kaudit.model.pod import AffinityTerm, PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import as_node, as_pod
from kaudit.plugins.inter_pod_affinity import filtering, scoring
from kaudit.plugins.inter_pod_affinity.common import PodIndex
from kaudit.plugins.inter_pod_affinity.scoring import ScoreAccumulator

# --------------------------------------------------------------------------- plugin

class InterPodAffinity(PreFilterPlugin, PreFilterExtensions, FilterPlugin, PreScorePlugin,
                       ScorePlugin):
    name = names.INTER_POD_AFFINITY
    # Filter reads the PreFilter state and its node's labels; the cluster's other pods
    # enter only through PreFilter and the AddPod/RemovePod extensions.
    reads_only_its_node = True
    args_spec = ArgsSpec(
        kind="InterPodAffinityArgs", schema=args_schema.INTER_POD_AFFINITY_ARGS,
        set_defaults=args_defaults.set_defaults_inter_pod_affinity,
        validate=args_validation.validate_inter_pod_affinity_args)

    signs_pods = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35): a pod with pod (anti-)affinity is not signed; the others
        sign their labels, unless existing pods' preferred terms are ignored."""
        affinity = (pod.obj.get("spec") or {}).get("affinity") or {}
        if affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None:
            return None
        if self.ignore_preferred_terms_of_existing_pods:
            return ()
        return ((signing.LABELS, signing.mapping(pod.labels)),)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on); from v1.36 the pod hint counts
        nominated pods as placed (:func:`_after_pod_change`)."""
        newer = versions.handle_carries(self.handle,
                                        "nominated-pods-count-in-affinity-hints")
        return [register(POD, ["Add", "UpdatePodLabel", "Delete"],
                         functools.partial(_after_pod_change, newer=True) if newer
                         else _after_pod_change),
                register(NODE, ["Add", "UpdateNodeLabel"], _after_node_change)]

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        weight = self.args.get("hardPodAffinityWeight")
        self.hard_pod_affinity_weight = 1 if weight is None else int(weight)
        self.ignore_preferred_terms_of_existing_pods = bool(
            self.args.get("ignorePreferredTermsOfExistingPods") or False)
        #: Before v1.37 an incoming term's namespaceSelector stays beside the namespaces it
        #: selected (:func:`~kaudit.plugins.inter_pod_affinity.common.incoming_term`).
        self.namespace_selector_kept = not versions.handle_carries(
            handle, "affinity-namespace-selector-replaced")

    # ------------------------------------------------------------------ filtering

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        return filtering.pre_filter(self, state, pod, cluster)

    def _update(self, state: CycleState, other: PodInfo, slot: int, cluster: ClusterState,
                multiplier: int) -> Status:
        return filtering._update(self, state, other, slot, cluster, multiplier)

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, slot: int,
                cluster: ClusterState) -> Status:
        return filtering.add_pod(self, state, pod, pod_to_add, slot, cluster)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, slot: int,
                   cluster: ClusterState) -> Status:
        return filtering.remove_pod(self, state, pod, pod_to_remove, slot, cluster)

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        return filtering.filter(self, state, pod, cluster, slots)

    # ------------------------------------------------------------------ scoring

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        return scoring.pre_score(self, state, pod, cluster, slots)

    def _score_existing_terms(self, accumulator: ScoreAccumulator, pod: PodInfo,
                              cluster: ClusterState, index: PodIndex) -> None:
        scoring._score_existing_terms(self, accumulator, pod, cluster, index)

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        return scoring.score(self, state, pod, cluster, slots)

    normalizes_rows = True

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        return scoring.normalize(self, state, pod, slots, scores)


# ------------------------------------------------------------------ queueing hints


def _matches_all(terms: tuple[AffinityTerm, ...], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: every required term matches (false for no terms);
    namespace labels are not looked up."""
    return bool(terms) and all(term.matches(pod, {}) for term in terms)


def _after_pod_change(pod: PodInfo, old: Any, new: Any, newer: bool = False) -> QueueingHint:
    """``isSchedulableAfterPodChange``: an assigned pod that now matches all the pod's
    affinity terms, or no longer matches (or was deleted matching) all its anti-affinity
    terms. ``newer`` (v1.36, upstream PRs #135394, #135392, #135325): the pod's own label
    change requeues it; a pod with a nominated node counts as placed; and a deleted pod whose
    required anti-affinity the pod matched requeues it too."""
    original, modified = as_pod(old), as_pod(new)
    if newer and original is not None and modified is not None and modified.uid == pod.uid:
        return QueueingHint.QUEUE

    def placed(other: Any) -> bool:
        return bool(other.node_name) or (newer and bool(other.nominated_node_name))

    if (modified is not None and not placed(modified)) or \
            (original is not None and not placed(original)):
        return QueueingHint.QUEUE_SKIP
    terms, anti = pod.required_affinity, pod.required_anti_affinity
    if original is not None and modified is not None:
        if not _matches_all(terms, original) and _matches_all(terms, modified):
            return QueueingHint.QUEUE
        if _matches_all(anti, original) and not _matches_all(anti, modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if modified is not None:
        return QueueingHint.QUEUE if _matches_all(terms, modified) else QueueingHint.QUEUE_SKIP
    if _matches_all(anti, original) or (newer and _matches_all(original.required_anti_affinity,
                                                               pod)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_node_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterNodeChange`` (v1.33+): for an affinity term, a new node with its
    topology key, or a node that gained the key or changed its value; for an anti-affinity
    term, any new node (one without the key always accepts the pod), or a node that lost the
    key or changed its value."""
    original, modified = as_node(old), as_node(new)
    for term in pod.required_affinity:
        key = term.topology_key
        if original is None:
            if key in modified.labels:
                return QueueingHint.QUEUE
            continue
        if key in modified.labels and original.labels.get(key) != modified.labels[key]:
            return QueueingHint.QUEUE
    for term in pod.required_anti_affinity:
        if original is None:
            return QueueingHint.QUEUE
        key = term.topology_key
        if key in original.labels and original.labels[key] != modified.labels.get(key):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
