"""InterPodAffinity's PreScore, Score and NormalizeScore.

Mirrors ``interpodaffinity/scoring.go`` of Kubernetes v1.34: the PreScore skip rules (the
same with no node to score), ``hardPodAffinityWeight``, ``ignorePreferredTermsOfExistingPods``
and min-max NormalizeScore.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kaudit.cluster.state import ClusterState, TopologyCodes
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    MAX_NODE_SCORE,
)
from kaudit.framework.runtime import PluginError
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins.inter_pod_affinity.common import (
    PRE_SCORE_STATE_KEY,
    SCORING_SECTIONS,
    PodIndex,
    affinity_parse_error,
    incoming_terms,
    matching_slots,
    pod_index,
)

if TYPE_CHECKING:
    from kaudit.plugins.inter_pod_affinity.plugin import InterPodAffinity


# --------------------------------------------------------------------------- scoring state

@dataclass
class ScoreAccumulator:
    """``topologyScore`` being built: per topology key, a score per label-value code."""

    cluster: ClusterState
    scores: dict[str, tuple[TopologyCodes, np.ndarray]] = field(default_factory=dict)
    touched: bool = False

    def add(self, key: str, slots: np.ndarray, weight: int) -> None:
        """Add ``weight`` at the topology value of every slot (one entry per matching pod)."""
        if len(slots) == 0:
            return
        entry = self.scores.get(key)
        if entry is None:
            topology = self.cluster.topology_codes(key)
            entry = (topology, np.zeros(len(topology.values) + 1, dtype=np.int64))
        codes = entry[0].codes[slots]
        codes = codes[codes >= 0]
        if len(codes) == 0:
            return
        self.scores[key] = entry
        self.touched = True
        np.add.at(entry[1], codes, weight)


@dataclass
class PreScoreState:
    """``preScoreState.topologyScore``, as arrays over each key's value codes."""

    topology_score: dict[str, tuple[TopologyCodes, np.ndarray]]

    def as_dict(self) -> dict[str, dict[str, int]]:
        """The upstream shape ``{key: {value: score}}``, for inspection."""
        return {key: {topology.values[i]: int(array[i])
                      for i in range(len(topology.values)) if array[i]}
                for key, (topology, array) in self.topology_score.items()}


def _pre_score_state(state: CycleState) -> PreScoreState:
    prescore = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(prescore, PreScoreState):
        raise PluginError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
    return prescore


def pre_score(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> Status:
    """Upstream's PreScore reads every node of the snapshot, not the nodes passed in (it
    never looks at them): with no node to score it still succeeds when some existing pod
    scores, and skips only as it always does, when nothing scores or when existing pods'
    preferred terms are ignored and the pod has none of its own."""
    has_constraints = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
    if plugin.ignore_preferred_terms_of_existing_pods and not has_constraints:
        return Status.of(Code.SKIP)
    error = affinity_parse_error(pod)
    if error is not None:
        return Status.of(Code.ERROR, f"failed to parse pod: {error}")
    accumulator = ScoreAccumulator(cluster)
    index = pod_index(cluster)
    if has_constraints:
        for term in incoming_terms(pod.preferred_affinity, cluster,
                                   plugin.namespace_selector_kept):
            accumulator.add(term.topology_key, matching_slots(term, cluster),
                            term.weight)
        for term in incoming_terms(pod.preferred_anti_affinity, cluster,
                                   plugin.namespace_selector_kept):
            accumulator.add(term.topology_key, matching_slots(term, cluster),
                            -term.weight)
    plugin._score_existing_terms(accumulator, pod, cluster, index)
    if not accumulator.touched:
        return Status.of(Code.SKIP)
    state.write(PRE_SCORE_STATE_KEY, PreScoreState(accumulator.scores))
    return Status.success()


def _score_existing_terms(plugin: InterPodAffinity, accumulator: ScoreAccumulator, pod: PodInfo,
                          cluster: ClusterState, index: PodIndex) -> None:
    """Existing pods' required (× hardPodAffinityWeight) and preferred terms that match
    the incoming pod; their required anti-affinity does not score."""
    namespace_labels = cluster.namespace_labels(pod.namespace)
    hard = plugin.hard_pod_affinity_weight
    weighted: dict[tuple[str, int], list[int]] = {}
    for (section, term), slots in index.scoring_terms.items():
        sign = SCORING_SECTIONS[section][1]
        if (sign or hard > 0) and term.matches(pod, namespace_labels):
            weight = sign * term.weight if sign else hard
            weighted.setdefault((term.topology_key, weight), []).extend(slots)
    for (key, weight), slots in weighted.items():
        accumulator.add(key, np.asarray(slots, dtype=np.int64), weight)


def score(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, cluster: ClusterState,
          slots: np.ndarray) -> np.ndarray:
    prescore = _pre_score_state(state)
    slots = np.asarray(slots, dtype=np.int64)
    total = np.zeros(len(slots), dtype=np.int64)
    for topology, array in prescore.topology_score.values():
        total += array[topology.codes[slots]]
    return total


def normalize(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, slots: np.ndarray,
              scores: np.ndarray) -> np.ndarray | None:
    prescore = _pre_score_state(state)
    scores = np.asarray(scores, dtype=np.int64)
    if not prescore.topology_score or len(scores) == 0:
        return None
    # Row by row for a 2-D array (each row the nodes of one cycle).
    low = scores.min(axis=-1, keepdims=True)
    spread = scores.max(axis=-1, keepdims=True) - low
    fraction = (scores - low).astype(np.float64) / np.where(spread > 0, spread, 1)
    return np.where(spread > 0, np.trunc(float(MAX_NODE_SCORE) * fraction), 0).astype(np.int64)
