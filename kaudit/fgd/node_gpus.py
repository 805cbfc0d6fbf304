"""What the FGD simulator's score plugins read of a node and a pod (``NodeResource``,
``PodResource`` in ``pkg/type/resource.go`` of hkust-adsl/kubernetes-scheduler-simulator),
for many nodes at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from kaudit.cluster.gpu_frag import cpu_left
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import ScorePlugin
from kaudit.model.gpu import MILLI_PER_GPU
from kaudit.model.pod import PodInfo

#: ``MaxSpecCpu`` and ``MaxSpecGpu`` (``pkg/type/open-gpu-share/utils/const.go``): the largest
#: node the simulator normalises by, 128 CPUs and 8 GPUs.
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """Per slot: CPU milli left, each device's free milli (0 where absent), device count,
    wholly free devices, and GPU-milli left in total."""

    cpu_left: np.ndarray
    left: np.ndarray
    devices: np.ndarray
    fully_free: np.ndarray
    total_left: np.ndarray


def node_gpus(cluster: ClusterState, slots: np.ndarray) -> NodeGpus:
    cluster.gpus.grow(len(cluster.allocatable))
    free = cluster.gpus.free[slots]
    present = free >= 0
    left = np.where(present, free, 0).astype(np.int64)
    return NodeGpus(cpu_left(cluster, slots), left, present.sum(axis=1),
                    (free == MILLI_PER_GPU).sum(axis=1), left.sum(axis=1))


def asked_gpu_milli(pod: PodInfo) -> int:
    """GPU-milli the pod asks in all (``PodResource.TotalMilliGpu``)."""
    return pod.gpu.total_milli if pod.gpu is not None else 0


class NodeGpusScore(ScorePlugin):
    """A score of the simulator's plugins, computed from each node's CPU and GPUs left and the
    pod's request; with ``gpu_pods_only`` a pod that asks no GPU scores 0 everywhere."""

    gpu_pods_only: ClassVar[bool] = False

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        if self.gpu_pods_only and pod.gpu is None:
            return np.zeros(len(slots), dtype=np.int64)
        return self.score_nodes(pod, node_gpus(cluster, slots), cluster, slots)

    def score_nodes(self, pod: PodInfo, nodes: NodeGpus, cluster: ClusterState,
                    slots: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def truncate(values: np.ndarray) -> np.ndarray:
    """Go's float-to-integer conversion: toward zero."""
    truncated: np.ndarray = np.trunc(values).astype(np.int64)
    return truncated
