"""GPU demand of a pod and GPU devices of a node, as the GPU-sharing scheduler reads them.

The data model of the FGD authors' simulator (hkust-adsl/kubernetes-scheduler-simulator,
``pkg/type/open-gpu-share/`` and ``pkg/simulator/plugin/open_gpu_share.go``), which the
Alibaba ``cluster-trace-gpu-v2023`` objects carry:

* a pod's annotations ``alibabacloud.com/gpu-milli`` (GPU-milli asked of *each* GPU, 1–1000)
  and ``alibabacloud.com/gpu-count`` (how many GPUs); a pod shares one GPU when it asks one GPU
  and less than 1000 milli, otherwise it takes whole GPUs. ``alibabacloud.com/gpu-card-model``
  (``V100M16|V100M32``) restricts the GPU models it accepts;
* a node's GPUs: ``nvidia.com/gpu`` in its allocatable, each device holding 1000 milli, all of
  the model in its label ``alibabacloud.com/gpu-card-model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GPU_MILLI_ANNOTATION = "alibabacloud.com/gpu-milli"
GPU_COUNT_ANNOTATION = "alibabacloud.com/gpu-count"
GPU_MODEL_KEY = "alibabacloud.com/gpu-card-model"
NVIDIA_GPU = "nvidia.com/gpu"
#: GPU-milli of one whole device.
MILLI_PER_GPU = 1000


@dataclass(frozen=True, slots=True)
class GpuDemand:
    """What a pod asks of a node's GPU devices."""

    #: GPU-milli asked of each device (1–1000).
    milli: int
    #: How many devices.
    count: int
    #: GPU models the pod accepts (empty: any).
    models: frozenset[str] = frozenset()

    @property
    def shares(self) -> bool:
        """Part of one GPU (placed on a device that other pods may share)."""
        return self.count == 1 and self.milli < MILLI_PER_GPU

    @property
    def total_milli(self) -> int:
        return self.milli * self.count

    def accepts(self, model: str) -> bool:
        return not self.models or model in self.models


def _integer(value: Any, where: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{where}: {value!r} is not a whole number") from None
    return number


def gpu_demand(annotations: Mapping[str, Any] | None) -> GpuDemand | None:
    """The demand a pod's annotations state; None for a pod that asks no GPU. Raises
    :class:`ValueError` naming the annotation when one is malformed."""
    annotations = annotations or {}
    raw_milli = annotations.get(GPU_MILLI_ANNOTATION)
    raw_count = annotations.get(GPU_COUNT_ANNOTATION)
    if raw_milli is None and raw_count is None:
        return None
    count = _integer(raw_count if raw_count is not None else 1,
                     f"metadata.annotations[{GPU_COUNT_ANNOTATION}]")
    milli = _integer(raw_milli if raw_milli is not None else MILLI_PER_GPU,
                     f"metadata.annotations[{GPU_MILLI_ANNOTATION}]")
    if count <= 0 or milli <= 0:
        return None
    if milli > MILLI_PER_GPU:
        raise ValueError(f"metadata.annotations[{GPU_MILLI_ANNOTATION}]: {milli} is more than "
                         f"one GPU ({MILLI_PER_GPU})")
    models = str(annotations.get(GPU_MODEL_KEY) or "")
    return GpuDemand(milli, count, frozenset(m for m in models.split("|") if m))
