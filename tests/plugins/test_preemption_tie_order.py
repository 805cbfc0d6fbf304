"""Which of equally important potential victims preemption reprieves: the node's pod order.

Upstream's ``SelectVictimsOnNode`` (``pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption.go``) collects a node's potential victims in its ``NodeInfo.Pods`` order
and sorts them with ``sort.Slice`` (an insertion sort, stable, up to 12 pods), so pods of the
same priority and start time are reprieved in that order. ``NodeInfo.RemovePod`` moves the
node's last pod into the removed pod's place, and the scheduler cache updates a pod by
removing it and adding it again; a scheduler that starts lists the pods in the API server's
key order (namespace/name).
"""

from __future__ import annotations

from typing import Any

from kaudit.cluster.objects import apply_pod, cluster_from_objects, pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.ports import HandlePorts
from kaudit.model.pod import PodInfo
from kaudit.plugins.default_preemption import DefaultPreemption
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod

START = "2026-01-05T08:00:00Z"


def _running(name: str, cpu: str = "1") -> dict[str, Any]:
    obj = make_pod(name).node("n0").req(cpu=cpu).priority(0).obj()
    obj["status"] = {"phase": "Running", "startTime": START}
    return obj


def _preemption(cluster: ClusterState, pod: PodInfo) -> tuple[DefaultPreemption, CycleState]:
    config, registry = load()
    scheduler = build_scheduler(config, registry, seed=3,
                                ports=HandlePorts(nominator=lambda node: []))
    framework = scheduler.framework_for(pod)
    assert framework is not None
    plugin = framework.instances["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    state = CycleState()
    framework.run_pre_filter(state, pod, cluster)
    return plugin, state


def _victims_both_ways(cluster: ClusterState, pod: PodInfo) -> list[list[str]]:
    """The node's victims from the node-by-node and the block-at-once dry runs."""
    plugin, state = _preemption(cluster, pod)
    found = []
    for victims, _, status, _ in (
            plugin.select_victims_on_node(state.clone(), pod, cluster, 0, []),
            plugin.select_victims_on_nodes(state, pod, cluster, [0], [])[0]):
        assert status.ok
        found.append(sorted(v.name for v in victims))
    return found


def test_an_updated_pod_leaves_its_place_to_the_node_s_last_pod() -> None:
    """a, b, c, d joined in that order; a is updated: upstream's pods are then d, b, c, a
    (not b, c, d, a). The preemptor needs two of the four equal cpus: d and b are
    reprieved, c and a evicted."""
    cluster = ClusterState()
    cluster.add_node(make_node("n0").capacity(cpu="4", memory="16Gi", pods="10").obj())
    objects = {name: _running(name) for name in "abcd"}
    for obj in objects.values():
        apply_pod(cluster, obj)
    apply_pod(cluster, {**objects["a"], "metadata": {**objects["a"]["metadata"],
                                                     "labels": {"updated": "yes"}}})
    assert [p.name for p in cluster.pods_on[0].values()] == ["d", "b", "c", "a"]
    preemptor = pod_info(cluster, make_pod("high").req(cpu="2").priority(100).obj())
    assert _victims_both_ways(cluster, preemptor) == [["a", "c"], ["a", "c"]]


def test_a_deleted_pod_leaves_its_place_to_the_node_s_last_pod() -> None:
    """a, b, c, d joined in that order; b is deleted, then e joins: upstream's pods are
    a, d, c, e (not a, c, d, e). The preemptor needs 2 of the 4 cpus: a and d are
    reprieved. Once a is deleted too: e, d, c."""
    cluster = ClusterState()
    cluster.add_node(make_node("n0").capacity(cpu="4", memory="16Gi", pods="10").obj())
    objects = {name: _running(name) for name in "abcde"}
    for name in "abcd":
        apply_pod(cluster, objects[name])
    apply_pod(cluster, objects["b"], deleted=True)
    apply_pod(cluster, objects["e"])
    preemptor = pod_info(cluster, make_pod("high").req(cpu="2").priority(100).obj())
    assert [p.name for p in cluster.pods_on[0].values()] == ["a", "d", "c", "e"]
    assert _victims_both_ways(cluster, preemptor) == [["c", "e"], ["c", "e"]]
    apply_pod(cluster, objects["a"], deleted=True)
    assert [p.name for p in cluster.pods_on[0].values()] == ["e", "d", "c"]
    assert _victims_both_ways(cluster, preemptor) == [["c"], ["c"]]


def test_a_listed_state_orders_each_node_s_pods_by_namespace_and_name() -> None:
    """Pods listed z, y, x (as a trace or a file may hold them): a scheduler starting on that
    state lists them x, y, z and reprieves x first (then neither y nor z fits back)."""
    objects = [make_node("n0").capacity(cpu="3", memory="16Gi", pods="10").obj(),
               _running("z", cpu="2"), _running("y"), _running("x")]
    cluster, _ = cluster_from_objects(objects)
    assert [p.name for p in cluster.pods_on[0].values()] == ["x", "y", "z"]
    preemptor = pod_info(cluster, make_pod("high").req(cpu="2").priority(100).obj())
    assert _victims_both_ways(cluster, preemptor) == [["y", "z"], ["y", "z"]]
