"""What a pod on a node adds to the node's non-zero requests (``calculateResource`` with
``getNonMissingContainerRequests``, ``pkg/scheduler/framework/types.go`` at v1.34.2 and
v1.37.2): the scoring defaults (100m cpu, 200Mi memory) per container that lacks them, unless
the pod has pod-level requests; then only the defaults of what the pod's requests lack. Scoring
an incoming pod (``calculatePodResourceRequest`` in ``noderesources/resource_allocation.go``)
applies them to every container whatever its pod-level requests."""

from __future__ import annotations

from typing import Any

import pytest

from kaudit.cluster.state import ClusterState
from kaudit.model.pod import parse_pod
from kaudit.tracegen.builders import make_node

MI = 1024 * 1024


def pod(containers: list[dict[str, Any]], pod_level: dict[str, str] | None = None,
        node: str = "n") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "nodeName": node}
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u"}, "spec": spec}


def container(name: str, **requests: str) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": requests}}


@pytest.mark.parametrize(("obj", "scored", "on_node"), [
    # no pod-level requests: both defaults per container, alike for scoring and the node
    (pod([container("a", memory="1Gi"), container("b")]),
     (200, 1024 * MI + 200 * MI), (200, 1024 * MI + 200 * MI)),
    # pod-level cpu; memory is requested by one container: the node counts no default
    (pod([container("a", memory="1Gi"), container("b")], {"cpu": "2"}),
     (2000, 1024 * MI + 200 * MI), (2000, 1024 * MI)),
    # pod-level cpu, no memory anywhere: the memory default for each container
    (pod([container("a"), container("b")], {"cpu": "2"}),
     (2000, 400 * MI), (2000, 400 * MI)),
    # pod-level cpu and memory: the pod's requests
    (pod([container("a"), container("b", cpu="100m")], {"cpu": "1", "memory": "1Gi"}),
     (1000, 1024 * MI), (1000, 1024 * MI)),
    # pod-level memory; one container asks 0 cpu, which counts as asked
    (pod([container("a", cpu="0"), container("b")], {"memory": "1Gi"}),
     (100, 1024 * MI), (0, 1024 * MI)),
])
def test_a_pod_on_a_node_counts_the_defaults_of_what_it_lacks(
        obj: dict[str, Any], scored: tuple[int, int], on_node: tuple[int, int]) -> None:
    info = parse_pod(obj)
    assert (info.non_zero_cpu, info.non_zero_memory) == scored
    assert (info.node_non_zero_cpu, info.node_non_zero_memory) == on_node
    cluster = ClusterState()
    cluster.add_node(make_node("n").capacity(cpu="8", memory="32Gi").obj())
    cluster.add_pod(info)
    assert tuple(cluster.non_zero[cluster.slot_of["n"]]) == on_node
    assert info.base_row is not None and info.base_row[3:] == on_node
    cluster.remove_pod(info.uid)
    assert tuple(cluster.non_zero[cluster.slot_of["n"]]) == (0, 0)
