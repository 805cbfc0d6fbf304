"""The structured allocator against upstream's shared allocator test table
(``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
allocator_testing.go``), transcribed into ``tests/data/dra/allocator_cases.json``.

Comparison as upstream's ``RunTestAllocator`` does it: the per-claim results in any order;
results written with upstream's ``allocationResult()`` helper compare devices and node-selector
requirements in any order; an expected error matches as a substring. Cases that need features
kaudit does not model (partitionable devices, device taints, consumable capacity, binding
conditions, list-type attributes, the allocator's statistics) are skipped with their reason.
The cases of partitionable devices and device taints, which kaudit models from v1.36, run as
the allocator of v1.36 on runs them: pools complete over every node's slices, slices with
shared counters left out while the feature is off, tolerations in the results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kaudit.model.node import parse_node
from kaudit.plugins.dynamic_resources.allocator import AllocationError, Allocator, Features
from kaudit.plugins.dynamic_resources.capacity import SharedAllocations
from kaudit.plugins.dynamic_resources.cel_env import SelectorCache
from kaudit.plugins.dynamic_resources.pools import Slice, gather_pools
from kaudit.quantity import parse_quantity

JSON = dict[str, Any]
CASES = json.loads((Path(__file__).parents[2] / "data" / "dra" / "allocator_cases.json")
                   .read_text())["cases"]
#: Cases whose expectations follow a change upstream made after v1.34, which kaudit mirrors.
AFTER_V134 = {
    **dict.fromkeys(("with-class-device-config",
                     "with-class-device-config-with-multiple-request-and-configs",
                     "prioritized-list-class-config"),
                    "expects v1.35's class configs naming their requests (PR #134793); v1.34 "
                    "adds each class config for all requests (tested in test_allocator_v134)"),
    **dict.fromkeys(("allocation-mode-all-with-multi-host-resource-pool",
                     "different-resourceslices-in-pool-can-target-different-nodes"),
                    "expects v1.35's pool completeness counting other nodes' slices (PR "
                    "#134466, not backported); in v1.34 such a pool is incomplete on each node "
                    "(tested in test_allocator_v134)"),
}
DEFAULT_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {
    "name": "node-1", "labels": {"region": "region-1", "planet": "earth"}}}


def _device_result(result: JSON) -> JSON:
    """A device result as the table compares it: any share ID the fixed one, consumed
    capacities by value."""
    result = dict(result)
    if result.get("shareID") is not None:
        result["shareID"] = FIXED_SHARE_ID
    if result.get("consumedCapacity"):
        result["consumedCapacity"] = {name: parse_quantity(str(q)).nanos
                                      for name, q in result["consumedCapacity"].items()}
    return result


def _normal(result: JSON) -> Any:
    """An allocation result with its lists in a canonical order."""
    devices = result.get("devices") or {}
    results = sorted(json.dumps(_device_result(r), sort_keys=True)
                     for r in devices.get("results") or [])
    config = [json.dumps(c, sort_keys=True) for c in devices.get("config") or []]
    selector = result.get("nodeSelector")
    terms = None
    if selector is not None:
        terms = sorted(json.dumps({kind: sorted(json.dumps(
            {**r, "values": sorted(r.get("values") or [])}, sort_keys=True)
            for r in term.get(kind) or []) for kind in ("matchFields", "matchExpressions")},
            sort_keys=True) for term in selector.get("nodeSelectorTerms") or [])
    return results, config, terms


#: The features of skipped cases that kaudit models from v1.36: a case that needs only these
#: runs with the allocator of v1.37 (the incubating one where consumable capacity or binding
#: conditions are on, as upstream picks it).
FROM_V136 = ("partitionable devices", "device taints", "consumable capacity")
#: Cases whose transcribed expectation is the allocator's before v1.37.2 (the table is of an
#: earlier commit): they run with v1.36's capacity rules, v1.37's being checked beside them
#: in test_consumable_capacity.
BEFORE_V1_37 = {"consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-"
                "insufficient": "v1.37.2 expects no allocation: All takes the device whose "
                                "capacity is used up, then cannot allocate it"}
#: A share's ID is random upstream; the table compares results with it replaced by this.
FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


def _from_v1_36(case: JSON) -> bool:
    reason = str(case.get("skip") or "").removeprefix("out of scope: ")
    return bool(reason) and all(part.startswith(FROM_V136) for part in reason.split("; "))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_allocator_case(case: JSON) -> None:
    v1_36 = _from_v1_36(case)
    if case.get("skip") and not v1_36:
        pytest.skip(case["skip"])
    if case["name"] in AFTER_V134 and not v1_36:
        pytest.skip(AFTER_V134[case["name"]])
    flags = case.get("features") or {}
    incubating = v1_36 and bool(flags.get("consumableCapacity")
                                or flags.get("deviceBindingConditions"))
    features = Features(admin_access=bool(flags.get("adminAccess")),
                        prioritized_list=bool(flags.get("prioritizedList")),
                        partitionable_devices=v1_36 and bool(flags.get("partitionableDevices")),
                        device_taints=v1_36 and bool(flags.get("deviceTaints")),
                        result_tolerations=v1_36, shared_counters_need_partitionable=v1_36,
                        consumable_capacity=v1_36 and bool(flags.get("consumableCapacity")),
                        capacity_v1_37=v1_36 and case["name"] not in BEFORE_V1_37,
                        claim_limit_per_request=v1_36,
                        counter_slices_by_node=v1_36,
                        incubating=incubating, refuses_capacity_requests=incubating,
                        distinct_attribute=incubating)
    classes = {c["metadata"]["name"]: c for c in case["classes"]}
    slices = [Slice.of(s) for s in case["slices"]]
    allocated = {tuple(d) for d in case.get("allocatedDevices") or []}
    span = (lambda node: gather_pools(slices, node, features.slice_rules(), slices)) \
        if v1_36 else None
    shares = SharedAllocations(capacity={
        tuple(entry["device"]): {name: parse_quantity(str(q)).nanos
                                 for name, q in entry["consumedCapacity"].items()}
        for entry in case.get("allocatedCapacity") or []})
    allocator = Allocator(features, allocated, classes, slices, SelectorCache(),  # type: ignore[arg-type]
                          pools_for=span, shares=shares)
    node = parse_node(case["node"] or DEFAULT_NODE)
    if case["expectError"]:
        with pytest.raises(AllocationError) as raised:
            allocator.allocate(node, case["claims"])
        assert case["expectError"] in str(raised.value)
        return
    results = allocator.allocate(node, case["claims"])
    if not case["expectResults"]:
        assert not results
        return
    assert results is not None, "no allocation found"
    assert sorted(map(repr, map(_normal, results))) == \
        sorted(map(repr, map(_normal, case["expectResults"])))
