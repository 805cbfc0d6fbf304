"""``GpuClusteringScore``: GPU pods go where pods asking GPUs the same way already run.

Mirrors ``GpuClusteringScorePlugin`` of hkust-adsl/kubernetes-scheduler-simulator
(``pkg/simulator/plugin/gpu_clustering_score.go``). A pod's *affinity* is how it asks GPUs:
sharing one, or n whole GPUs (``GetGpuAffinityFromPodAnnotation``); a node's affinities are
those of the GPU pods on it. With base = 25 × (8,000 − GPU-milli left) / 8,000 (integers):

* the node runs only pods of the pod's affinity: base + 75;
* it runs pods of that affinity and others: base + 50;
* it runs no GPU pod: base + 25;
* it runs only GPU pods of other affinities: base.

A pod that asks no GPU scores 0 everywhere. The paper pairs it with ``gpuSelMethod: best``.
"""

from __future__ import annotations

import numpy as np

from kaudit.cluster.gpus import MAX_DEVICES
from kaudit.cluster.state import ClusterState
from kaudit.fgd.node_gpus import MAX_SPEC_GPU, NodeGpus, NodeGpusScore
from kaudit.framework.plugin import MAX_NODE_SCORE
from kaudit.model.pod import PodInfo

NAME = "GpuClusteringScore"


class GpuClusteringScore(NodeGpusScore):
    name = NAME
    gpu_pods_only = True

    def score_nodes(self, pod: PodInfo, nodes: NodeGpus, cluster: ClusterState,
                    slots: np.ndarray) -> np.ndarray:
        demand = pod.gpu
        assert demand is not None
        kinds = cluster.gpus.kinds[slots]
        column = 0 if demand.shares else min(demand.count, MAX_DEVICES)
        same = kinds[:, column] > 0
        affinities = (kinds > 0).sum(axis=1)
        spare = MAX_NODE_SCORE // 4 * (MAX_SPEC_GPU - nodes.total_left)
        base = np.sign(spare) * (np.abs(spare) // MAX_SPEC_GPU)  # Go's division truncates
        bonus = np.where(same, np.where(affinities == 1, MAX_NODE_SCORE * 3 // 4,
                                        MAX_NODE_SCORE * 2 // 4),
                         np.where(affinities == 0, MAX_NODE_SCORE // 4, 0))
        scores: np.ndarray = (base + bonus).astype(np.int64)
        return scores
