"""Issue 33's pathological DRA cases end: the allocator's search budget holds for a slice of
10,000 devices, and a selector past the runtime cost limit fails the pod's attempt, each in a
replay that ends within seconds with the pod pending for upstream's reason.

The selectors the API server would refuse reach a replay from a trace ingested before kaudit
checked the estimate (here: ingest with the estimate switched off); the scheduler itself does not
estimate, as upstream's does not, and relies on the runtime limit."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.model.node import parse_node
from kaudit.plugins.dynamic_resources.allocator import (
    DEFAULT_SEARCH_BUDGET,
    Allocator,
    Features,
    TimedOut,
)
from kaudit.plugins.dynamic_resources.cel_env import SelectorCache
from kaudit.plugins.dynamic_resources.pools import Slice
from kaudit.readers import validate
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.readers.validate import RESOURCE_SLICE_MAX_DEVICES
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.tracegen.dra import (
    claim,
    claim_spec,
    device_class,
    exact_request,
    resource_slice,
    with_claims,
    write_events,
)
from tests.conftest import gates_at
from tests.plugins.dynamic_resources.conftest import (
    NESTED_ALL,
    distinct_devices,
    string_doubling,
)

CpuLimit = Callable[[float], AbstractContextManager[None]]
JSON = dict[str, Any]
PAIR_BY_SERIAL = claim("pair", claim_spec(exact_request("r", "gpu", 2),
                                          match_attribute="drv.example.com/serial"))


def test_the_search_budget_holds_for_a_slice_of_ten_thousand_devices(
        cpu_limit: CpuLimit) -> None:
    """Two devices sharing a serial among 10,000 that all differ: each first choice scans
    every other device, 10^8 checks; the budget counts each, so the search ends."""
    node = parse_node({"kind": "Node", "metadata": {"name": "n1"}})
    big = resource_slice("s", "drv.example.com", "p", distinct_devices(10_000), node="n1")
    allocator = Allocator(Features(), set(), {"gpu": device_class("gpu")}, [Slice.of(big)],
                          SelectorCache(), search_budget=DEFAULT_SEARCH_BUDGET)
    with cpu_limit(8), pytest.raises(TimedOut, match=r"^timed out trying to allocate devices$"):
        allocator.allocate(node, [PAIR_BY_SERIAL])


def _trace(tmp_path: Path, devices: list[JSON], claim_object: JSON, nodes: int) -> Path:
    """``nodes`` nodes, each with a pool of ``devices`` (in slices of at most the API server's
    128 devices), and a pod using ``claim_object``."""
    node_objects = [make_node(f"n{i}").capacity(cpu="8", memory="16Gi", pods="10").obj()
                    for i in range(nodes)]
    parts = [devices[start:start + RESOURCE_SLICE_MAX_DEVICES]
             for start in range(0, len(devices), RESOURCE_SLICE_MAX_DEVICES)]
    slices = [resource_slice(f"s{i}-{j}", "drv.example.com", f"p{i}", part, node=f"n{i}",
                             count=len(parts))
              for i in range(nodes) for j, part in enumerate(parts)]
    pod = with_claims(make_pod("p").req(cpu="1").obj(), gpu=("claim", "pair"))
    path = tmp_path / "trace.jsonl"
    write_events(path, [(0.0, "ADDED", device_class("gpu", 'device.driver == "drv.example.com"')),
                        *[(0.0, "ADDED", obj) for obj in node_objects + slices],
                        (1.0, "ADDED", claim_object), (2.0, "ADDED", pod)])
    return path


def _replay_and_explain(engine: Engine, trace: Path, run_kaudit: Callable[..., Result],
                        cpu_limit: CpuLimit, seconds: float, release: str | None = None) -> str:
    ingest_trace(engine, [TraceInput(trace)], name="t")
    config, registry = load(None, None if release is None else gates_at(release))
    with cpu_limit(seconds):
        summary = replay_trace(engine, get_trace(engine, "t"), config, registry, name="r")[1]
    assert summary.pods_scheduled == 0
    result = run_kaudit("explain", "r", "default/p")
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("release", "message"), [
    ("v1.34.2", "0/1 nodes are available: 1 timed out trying to allocate devices."),
    # From v1.36 the timeout is an Error of the filter, not the node's verdict.
    ("v1.37.2", 'running "DynamicResources" filter plugin: node n0: timed out trying to '
                "allocate devices"),
])
def test_a_replay_with_a_pool_too_large_to_search_ends_with_the_filter_timeout(
        engine: Engine, tmp_path: Path, run_kaudit: Callable[..., Result],
        cpu_limit: CpuLimit, release: str, message: str) -> None:
    trace = _trace(tmp_path, distinct_devices(10_000), PAIR_BY_SERIAL, nodes=1)
    output = _replay_and_explain(engine, trace, run_kaudit, cpu_limit, 10, release)
    assert message in output


@pytest.mark.parametrize(("release", "where"), [
    ("v1.34.2", "selector #0"),
    # v1.37 names the device (the first of the first node's pool).
    ("v1.37.2", "selector #0 on device drv.example.com/p0/d0")])
@pytest.mark.parametrize("selector", [NESTED_ALL, string_doubling()],
                         ids=["nested-all", "string-doubling"])
def test_a_replay_with_a_selector_past_the_cost_limit_ends_with_upstreams_error(
        selector: str, release: str, where: str, engine: Engine, tmp_path: Path,
        run_kaudit: Callable[..., Result], cpu_limit: CpuLimit,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate, "estimated_cost", lambda expression: None)
    costly = claim("pair", claim_spec(exact_request("r", "gpu", 1, selector)))
    devices = [{"name": f"d{i}", "attributes": {"index": {"int": i}}} for i in range(4)]
    output = _replay_and_explain(engine, _trace(tmp_path, devices, costly, nodes=3),
                                 run_kaudit, cpu_limit, 10, release)
    assert (f'running "DynamicResources" filter plugin: claim default/pair: {where}: CEL '
            "runtime error: operation cancelled: actual cost limit exceeded") in output
