"""The structured-parameters allocator: which devices a pod's claims get on one node.

Mirrors ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
allocator_stable.go`` (Kubernetes v1.34): claims are allocated one after the other, each
request (or, for ``firstAvailable``, the first of its subrequests that works) device by
device, in a depth-first search over the devices of the node's complete, valid pools that are
not allocated already, match the DeviceClass's and the request's CEL selectors and keep the
claim's ``matchAttribute`` constraints; the first full solution wins. ``All`` mode takes every
matching device (and fails on an incomplete or invalid pool); admin access may use devices
that are allocated already. Error messages are upstream's.

From v1.36 (``allocator_stable.go`` / ``allocator_incubating.go`` of
``k8s.io/dynamic-resource-allocation`` v0.36.3 and v0.37.2), with their gates on:
partitionable devices (a device that consumes counters is allocated only while its pool's
counter sets, less what allocated devices and the devices being allocated consume, stay at or
above zero: ``checkAvailableCounters``) and device taints (a ``NoSchedule`` or ``NoExecute``
taint keeps a device from a request that does not tolerate it: ``taintPreventsAllocation``;
the request's tolerations go into the allocation result).

Gated features kaudit does not model (consumable capacity, binding conditions; partitionable
devices and device taints before v1.36) behave as with their gates off: devices that consume
counters or have binding conditions are not allocated, taints are ignored.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kaudit.gostrings import go_quote
from kaudit.model.dra import ALLOCATION_RESULTS_MAX_SIZE
from kaudit.model.node import NodeInfo
from kaudit.plugins.dynamic_resources.capacity import (
    Capacity,
    CapacityError,
    SharedAllocations,
    consumed_by,
    device_capacities,
    fits,
    request_capacities,
)
from kaudit.plugins.dynamic_resources.cel_budget import CostBudget
from kaudit.plugins.dynamic_resources.cel_env import CelError, SelectorCache
from kaudit.plugins.dynamic_resources.counters import CounterLedger
from kaudit.plugins.dynamic_resources.device_taints import taint_prevents_allocation
from kaudit.plugins.dynamic_resources.pools import (
    Device,
    DeviceID,
    Pool,
    PoolError,
    Slice,
    SliceRules,
    device_id_text,
    device_on_node,
    gather_pools,
    pool_problems,
)
from kaudit.quantity import Quantity

JSON = dict[str, Any]
EXACT_COUNT, ALL = "ExactCount", "All"


class AllocationError(Exception):
    """A problem with the claims, classes or slices: the scheduling attempt fails."""


class FailedOnNode(AllocationError):
    """``ErrFailedAllocationOnNode``: only this node fails (invalid pools met)."""


class TimedOut(AllocationError):
    """The search went past its budget (upstream: the filter timeout,
    ``DRASchedulerFilterTimeout``)."""


#: Search steps one node's allocation may take when the filter timeout is on (a step: an
#: ``allocateOne`` call, a device the search considers, a parse-tree node a selector's
#: evaluation visits): upstream gives the search 10 s of wall time by default; a replay's clock
#: does not run during a cycle, so kaudit bounds the search by steps instead (one to a few
#: seconds of Python), which gives the same answer for every search that ends in reasonable
#: time and the same answer on every replay.
DEFAULT_SEARCH_BUDGET = 1_000_000


@dataclass(frozen=True)
class Features:
    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = False
    device_taints: bool = False
    binding_conditions: bool = False
    #: v1.36 on: without partitionable devices, slices with shared counters are left out.
    shared_counters_need_partitionable: bool = False
    compatibility_groups: bool = True
    #: v1.36 on: an allocation result carries its request's tolerations.
    result_tolerations: bool = False
    #: Upstream runs its incubating allocator (consumable capacity or binding conditions on,
    #: from v1.36), whose pools differ (:class:`SliceRules`): it sorts a pool's slices by
    #: name and, from v1.37 (``counter_slices_by_node``), selects counter slices by node.
    incubating: bool = False
    counter_slices_by_node: bool = False
    #: v1.37: a claim's device limit is checked request by request, in other words.
    claim_limit_per_request: bool = False
    #: DRAConsumableCapacity (from v1.36): devices shared by several claims, capacity
    #: requests, ``distinctAttribute``; ``capacity_v1_37`` its v1.37 rules (``All`` checks
    #: static capacity, a request its range cannot represent fails the allocation, a device
    #: with allocated shares counts as in use for its counters).
    consumable_capacity: bool = False
    capacity_v1_37: bool = False
    #: v1.37: a CEL runtime error names the device, and a missing key's suggests optional
    #: chaining (``cel.EnhanceRuntimeError``).
    cel_errors_name_device: bool = False
    #: What the implementation upstream runs has (:mod:`.variants`): a refusal of capacity
    #: requests while consumable capacity is off, and the ``distinctAttribute`` constraint.
    refuses_capacity_requests: bool = False
    distinct_attribute: bool = False

    def slice_rules(self) -> SliceRules:
        return SliceRules(self.partitionable_devices, self.shared_counters_need_partitionable,
                          self.compatibility_groups,
                          counters_everywhere=not (self.incubating
                                                   and self.counter_slices_by_node),
                          slices_by_name=self.incubating)


@dataclass
class Request:
    """A request or subrequest (upstream's ``requestAccessor``)."""

    name: str
    class_name: str
    mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: list[JSON]
    tolerations: list[JSON] = field(default_factory=list)
    #: ``capacity.requests`` (None: the request names no capacity).
    capacity: dict[str, Quantity] | None = None

    @classmethod
    def exact(cls, request: JSON) -> Request:
        exactly = request.get("exactly") or {}
        return cls(str(request.get("name") or ""), str(exactly.get("deviceClassName") or ""),
                   str(exactly.get("allocationMode") or EXACT_COUNT),
                   _count(exactly.get("count")),
                   bool(exactly.get("adminAccess")), exactly.get("adminAccess") is not None,
                   list(exactly.get("selectors") or []),
                   list(exactly.get("tolerations") or []), request_capacities(exactly))

    @classmethod
    def sub(cls, sub: JSON) -> Request:
        return cls(str(sub.get("name") or ""), str(sub.get("deviceClassName") or ""),
                   str(sub.get("allocationMode") or EXACT_COUNT),
                   _count(sub.get("count")),
                   False, False, list(sub.get("selectors") or []),
                   list(sub.get("tolerations") or []), request_capacities(sub))


def _expressions(selectors: list[JSON]) -> tuple[str, ...]:
    return tuple(str((s.get("cel") or {}).get("expression") or "") for s in selectors)


def _count(value: Any) -> int:
    """``count``, defaulted to 1 as the API server defaults it."""
    return 1 if value is None else int(value)


@dataclass
class RequestData:
    request: Request
    parent: Request | None
    claim_class: JSON | None = None
    num_devices: int = 0
    selected_sub: int = 0
    all_devices: list[Device] = field(default_factory=list)
    _signature: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def signature(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What decides whether a device is selectable for the request: the class's and the
        request's expressions."""
        if self._signature is None:
            class_selectors = ((self.claim_class or {}).get("spec") or {}).get("selectors") or []
            self._signature = (_expressions(class_selectors),
                               _expressions(self.request.selectors))
        return self._signature

    @property
    def full_name(self) -> str:
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name


@dataclass
class _Result:
    device: Device
    request: str
    parent: str
    admin_access: bool
    tolerations: list[JSON]
    share_id: str | None = None
    consumed: dict[str, Quantity] | None = None

    @property
    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


class _MatchAttribute:
    """``matchAttributeConstraint``: all devices of the named requests share the attribute."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.value: tuple[str, Any] | None = None
        self.count = 0

    def _applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        if not sub:
            return request in self.requests
        return request in self.requests or f"{request}/{sub}" in self.requests

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self._applies(request, sub):
            return True
        value = lookup_attribute(device, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value, self.count = value, 1
            return True
        if self.value != value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub: str, device: Device) -> None:
        if self._applies(request, sub):
            self.count -= 1


class _DistinctAttribute(_MatchAttribute):
    """``distinctAttributeConstraint`` (consumable capacity's incubating allocator): the
    devices of the named requests all have the attribute, each with a value of its own."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: list[tuple[str, Any]] = []

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self._applies(request, sub):
            return True
        value = lookup_attribute(device, self.attribute)
        if value is None or (value[0] == "unknown" and self.values) or value in self.values:
            return False
        self.values.append(value)
        return True

    def remove(self, request: str, sub: str, device: Device) -> None:
        if self._applies(request, sub):
            self.values.pop()


_VALUE_KINDS = ("string", "int", "bool", "version")


def lookup_attribute(device: Device, name: str) -> tuple[str, Any] | None:
    """``lookupAttribute``: a fully qualified name, or the short name when the domain is the
    device's driver; the value with its kind (values of different kinds never match)."""
    attributes = device.obj.get("attributes") or {}
    raw = attributes.get(name)
    if raw is None:
        domain, sep, short = name.partition("/")
        if not sep or domain != device.slice.driver:
            return None
        raw = attributes.get(short)
        if raw is None:
            return None
    for kind in _VALUE_KINDS:
        if isinstance(raw, dict) and raw.get(kind) is not None:
            return kind, raw[kind]
    return "unknown", object()  # an unknown kind never equals another value


def _claim_ref(claim: JSON) -> str:
    meta = claim.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name") or "")


class Allocator:
    """``NewAllocator``: the allocated devices, classes and slices of one scheduling cycle;
    :meth:`allocate` then answers for one node at a time."""

    def __init__(self, features: Features, allocated: frozenset[DeviceID] | set[DeviceID],
                 classes: Mapping[str, JSON], slices: list[Slice], cel: SelectorCache,
                 pools_for: Any = None, search_budget: int | None = None,
                 shares: SharedAllocations | None = None) -> None:
        self.features = features
        #: Devices allocated whole (``AllocatedDevices``), and the shares of devices that
        #: allow several allocations (with consumable capacity on).
        self.allocated = allocated
        self.shares = shares if shares is not None else SharedAllocations()
        self.classes = classes
        self.slices = slices
        self.cel = cel
        self._pools_for = pools_for
        self.search_budget = search_budget

    def pools(self, node: NodeInfo | None) -> list[Pool]:
        if self._pools_for is not None and node is not None:
            return self._pools_for(node)  # type: ignore[no-any-return]
        return gather_pools(self.slices, node, self.features.slice_rules())

    def allocate(self, node: NodeInfo | None, claims: list[JSON]) -> list[JSON] | None:
        """One allocation result per claim, or None when they cannot all be allocated on
        ``node``. Raises :class:`AllocationError` (or :class:`FailedOnNode`)."""
        try:
            pools = self.pools(node)
        except PoolError as exc:
            raise AllocationError(f"gather pool information: {exc}") from exc
        return _Allocation(self, node, claims, pools).run()


class _Allocation:
    """One ``Allocate`` call (upstream's ``allocator``)."""

    def __init__(self, owner: Allocator, node: NodeInfo | None, claims: list[JSON],
                 pools: list[Pool]) -> None:
        self.owner = owner
        self.features = owner.features
        self.node = node
        self.claims = claims
        self.pools = pools
        self.request_data: dict[tuple[int, int, int], RequestData] = {}
        self.constraints: list[list[_MatchAttribute | _DistinctAttribute]] = []
        self.matches: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.steps_left = owner.search_budget
        self._counters: CounterLedger | None = None
        #: Consumable capacity: what the shares being allocated take of each device, and
        #: how many shares were made (for their IDs).
        self.allocating_capacity: dict[DeviceID, dict[str, int]] = {}
        self.shares_made = 0

    @property
    def counters(self) -> CounterLedger:
        """The pools' shared counters, gathered when a device first consumes some."""
        if self._counters is None:
            self._counters = CounterLedger(self.owner.allocated,
                                           {(p.driver, p.name): p for p in self.pools})
        return self._counters

    # ------------------------------------------------------------------ set-up

    def run(self) -> list[JSON] | None:
        for claim_index, claim in enumerate(self.claims):
            devices = ((claim.get("spec") or {}).get("devices") or {})
            min_devices = 0
            for request_index, raw in enumerate(devices.get("requests") or []):
                subs = raw.get("firstAvailable") or []
                if subs and not self.features.prioritized_list:
                    raise AllocationError(
                        f"claim {_claim_ref(claim)}, request {raw.get('name', '')}: has "
                        "subrequests, but the DRAPrioritizedList feature is disabled")
                if self.features.refuses_capacity_requests and \
                        not self.features.consumable_capacity:
                    self._refuse_capacity_requests(claim, raw, subs)
                if subs:
                    fewest = None
                    parent = Request.exact({"name": raw.get("name"), "exactly": {}})
                    for sub_index, sub in enumerate(subs):
                        key = (claim_index, request_index, sub_index)
                        data = self._validate(Request.sub(sub), parent, key)
                        self.request_data[key] = data
                        fewest = data.num_devices if fewest is None else min(fewest,
                                                                             data.num_devices)
                    adding = fewest or 0
                else:
                    key = (claim_index, request_index, 0)
                    data = self._validate(Request.exact(raw), None, key)
                    self.request_data[key] = data
                    adding = data.num_devices
                if self.features.claim_limit_per_request and \
                        adding > ALLOCATION_RESULTS_MAX_SIZE - min_devices:
                    raise AllocationError(
                        f"claim {_claim_ref(claim)}, request {raw.get('name', '')}: adding "
                        f"{adding} devices exceeds the claim limit of "
                        f"{ALLOCATION_RESULTS_MAX_SIZE}, with {min_devices} already accounted "
                        "for")
                min_devices += adding
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {_claim_ref(claim)}: number of requested devices {min_devices} "
                    f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            constraints: list[_MatchAttribute | _DistinctAttribute] = []
            for i, constraint in enumerate(devices.get("constraints") or []):
                if constraint.get("matchAttribute"):
                    constraints.append(_MatchAttribute(list(constraint.get("requests") or []),
                                                       str(constraint["matchAttribute"])))
                elif constraint.get("distinctAttribute") and self.features.distinct_attribute:
                    constraints.append(_DistinctAttribute(
                        list(constraint.get("requests") or []),
                        str(constraint["distinctAttribute"])))
                else:
                    raise AllocationError(f"claim {_claim_ref(claim)}, constraint #{i}: empty "
                                          "constraint (unsupported constraint type?)")
            self.constraints.append(constraints)
        done = self._allocate_one(0, 0, 0, 0, False)
        if done is not True:
            for pool in self.pools:
                if pool.invalid:
                    raise FailedOnNode("invalid resource pools were encountered")
            return None
        return [self._result(i, claim) for i, claim in enumerate(self.claims)]

    def _refuse_capacity_requests(self, claim: JSON, raw: JSON, subs: list[JSON]) -> None:
        """With consumable capacity off, the incubating (v1.36 on) and experimental
        allocators refuse capacity requests."""
        if (raw.get("exactly") or {}).get("capacity") is not None:
            raise AllocationError(f"claim {_claim_ref(claim)}, request {raw.get('name', '')}: "
                                  "has capacity requests, but the DRAConsumableCapacity "
                                  "feature is disabled")
        for sub in subs:
            if sub.get("capacity") is not None:
                raise AllocationError(f"claim {_claim_ref(claim)}, subrequest "
                                      f"{sub.get('name', '')}: has capacity requests, but the "
                                      "DRAConsumableCapacity feature is disabled")

    def _validate(self, request: Request, parent: Request | None,
                  key: tuple[int, int, int]) -> RequestData:
        claim = self.claims[key[0]]
        data = RequestData(request, parent)
        for i, selector in enumerate(request.selectors):
            if selector.get("cel") is None:
                raise AllocationError(f"claim {_claim_ref(claim)}, request {request.name}, "
                                      f"selector #{i}: CEL expression empty (unsupported "
                                      "selector type?)")
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(f"claim {_claim_ref(claim)}, request {request.name}: admin "
                                  "access is requested, but the feature is disabled")
        if not request.class_name:
            raise AllocationError(f"claim {_claim_ref(claim)}, request {request.name}: missing "
                                  "device class name (unsupported request type?)")
        claim_class = self.owner.classes.get(request.class_name)
        if claim_class is None:
            # the lister's apierrors.NewNotFound: "%s %q not found"
            raise AllocationError(
                f"claim {_claim_ref(claim)}, request {request.name}: could not retrieve device "
                f"class {request.class_name}: deviceclass.resource.k8s.io "
                f"{go_quote(request.class_name)} not found")
        data.claim_class = claim_class
        if request.mode == EXACT_COUNT:
            data.num_devices = request.count
        elif request.mode == ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {_claim_ref(claim)}, request {request.name}: asks for all "
                        f"devices, but resource pool {pool.id_text} is currently being updated")
                if pool.invalid:
                    raise AllocationError(
                        f"claim {_claim_ref(claim)}, request {request.name}: asks for all "
                        f"devices, but resource pool {pool.id_text} is currently invalid")
                for piece in pool.slices:
                    for device in piece.devices:
                        if self._selectable(key, data, device) and (
                                not self.features.consumable_capacity
                                or self._all_mode_capacity(claim, request, device)):
                            data.all_devices.append(device)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {_claim_ref(claim)}, request {request.name}: "
                                  f"unsupported count mode {request.mode}")
        return data

    # ------------------------------------------------------------------ search

    def _allocate_one(self, claim_index: int, request_index: int, sub_index: int,
                      device_index: int, in_sub: bool,
                      start: tuple[int, int, int] = (0, 0, 0)) -> bool | str:
        """True when everything got allocated; False when not; ``"max"`` when the allocation
        result size limit stopped it (upstream's errAllocationResultMaxSizeExceeded).
        ``start`` (pool, slice, device): where the incubating allocator goes on looking for
        the request's next device, after the one it took last (``startLocation``)."""
        self._spend(1)
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
        if request_index >= len(requests):
            outcome = self._allocate_one(claim_index + 1, 0, 0, 0, False)
            return False if outcome == "max" else outcome
        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]
        if not in_sub and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (claim_index, request_index, sub) in self.request_data:
                outcome = self._allocate_one(claim_index, request_index, sub, device_index,
                                             True)
                if outcome == "max":
                    sub += 1
                    continue
                all_exceeded = False
                if outcome is True:
                    self.request_data[(claim_index, request_index, 0)].selected_sub = sub
                    return True
                sub += 1
            return "max" if all_exceeded else False
        request = data.request
        if request.mode == ALL and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self._allocate_one(claim_index, request_index + 1, 0, 0, False)
        if len(self.results[claim_index]) + data.num_devices - device_index > \
                ALLOCATION_RESULTS_MAX_SIZE:
            return "max"
        if request.mode == ALL:
            device = data.all_devices[device_index]
            undo = self._allocate_device(key, data, device, must=True)
            if undo is None:
                return False
            outcome = self._allocate_one(claim_index, request_index, sub_index,
                                         device_index + 1, in_sub)
            if outcome is not True:
                undo()
            return outcome
        claim = self.claims[claim_index]
        capacity = self.features.consumable_capacity
        allocated = self.owner.allocated
        first_pool, first_slice, first_device = start
        for pool_index in range(first_pool, len(self.pools)):
            pool = self.pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            slices = pool.slices if pool_index != first_pool or not first_slice \
                else pool.slices[first_slice:]
            for slice_offset, piece in enumerate(slices):
                slice_index = slice_offset + (first_slice if pool_index == first_pool else 0)
                devices = piece.devices
                skip = first_device if (pool_index, slice_index) == (first_pool, first_slice) \
                    else 0
                for device_position in range(skip, len(devices)):
                    device = devices[device_position]
                    self._spend(1)
                    if request.admin_access:
                        if claim_index in self.allocating.get(device.id, ()):
                            continue
                    elif device.id in allocated or self.allocating.get(device.id):
                        continue
                    if not self._selectable(key, data, device):
                        continue
                    if capacity and not self._capacity_fits(claim, request, device,
                                                            "checking"):
                        continue
                    undo = self._allocate_device(key, data, device, must=False)
                    if undo is None:
                        continue
                    after = (pool_index, slice_index, device_position + 1) \
                        if self.features.incubating else (0, 0, 0)
                    outcome = self._allocate_one(claim_index, request_index, sub_index,
                                                 device_index + 1, in_sub, after)
                    if outcome is True:
                        return True
                    undo()
                    if outcome == "max":
                        return outcome
        return False

    def _spend(self, steps: int) -> None:
        """Count ``steps`` against the search budget: every ``allocateOne`` call, every device
        the search considers, every parse-tree node a selector's evaluation visits."""
        if self.steps_left is not None:
            self.steps_left -= steps
            if self.steps_left < 0:
                raise TimedOut("timed out trying to allocate devices")

    def _selectable(self, key: tuple[int, int, int], data: RequestData, device: Device) -> bool:
        """``isSelectable``: the class's and the request's selectors (and, for slices that
        select nodes per device, the device's node)."""
        if not self.features.binding_conditions and device.obj.get("bindingConditions"):
            return False
        signature = data.signature
        known = device.selectable.get(signature)
        if known is None:
            known = True
            if data.claim_class is not None:
                class_selectors = (data.claim_class.get("spec") or {}).get("selectors") or []
                known = self._selectors_match(key, device, data.claim_class, class_selectors)
            if known:
                known = self._selectors_match(key, device, None, data.request.selectors)
            device.selectable[signature] = known
        if known and device.slice.per_device_selection:
            try:
                return device_on_node(device.obj, self.node)
            except PoolError as exc:
                raise AllocationError(str(exc)) from exc
        return known

    def _selectors_match(self, key: tuple[int, int, int], device: Device,
                         claim_class: JSON | None, selectors: list[JSON]) -> bool:
        for i, selector in enumerate(selectors):
            expression = str((selector.get("cel") or {}).get("expression") or "")
            try:
                if not device_matches(self.owner.cel, device, expression, self._spend):
                    return False
            except CelCompileError as exc:
                raise AllocationError(f"{self._where(key, claim_class)}: selector #{i}: CEL "
                                      f"compile error: {exc}") from exc
            except CelError as exc:
                if not self.features.cel_errors_name_device:
                    raise AllocationError(f"{self._where(key, claim_class)}: selector #{i}: "
                                          f"CEL runtime error: {exc}") from exc
                raise AllocationError(f"{self._where(key, claim_class)}: selector #{i} on "
                                      f"device {device_id_text(device.id)}: CEL runtime "
                                      f"error: {enhanced_runtime_error(str(exc))}") from exc
        return True

    def _where(self, key: tuple[int, int, int], claim_class: JSON | None) -> str:
        if claim_class is not None:
            return f"class {claim_class['metadata']['name']}"
        return f"claim {_claim_ref(self.claims[key[0]])}"

    def _allocate_device(self, key: tuple[int, int, int], data: RequestData, device: Device,
                         must: bool) -> Any:
        """``allocateDevice``: the device taken for the request, or None; returns the undo."""
        claim_index = key[0]
        request = data.request
        multiple = self.features.consumable_capacity and \
            device.obj.get("allowMultipleAllocations") is True
        if request.admin_access:
            if claim_index in self.allocating.get(device.id, ()):
                return None
        elif device.id in self.owner.allocated or self.allocating.get(device.id):
            return None
        consumes = bool(device.obj.get("consumesCounters"))
        if consumes and not self.features.partitionable_devices:
            return None
        # A further share of a device already shared does not charge its counters again.
        consumes = consumes and not (multiple and self._capacity_in_use(device.id))
        if consumes and not self.counters.reserve(device):
            return None
        if self.features.device_taints and taint_prevents_allocation(device, request):
            if consumes:
                self.counters.release(device)
            return None
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name
        constraints = self.constraints[claim_index]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device):
                for earlier in constraints[:i]:
                    earlier.remove(base, sub, device)
                if consumes:
                    self.counters.release(device)
                if must:
                    raise AllocationError(
                        f"claim {_claim_ref(self.claims[claim_index])}, request {request.name}: "
                        f"cannot add device {device_id_text(device.id)} because a claim "
                        "constraint would not be satisfied")
                return None

        def release() -> None:
            for constraint in constraints:
                constraint.remove(base, sub, device)
            if consumes:
                self.counters.release(device)
        consumed: dict[str, Quantity] | None = None
        if self.features.consumable_capacity:
            claim = self.claims[claim_index]
            try:
                fits = self._capacity_fits(claim, request, device, "rechecking")
            except AllocationError:
                release()
                raise
            if not fits:
                release()
                return None
            if multiple:
                consumed = consumed_by(request.capacity, self._capacities(device),
                                       self.features.capacity_v1_37)
                taking = self.allocating_capacity.setdefault(device.id, {})
                for name, amount in consumed.items():
                    taking[name] = taking.get(name, 0) + amount.nanos
        if not multiple:
            self.allocating.setdefault(device.id, set()).add(claim_index)
        results = self.results[claim_index]
        share_id = None if consumed is None else self._share_id(claim_index, request, device,
                                                                len(results))
        results.append(_Result(device, request.name, data.parent.name if data.parent else "",
                               request.admin_access, request.tolerations, share_id,
                               consumed or None))
        size = len(results) - 1

        def undo() -> None:
            release()
            if not multiple:
                self.allocating[device.id].discard(claim_index)
            elif consumed is not None:
                taking = self.allocating_capacity[device.id]
                for name, amount in consumed.items():
                    taking[name] -= amount.nanos
            del results[size:]
        return undo

    # ------------------------------------------------------------------ capacity

    def _capacities(self, device: Device) -> dict[str, Capacity]:
        if device.capacities is None:
            device.capacities = device_capacities(device.obj)
        return device.capacities  # type: ignore[no-any-return]

    def _capacity_fits(self, claim: JSON, request: Request, device: Device, doing: str) -> bool:
        """``CmpRequestOverCapacity`` with the device's allocated shares and those being
        allocated; v1.37 fails the allocation for a request its range cannot represent
        (``doing``: "checking" in the search, "rechecking" when taking the device)."""
        allocated = self.owner.shares.capacity.get(device.id)
        allocating = self.allocating_capacity.get(device.id)
        if request.capacity is None and allocated is None and not allocating:
            # Nothing asked and nothing taken: what the device's capacities alone allow.
            if device.fits_alone is None:
                device.fits_alone = fits(None, None, self._capacities(device), None, False)
            return device.fits_alone
        try:
            return fits(allocated, request.capacity, self._capacities(device), allocating,
                        self.features.capacity_v1_37)
        except CapacityError as exc:
            raise AllocationError(f"claim {_claim_ref(claim)}, request {request.name}: {doing} "
                                  f"capacity for device {device_id_text(device.id)}: "
                                  f"{exc}") from exc

    def _all_mode_capacity(self, claim: JSON, request: Request, device: Device) -> bool:
        """Whether an ``All`` request can take the device: v1.37 checks its static capacity
        (what is taken is checked when it is allocated), v1.36 what its shares left."""
        if not self.features.capacity_v1_37:
            return fits(self.owner.shares.capacity.get(device.id), request.capacity,
                        self._capacities(device), None, False)
        try:
            return fits(None, request.capacity, self._capacities(device), None, True)
        except CapacityError as exc:
            raise AllocationError(f"claim {_claim_ref(claim)}, request {request.name}: checking "
                                  f"capacity for device {device.name}: {exc}") from exc

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        """``deviceCapacityInUse``: the device has allocated shares (v1.36: with consumed
        capacity) or shares being allocated."""
        shares = self.owner.shares
        if device_id in shares.capacity or device_id in self.allocating_capacity:
            return True
        return self.features.capacity_v1_37 and device_id in shares.devices

    def _share_id(self, claim_index: int, request: Request, device: Device, position: int
                  ) -> str:
        """A share's ID. Upstream draws a random UUID; kaudit derives one from the claim, the
        request, the device and the result's position, so that a replay repeats."""
        claim = self.claims[claim_index]
        uid = str((claim.get("metadata") or {}).get("uid") or _claim_ref(claim))
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"kaudit-share:{uid}/{request.name}/"
                                                  f"{device_id_text(device.id)}/{position}"))

    # ------------------------------------------------------------------ results

    def _result(self, claim_index: int, claim: JSON) -> JSON:
        spec_devices = (claim.get("spec") or {}).get("devices") or {}
        requests = spec_devices.get("requests") or []
        results = []
        for found in self.results[claim_index]:
            entry: JSON = {"request": found.request_name, "driver": found.device.id[0],
                           "pool": found.device.id[1], "device": found.device.id[2]}
            if found.admin_access:
                entry["adminAccess"] = True
            if found.tolerations and self.features.result_tolerations:
                entry["tolerations"] = found.tolerations
            if found.share_id is not None:
                entry["shareID"] = found.share_id
            if found.consumed:
                entry["consumedCapacity"] = {name: str(q) for name, q in found.consumed.items()}
            results.append(entry)
        config: list[JSON] = []
        for request_index in range(len(requests)):
            # v1.34 adds each class config once per request that uses the class, for all
            # requests (naming the requests came in v1.35, PR #134793).
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent is not None:
                data = self.request_data[(claim_index, request_index, data.selected_sub)]
            if data.claim_class is None:
                continue
            for entry in (data.claim_class.get("spec") or {}).get("config") or []:
                config.append({"source": "FromClass",
                               **{k: v for k, v in entry.items() if k != "requests"}})
        for entry in spec_devices.get("config") or []:
            wanted = list(entry.get("requests") or [])
            body = {k: v for k, v in entry.items() if k != "requests"}
            if not wanted:
                config.append({"source": "FromClaim", **body})
                continue
            for request_index, request in enumerate(requests):
                if request.get("name") in wanted:
                    config.append({"source": "FromClaim", "requests": wanted, **body})
                    continue
                data = self.request_data[(claim_index, request_index, 0)]
                if data.parent is None:
                    continue
                subs = request.get("firstAvailable") or []
                chosen = subs[data.selected_sub].get("name") if subs else ""
                if f"{request.get('name')}/{chosen}" in wanted:
                    config.append({"source": "FromClaim", "requests": wanted, **body})
        allocation: JSON = {"devices": {"results": results}}
        if config:
            allocation["devices"]["config"] = config
        selector = self._node_selector(self.results[claim_index],
                                       str((claim.get("metadata") or {}).get("name") or ""))
        if selector is not None:
            allocation["nodeSelector"] = selector
        return allocation

    def _node_selector(self, results: list[_Result], claim_name: str) -> JSON | None:
        """``createNodeSelector``."""
        fields: list[JSON] = []
        expressions: list[JSON] = []
        for found in results:
            piece = found.device.slice
            if piece.per_device_selection:
                node_name = found.device.obj.get("nodeName")
                selector = found.device.obj.get("nodeSelector")
            else:
                node_name = piece.node_name or None
                selector = (piece.obj.get("spec") or {}).get("nodeSelector")
            if node_name:
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
            if selector is not None:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) == 1:
                    _add_new(terms[0].get("matchFields") or [], fields)
                    _add_new(terms[0].get("matchExpressions") or [], expressions)
                elif len(terms) > 1:
                    raise AllocationError(f"create NodeSelector for claim {claim_name}: "
                                          "unsupported ResourceSlice.NodeSelector with "
                                          f"{len(terms)} terms")
        if not fields and not expressions:
            return None
        term: JSON = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def request_supply(allocator: Allocator, claims: list[JSON]) -> list[JSON]:
    """For each request (or subrequest) of ``claims``: how many devices anywhere in the
    cluster its class and selectors match, and how many of those are not allocated (an
    explanation of ``cannot allocate all claims``; kaudit's, not upstream's)."""
    supply = []
    problems = pool_problems(allocator.slices)
    for claim in claims:
        devices_spec = (claim.get("spec") or {}).get("devices") or {}
        for raw in devices_spec.get("requests") or []:
            subs = raw.get("firstAvailable") or []
            requests = [Request.sub(sub) for sub in subs] if subs else [Request.exact(raw)]
            for request in requests:
                name = f"{raw.get('name')}/{request.name}" if subs else request.name
                entry: JSON = {"claim": _claim_ref(claim), "request": name,
                               "deviceClass": request.class_name,
                               "count": request.count if request.mode == EXACT_COUNT else "All"}
                claim_class = allocator.classes.get(request.class_name)
                if claim_class is None:
                    entry["error"] = f"device class {request.class_name} does not exist"
                    supply.append(entry)
                    continue
                selectors = [*((claim_class.get("spec") or {}).get("selectors") or []),
                             *request.selectors]
                try:
                    matching = [d for piece in allocator.slices for d in piece.devices
                                if _matches_all(allocator.cel, d, selectors)]
                except CelError as exc:
                    entry["error"] = str(exc)
                    supply.append(entry)
                    continue
                entry["matching"] = len(matching)
                entry["free"] = sum(1 for d in matching if d.id not in allocator.allocated)
                unusable = sorted({(d.id[0], d.id[1]) for d in matching} & problems.keys())
                if unusable:
                    entry["unusablePools"] = [{"pool": f"{driver}/{pool}",
                                               "problem": problems[(driver, pool)]}
                                              for driver, pool in unusable]
                supply.append(entry)
    return supply


class CelCompileError(CelError):
    """The expression does not compile (the allocator's "CEL compile error")."""


#: What v1.37's ``cel.EnhanceRuntimeError`` adds to a "no such key" error.
OPTIONAL_CHAINING_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or "
                          "guarding the check with has() for optional fields")


def enhanced_runtime_error(message: str) -> str:
    """``EnhanceRuntimeError`` (``cel/errors.go``, v1.37.2)."""
    return message + OPTIONAL_CHAINING_HINT if "no such key:" in message else message


def _unsupported_attribute(device: Device) -> str | None:
    """An attribute without a value of a known kind (``getAttributeValue``'s error)."""
    for name, value in (device.obj.get("attributes") or {}).items():
        if not isinstance(value, dict) or not any(
                value.get(kind) is not None for kind in _VALUE_KINDS):
            return f"attribute {name}: unsupported attribute value"
    return None


def device_matches(cel: SelectorCache, device: Device, expression: str,
                   spend: Callable[[int], None] | None = None) -> bool:
    """Whether ``device`` satisfies one selector expression, from the device's own memo, the
    results for devices alike in content, or an evaluation (whose interpreter steps go to
    ``spend``, the search budget, after it ends). Raises :class:`CelCompileError` or
    :class:`CelError` (a runtime error is kept as a result is: evaluation is deterministic)."""
    known = device.matches.get(expression)
    if known is not None:
        return known
    compiled = cel.get(expression)
    if compiled.error is not None:
        raise CelCompileError(compiled.error)
    if device.unsupported is None:
        device.unsupported = _unsupported_attribute(device) or ""
    if device.unsupported:
        raise CelError(device.unsupported)
    outcome = cel.results.get((expression, device.content))
    if outcome is None:
        budget = CostBudget()
        try:
            outcome = compiled.matches(device.activation(), budget)
        except CelError as exc:
            outcome = CelError(str(exc))  # kept without the interpreter's frames
        cel.results[(expression, device.content)] = outcome
        if spend is not None:
            spend(budget.steps)
    if isinstance(outcome, CelError):
        raise outcome
    device.matches[expression] = outcome
    return outcome


def _matches_all(cel: SelectorCache, device: Device, selectors: list[JSON]) -> bool:
    return all(device_matches(cel, device, str((s.get("cel") or {}).get("expression") or ""))
               for s in selectors)


def _add_new(source: list[JSON], target: list[JSON]) -> None:
    for requirement in source:
        values = set(requirement.get("values") or [])
        if not any(existing.get("key") == requirement.get("key")
                   and existing.get("operator") == requirement.get("operator")
                   and set(existing.get("values") or []) == values for existing in target):
            target.append(requirement)


__all__ = ["ALL", "EXACT_COUNT", "AllocationError", "Allocator", "FailedOnNode", "Features",
           "Request", "Slice", "TimedOut"]
