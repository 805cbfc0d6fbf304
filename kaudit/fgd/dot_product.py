"""``DotProductScore``: the smaller the dot product of the node's free resources and the pod's
request, the higher the score.

Mirrors ``DotProductScorePlugin`` of hkust-adsl/kubernetes-scheduler-simulator
(``pkg/simulator/plugin/dot_product_score.go`` and ``GenerateSchedulingMatchGroups`` in
``pkg/utils/utils.go``) with the paper's settings, dimension extension ``merge`` and
normalisation ``max``: node = (CPU milli left / 128,000, GPU-milli left in total / 8,000), pod =
(non-zero CPU milli / 128,000, GPU-milli × count / 8,000),

    score = int64(100 × (1 − node · pod / 2))

and 0 for a node with less CPU left than the pod asks. With ``merge`` the plugin names no GPU;
the paper pairs it with ``gpuSelMethod: best``.
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
from kaudit.framework.plugin import MAX_NODE_SCORE, MIN_NODE_SCORE
from kaudit.model.pod import PodInfo

NAME = "DotProductScore"


class DotProductScore(NodeGpusScore):
    name = NAME

    def score_nodes(self, pod: PodInfo, nodes: NodeGpus, cluster: ClusterState,
                    slots: np.ndarray) -> np.ndarray:
        dot = (nodes.cpu_left / MAX_SPEC_CPU * (pod.non_zero_cpu / MAX_SPEC_CPU)
               + nodes.total_left / MAX_SPEC_GPU * (asked_gpu_milli(pod) / MAX_SPEC_GPU))
        scores = truncate(float(MAX_NODE_SCORE) * (1 - dot / 2))
        return np.where(nodes.cpu_left < pod.non_zero_cpu, MIN_NODE_SCORE, scores)
