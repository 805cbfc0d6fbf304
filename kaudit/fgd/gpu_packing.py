"""``GpuPackingScore``: a share goes to an already shared GPU first, then to a free GPU of a used
node, then to an idle node.

Mirrors ``GpuPackingScorePlugin`` of hkust-adsl/kubernetes-scheduler-simulator
(``pkg/simulator/plugin/gpu_packing_score.go``, ``getPackingScore``), in its integer arithmetic:

* every GPU of the node is wholly free (n of them): max(33 − n, n);
* else the devices the pod would take (the fitting ones with the least left first) include
  wholly free ones (k): max(50 − k, 33);
* else (it shares used GPUs, with left milli each): max(100 − Σ(left × 100 / 1000) / 10, 50).

A pod that asks no GPU scores 0 everywhere. The paper pairs it with ``gpuSelMethod: best``.
"""

from __future__ import annotations

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.fgd.node_gpus import NodeGpus, NodeGpusScore
from kaudit.framework.plugin import MAX_NODE_SCORE, MIN_NODE_SCORE
from kaudit.model.gpu import MILLI_PER_GPU
from kaudit.model.pod import PodInfo

NAME = "GpuPackingScore"


class GpuPackingScore(NodeGpusScore):
    name = NAME
    gpu_pods_only = True

    def score_nodes(self, pod: PodInfo, nodes: NodeGpus, cluster: ClusterState,
                    slots: np.ndarray) -> np.ndarray:
        demand = pod.gpu
        assert demand is not None
        idle = np.maximum(MAX_NODE_SCORE // 3 - nodes.fully_free, nodes.fully_free)
        if demand.shares:
            # The fitting device with the least left: a wholly free one only if no used one fits.
            fitting = np.where((nodes.left >= demand.milli) & (nodes.left > 0), nodes.left,
                               MILLI_PER_GPU + 1)
            least = fitting.min(axis=1) if fitting.shape[1] else np.full(len(slots),
                                                                          MILLI_PER_GPU + 1)
            shared = np.maximum(MAX_NODE_SCORE - (least * 100 // MILLI_PER_GPU) // 10,
                                MAX_NODE_SCORE // 2)
            used = np.where(least == MILLI_PER_GPU, max(MAX_NODE_SCORE // 2 - 1,
                                                        MAX_NODE_SCORE // 3), shared)
            used = np.where(least > MILLI_PER_GPU, MIN_NODE_SCORE, used)  # cannot host
        else:
            enough = nodes.fully_free >= demand.count
            used = np.where(enough, max(MAX_NODE_SCORE // 2 - demand.count, MAX_NODE_SCORE // 3),
                            MIN_NODE_SCORE)
        return np.where(nodes.fully_free == nodes.devices, idle, used).astype(np.int64)
