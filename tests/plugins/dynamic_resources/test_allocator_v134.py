"""Where upstream's allocator table expects what changed after v1.34, the v1.34 behaviour
kaudit mirrors (``structured/internal/stable``, v1.34): class configs for all requests, and
pools complete only when the node reaches all their slices."""

from __future__ import annotations

from typing import Any

import pytest

from kaudit.model.node import parse_node
from kaudit.plugins.dynamic_resources.allocator import Allocator, Features, TimedOut
from kaudit.plugins.dynamic_resources.cel_env import SelectorCache
from kaudit.plugins.dynamic_resources.pools import Slice
from kaudit.tracegen.dra import claim, claim_spec, device_class, exact_request, resource_slice

JSON = dict[str, Any]
NODE = parse_node({"kind": "Node", "metadata": {"name": "node-1"}})
OPAQUE = {"opaque": {"driver": "driver-a", "parameters": {"x": 1}}}


def _allocator(*slices: JSON, classes: list[JSON] | None = None) -> Allocator:
    classes = classes or [device_class("class-a")]
    return Allocator(Features(), set(), {c["metadata"]["name"]: c for c in classes},
                     [Slice.of(s) for s in slices], SelectorCache())


def test_a_class_config_is_added_for_every_request_of_the_class_for_all_requests() -> None:
    with_config = device_class("class-a")
    with_config["spec"]["config"] = [OPAQUE]
    allocator = _allocator(resource_slice("s", "driver-a", "pool-1",
                                          [{"name": "d1"}, {"name": "d2"}], node="node-1"),
                           classes=[with_config])
    two = claim("c", claim_spec(exact_request("r1", "class-a"), exact_request("r2", "class-a")))
    claim_config = {"requests": ["r2"], "opaque": {"driver": "driver-a", "parameters": {}}}
    two["spec"]["devices"]["config"] = [claim_config]
    result = allocator.allocate(NODE, [two])
    assert result is not None
    assert result[0]["devices"]["config"] == [
        {"source": "FromClass", **OPAQUE}, {"source": "FromClass", **OPAQUE},
        {"source": "FromClaim", **claim_config}]


def test_a_pool_spread_over_nodes_is_incomplete_on_each() -> None:
    here = resource_slice("s1", "driver-a", "pool-1", [{"name": "d1"}], node="node-1", count=2)
    there = resource_slice("s2", "driver-a", "pool-1", [{"name": "d2"}], node="node-2", count=2)
    allocator = _allocator(here, there)
    assert allocator.allocate(NODE, [claim("c", claim_spec(exact_request("r", "class-a")))]) \
        is None
    # Two slices the node reaches make the pool complete.
    also_here = resource_slice("s3", "driver-a", "pool-1", [{"name": "d3"}], node="node-1",
                               count=2)
    result = _allocator(here, also_here).allocate(
        NODE, [claim("c", claim_spec(exact_request("r", "class-a")))])
    assert result is not None and result[0]["devices"]["results"][0]["device"] == "d1"


def test_a_search_past_its_budget_times_out_as_upstreams_filter_timeout() -> None:
    """No 13 of 24 devices share a root: the search tries combinations until its budget (the
    filter timeout) ends it, with upstream's message."""
    devices = [{"name": f"d{i}", "attributes": {"root": {"string": f"r{i % 2}"}}}
               for i in range(24)]
    allocator = Allocator(Features(), set(), {"class-a": device_class("class-a")},
                          [Slice.of(resource_slice("s", "driver-a", "p", devices, node="node-1"))],
                          SelectorCache(), search_budget=20_000)
    wanted = claim("c", claim_spec(exact_request("r", "class-a", 13),
                                   match_attribute="driver-a/root"))
    with pytest.raises(TimedOut, match="timed out trying to allocate devices"):
        allocator.allocate(NODE, [wanted])
    fits = claim("c", claim_spec(exact_request("r", "class-a", 12),
                                 match_attribute="driver-a/root"))
    assert allocator.allocate(NODE, [fits]) is not None


def test_the_supply_of_a_request_names_pools_no_node_can_allocate_from() -> None:
    from kaudit.plugins.dynamic_resources.allocator import request_supply
    here = resource_slice("s1", "driver-a", "spread", [{"name": "d1"}], node="node-1", count=2)
    there = resource_slice("s2", "driver-a", "spread", [{"name": "d2"}], node="node-2", count=2)
    half = resource_slice("s3", "driver-a", "half", [{"name": "d3"}], node="node-1", count=2)
    fine = resource_slice("s4", "driver-a", "fine", [{"name": "d4"}], node="node-1")
    supply = request_supply(_allocator(here, there, half, fine),
                            [claim("c", claim_spec(exact_request("r", "class-a")))])
    assert supply[0]["matching"] == 4 and supply[0]["free"] == 4
    assert supply[0]["unusablePools"] == [
        {"pool": "driver-a/half", "problem": "incomplete: 1 of 2 slices published"},
        {"pool": "driver-a/spread", "problem": "its slices are published for different nodes, "
         "so no node reaches all of them (incomplete on each node in v1.34)"}]
