"""``BestFitScore``: the node the pod leaves the least CPU and GPU free on scores highest.

Mirrors ``BestFitScorePlugin`` of hkust-adsl/kubernetes-scheduler-simulator
(``pkg/simulator/plugin/best_fit_score.go``): with free = (CPU milli left, GPU-milli left in
total), request = (non-zero CPU milli, GPU-milli × count) and maxSpec = (128,000, 8,000),

    score = int64((1 − Σ 0.5 · (free − request) / maxSpec) × 100)

then ``NormalizeScore`` maps the lowest to 0 and the highest to 100 (integer arithmetic; all
0 when they are equal). A node with less free than asked (the filters let none through) scores
0. The paper pairs it with ``gpuSelMethod: best``.
"""

from __future__ import annotations

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.fgd.node_gpus import (
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    NodeGpus,
    NodeGpusScore,
    asked_gpu_milli,
    truncate,
)
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import MAX_NODE_SCORE, MIN_NODE_SCORE
from kaudit.model.pod import PodInfo

NAME = "BestFitScore"


def normalize_min_max(scores: np.ndarray) -> np.ndarray:
    """``NormalizeScore`` of ``plugin_utils.go``: lowest → 0, highest → 100."""
    if len(scores) == 0:
        return scores
    lowest, highest = int(scores.min()), int(scores.max())
    if highest == lowest:
        return np.full(len(scores), MIN_NODE_SCORE, dtype=np.int64)
    return ((scores - lowest) * (MAX_NODE_SCORE - MIN_NODE_SCORE) // (highest - lowest)
            + MIN_NODE_SCORE).astype(np.int64)


class BestFitScore(NodeGpusScore):
    name = NAME

    def score_nodes(self, pod: PodInfo, nodes: NodeGpus, cluster: ClusterState,
                    slots: np.ndarray) -> np.ndarray:
        cpu_rest = nodes.cpu_left - pod.non_zero_cpu
        gpu_rest = nodes.total_left - asked_gpu_milli(pod)
        fraction = cpu_rest / MAX_SPEC_CPU * 0.5 + gpu_rest / MAX_SPEC_GPU * 0.5
        scores = truncate((1.0 - fraction) * float(MAX_NODE_SCORE))
        return np.where((cpu_rest < 0) | (gpu_rest < 0), MIN_NODE_SCORE, scores)

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        return normalize_min_max(scores)
