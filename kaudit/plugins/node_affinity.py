"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred terms score.

Mirrors ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` (Kubernetes v1.34),
including ``addedAffinity`` from the plugin args and the PreFilterResult built from
``matchFields metadata.name In`` terms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kaudit.cluster.matching import (
    node_selector_mask,
    required_node_affinity_mask,
    weighted_terms_score,
)
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.model.selectors import NodeSelector, parse_term
from kaudit.plugins import names
from kaudit.plugins.helper import default_normalize
from kaudit.plugins.hint_objects import as_node

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = names.NODE_AFFINITY
    signs_pods = True
    reads_only_its_node = True
    added_pods_only_hinder = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.NODE_AFFINITY, signing.node_affinity(pod)),
                (signing.NODE_SELECTOR, signing.mapping(pod.node_selector)))

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the node and the sums only
    args_spec = ArgsSpec(
        kind="NodeAffinityArgs", schema=args_schema.NODE_AFFINITY_ARGS,
        set_defaults=args_defaults.set_defaults_node_affinity,
        validate=args_validation.validate_node_affinity_args)

    def __init__(self, args: dict[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        added = self.args.get("addedAffinity") or {}
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.added_required = (NodeSelector.parse(required, "addedAffinity.required")
                               if required is not None else None)
        self.added_preferred = tuple(
            (int(p.get("weight") or 0), parse_term(p.get("preference") or {},
                                                   f"addedAffinity.preferred[{i}]"))
            for i, p in enumerate(added.get("preferredDuringSchedulingIgnoredDuringExecution")
                                  or []))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(NODE, ["Add", "UpdateNodeLabel"], self._after_node_change)]

    def _after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: a new node matching the pod's required node
        affinity and selector (and the added affinity), or a node that came to match."""
        original, modified = as_node(old), as_node(new)
        if self.added_required is not None and \
                not self.added_required.matches(modified.labels, modified.name):
            return QueueingHint.QUEUE_SKIP
        if not _required_matches(pod, modified):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if _required_matches(pod, original) else QueueingHint.QUEUE

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        required = pod.required_node_affinity
        if required is None and self.added_required is None and not pod.node_selector:
            return None, Status.of(Code.SKIP)
        if required is None or not required.terms:
            return None, Status.success()
        node_names: frozenset[str] | None = None
        for term in required.terms:
            term_names = term.field_node_names()
            if term_names is None:
                return None, Status.success()
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_CONFLICT)
        return PreFilterResult(node_names), Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        verdicts = NodeVerdicts.passing(len(slots))
        if self.added_required is not None:
            enforced = ~node_selector_mask(cluster, slots, self.added_required)
            if enforced.any():
                verdicts = NodeVerdicts.from_mask(enforced, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                  REASON_ENFORCED)
        mismatch = ~required_node_affinity_mask(cluster, slots, pod.node_selector,
                                                pod.required_node_affinity)
        mismatch &= verdicts.codes == 0
        if mismatch.any():
            verdicts.codes[mismatch] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            verdicts.reason_ids[mismatch] = len(verdicts.reasons)
            verdicts.reasons.append((REASON_POD,))
        return verdicts

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        if not pod.preferred_node_affinity and not self.added_preferred:
            return Status.of(Code.SKIP)
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        scores: np.ndarray = (weighted_terms_score(cluster, slots, self.added_preferred)
                              + weighted_terms_score(cluster, slots,
                                                     pod.preferred_node_affinity))
        return scores

    normalizes_rows = True

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        return default_normalize(scores, reverse=False)


def _required_matches(pod: PodInfo, node: Any) -> bool:
    """``GetRequiredNodeAffinity(pod).Match``: the node selector and the required terms."""
    if any(node.labels.get(key) != value for key, value in pod.node_selector.items()):
        return False
    required = pod.required_node_affinity
    return required is None or required.matches(node.labels, node.name)
