"""Consumable capacity (v1.36 on): what a request consumes of a shared device, shares of the
same device across claims, and the rules v1.37 changed (``consumable_capacity.go`` and
``allocator_incubating.go`` of k8s.io/dynamic-resource-allocation v0.36.3 and v0.37.2).
Upstream's own allocator table runs the rest (``test_allocator_table.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from kaudit import versions
from kaudit.config import parse_feature_gates
from kaudit.framework.plugin import Handle
from kaudit.model.node import parse_node
from kaudit.plugins.dynamic_resources.allocator import AllocationError, Allocator
from kaudit.plugins.dynamic_resources.capacity import (
    Capacity,
    Policy,
    SharedAllocations,
    add_allocation,
    consumed_amount,
    fits,
    violates_policy,
)
from kaudit.plugins.dynamic_resources.cel_env import SelectorCache
from kaudit.plugins.dynamic_resources.plugin import DynamicResources
from kaudit.plugins.dynamic_resources.pools import Slice
from kaudit.plugins.dynamic_resources.variants import (
    EXPERIMENTAL,
    INCUBATING,
    STABLE,
    upstream_allocator,
)
from kaudit.quantity import parse_quantity
from kaudit.tracegen.dra import claim, claim_spec, device_class, resource_slice

JSON = dict[str, Any]
NODE = parse_node({"kind": "Node", "metadata": {"name": "node-1"}})
GI = 2**30 * 10**9  # one Gi in nano-units


def q(text: str) -> Any:
    return parse_quantity(text)


def memory(policy: JSON | None = None, value: str = "80Gi") -> Capacity:
    return Capacity(q(value), Policy.of(policy))


@pytest.mark.parametrize(("requested", "policy", "consumed"), [
    (None, None, "80Gi"),                                  # nothing asked: all of it
    (None, {"default": "10Gi"}, "10Gi"),                   # ... or the default
    ("7Gi", None, "7Gi"),
    ("7Gi", {"validRange": {"min": "5Gi", "step": "5Gi"}}, "10Gi"),   # next step from min
    ("3Gi", {"validRange": {"min": "5Gi", "step": "5Gi"}}, "5Gi"),    # below min: min
    ("7Gi", {"validRange": {"min": "5Gi"}}, "7Gi"),                  # no step: as asked
    ("9Gi", {"validValues": ["8Gi", "16Gi"]}, "16Gi"),               # next valid value
    ("20Gi", {"validValues": ["8Gi", "16Gi"]}, "20Gi"),              # past them: as asked
])
def test_what_a_request_consumes(requested: str | None, policy: JSON | None,
                                 consumed: str) -> None:
    amount = consumed_amount(None if requested is None else q(requested), memory(policy))
    assert amount.nanos == q(consumed).nanos


def test_the_policy_and_the_capacity_left_decide_whether_a_device_fits() -> None:
    ranged = {"default": "10Gi", "validRange": {"min": "5Gi", "max": "40Gi", "step": "5Gi"}}
    assert violates_policy(q("45Gi"), Policy.of(ranged))          # over max
    assert not violates_policy(q("10Gi"), Policy.of(ranged))
    assert violates_policy(q("9Gi"), Policy.of({"validValues": ["8Gi"]}))
    caps = {"memory": memory(ranged)}
    assert fits(None, {"memory": q("40Gi")}, caps, None)
    assert not fits(None, {"memory": q("41Gi")}, caps, None)       # rounds to 45Gi > max
    assert not fits({"memory": 50 * GI}, {"memory": q("35Gi")}, caps, None)  # 85Gi > 80Gi
    assert fits({"memory": 50 * GI}, {"memory": q("30Gi")}, caps, None)
    assert not fits({"memory": 50 * GI}, {"memory": q("20Gi")}, caps, {"memory": 20 * GI})
    assert not fits(None, {"iops": q("1")}, caps, None)            # a capacity it lacks


def _shared(*devices: JSON) -> Slice:
    return Slice.of(resource_slice("s", "driver-a", "pool-1", list(devices), node="node-1"))


def _device(name: str, memory_value: str = "80Gi") -> JSON:
    return {"name": name, "allowMultipleAllocations": True,
            "capacity": {"memory": {"value": memory_value}}}


def _claim(name: str, mode: str, amount: str, count: int = 1) -> JSON:
    exactly: JSON = {"deviceClassName": "class-a", "allocationMode": mode,
                     "capacity": {"requests": {"memory": amount}}}
    if mode == "ExactCount":
        exactly["count"] = count
    return claim(name, claim_spec({"name": "req-0", "exactly": exactly}))


def _allocator(release: str, *devices: JSON, used: dict[str, int] | None = None) -> Allocator:
    features = DynamicResources({}, Handle(feature_gates=parse_feature_gates(
        "", versions.get(release)))).features
    shares = SharedAllocations(frozenset(), {("driver-a", "pool-1", name): {"memory": amount}
                                            for name, amount in (used or {}).items()})
    return Allocator(features, set(), {"class-a": device_class("class-a")}, [_shared(*devices)],
                     SelectorCache(), shares=shares)


@pytest.mark.parametrize(("release", "devices"), [("v1.36.3", ["d2"]), ("v1.37.2", None)])
def test_all_takes_shared_devices_by_what_is_left_in_v1_36_and_by_capacity_in_v1_37(
        release: str, devices: list[str] | None) -> None:
    """d1's shares took all its memory: v1.36's All leaves d1 out and takes d2; v1.37's takes
    both by their capacity, cannot allocate d1, and allocates nothing."""
    allocator = _allocator(release, _device("d1"), _device("d2"), used={"d1": 80 * GI})
    result = allocator.allocate(NODE, [_claim("c", "All", "10Gi")])
    found = None if result is None else [r["device"] for r in result[0]["devices"]["results"]]
    assert found == devices


def test_shares_of_one_device_add_up_across_the_claims_of_one_allocation() -> None:
    allocator = _allocator("v1.37.2", _device("d1"))
    result = allocator.allocate(NODE, [_claim("a", "ExactCount", "50Gi"),
                                       _claim("b", "ExactCount", "30Gi")])
    assert result is not None
    first, second = (r["devices"]["results"][0] for r in result)
    assert first["device"] == second["device"] == "d1"
    assert first["consumedCapacity"] == {"memory": "50Gi"}
    assert first["shareID"] != second["shareID"]
    assert allocator.allocate(NODE, [_claim("a", "ExactCount", "50Gi"),
                                     _claim("b", "ExactCount", "31Gi")]) is None
    again = _allocator("v1.37.2", _device("d1")).allocate(
        NODE, [_claim("a", "ExactCount", "50Gi"), _claim("b", "ExactCount", "30Gi")])
    assert again == result  # share IDs repeat on a replay


def test_v1_37_refuses_a_request_its_range_cannot_represent() -> None:
    huge = _device("d1", "16Ei")
    huge["capacity"]["memory"]["requestPolicy"] = {"validRange": {"min": "1", "step": "3"}}
    with pytest.raises(AllocationError) as raised:
        _allocator("v1.37.2", huge).allocate(NODE, [_claim("c", "ExactCount", "9.3e18")])
    assert str(raised.value) == (
        'claim default/c, request req-0: checking capacity for device driver-a/pool-1/d1: '
        'capacity "memory": capacity request cannot be represented in the device\'s range '
        "arithmetic: request 9300e15 exceeds MaxInt64")


def test_the_allocated_state_splits_shares_from_whole_devices() -> None:
    dedicated: set[Any] = set()
    shared: set[Any] = set()
    consumed: dict[Any, dict[str, int]] = {}
    allocation = {"devices": {"results": [
        {"driver": "d", "pool": "p", "device": "a"},
        {"driver": "d", "pool": "p", "device": "b", "shareID": "x",
         "consumedCapacity": {"memory": "10Gi"}},
        {"driver": "d", "pool": "p", "device": "b", "shareID": "y",
         "consumedCapacity": {"memory": "5Gi"}},
        {"driver": "d", "pool": "p", "device": "c", "adminAccess": True}]}}
    add_allocation(dedicated, shared, consumed, allocation, consumable=True)
    assert dedicated == {("d", "p", "a")} and shared == {("d", "p", "b")}
    assert consumed == {("d", "p", "b"): {"memory": 15 * GI}}
    whole: set[Any] = set()
    add_allocation(whole, shared, consumed, allocation, consumable=False)
    assert whole == {("d", "p", "a"), ("d", "p", "b")}  # the gate off: shares are whole


@pytest.mark.parametrize(("release", "gates", "variant"), [
    ("v1.34.2", "", EXPERIMENTAL),  # the device status gate (beta, on) needs it
    ("v1.35.4", "", INCUBATING),
    ("v1.35.4", "DRAAdminAccess=false,DRAPrioritizedList=false", STABLE),
    ("v1.36.3", "", INCUBATING),
    ("v1.37.2", "DRAConsumableCapacity=false,DRADeviceBindingConditions=false", STABLE),
    ("v1.37.2", "DRADeviceCompatibilityGroups=true", EXPERIMENTAL),
])
def test_the_allocator_upstream_runs_follows_the_gates(release: str, gates: str,
                                                       variant: str) -> None:
    known = parse_feature_gates(gates, versions.get(release))
    assert upstream_allocator(known.version.release[:2],
                              lambda name: name in known and known.enabled(name)) == variant
