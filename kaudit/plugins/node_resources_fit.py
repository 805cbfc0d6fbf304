"""NodeResourcesFit: the pod's requests must fit the node's free resources; scoring by
LeastAllocated, MostAllocated or RequestedToCapacityRatio.

Mirrors ``pkg/scheduler/framework/plugins/noderesources/{fit.go,resource_allocation.go,
least_allocated.go,most_allocated.go,requested_to_capacity_ratio.go}`` and
``helper/shape_score.go`` (Kubernetes v1.34). The filter uses exact requests; scoring adds the
non-zero defaults (100m CPU, 200Mi memory) for containers that request neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import (
    MAX_NODE_SCORE,
    FilterPlugin,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_extended, is_scalar
from kaudit.plugins import names
from kaudit.plugins.helper import go_round, trunc_div
from kaudit.plugins.hint_objects import as_node, as_pod

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
TOO_MANY_PODS = "Too many pods"
#: The start of the reason for a resource the node lacks (``fit.go`` writes
#: ``fmt.Sprintf("Insufficient %v", rName)``).
INSUFFICIENT = "Insufficient "

DEFAULT_RESOURCES = ({"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1})


def pod_score_requests(pod: PodInfo, resources: list[str], non_zero: bool) -> list[int]:
    """``calculatePodResourceRequest`` for each scored resource."""
    values = []
    for resource in resources:
        if non_zero and resource == CPU:
            values.append(pod.non_zero_cpu)
        elif non_zero and resource == MEMORY:
            values.append(pod.non_zero_memory)
        else:
            values.append(pod.requests.get(resource, 0))
    return values


def allocatable_and_requested(cluster: ClusterState, slots: np.ndarray, resource: str,
                              pod_request: int, use_requested: bool
                              ) -> tuple[np.ndarray, np.ndarray]:
    """``calculateResourceAllocatableRequest`` over nodes: (allocatable, requested + pod)."""
    zeros = np.zeros(len(slots), dtype=np.int64)
    if pod_request == 0 and is_scalar(resource):
        return zeros, zeros
    column = cluster.resources.get(resource)
    if column is None:
        return zeros, zeros
    allocatable = cluster.allocatable[slots, column]
    if not use_requested and resource in (CPU, MEMORY):
        requested = cluster.non_zero[slots, 0 if resource == CPU else 1]
    else:
        requested = cluster.requested[slots, column]
    return allocatable, requested + pod_request


def _least(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    safe = np.where(allocatable == 0, 1, allocatable)
    score = ((allocatable - requested) * MAX_NODE_SCORE) // safe
    return np.where((allocatable == 0) | (requested > allocatable), 0, score)


def _most(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    safe = np.where(allocatable == 0, 1, allocatable)
    score = (np.minimum(requested, allocatable) * MAX_NODE_SCORE) // safe
    return np.where(allocatable == 0, 0, score)


def broken_linear(shape: list[tuple[int, int]]) -> Callable[[np.ndarray], np.ndarray]:
    """``helper.BuildBrokenLinearFunction`` over an array of utilisations."""
    utilizations = [u for u, _ in shape]
    scores = [s for _, s in shape]

    def function(p: np.ndarray) -> np.ndarray:
        result = np.full(p.shape, scores[-1], dtype=np.int64)
        done = np.zeros(p.shape, dtype=bool)
        for i, (u, s) in enumerate(zip(utilizations, scores, strict=True)):
            here = ~done & (p <= u)
            if i == 0:
                value = np.full(p.shape, s, dtype=np.int64)
            else:
                u0, s0 = utilizations[i - 1], scores[i - 1]
                value = s0 + trunc_div((s - s0) * (p - u0), u - u0)
            result = np.where(here, value, result)
            done |= here
        return result

    return function


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = names.NODE_RESOURCES_FIT
    reads_only_its_node = True
    added_pods_only_hinder = True

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the node and the sums only
    args_spec = ArgsSpec(
        kind="NodeResourcesFitArgs", schema=args_schema.NODE_RESOURCES_FIT_ARGS,
        set_defaults=args_defaults.set_defaults_node_resources_fit,
        validate=args_validation.validate_node_resources_fit_args)

    signs_pods = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return signing.resources_unless_dra_extended(getattr(self.handle, "feature_gates", None),
                                                     pod)

    def __init__(self, args: dict[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        strategy = self.args.get("scoringStrategy") or {}
        self.strategy = strategy.get("type") or LEAST_ALLOCATED
        specs = strategy.get("resources") or list(DEFAULT_RESOURCES)
        self.score_resources = [r["name"] for r in specs]
        self.score_weights = [int(r.get("weight") or 1) for r in specs]
        self.ignored = set(self.args.get("ignoredResources") or [])
        self.ignored_groups = set(self.args.get("ignoredResourceGroups") or [])
        shape = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or []
        self.shape = broken_linear([
            (int(p["utilization"]),
             int(p["score"]) * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape
        ]) if shape else None

    # ----------------------------------------------------------------- queueing hints

    @property
    def in_place_scaling(self) -> bool:
        gates = getattr(self.handle, "feature_gates", None)
        return gates is not None and gates.enabled("InPlacePodVerticalScaling")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on): pod deletions (and scale-downs with
        in-place resizing), node additions and allocatable changes."""
        pod_actions = ["Delete", "UpdatePodScaleDown"] if self.in_place_scaling else ["Delete"]
        return [register(POD, pod_actions, self._after_pod_event),
                register(NODE, ["Add", "UpdateNodeAllocatable"], self._after_node_change)]

    def _after_pod_event(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterPodEvent``: an assigned (or nominated) pod was deleted, or a
        pod scaled down a resource this pod requests."""
        original, modified = as_pod(old), as_pod(new)
        if modified is None:
            if not original.node_name and not original.nominated_node_name:
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if not self.in_place_scaling:
            return QueueingHint.QUEUE_SKIP
        if modified.uid == pod.uid:
            return QueueingHint.QUEUE
        if not modified.node_name or original is None:
            return QueueingHint.QUEUE_SKIP
        for resource, amount in pod.requests.items():
            if amount and (resource in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar(resource)) \
                    and original.requests.get(resource, 0) > modified.requests.get(resource, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: the pod would fit the node, empty, and the node is
        new or offers more of something the pod requests (or more pods)."""
        original, modified = as_node(old), as_node(new)
        if modified is None or not _fits_empty(pod, modified.allocatable):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        before, after = original.allocatable, modified.allocatable
        if after.get(PODS, 0) > before.get(PODS, 0):
            return QueueingHint.QUEUE
        for resource, amount in pod.requests.items():
            if amount and (resource in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar(resource)) \
                    and after.get(resource, 0) > before.get(resource, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ----------------------------------------------------------------- filter

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        return None, Status.success()

    def _checked_resources(self, pod: PodInfo) -> list[tuple[str, int]]:
        checked = [(r, pod.requests.get(r, 0)) for r in (CPU, MEMORY, EPHEMERAL_STORAGE)]
        for resource, amount in pod.requests.items():
            if not is_scalar(resource) or amount == 0:
                continue
            if is_extended(resource) and (resource in self.ignored or
                                          resource.split("/")[0] in self.ignored_groups):
                continue
            checked.append((resource, amount))
        return checked

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        failures: list[tuple[str, np.ndarray]] = []
        pods_column = cluster.resources["pods"]
        too_many = cluster.pod_count[slots] + 1 > cluster.allocatable[slots, pods_column]
        failures.append((TOO_MANY_PODS, too_many))
        # A request larger than the node's whole allocatable is ``Unresolvable`` upstream:
        # no eviction can make it fit, so the node's status is UnschedulableAndUnresolvable
        # and preemption does not try it. "Too many pods" is never unresolvable.
        unresolvable = np.zeros(len(slots), dtype=bool)
        checked = self._checked_resources(pod)
        if any(amount for _, amount in checked):
            for resource, amount in checked:
                if amount <= 0:
                    continue
                column = cluster.column(resource)
                allocatable = cluster.allocatable[slots, column]
                short = amount > allocatable - cluster.requested[slots, column]
                failures.append((INSUFFICIENT + resource, short))
                unresolvable |= short & (amount > allocatable)
        verdicts = combine_failures(failures, len(slots), Code.UNSCHEDULABLE)
        if unresolvable.any():
            verdicts.codes[unresolvable] = np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return verdicts

    # ----------------------------------------------------------------- score

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        requests = pod_score_requests(pod, self.score_resources, non_zero=True)
        total = np.zeros(len(slots), dtype=np.int64)
        weight_sum = np.zeros(len(slots), dtype=np.int64)
        for resource, weight, request in zip(self.score_resources, self.score_weights, requests,
                                             strict=True):
            allocatable, requested = allocatable_and_requested(cluster, slots, resource,
                                                               request, use_requested=False)
            counted = allocatable != 0
            if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
                assert self.shape is not None
                safe = np.where(allocatable == 0, 1, allocatable)
                utilization = np.where(requested > allocatable, MAX_UTILIZATION,
                                       requested * MAX_UTILIZATION // safe)
                value = self.shape(utilization)
                counted &= value > 0
            elif self.strategy == MOST_ALLOCATED:
                value = _most(requested, allocatable)
            else:
                value = _least(requested, allocatable)
            total += np.where(counted, value * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        safe_sum = np.where(weight_sum == 0, 1, weight_sum)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            result = go_round(total / safe_sum)  # math.Round; never negative here
        else:
            result = total // safe_sum
        return np.where(weight_sum == 0, 0, result)


def _fits_empty(pod: PodInfo, allocatable: dict[str, int]) -> bool:
    """``isFit``: the pod fits the node with no other pod on it."""
    if allocatable.get(PODS, 0) < 1:
        return False
    return all(amount <= allocatable.get(resource, 0) for resource, amount in pod.requests.items()
               if amount > 0 and (resource in (CPU, MEMORY, EPHEMERAL_STORAGE)
                                  or is_scalar(resource)))


#: Up to this many reasons, ``combine_failures`` finds the distinct combinations by counting.
_FEW_FAILURES = 12


def combine_failures(failures: list[tuple[str, np.ndarray]], count: int, code: Code
                     ) -> NodeVerdicts:
    """Per node, every failing reason in order, as one status with ``code``."""
    if not failures:
        return NodeVerdicts.passing(count)
    if count == 1:
        failed = tuple(reason for reason, mask in failures if mask[0])
        if not failed:
            return NodeVerdicts.passing(1)
        return NodeVerdicts(np.asarray([code], np.int8), np.asarray([1], np.int32),
                            [(), failed])
    matrix = np.stack([mask for _, mask in failures], axis=1)
    weights = (1 << np.arange(len(failures), dtype=np.int64))
    keys = matrix.astype(np.int64) @ weights
    if len(failures) <= _FEW_FAILURES:  # np.unique without its sort: few possible keys
        present = np.flatnonzero(np.bincount(keys, minlength=1 << len(failures)))
        lookup = np.zeros(1 << len(failures), dtype=np.int64)
        lookup[present] = np.arange(len(present))
        unique, inverse = present, lookup[keys]
    else:
        unique, inverse = np.unique(keys, return_inverse=True)
    reasons: list[tuple[str, ...]] = []
    for key in unique.tolist():
        reasons.append(tuple(reason for i, (reason, _) in enumerate(failures) if key >> i & 1))
    codes = np.where(keys > 0, np.int8(code), np.int8(0)).astype(np.int8)
    return NodeVerdicts(codes, inverse.astype(np.int32).reshape(-1), reasons)
