"""The DynamicResources plugin: pods' ResourceClaims allocated from ResourceSlices.

Mirrors ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`` (Kubernetes
v1.34, where the plugin is on by default):

* **PreEnqueue** holds a pod back while a claim it names does not exist, is being deleted, or
  (generated from a template) is not the pod's own.
* **PreFilter** reads the pod's claims: an allocated claim's node selector limits the nodes
  (``resourceclaim in use`` never fires: in v1 a claim can always be reserved); an unallocated
  claim whose allocation is in flight for another pod holds the pod back; for the unallocated
  ones every DeviceClass must exist, and an allocator is set up over the devices allocated
  already (the cluster's claims and the allocations in flight), the classes and the slices.
* **Filter** checks allocated claims' node selectors and runs the allocator for the node,
  keeping its result for Reserve. Its messages are upstream's (``cannot allocate all claims``,
  ``resourceclaim not available on the node``, ``timed out trying to allocate devices``); a
  problem with a claim or class (a CEL error) is an Error that ends the attempt.
* **PostFilter** deallocates one allocated claim that kept the pod off nodes when no other
  pod uses it (``deallocation of ResourceClaim completed``), else answers ``still not
  schedulable`` (``no new claims to deallocate`` for pods without claims); from v1.37 those
  two answers carry no message.
* **Reserve** marks the node's allocation as in flight, so later pods do not take the same
  devices; **Unreserve** drops it (and the pod's reservation); **PreBind** writes the
  allocation and the pod's reservation into the claim (in a replay, an API call the cluster
  sees; the claim's Update event reaches waiting pods).
* **Score** (from v1.35, a point the plugin has only from that release on: ``points_since``)
  prefers nodes where ``firstAvailable`` requests got earlier subrequests
  (:mod:`kaudit.plugins.dynamic_resources.scoring`); v1.34 has no Score for this plugin.

The allocator's features follow the gates as ``AllocatorFeatures`` of v1.37.2 does:
partitionable devices and device taints from v1.36, DeviceTaintRules (patched into the slices
by the scheduler's slice tracker, ``pkg/scheduler/scheduler.go``) from v1.37. The
extended-resource bridge (``DRAExtendedResource``), consumable capacity and binding
conditions (beta, on from v1.36) are not modelled. The filter timeout
(``DRASchedulerFilterTimeout``, beta, 10 s) is a budget of search steps per node (a replay's
clock does not run during a cycle).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import orjson

from kaudit import versions
from kaudit.cluster.matching import node_selector_mask
from kaudit.cluster.state import ClusterState, object_key
from kaudit.config import ArgsSpec, FeatureGates, args_defaults, args_schema, args_validation
from kaudit.config.duration import parse_duration
from kaudit.framework import signing
from kaudit.framework.cycle_state import NOT_FOUND, CycleState
from kaudit.framework.events import (
    DEVICE_CLASS,
    NODE,
    POD,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    ClusterEventWithHint,
    QueueingHint,
    register,
)
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeVerdicts,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
)
from kaudit.framework.runtime import PluginError
from kaudit.framework.status import Code, Status
from kaudit.model import dra
from kaudit.model.pod import PodInfo
from kaudit.model.selectors import NodeSelector, SelectorError
from kaudit.plugins import names
from kaudit.plugins.dynamic_resources.allocator import (
    DEFAULT_SEARCH_BUDGET,
    AllocationError,
    Allocator,
    FailedOnNode,
    Features,
    TimedOut,
    request_supply,
)
from kaudit.plugins.dynamic_resources.capacity import SharedAllocations, add_allocation
from kaudit.plugins.dynamic_resources.cel_env import SelectorCache
from kaudit.plugins.dynamic_resources.pools import DeviceID, SliceIndex
from kaudit.plugins.dynamic_resources.scoring import ScoreError, compute_score
from kaudit.plugins.dynamic_resources.variants import (
    EXPERIMENTAL,
    INCUBATING,
    STABLE,
    upstream_allocator,
)
from kaudit.plugins.helper import default_normalize

JSON = dict[str, Any]
STATE_KEY = names.DYNAMIC_RESOURCES
CLAIM, SLICE, CLASS = "ResourceClaim", "ResourceSlice", "DeviceClass"
TAINT_RULE = "DeviceTaintRule"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
_UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
#: How many cached node answers the plugin keeps before it starts afresh.
_NODE_RESULTS_LIMIT = 200_000


def _uid(claim: JSON) -> str:
    meta = claim.get("metadata") or {}
    return str(meta.get("uid") or object_key(claim))


def claim_ref(claim: JSON) -> str:
    """``klog.KObj(claim)``."""
    return object_key(claim)


@dataclass
class ClaimsState:
    """What PreFilter learnt about the pod's claims (upstream's ``stateData``)."""

    cluster: ClusterState | None = None
    claims: list[JSON] = field(default_factory=list)
    available_on: list[NodeSelector | None] = field(default_factory=list)
    allocations: list[JSON | None] = field(default_factory=list)
    allocator: Allocator | None = None
    to_allocate: list[JSON] = field(default_factory=list)
    #: The specs of ``to_allocate`` (claims alike in them get the same allocations).
    spec_key: bytes = b""
    node_allocations: dict[str, list[JSON]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)

    def clone(self) -> ClaimsState:
        return self  # shared across the cycle's clones, as upstream's Clone() does


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin,
                       ScorePlugin, ReservePlugin, PreBindPlugin):
    name = names.DYNAMIC_RESOURCES
    #: Upstream's DynamicResources scores from v1.35 (PR #134711).
    points_since = MappingProxyType({"v1.35": frozenset({"Score"})})
    normalizes_rows = True
    reads_only_its_node = True
    added_pods_only_hinder = True
    args_spec = ArgsSpec(
        kind="DynamicResourcesArgs", schema=args_schema.DYNAMIC_RESOURCES_ARGS,
        set_defaults=args_defaults.set_defaults_dynamic_resources,
        validate=args_validation.validate_dynamic_resources_args)

    signs_pods = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35): a pod with resource claims is not signed."""
        return None if (pod.obj.get("spec") or {}).get("resourceClaims") else ()

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        gates = getattr(handle, "feature_gates", None)

        def gate(name: str, default: bool) -> bool:
            return bool(gates.enabled(name)) if gates is not None else default
        self.enabled = gate("DynamicResourceAllocation", True)
        #: v1.36: a Filter that times out is an Error of the cycle (upstream PR #137607).
        self.timeout_is_error = versions.handle_carries(handle, "dra-filter-timeout-is-error")
        #: v1.37: PostFilter says nothing when it has nothing to deallocate.
        self.quiet_post_filter = versions.handle_carries(handle, "post-filter-message-without-dra")
        #: v1.35: a pool's completeness counts its slices on every node (PR #134466).
        self.pools_span_nodes = versions.handle_carries(handle, "dra-pool-completeness-spans-nodes")
        # v1.36's pools and allocator (shared counters in slices of their own) are the first
        # whose partitionable devices and device taints kaudit models; the other beta and
        # alpha features run as with their gates off (``kaudit.model.unmodelled_features``).
        v1_36_pools = versions.handle_carries(
            handle, "dra-shared-counter-slices-need-partitionable")
        known = gates if gates is not None else FeatureGates()
        #: The implementation upstream runs with these gates (:mod:`.variants`).
        variant = upstream_allocator(tuple(known.version.release[:2]),
                                     lambda name: name in known and known.enabled(name))
        self.allocator_variant = variant
        self.features = Features(
            admin_access=gate("DRAAdminAccess", True),
            prioritized_list=gate("DRAPrioritizedList", True),
            partitionable_devices=v1_36_pools and gate("DRAPartitionableDevices", False),
            device_taints=v1_36_pools and gate("DRADeviceTaints", False),
            result_tolerations=v1_36_pools,
            consumable_capacity=v1_36_pools and gate("DRAConsumableCapacity", False),
            capacity_v1_37=versions.handle_carries(handle, "dra-capacity-checks-v1-37"),
            cel_errors_name_device=versions.handle_carries(
                handle, "dra-cel-runtime-error-names-device"),
            incubating=v1_36_pools and variant != STABLE,
            refuses_capacity_requests=variant == EXPERIMENTAL or (
                variant == INCUBATING and v1_36_pools),
            distinct_attribute=variant == EXPERIMENTAL or (variant == INCUBATING and v1_36_pools),
            counter_slices_by_node=versions.handle_carries(handle, "dra-counter-slices-by-node"),
            claim_limit_per_request=versions.handle_carries(
                handle, "dra-claim-limit-per-request"),
            shared_counters_need_partitionable=v1_36_pools,
            compatibility_groups=not (gates is not None
                                      and "DRADeviceCompatibilityGroups" in gates
                                      and not gates.enabled("DRADeviceCompatibilityGroups")))
        self.slice_rules = self.features.slice_rules()
        #: v1.37 (GA): DeviceTaintRules' taints are patched into the slices the allocator
        #: reads (the scheduler's slice tracker; before v1.37 a rule without a selector
        #: selected every device, which kaudit does not model).
        self.taint_rules = self.features.device_taints and versions.handle_carries(
            handle, "dra-taint-rules-select-nothing-without-selector") and gate(
            "DRADeviceTaintRules", False)
        timeout = self.args.get("filterTimeout")
        timed = gate("DRASchedulerFilterTimeout", True) and timeout is not None and \
            parse_duration(str(timeout)) > 0
        #: The filter timeout as a budget of search steps (None: no timeout, as upstream
        #: with the gate off or ``filterTimeout: 0s``).
        self.search_budget = DEFAULT_SEARCH_BUDGET if timed else None
        self.cel = SelectorCache()
        self.slices = SliceIndex()
        #: Allocations between Reserve and PreBind (``SignalClaimPendingAllocation``), by
        #: claim uid: the claim as it will be written.
        self.in_flight: dict[str, JSON] = {}
        self._allocated: tuple[Any, tuple[frozenset[DeviceID], SharedAllocations]] | None = None
        self._previous_allocated: frozenset[DeviceID] = frozenset()
        self._previous_shares = SharedAllocations()
        self._pool_versions: dict[tuple[str, str], int] = {}
        #: (node, claim specs) → (the node's pools, the versions the answer depends on, the
        #: allocator's answer).
        self._node_results: dict[tuple[str, bytes], tuple[Any, Any, Any]] = {}

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the claims and slices, not the pods on the node

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        if not self.enabled:
            return []
        return [
            register(NODE, ["Add", "UpdateNodeLabel", "UpdateNodeAllocatable"]),
            register(RESOURCE_CLAIM, ["Add", "Update"], self._after_claim_change),
            register(POD, ["UpdatePodGeneratedResourceClaim"], self._after_pod_change),
            register(DEVICE_CLASS, ["Add", "Update"]),
            register(RESOURCE_SLICE, ["Add", "Update"]),
        ]

    def _cluster(self) -> ClusterState | None:
        return self.handle.ports.cluster if self.handle is not None else None

    def _after_claim_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterClaimChange``."""
        cluster = self._cluster()
        modified = getattr(new, "obj", new)
        original = getattr(old, "obj", old) if old is not None else None
        if cluster is None or not isinstance(modified, dict):
            return QueueingHint.QUEUE
        claims, error = self._pod_claims(pod.obj, cluster)
        if error is not None:
            return QueueingHint.QUEUE_SKIP
        if original is not None and dra.allocation(original) is not None and \
                dra.allocation(modified) is None:
            return QueueingHint.QUEUE  # deallocated: devices became free
        if not any(_uid(c) == _uid(modified) for c in claims):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        if _semantic(original.get("status")) == _semantic(modified.get("status")):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterPodChange``."""
        cluster = self._cluster()
        modified = getattr(new, "obj", new)
        if not isinstance(modified, dict) or cluster is None:
            return QueueingHint.QUEUE
        if (modified.get("metadata") or {}).get("uid") != pod.uid:
            return QueueingHint.QUEUE_SKIP
        _, error = self._pod_claims(modified, cluster)
        return QueueingHint.QUEUE_SKIP if error is not None else QueueingHint.QUEUE

    # ------------------------------------------------------------------ claims of a pod

    def claim(self, cluster: ClusterState, namespace: str, name: str) -> JSON | None:
        """The claim as the scheduler's claim tracker has it (an allocation in flight is not
        in it yet: PreFilter holds pods back on it)."""
        return cluster.objects[CLAIM].get(f"{namespace}/{name}")

    def _pod_claims(self, pod: JSON, cluster: ClusterState) -> tuple[list[JSON], str | None]:
        """``foreachPodResourceClaim``: the pod's claims, or why the pod must wait."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        claims: list[JSON] = []
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            name, must_own, error = dra.claim_name(pod, pod_claim)
            if error is not None:
                return claims, error
            if name is None:
                continue
            claim = self.claim(cluster, namespace, name)
            if claim is None:
                return claims, f'could not find ResourceClaim "{namespace}/{name}"'
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return claims, f'resourceclaim "{name}" is being deleted'
            if must_own:
                error = dra.is_for_pod(pod, claim)
                if error is not None:
                    return claims, error
            claims.append(claim)
        return claims, None

    # ------------------------------------------------------------------ PreEnqueue

    def pre_enqueue(self, pod: PodInfo) -> Status:
        cluster = self._cluster()
        if not self.enabled or cluster is None or not _uses_claims(pod):
            return Status.success()
        _, error = self._pod_claims(pod.obj, cluster)
        return Status.success() if error is None else Status.of(_UNRESOLVABLE, error)

    # ------------------------------------------------------------------ PreFilter

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        if not self.enabled:
            return None, Status.of(Code.SKIP)
        found = ClaimsState(cluster=cluster)
        state.write(STATE_KEY, found)
        if not _uses_claims(pod):
            return None, Status.of(Code.SKIP)
        claims, error = self._pod_claims(pod.obj, cluster)
        if error is not None:
            return None, Status.of(_UNRESOLVABLE, error)
        if not claims:
            return None, Status.of(Code.SKIP)
        available_on: list[NodeSelector | None] = []
        to_allocate: list[JSON] = []
        for claim in claims:
            allocation = dra.allocation(claim)
            if allocation is not None and not dra.can_be_reserved(claim) and \
                    not dra.is_reserved_for_pod(pod.uid, claim):
                return None, Status.of(_UNRESOLVABLE, "resourceclaim in use")
            if allocation is not None:
                selector = None
                if allocation.get("nodeSelector") is not None:
                    try:
                        selector = NodeSelector.parse(allocation["nodeSelector"],
                                                      "status.allocation.nodeSelector")
                    except SelectorError as exc:
                        return None, Status.of(Code.ERROR, str(exc))
                available_on.append(selector)
                continue
            available_on.append(None)
            to_allocate.append(claim)
            if _uid(claim) in self.in_flight:
                return None, Status.of(_UNRESOLVABLE, f"resource claim {claim_ref(claim)} is in "
                                       "the process of being allocated")
            status = self._check_requests(cluster, claim)
            if status is not None:
                return None, status
        found.claims, found.available_on = claims, available_on
        found.allocations = [None] * len(claims)
        if to_allocate:
            found.to_allocate = to_allocate
            found.spec_key = orjson.dumps([c.get("spec") for c in to_allocate],
                                          option=orjson.OPT_SORT_KEYS)
            found.allocator = self._allocator(cluster)
        return None, Status.success()

    def _check_requests(self, cluster: ClusterState, claim: JSON) -> Status | None:
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            name = str(request.get("name") or "")
            if request.get("exactly") is not None:
                status = _check_class(cluster, request["exactly"].get("deviceClassName"), name)
            elif request.get("firstAvailable"):
                if not self.features.prioritized_list:
                    return Status.of(_UNRESOLVABLE, f"resource claim {claim_ref(claim)}, request "
                                     f"{name}: has subrequests, but the DRAPrioritizedList "
                                     "feature is disabled")
                status = None
                for sub in request["firstAvailable"]:
                    status = _check_class(cluster, sub.get("deviceClassName"),
                                          f"{name}/{sub.get('name', '')}")
                    if status is not None:
                        break
            else:
                status = Status.of(_UNRESOLVABLE, f"resource claim {claim_ref(claim)}, request "
                                   f"{name}: unknown request type")
            if status is not None:
                return status
        return None

    def allocated_devices(self, cluster: ClusterState
                          ) -> tuple[frozenset[DeviceID], SharedAllocations]:
        """``ListAllAllocatedDevices`` (with consumable capacity, ``GatherAllocatedState``):
        the devices of every allocated claim and of the allocations in flight, those taken
        whole apart from the shares of devices that allow several allocations."""
        version = (id(cluster.objects[CLAIM]), cluster.kind_generation[CLAIM])
        if self._allocated is None or self._allocated[0] != version:
            self._allocated = (version, self._gather(cluster.objects[CLAIM].values()))
        if not self.in_flight:
            return self._allocated[1]
        return self._gather(self.in_flight.values(), self._allocated[1])

    def _gather(self, claims: Any,
                onto: tuple[frozenset[DeviceID], SharedAllocations] | None = None
                ) -> tuple[frozenset[DeviceID], SharedAllocations]:
        """The devices ``claims`` hold, added to those of ``onto``."""
        dedicated: set[DeviceID] = set(onto[0]) if onto is not None else set()
        shared: set[DeviceID] = set(onto[1].devices) if onto is not None else set()
        consumed: dict[DeviceID, dict[str, int]] = (
            {device: dict(amounts) for device, amounts in onto[1].capacity.items()}
            if onto is not None else {})
        for claim in claims:
            add_allocation(dedicated, shared, consumed, dra.allocation(claim),
                           self.features.consumable_capacity)
        return frozenset(dedicated), SharedAllocations(frozenset(shared), consumed)

    def _allocator(self, cluster: ClusterState) -> Allocator:
        if self.taint_rules:
            self.slices.refresh(cluster.objects[SLICE], cluster.kind_generation[SLICE],
                                cluster.objects[TAINT_RULE], cluster.kind_generation[TAINT_RULE])
        else:
            self.slices.refresh(cluster.objects[SLICE], cluster.kind_generation[SLICE])
        rules = self.slice_rules
        allocated, shares = self.allocated_devices(cluster)
        self._note_allocation_changes(allocated, shares)
        return Allocator(self.features, allocated, cluster.objects[CLASS],
                         self.slices.slices, self.cel, search_budget=self.search_budget,
                         pools_for=lambda node: self.slices.pools_for(
                             node, rules, self.pools_span_nodes), shares=shares)

    # ------------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        found = state.read(STATE_KEY)
        if not isinstance(found, ClaimsState) or not found.claims:
            return NodeVerdicts.passing(len(slots))
        # Allocated claims' node selectors, all nodes at once: claim index → matching nodes.
        reachable = [(i, node_selector_mask(cluster, slots, selector))
                     for i, selector in enumerate(found.available_on) if selector is not None]
        if found.allocator is None:
            failed = np.zeros(len(slots), dtype=bool)
            for index, mask in reachable:
                if not mask.all():
                    found.unavailable.add(index)
                    failed |= ~mask
            return NodeVerdicts.from_mask(failed, _UNRESOLVABLE, NOT_AVAILABLE)
        statuses: list[Status] = []
        for position, slot in enumerate(slots.tolist()):
            unavailable = [i for i, mask in reachable if not mask[position]]
            status = self._filter_node(found, cluster, slot, unavailable)
            statuses.append(status)
            if status.code == Code.ERROR:
                # An Error aborts upstream's whole Filter phase (the attempt fails with it):
                # the other nodes are not searched (a CEL runtime error, such as the cost
                # limit's, would cost each of them the same again).
                statuses.extend([status] * (len(slots) - len(statuses)))
                break
        return NodeVerdicts.from_statuses(statuses)

    def _note_allocation_changes(self, allocated: frozenset[DeviceID],
                                 shares: SharedAllocations) -> None:
        """Bump the version of every pool whose allocated devices or shares changed since
        the last cycle (the node results cached by :meth:`_allocate` depend on them)."""
        if allocated is self._previous_allocated and shares is self._previous_shares:
            return
        changed = set(allocated.symmetric_difference(self._previous_allocated))
        changed |= shares.devices.symmetric_difference(self._previous_shares.devices)
        before = self._previous_shares.capacity
        changed |= {device for device in {*shares.capacity, *before}
                    if shares.capacity.get(device) != before.get(device)}
        for driver, pool, _ in changed:
            self._pool_versions[(driver, pool)] = self._pool_versions.get((driver, pool), 0) + 1
        self._previous_allocated, self._previous_shares = allocated, shares

    def _allocate(self, found: ClaimsState, cluster: ClusterState, node: Any
                  ) -> list[JSON] | None:
        """The allocator's answer for ``node``, reused from an earlier cycle when nothing it
        depends on changed: the claims' specs, the classes, the node and its pools (the same
        parsed slices), and the allocated devices of those pools. The search is a function
        of these, so its answer is the same."""
        assert found.allocator is not None
        pools = self.slices.pools_for(node, self.slice_rules, self.pools_span_nodes)
        versions = (cluster.kind_generation[CLASS],
                    tuple(self._pool_versions.get((p.driver, p.name), 0) for p in pools))
        cached = self._node_results.get((node.name, found.spec_key))
        if cached is not None and cached[0] is pools and cached[1] == versions:
            if isinstance(cached[2], TimedOut):
                raise cached[2]
            return cached[2]  # type: ignore[no-any-return]
        try:
            allocations = found.allocator.allocate(node, found.to_allocate)
        except TimedOut as exc:  # as deterministic as an answer: keep it
            self._node_results[(node.name, found.spec_key)] = (pools, versions, exc)
            raise
        if len(self._node_results) >= _NODE_RESULTS_LIMIT:
            self._node_results.clear()
        self._node_results[(node.name, found.spec_key)] = (pools, versions, allocations)
        return allocations

    def _filter_node(self, found: ClaimsState, cluster: ClusterState, slot: int,
                     unavailable: list[int]) -> Status:
        node = cluster.node(slot)
        allocations = None
        if found.allocator is not None:
            try:
                allocations = self._allocate(found, cluster, node)
            except TimedOut as exc:
                if self.timeout_is_error:  # v1.36: the cycle fails
                    return Status.of(Code.ERROR, f"node {node.name}: {exc}")
                return Status.of(_UNRESOLVABLE, str(exc))
            except FailedOnNode as exc:
                return Status.of(_UNRESOLVABLE, str(exc))
            except AllocationError as exc:
                return Status.of(Code.ERROR, str(exc))
            if allocations is None or len(allocations) != len(found.to_allocate):
                return Status.of(_UNRESOLVABLE, CANNOT_ALLOCATE)
        if unavailable:
            found.unavailable.update(unavailable)
            return Status.of(_UNRESOLVABLE, NOT_AVAILABLE)
        if allocations is not None:
            found.node_allocations[node.name] = allocations
        return Status.success()

    # ------------------------------------------------------------------ Score (v1.35)

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        scores = np.zeros(len(slots), dtype=np.int64)
        found = state.read(STATE_KEY)
        if not self.enabled or not isinstance(found, ClaimsState) or not found.claims:
            return scores
        for position, slot in enumerate(slots.tolist()):
            allocations = found.node_allocations.get(cluster.node(slot).name)
            if allocations is None:
                continue
            try:
                scores[position] = compute_score(found.claims, allocations)
            except ScoreError as exc:
                raise PluginError(str(exc)) from None
        return scores

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        return default_normalize(scores, reverse=False) if self.enabled else None

    # ------------------------------------------------------------------ notes

    def attempt_notes(self, state: CycleState, selected: str | None) -> dict[str, Any] | None:
        """For explanations: the pod's claims; the devices the chosen node's allocation
        holds; how many devices in the cluster each request's selectors match and how many
        of those are free (the nodes that could not allocate the claims, placed or not)."""
        found = state.read(STATE_KEY)
        if not isinstance(found, ClaimsState) or not found.claims:
            return None
        claims = [{"claim": claim_ref(c), "allocated": dra.allocation(c) is not None}
                  for c in found.claims]
        notes: dict[str, Any] = {"claims": claims}
        allocations = found.node_allocations.get(selected) if selected else None
        if allocations is not None:
            notes["devices"] = [
                {"claim": claim_ref(claim), **{k: r[k] for k in ("request", "driver", "pool",
                                                                 "device") if k in r}}
                for claim, allocation in zip(found.to_allocate, allocations, strict=False)
                for r in (allocation.get("devices") or {}).get("results") or []]
        if found.allocator is not None and found.cluster is not None and found.to_allocate:
            # placed or not: the supply explains the nodes that could not allocate the claims
            notes["requests"] = request_supply(found.allocator, found.to_allocate)
        return notes

    # ------------------------------------------------------------------ PostFilter

    def post_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                    diagnosis: Any) -> tuple[None, Status]:
        found = state.read(STATE_KEY)
        quiet = self.quiet_post_filter
        if not self.enabled:
            return None, Status.of(Code.UNSCHEDULABLE, *(() if quiet else ("plugin disabled",)))
        if found is None:
            # Its PreFilter never ran (an earlier PreFilter rejected the pod as unresolvable):
            # upstream's getStateData fails with the cycle state's ErrNotFound, and the Error
            # ends PostFilter before DefaultPreemption runs.
            return None, Status.of(Code.ERROR, NOT_FOUND)
        if not isinstance(found, ClaimsState) or not found.claims:
            return None, Status.of(Code.UNSCHEDULABLE,
                                   *(() if quiet else (NO_CLAIMS_TO_DEALLOCATE,)))
        # Upstream picks one of the claims at random (map order); kaudit takes the first.
        for index in sorted(found.unavailable):
            claim = found.claims[index]
            reserved = dra.reserved_for(claim)
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                freed = copy.deepcopy(claim)
                status = freed.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                self._write(cluster, freed)
                return None, Status.of(Code.UNSCHEDULABLE,
                                       "deallocation of ResourceClaim completed")
        return None, Status.of(Code.UNSCHEDULABLE, *(() if quiet else ("still not schedulable",)))

    # ------------------------------------------------------------------ Reserve

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        found = state.read(STATE_KEY)
        if not isinstance(found, ClaimsState) or not found.claims:
            return Status.success()
        pending = [i for i, claim in enumerate(found.claims) if dra.allocation(claim) is None]
        if not pending or found.allocator is None:
            return Status.success()
        allocations = found.node_allocations.get(node_name)
        if allocations is None:
            return Status.of(Code.ERROR, "claim allocation not found for node")
        if len(allocations) != len(found.to_allocate) or len(allocations) != len(pending):
            return Status.of(Code.ERROR, f"internal error, have {len(allocations)} allocations, "
                             f"{len(found.to_allocate)} claims to allocate, want "
                             f"{len(pending)} claims")
        for index, allocation in zip(pending, allocations, strict=True):
            allocation = copy.deepcopy(allocation)  # answers are shared between cycles
            found.allocations[index] = allocation
            claim = copy.deepcopy(found.claims[index])
            finalizers = claim.setdefault("metadata", {}).setdefault("finalizers", [])
            if dra.FINALIZER not in finalizers:
                finalizers.append(dra.FINALIZER)
            claim.setdefault("status", {})["allocation"] = allocation
            self.in_flight[_uid(claim)] = claim
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        found = state.read(STATE_KEY)
        if not isinstance(found, ClaimsState) or not found.claims or found.cluster is None:
            return
        for claim in found.claims:
            self.in_flight.pop(_uid(claim), None)
            if dra.allocation(claim) is not None and dra.is_reserved_for_pod(pod.uid, claim):
                current = found.cluster.objects[CLAIM].get(object_key(claim))
                if current is None:
                    continue
                patched = copy.deepcopy(current)
                status = patched.setdefault("status", {})
                status["reservedFor"] = [ref for ref in status.get("reservedFor") or []
                                         if ref.get("uid") != pod.uid]
                self._write(found.cluster, patched)

    # ------------------------------------------------------------------ PreBind

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        found = state.read(STATE_KEY)
        if not isinstance(found, ClaimsState) or not found.claims or found.cluster is None:
            return Status.success()
        for index, claim in enumerate(found.claims):
            if dra.is_reserved_for_pod(pod.uid, claim):
                continue
            bound, error = self._bind_claim(found, index, pod)
            if error is not None:
                return Status.of(Code.ERROR, error)
            assert bound is not None
            found.claims[index] = bound
        return Status.success()

    def _bind_claim(self, found: ClaimsState, index: int, pod: PodInfo
                    ) -> tuple[JSON | None, str | None]:
        """``bindClaim``: the allocation from Reserve and the pod's reservation, written."""
        cluster = found.cluster
        assert cluster is not None
        claim = found.claims[index]
        allocation = found.allocations[index]
        try:
            current = cluster.objects[CLAIM].get(object_key(claim))
            if current is None:
                return None, (f'add reservation to claim {claim_ref(claim)}: resourceclaims.'
                              f'resource.k8s.io "{(claim.get("metadata") or {}).get("name")}" '
                              "not found")
            updated = copy.deepcopy(current)
            if (updated.get("metadata") or {}).get("deletionTimestamp"):
                return None, f"claim {claim_ref(claim)} got deleted in the meantime"
            if allocation is not None:
                if dra.allocation(updated) is not None:
                    return None, f"claim {claim_ref(claim)} got allocated elsewhere in the meantime"
                finalizers = updated.setdefault("metadata", {}).setdefault("finalizers", [])
                if dra.FINALIZER not in finalizers:
                    finalizers.append(dra.FINALIZER)
                updated.setdefault("status", {})["allocation"] = allocation
            status = updated.setdefault("status", {})
            status["reservedFor"] = [*(status.get("reservedFor") or []),
                                     {"resource": "pods", "name": pod.name, "uid": pod.uid}]
            self._write(cluster, updated)
            return updated, None
        finally:
            if allocation is not None:
                self.in_flight.pop(_uid(claim), None)

    def _write(self, cluster: ClusterState, claim: JSON) -> None:
        """An API write of ``claim``: through the replay (which applies it and delivers the
        watch event), else straight into the cluster state."""
        api = self.handle.ports.api if self.handle is not None else None
        if api is not None:
            api.update(claim)
        else:
            cluster.set_object(CLAIM, claim)


def _semantic(value: Any) -> Any:
    """``value`` with empty lists, maps and nulls dropped (``apiequality.Semantic``)."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _uses_claims(pod: PodInfo) -> bool:
    return bool((pod.obj.get("spec") or {}).get("resourceClaims"))


def _check_class(cluster: ClusterState, class_name: Any, request_name: str) -> Status | None:
    """``validateDeviceClass``."""
    if not class_name:
        return Status.of(Code.ERROR, f"request {request_name}: unsupported request type")
    if cluster.objects[CLASS].get(str(class_name)) is None:
        return Status.of(_UNRESOLVABLE, f"request {request_name}: device class {class_name} "
                         "does not exist")
    return None


