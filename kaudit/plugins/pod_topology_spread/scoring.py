"""PodTopologySpread's PreScore, Score and NormalizeScore.

Mirrors ``podtopologyspread/scoring.go`` of Kubernetes v1.34: ignored nodes (feasible nodes
lacking a key, unless the constraints are system defaults), domains registered from the
feasible nodes (a missing key is the value ``""`` then), counts over every node of the snapshot,
``ln(size + 2)`` weights, ``cnt * weight + maxSkew - 1`` summed and ``math.Round``-ed, hostname
counted per node, and ``100 * (max + min - s) / max``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    MAX_NODE_SCORE,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo, SpreadConstraint
from kaudit.model.selectors import SelectorError
from kaudit.plugins.helper import go_round
from kaudit.plugins.pod_topology_spread.common import (
    LABEL_HOSTNAME,
    PRE_SCORE_STATE_KEY,
    SCHEDULE_ANYWAY,
    NodeInclusion,
    _all_keys_present,
    _domain_counts,
    _raw_constraints,
    padded_codes,
)

if TYPE_CHECKING:
    from kaudit.plugins.pod_topology_spread.plugin import PodTopologySpread


@dataclass
class PreScoreState:
    """What Score and NormalizeScore read; like upstream it is shared, not copied, on clone."""

    constraints: tuple[SpreadConstraint, ...]
    ignored: np.ndarray
    has_key: list[np.ndarray]
    node_counts: list[np.ndarray]
    weights: list[float]

    def clone(self) -> PreScoreState:
        return self


def pre_score(plugin: PodTopologySpread, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> Status:
    if cluster.node_count == 0:
        return Status.of(Code.SKIP)
    try:
        constraints = plugin.constraints(pod, cluster, SCHEDULE_ANYWAY)
    except SelectorError as exc:
        return Status.of(Code.ERROR, "calculating preScoreState: obtaining pod's soft "
                                     f"topology spread constraints: {exc}")
    if not constraints:
        return Status.of(Code.SKIP)
    explicit = bool(_raw_constraints(pod) or pod.spread_constraints)
    require_all = explicit or not plugin.system_defaulted
    state.write(PRE_SCORE_STATE_KEY,
                plugin.pre_score_state(pod, cluster, np.asarray(slots, np.int64),
                                     constraints, require_all))
    return Status.success()


def pre_score_state(plugin: PodTopologySpread, pod: PodInfo, cluster: ClusterState,
                    feasible: np.ndarray,
                    constraints: tuple[SpreadConstraint, ...], require_all: bool
                    ) -> PreScoreState:
    """``initPreScoreState`` plus the counting of ``PreScore``."""
    capacity = cluster.capacity
    keyed = [padded_codes(cluster, c.topology_key) for c in constraints]
    with_keys = _all_keys_present((codes for codes, _ in keyed), capacity)
    # Whether a node is ignored is its own property (it lacks a key): kept for every node,
    # not only the feasible ones, so that the state holds for any subset of them.
    ignored = ~with_keys if require_all else np.zeros(capacity, dtype=bool)
    scored = feasible[~ignored[feasible]]
    counted = cluster.live[:capacity] & (with_keys if require_all else True)
    inclusion = NodeInclusion(cluster, pod)
    table = plugin.pod_table(cluster)
    has_key, node_counts, weights = [], [], []
    for constraint, (codes, index) in zip(constraints, keyed, strict=True):
        per_slot = table.count_per_slot(constraint.selector, pod.namespace, capacity)
        has_key.append(codes >= 0)
        if constraint.topology_key == LABEL_HOSTNAME:
            node_counts.append(per_slot)
            weights.append(math.log(len(feasible) - int(ignored[feasible].sum()) + 2))
            continue
        # A node without the key has the value "" (a Go map lookup) when it is not ignored.
        domain = np.where(codes >= 0, codes, index.get("", len(index)))
        registered = np.zeros(len(index) + 1, dtype=bool)
        registered[domain[scored]] = True
        nodes = counted & inclusion.mask(constraint)
        counts, _ = _domain_counts(domain, per_slot, nodes, len(index) + 1)
        node_counts.append(np.where(registered, counts, 0)[domain])
        weights.append(math.log(int(registered.sum()) + 2))
    return PreScoreState(constraints, ignored, has_key, node_counts, weights)


def nodes_read(state: CycleState, cluster: ClusterState, windows: np.ndarray
               ) -> np.ndarray | None:
    """What of each row of feasible nodes ``windows`` (2-D) PreScore reads, as a row of integers:
    how many are not ignored (the hostname constraints' weight) and, per other constraint,
    which domains they hold (the domains registered, which set its weight and the counts
    kept)."""
    s = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        return None
    windows = np.asarray(windows, dtype=np.int64)
    scored = ~s.ignored[windows]
    columns = [scored.sum(axis=1, keepdims=True)]
    for constraint in s.constraints:
        if constraint.topology_key == LABEL_HOSTNAME:
            continue
        codes, index = padded_codes(cluster, constraint.topology_key)
        domain = np.where(codes >= 0, codes, index.get("", len(index)))[windows]
        held = np.zeros((len(windows), len(index) + 1), dtype=np.int64)
        rows = np.broadcast_to(np.arange(len(windows))[:, None], windows.shape)
        held[rows[scored], domain[scored]] = 1
        columns.append(held)
    return np.concatenate(columns, axis=1)


def score(plugin: PodTopologySpread, state: CycleState, pod: PodInfo, cluster: ClusterState,
          slots: np.ndarray) -> np.ndarray:
    s = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        raise LookupError(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState')
    slots = np.asarray(slots, dtype=np.int64)
    total = np.zeros(len(slots), dtype=np.float64)
    for i, constraint in enumerate(s.constraints):
        has_key = s.has_key[i][slots]
        term = (s.node_counts[i][slots].astype(np.float64) * s.weights[i]
                + float(constraint.max_skew - 1))
        total = total + np.where(has_key, term, 0.0)
    return np.where(s.ignored[slots], 0, go_round(total))


def normalize(plugin: PodTopologySpread, state: CycleState, pod: PodInfo, slots: np.ndarray,
              scores: np.ndarray) -> np.ndarray | None:
    s = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        return None
    # Row by row for a 2-D array (each row the nodes of one cycle).
    scores = np.asarray(scores, dtype=np.int64)
    ignored = s.ignored[np.asarray(slots, dtype=np.int64)]
    big = np.iinfo(np.int64).max
    low = np.where(ignored, big, scores).min(axis=-1, keepdims=True, initial=big)
    high = np.maximum(np.where(ignored, 0, scores).max(axis=-1, keepdims=True, initial=0), 0)
    scaled = MAX_NODE_SCORE * (high + np.where(low == big, 0, low) - scores) \
        // np.where(high == 0, 1, high)
    return np.where(ignored, 0, np.where(high == 0, MAX_NODE_SCORE, scaled)).astype(np.int64)
