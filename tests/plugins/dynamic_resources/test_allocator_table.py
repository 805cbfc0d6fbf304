"""The structured allocator against upstream's shared allocator test table
(``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
allocator_testing.go``), transcribed into ``tests/data/dra/allocator_cases.json``.

Comparison as upstream's ``RunTestAllocator`` does it: the per-claim results in any order;
results written with upstream's ``allocationResult()`` helper compare devices and node-selector
requirements in any order; an expected error matches as a substring. Cases that need features
kaudit does not model (partitionable devices, device taints, consumable capacity, binding
conditions, list-type attributes, the allocator's statistics) are skipped with their reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kaudit.model.node import parse_node
from kaudit.plugins.dynamic_resources.allocator import AllocationError, Allocator, Features
from kaudit.plugins.dynamic_resources.cel_env import SelectorCache
from kaudit.plugins.dynamic_resources.pools import Slice

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


def _normal(result: JSON) -> Any:
    """An allocation result with its lists in a canonical order."""
    devices = result.get("devices") or {}
    results = sorted(json.dumps(r, sort_keys=True) for r in devices.get("results") or [])
    config = [json.dumps(c, sort_keys=True) for c in devices.get("config") or []]
    selector = result.get("nodeSelector")
    terms = None
    if selector is not None:
        terms = sorted(json.dumps({kind: sorted(json.dumps(
            {**r, "values": sorted(r.get("values") or [])}, sort_keys=True)
            for r in term.get(kind) or []) for kind in ("matchFields", "matchExpressions")},
            sort_keys=True) for term in selector.get("nodeSelectorTerms") or [])
    return results, config, terms


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_allocator_case(case: JSON) -> None:
    if case.get("skip"):
        pytest.skip(case["skip"])
    if case["name"] in AFTER_V134:
        pytest.skip(AFTER_V134[case["name"]])
    flags = case.get("features") or {}
    features = Features(admin_access=bool(flags.get("adminAccess")),
                        prioritized_list=bool(flags.get("prioritizedList")))
    classes = {c["metadata"]["name"]: c for c in case["classes"]}
    slices = [Slice.of(s) for s in case["slices"]]
    allocated = {tuple(d) for d in case.get("allocatedDevices") or []}
    allocator = Allocator(features, allocated, classes, slices, SelectorCache())  # type: ignore[arg-type]
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
