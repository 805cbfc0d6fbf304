"""VolumeBinding's PreScore and Score (only with ``StorageCapacityScoring``): static bindings
rated by the utilisation shape.

Mirrors ``volumebinding/scorer.go`` and the scoring of ``volume_binding.go`` (Kubernetes v1.34).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins.helper import go_round_scalar
from kaudit.plugins.storage_objects import spec
from kaudit.plugins.volume_binding.binder import STATE_KEY, BindingState
from kaudit.plugins.volume_binding.common import Claim, Volume

if TYPE_CHECKING:
    from kaudit.plugins.volume_binding.plugin import VolumeBinding


def _shape_score(shape: list[tuple[int, int]], utilization: int) -> int:
    """``helper.BuildBrokenLinearFunction`` at one point (Go integer division)."""
    for i, (point, score) in enumerate(shape):
        if utilization <= point:
            if i == 0:
                return score
            previous_point, previous_score = shape[i - 1]
            numerator = (score - previous_score) * (utilization - previous_point)
            quotient = abs(numerator) // (point - previous_point)
            return previous_score + (quotient if numerator >= 0 else -quotient)
    return shape[-1][1]


def _capacity_score(shape: list[tuple[int, int]], bindings: list[tuple[Volume, Claim]]) -> int:
    """``buildScorerFunction`` over the static bindings grouped by the PV's class."""
    classes: dict[str, list[int]] = {}
    for volume, claim in bindings:
        totals = classes.setdefault(spec(volume.obj).get("storageClassName") or "", [0, 0])
        totals[0] += -(-claim.request // 10**9)
        totals[1] += -(-volume.capacity // 10**9)
    if not classes:
        return 0
    total = 0
    for requested, capacity in classes.values():
        utilization = 100 if capacity == 0 or requested > capacity else \
            requested * 100 // capacity
        total += _shape_score(shape, utilization)
    return go_round_scalar(total / len(classes))


def pre_score(plugin: VolumeBinding, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> Status:
    if plugin.shape is None:
        return Status.of(Code.SKIP)
    if not isinstance(state.read(STATE_KEY), BindingState):
        return Status.of(Code.ERROR, "not found")
    return Status.success()


def score(plugin: VolumeBinding, state: CycleState, pod: PodInfo, cluster: ClusterState,
          slots: np.ndarray) -> np.ndarray:
    binding = state.read(STATE_KEY)
    scores = np.zeros(len(slots), dtype=np.int64)
    if plugin.shape is None or not isinstance(binding, BindingState):
        return scores
    found = binding.pod_volumes_by_slot()
    for position, slot in enumerate(slots.tolist()):
        if slot in found:
            scores[position] = _capacity_score(plugin.shape, found[slot][0])
    return scores
