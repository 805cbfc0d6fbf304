"""The column-wise cluster state: resources seen for the first time anywhere, and no nodes."""

from __future__ import annotations

import numpy as np

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.scheduler.build import build_scheduler, load
from kaudit.scheduler.schedule import NO_NODES_AVAILABLE
from kaudit.tracegen.builders import make_node, make_pod

GPU = "nvidia.com/gpu"


def free(cluster: ClusterState, node: str, resource: str) -> int:
    slot, column = cluster.slot_of[node], cluster.column(resource)
    return int(cluster.allocatable[slot, column] - cluster.requested[slot, column])


def test_a_bound_pod_may_request_a_resource_no_node_advertises() -> None:
    """Upstream counts the request on the node (a GPU pod whose device plugin went away, or a
    pod created with nodeName); the node is then short of it."""
    cluster = ClusterState()
    cluster.add_node(make_node("cpu-only").capacity(cpu="4", memory="8Gi").obj())
    bound = make_pod("trainer").node("cpu-only").req(cpu="1").extended(GPU, "2").obj()
    cluster.add_pod(pod_info(cluster, bound))
    assert free(cluster, "cpu-only", GPU) == -2
    assert free(cluster, "cpu-only", "cpu") == 3000
    cluster.remove_pod(pod_info(cluster, bound).uid)
    assert free(cluster, "cpu-only", GPU) == 0 and free(cluster, "cpu-only", "cpu") == 4000


def test_a_pod_on_a_node_not_yet_seen_is_accounted_when_the_node_arrives() -> None:
    cluster = ClusterState()
    cluster.add_pod(pod_info(cluster, make_pod("early").node("late").req(cpu="1")
                             .extended("example.com/fpga", "1").obj()))
    cluster.add_node(make_node("late").capacity(cpu="2", memory="1Gi")
                     .extended("example.com/fpga", "1").obj())
    assert free(cluster, "late", "cpu") == 1000
    assert free(cluster, "late", "example.com/fpga") == 0


def test_a_node_update_that_drops_a_resource_keeps_what_pods_request() -> None:
    cluster = ClusterState()
    gpu_node = make_node("g1").capacity(cpu="8", memory="8Gi").extended(GPU, "4")
    cluster.add_node(gpu_node.obj())
    cluster.add_pod(pod_info(cluster, make_pod("p").node("g1").extended(GPU, "1").obj()))
    cluster.add_node(make_node("g1").capacity(cpu="8", memory="8Gi").obj())  # plugin gone
    assert free(cluster, "g1", GPU) == -1


def test_an_incoming_pod_with_a_new_resource_is_refused_everywhere() -> None:
    config, registry = load()
    scheduler = build_scheduler(config, registry)
    cluster = ClusterState()
    for name in ("a", "b"):
        cluster.add_node(make_node(name).capacity(cpu="4", memory="8Gi").obj())
    pod = pod_info(cluster, make_pod("x").req(cpu="1").extended("example.com/new", "1").obj())
    attempt = scheduler.schedule(cluster, pod, exhaustive=True)
    assert attempt.selected is None and attempt.error is None
    assert attempt.message is not None
    assert attempt.message.startswith("0/2 nodes are available: 2 Insufficient example.com/new.")


def test_a_fork_that_meets_a_new_resource_leaves_the_original_intact() -> None:
    cluster = ClusterState()
    cluster.add_node(make_node("n").capacity(cpu="4", memory="8Gi").obj())
    fork = cluster.fork(cluster.slot_of["n"])
    fork.add_pod(pod_info(fork, make_pod("p").node("n").extended("example.com/new", "1").obj()))
    assert "example.com/new" not in cluster.resources
    assert cluster.requested.shape[1] == len(cluster.resources)
    cluster.add_pod(pod_info(cluster, make_pod("q").node("n").req(cpu="1").obj()))
    assert free(cluster, "n", "cpu") == 3000


def test_no_nodes_is_an_answer_not_an_error() -> None:
    config, registry = load()
    scheduler = build_scheduler(config, registry)
    cluster = ClusterState()
    assert len(cluster.order_array) == 0 and cluster.order_array.dtype == np.int64
    attempt = scheduler.schedule(cluster, pod_info(cluster, make_pod("p").req(cpu="1").obj()))
    assert attempt.selected is None and attempt.error is None
    assert attempt.message == NO_NODES_AVAILABLE == "no nodes available to schedule pods"
    # A node that leaves while its pods remain does not count either.
    cluster.add_node(make_node("n1").capacity(cpu="4", memory="8Gi").obj())
    cluster.add_pod(pod_info(cluster, make_pod("b").node("n1").req(cpu="1").obj()))
    cluster.remove_node("n1")
    again = scheduler.schedule(cluster, pod_info(cluster, make_pod("p").req(cpu="1").obj()))
    assert again.message == NO_NODES_AVAILABLE and again.post_filter is None


def _pods(cluster: ClusterState) -> list:
    pods = []
    for i in range(8):
        builder = make_pod(f"p{i}").node(f"n{i % 3}").req(cpu=f"{100 * (i + 1)}m",
                                                          memory=f"{i + 1}Gi")
        if i % 3 == 0:
            builder.extended("example.com/dongle", "1").host_port(9000 + i)
        pods.append(pod_info(cluster, builder.obj()))
    return pods


def _accounts(cluster: ClusterState) -> tuple:
    return (cluster.requested.tolist(), cluster.non_zero.tolist(), cluster.pod_count.tolist(),
            [sorted(p) for p in cluster.pods_on], [sorted(map(str, p)) for p in cluster.ports_on],
            sorted(cluster.pods))


def test_adding_and_removing_pods_together_accounts_as_one_by_one() -> None:
    one, many = ClusterState(), ClusterState()
    for cluster in (one, many):
        for i in range(3):
            cluster.add_node(make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj())
    pods = _pods(one)
    for pod in pods:
        one.add_pod(pod)
    many.add_pods(pods)
    assert _accounts(one) == _accounts(many)
    for pod in pods[1::2]:
        one.remove_pod(pod.uid)
    many.remove_pods(pods[1::2])
    assert _accounts(one) == _accounts(many)


def test_a_nodes_only_fork_changes_neither_the_original_nor_its_indexes() -> None:
    cluster = ClusterState()
    for i in range(3):
        cluster.add_node(make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj())
    pods = _pods(cluster)
    cluster.add_pods(pods[:3])
    before = _accounts(cluster)
    rows, namespace_pods = dict(cluster.pod_row), dict(cluster.pods_by_namespace["default"])
    forked = cluster.fork([0, 1, 2], nodes_only=True)
    forked.remove_pods(pods[:2])
    forked.add_pods(pods[3:])
    assert _accounts(cluster) == before
    assert cluster.pod_row == rows and cluster.pods_by_namespace["default"] == namespace_pods
    assert sorted(uid for on_node in forked.pods_on for uid in on_node) == \
        sorted(p.uid for p in pods[2:])
    assert forked.pods is cluster.pods  # shared, not kept
    with np.testing.assert_raises(ValueError):
        forked.fork(0)


def test_nodes_holding_lower_priority_pods_are_known_through_every_change() -> None:
    cluster = ClusterState()
    for i in range(3):
        cluster.add_node(make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj())
    low = [pod_info(cluster, make_pod(f"low{i}").node(f"n{i}").priority(1).obj())
           for i in range(2)]
    high = pod_info(cluster, make_pod("high").node("n2").priority(100).obj())
    cluster.add_pods(low)
    cluster.add_pod(high)
    slots = np.asarray([cluster.slot_of[f"n{i}"] for i in range(3)])
    assert cluster.holds_lower_priority(slots, 10).tolist() == [True, True, False]
    assert cluster.holds_lower_priority(slots, 1).tolist() == [False, False, False]
    forked = cluster.fork(slots.tolist(), nodes_only=True)
    forked.remove_pods(low[:1])
    assert forked.holds_lower_priority(slots, 10).tolist() == [False, True, False]
    assert cluster.holds_lower_priority(slots, 10).tolist() == [True, True, False]
    cluster.remove_pod(low[1].uid)
    assert cluster.holds_lower_priority(slots, 1000).tolist() == [True, False, True]


def test_moving_sums_by_pod_or_by_row_matches_removing_the_pods() -> None:
    cluster = ClusterState()
    for i in range(3):
        cluster.add_node(make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj())
    plain = [pod_info(cluster, make_pod(f"q{i}").node(f"n{i % 3}").priority(i % 2)
                      .req(cpu=f"{100 * (i + 1)}m", memory=f"{i + 1}Gi").obj())
             for i in range(7)]
    cluster.add_pods(plain)
    removed = cluster.fork([0, 1, 2], nodes_only=True)
    removed.remove_pods(plain[::2])
    by_pod, by_row = (cluster.fork((), nodes_only=True) for _ in range(2))
    by_pod.move_sums([(cluster.slot_of[p.node_name], p) for p in plain[::2]], -1)
    leaving = plain[::2]
    assert all(p.base_row is not None for p in leaving)
    by_row.move_rows(np.asarray([cluster.slot_of[p.node_name] for p in leaving]),
                     np.asarray([p.base_row for p in leaving]),
                     np.asarray([p.priority for p in leaving]), -1)
    for moved in (by_pod, by_row):
        assert moved.requested.tolist() == removed.requested.tolist()
        assert moved.non_zero.tolist() == removed.non_zero.tolist()
        assert moved.pod_count.tolist() == removed.pod_count.tolist()
        assert {p: c.tolist() for p, c in moved.priority_counts.items()} == \
            {p: c.tolist() for p, c in removed.priority_counts.items()}
        assert moved.pods_on[0] == cluster.pods_on[0]  # the pods stay; only the sums move
    with np.testing.assert_raises(ValueError):
        cluster.move_sums([], 1)


def test_a_pod_without_uid_applied_again_is_accounted_once() -> None:
    """A trace without uids updates a bound pod (the key ``namespace/name`` stands for its
    uid): the new object replaces the old, on the same node or another."""
    from kaudit.cluster.objects import apply_pod
    cluster = ClusterState()
    for name in ("n0", "n1"):
        cluster.add_node(make_node(name).capacity(cpu="4", memory="8Gi").obj())
    obj = make_pod("web").node("n0").req(cpu="1").obj()
    del obj["metadata"]["uid"]
    apply_pod(cluster, obj)
    apply_pod(cluster, obj)
    assert free(cluster, "n0", "cpu") == 3000 and int(cluster.pod_count.sum()) == 1
    obj["spec"]["nodeName"] = "n1"
    apply_pod(cluster, obj)
    assert free(cluster, "n0", "cpu") == 4000 and free(cluster, "n1", "cpu") == 3000
    on_nodes = [list(cluster.pods_on[cluster.slot_of[n]]) for n in ("n0", "n1")]
    assert on_nodes == [[], ["default/web"]]
    columns = cluster.victim_columns
    assert columns is not None
    live = np.flatnonzero(columns.live[:cluster.pod_rows]).tolist()
    assert live == [cluster.pod_row["default/web"]]
    assert [p is None for p in columns.pods] == [True, True, False]


def test_forks_keep_no_victim_columns() -> None:
    cluster = ClusterState()
    cluster.add_node(make_node("n0").capacity(cpu="4", memory="8Gi").obj())
    cluster.add_pod(pod_info(cluster, make_pod("a").node("n0").req(cpu="1").obj()))
    for fork in (cluster.fork(0), cluster.fork(0, nodes_only=True)):
        assert fork.victim_columns is None
        fork.add_pods([pod_info(cluster, make_pod("b").node("n0").req(cpu="1").obj())])
    columns = cluster.victim_columns
    assert columns is not None and len(columns.pods) == 1 and cluster.pod_rows == 1


def test_a_node_removed_and_added_again_with_the_same_labels_has_its_topology_back() -> None:
    """The topology codes read while the node was gone leave it out; when it comes back with
    the labels it had, they must count it again (a node deleted and created anew with its
    name, or a what-if that only pretends it is gone)."""
    config, registry = load()
    scheduler = build_scheduler(config, registry)
    cluster = ClusterState()
    for name, zone in (("a", "zone-a"), ("b", "zone-b")):
        cluster.add_node(make_node(name).capacity(cpu="4", memory="8Gi").zone(zone).obj())
    cluster.add_pod(pod_info(cluster, make_pod("there").labels(app="web").node("a")
                             .req(cpu="1").obj()))
    spread = pod_info(cluster, make_pod("p").labels(app="web").req(cpu="1").spread(
        "topology.kubernetes.io/zone", 1, "DoNotSchedule", {"app": "web"}).obj())
    cluster.remove_node("b")
    assert scheduler.schedule(cluster, spread).selected == "a"  # zone-a is the only zone
    cluster.add_node(make_node("b").capacity(cpu="4", memory="8Gi").zone("zone-b").obj())
    assert int(cluster.topology_codes("topology.kubernetes.io/zone").codes[
        cluster.slot_of["b"]]) >= 0
    # Back: zone-b is empty, and a second pod in zone-a would skew the zones by 2.
    assert scheduler.schedule(cluster, spread).selected == "b"
