"""NodeResourcesBalancedAllocation: favour nodes whose resource fractions stay balanced.

Mirrors ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`` (Kubernetes
v1.34): exact requests (no non-zero defaults), fractions capped at 1, score
``int((1 - std) * 100)``; PreScore skips best-effort pods (every request zero). From v1.36
(``balancedResourceScorer``, upstream PR #135573) the score is how the pod changes the balance:
``50 + (50 + balance with the pod - balance without it) / 2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import MAX_NODE_SCORE, PreScorePlugin, ScorePlugin
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names
from kaudit.plugins.node_resources_fit import (
    DEFAULT_RESOURCES,
    allocatable_and_requested,
    pod_score_requests,
)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    name = names.NODE_RESOURCES_BALANCED_ALLOCATION
    args_spec = ArgsSpec(
        kind="NodeResourcesBalancedAllocationArgs",
        schema=args_schema.NODE_RESOURCES_BALANCED_ALLOCATION_ARGS,
        set_defaults=args_defaults.set_defaults_node_resources_balanced_allocation,
        validate=args_validation.validate_node_resources_balanced_allocation_args)

    signs_pods = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return signing.resources_unless_dra_extended(getattr(self.handle, "feature_gates", None),
                                                     pod)

    def __init__(self, args: dict[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        specs = self.args.get("resources") or list(DEFAULT_RESOURCES)
        self.resources = [r["name"] for r in specs]
        #: v1.36: the score weighs the balance with the pod against the balance without it.
        self.with_and_without = versions.handle_carries(
            handle, "balanced-allocation-with-and-without-pod")

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        requests = pod_score_requests(pod, self.resources, non_zero=False)
        if all(value == 0 for value in requests):
            return Status.of(Code.SKIP)
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        requests = pod_score_requests(pod, self.resources, non_zero=False)
        with_pod: list[np.ndarray] = []
        without_pod: list[np.ndarray] = []
        present: list[np.ndarray] = []
        for resource, request in zip(self.resources, requests, strict=True):
            allocatable, requested = allocatable_and_requested(cluster, slots, resource,
                                                               request, use_requested=True)
            here = allocatable != 0
            safe = np.where(here, allocatable, 1).astype(np.float64)
            with_pod.append(np.minimum(requested.astype(np.float64) / safe, 1.0))
            without_pod.append(np.minimum((requested - request).astype(np.float64) / safe, 1.0))
            present.append(here)
        balance = _balance(with_pod, present)
        if not self.with_and_without:
            return balance
        half = MAX_NODE_SCORE // 2
        scores: np.ndarray = half + (half + balance - _balance(without_pod, present)) // 2
        return scores


def _balance(fractions: list[np.ndarray], present: list[np.ndarray]) -> np.ndarray:
    """``balancedResourceScore`` per node: ``int((1 - std) * 100)`` of the fractions of the
    resources present on it (allocatable not 0): for two, half their difference; for more,
    their population standard deviation; else 0."""
    size = len(fractions[0]) if fractions else 0
    count = np.zeros(size, dtype=np.int64)
    total = np.zeros(size, dtype=np.float64)
    for fraction, here in zip(fractions, present, strict=True):
        count += here
        total = np.where(here, total + fraction, total)
    std = np.zeros(size, dtype=np.float64)
    # Exactly two fractions: |f1 - f2| / 2, taking the first two present, in order.
    first = np.full(size, np.nan)
    second = np.full(size, np.nan)
    for fraction, here in zip(fractions, present, strict=True):
        take_second = here & ~np.isnan(first) & np.isnan(second)
        second = np.where(take_second, fraction, second)
        first = np.where(here & np.isnan(first), fraction, first)
    two = count == 2
    std = np.where(two, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        mean = total / np.where(count == 0, 1, count)
        squares = np.zeros(size, dtype=np.float64)
        for fraction, here in zip(fractions, present, strict=True):
            squares = np.where(here, squares + (fraction - mean) * (fraction - mean), squares)
        std = np.where(many, np.sqrt(squares / np.where(count == 0, 1, count)), std)
    scores: np.ndarray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return scores

