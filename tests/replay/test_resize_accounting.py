"""A replay accounts a resized pod on its node as the release's scheduler does: the largest of
its spec's, allocated and actuated requests (``calculateResource`` in
``pkg/scheduler/framework/types.go``; the formulas are checked against upstream's own code in
``tests/model/test_resize_requests.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace


def _shrinking(cpu_allocated: str) -> dict[str, Any]:
    """A pod on n whose spec was resized down to 1 CPU while its container still holds
    ``cpu_allocated`` (the kubelet has not actuated the resize yet)."""
    obj = make_pod("resized").req(cpu="1").node("n").obj()
    name = obj["spec"]["containers"][0]["name"]
    obj["status"] = {"phase": "Running", "containerStatuses": [{
        "name": name, "allocatedResources": {"cpu": cpu_allocated},
        "resources": {"requests": {"cpu": cpu_allocated}}}]}
    return obj


@pytest.mark.parametrize("release", ["v1.34.2", "v1.37.2"])
def test_a_pod_resized_down_holds_its_allocation_until_actuated(
        run_kaudit: Callable[..., Result], tmp_path: Path, release: str) -> None:
    trace = write_trace(tmp_path / "resize.jsonl",
                        (0, "ADDED", make_node("n").capacity(cpu="4", memory="8Gi").obj()),
                        (1, "ADDED", _shrinking("3")),
                        (2, "ADDED", make_pod("newcomer").req(cpu="2").obj()))
    assert run_kaudit("ingest", str(trace), "--name", "resize").exit_code == 0
    replayed = run_kaudit("replay", "resize", "--json", "--kubernetes-version", release)
    assert replayed.exit_code == 0, replayed.output
    run = json.loads(replayed.output)
    told = json.loads(run_kaudit("explain", run["name"], "default/newcomer", "--json").output)
    assert told["boundNode"] is None
    assert told["attempts"][0]["message"].startswith(
        "0/1 nodes are available: 1 Insufficient cpu.")


def test_an_actuated_resize_frees_the_node(run_kaudit: Callable[..., Result],
                                          tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "resized.jsonl",
                        (0, "ADDED", make_node("n").capacity(cpu="4", memory="8Gi").obj()),
                        (1, "ADDED", _shrinking("1")),
                        (2, "ADDED", make_pod("newcomer").req(cpu="2").obj()))
    assert run_kaudit("ingest", str(trace), "--name", "resized").exit_code == 0
    replayed = run_kaudit("replay", "resized", "--json")
    run = json.loads(replayed.output)
    told = json.loads(run_kaudit("explain", run["name"], "default/newcomer", "--json").output)
    assert told["boundNode"] == "n"
