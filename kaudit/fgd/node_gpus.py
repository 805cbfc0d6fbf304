"""What the FGD simulator's score plugins read of a node and a pod (``NodeResource``,
``PodResource`` in ``pkg/type/resource.go`` of hkust-adsl/kubernetes-scheduler-simulator),
for many nodes at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kaudit.cluster.gpu_frag import cpu_left
from kaudit.cluster.state import ClusterState
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


def pod_gpu_milli(pod: PodInfo) -> tuple[int, int]:
    """GPU-milli per GPU and GPU count (0, 0 for a pod that asks no GPU)."""
    return (pod.gpu.milli, pod.gpu.count) if pod.gpu is not None else (0, 0)


def truncate(values: np.ndarray) -> np.ndarray:
    """Go's float-to-integer conversion: toward zero."""
    truncated: np.ndarray = np.trunc(values).astype(np.int64)
    return truncated
