"""Consumable capacity: devices shared by several claims, each taking part of their capacity.

Mirrors ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/
consumable_capacity.go`` (Kubernetes v1.37.2, and v1.36.3 where said), the incubating
allocator upstream runs while ``DRAConsumableCapacity`` is on (beta, on by default from v1.36):

* what a request consumes of each capacity of a device (``calculateConsumedCapacity``): the
  request's amount, rounded up to the capacity's ``requestPolicy`` (the next step of its
  ``validRange`` from ``min``, in whole units, or the next of its ``validValues``); a capacity
  the request does not name consumes the policy's ``default``, else all of it;
* whether the device can take the request (``CmpRequestOverCapacity``): every capacity the
  request names must exist on the device; each amount must keep the policy (at most ``max``,
  a whole number of steps from ``min``, one of ``validValues``; the ``default`` always does),
  and what the device's allocated shares, the shares being allocated and this request consume
  together must stay within the capacity's ``value``.

``DRAFractionalCapacityRange`` (beta and off in v1.37; kaudit refuses to turn it on) would use
thousandths instead of whole units; kaudit has only the whole-unit arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaudit.gostrings import go_quote
from kaudit.quantity import Quantity, QuantityError, parse_quantity

JSON = dict[str, Any]
NANO = 10**9
MAX_INT64 = 2**63 - 1


class CapacityError(Exception):
    """A request the device's range arithmetic cannot represent (v1.37: the allocation fails)."""


#: ``errCapacityRequestNotRepresentable``.
NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"


def _quantity(value: Any) -> Quantity | None:
    if value is None:
        return None
    try:
        return parse_quantity(str(value))
    except QuantityError:
        return None


@dataclass(frozen=True)
class Policy:
    """A capacity's ``requestPolicy``."""

    default: Quantity | None = None
    minimum: Quantity | None = None
    maximum: Quantity | None = None
    step: Quantity | None = None
    #: ``validRange`` is set (with or without ``min``).
    has_range: bool = False
    valid_values: tuple[Quantity, ...] | None = None

    @classmethod
    def of(cls, policy: Any) -> Policy | None:
        if not isinstance(policy, dict):
            return None
        valid_range = policy.get("validRange")
        values = policy.get("validValues")
        return cls(default=_quantity(policy.get("default")),
                   minimum=_quantity((valid_range or {}).get("min")),
                   maximum=_quantity((valid_range or {}).get("max")),
                   step=_quantity((valid_range or {}).get("step")),
                   has_range=isinstance(valid_range, dict),
                   valid_values=None if values is None else tuple(
                       q for q in (_quantity(v) for v in values) if q is not None))


@dataclass(frozen=True)
class Capacity:
    """One capacity of a device: its ``value`` and ``requestPolicy``."""

    value: Quantity
    policy: Policy | None


def device_capacities(device: JSON) -> dict[str, Capacity]:
    """A device's ``capacity`` map, parsed (entries without a readable value are left out;
    ingest refuses them)."""
    found: dict[str, Capacity] = {}
    for name, entry in (device.get("capacity") or {}).items():
        if not isinstance(entry, dict):
            continue
        value = _quantity(entry.get("value"))
        if value is not None:
            found[str(name)] = Capacity(value, Policy.of(entry.get("requestPolicy")))
    return found


def request_capacities(request: JSON) -> dict[str, Quantity] | None:
    """A request's (or subrequest's) ``capacity.requests``; None when it has none."""
    capacity = request.get("capacity")
    if not isinstance(capacity, dict) or capacity.get("requests") is None:
        return None
    return {str(name): q for name, value in (capacity.get("requests") or {}).items()
            if (q := _quantity(value)) is not None}


def _whole(quantity: Quantity) -> int:
    """``Quantity.Value()``: whole units, rounded away from zero."""
    return quantity.value()


def _round_up_range(requested: Quantity, policy: Policy, check_range: bool) -> Quantity:
    assert policy.minimum is not None
    if requested.nanos < policy.minimum.nanos:
        return policy.minimum
    if policy.step is None:
        return requested
    if check_range and requested.nanos > MAX_INT64 * NANO:
        raise CapacityError(f"{NOT_REPRESENTABLE}: request {requested} exceeds MaxInt64")
    step, minimum = _whole(policy.step), _whole(policy.minimum)
    added = _whole(requested) - minimum
    steps = added // step + (1 if added % step else 0)
    if check_range and minimum >= 0 and steps > (MAX_INT64 - minimum) // step:
        raise CapacityError(f"{NOT_REPRESENTABLE}: rounding request {requested} up to the next "
                            "step passes MaxInt64")
    return Quantity((minimum + step * steps) * NANO, policy.step.format)


def consumed_amount(requested: Quantity | None, capacity: Capacity,
                    check_range: bool = True) -> Quantity:
    """``calculateConsumedCapacity``."""
    policy = capacity.policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    if policy.has_range and policy.minimum is not None:
        return _round_up_range(requested, policy, check_range)
    if policy.valid_values is not None:
        return next((v for v in policy.valid_values if requested.nanos <= v.nanos), requested)
    return requested


def violates_policy(amount: Quantity, policy: Policy | None) -> bool:
    """``violatesPolicy``."""
    if policy is None:
        return False
    if policy.default is not None and amount.nanos == policy.default.nanos:
        return False
    if policy.has_range:
        if policy.maximum is not None and amount.nanos > policy.maximum.nanos:
            return True
        if policy.step is not None and policy.minimum is not None:
            step = _whole(policy.step)
            return step != 0 and (_whole(amount) - _whole(policy.minimum)) % step != 0
        return False
    if policy.valid_values:
        return all(amount.nanos != v.nanos for v in policy.valid_values)
    return False


ConsumedCapacity = dict[str, int]  # capacity name -> nano-units


def fits(allocated: Mapping[str, int] | None, requests: Mapping[str, Quantity] | None,
         capacities: Mapping[str, Capacity], allocating: Mapping[str, int] | None,
         check_range: bool = True) -> bool:
    """``CmpRequestOverCapacity``: whether the device can take the request on top of what its
    allocated shares (``allocated``) and the shares being allocated (``allocating``) consume.
    Raises :class:`CapacityError` (v1.37) for a request its range cannot represent."""
    if requests and any(name not in capacities for name in requests):
        return False
    amounts: dict[str, Quantity] = {}
    for name, capacity in capacities.items():
        try:
            amounts[name] = consumed_amount((requests or {}).get(name), capacity, check_range)
        except CapacityError as exc:
            raise CapacityError(f"capacity {go_quote(name)}: {exc}") from exc
        if check_range and amounts[name].nanos < 0:
            raise CapacityError(f"capacity {go_quote(name)}: capacity value is negative")
    for name, capacity in capacities.items():
        amount = amounts[name]
        if violates_policy(amount, capacity.policy):
            return False
        total = (allocated or {}).get(name, 0) + amount.nanos + (allocating or {}).get(name, 0)
        if total > capacity.value.nanos:
            return False
    return True


def consumed_by(requests: Mapping[str, Quantity] | None, capacities: Mapping[str, Capacity],
                check_range: bool = True) -> dict[str, Quantity]:
    """``GetConsumedCapacityFromRequest``: what one share takes of every capacity."""
    return {name: consumed_amount((requests or {}).get(name), capacity, check_range)
            for name, capacity in capacities.items()}


DeviceKey = tuple[str, str, str]


@dataclass(frozen=True)
class SharedAllocations:
    """The allocated shares of devices that allow several allocations (``AllocatedState``'s
    ``AllocatedSharedDeviceIDs`` and ``AggregatedCapacity``): which devices have shares, and
    what their shares consume together, per capacity in nano-units."""

    devices: frozenset[DeviceKey] = frozenset()
    capacity: Mapping[DeviceKey, Mapping[str, int]] = field(default_factory=dict)


def add_allocation(dedicated: set[DeviceKey], shared: set[DeviceKey],
                   consumed: dict[DeviceKey, dict[str, int]], allocation: JSON | None,
                   consumable: bool) -> None:
    """``foreachAllocatedDevice`` of one claim's allocation: results for admin access count
    for nothing; with consumable capacity, a result with a ``shareID`` is a share (what it
    consumes adds up per device), any other result allocates its device whole."""
    if allocation is None:
        return
    for result in (allocation.get("devices") or {}).get("results") or []:
        if result.get("adminAccess"):
            continue  # admin access does not count as allocated (allocateddevices.go)
        device = (str(result.get("driver") or ""), str(result.get("pool") or ""),
                  str(result.get("device") or ""))
        if consumable and result.get("shareID") is not None:
            shared.add(device)
            taken = result.get("consumedCapacity")
            if isinstance(taken, dict):
                total = consumed.setdefault(device, {})
                for name, value in taken.items():
                    quantity = _quantity(value)
                    if quantity is not None:
                        total[str(name)] = total.get(str(name), 0) + quantity.nanos
            continue
        dedicated.add(device)
