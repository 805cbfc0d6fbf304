"""The node tree's order, each node's pod order and the interned topology codes survive a
what-if that moves things (``ClusterState.keeping_order``)."""

from __future__ import annotations

import numpy as np

from kaudit.cluster.objects import apply_object
from kaudit.cluster.state import ClusterState
from kaudit.tracegen.builders import make_node, make_pod


def _cluster(nodes: tuple[str, ...] = ("n1", "n2", "n3")) -> ClusterState:
    cluster = ClusterState()
    for i, name in enumerate(nodes):
        apply_object(cluster, make_node(name).capacity(cpu="4", memory="8Gi")
                     .zone(f"z{i % 2}").obj())
    return cluster


def _names(cluster: ClusterState) -> list[str]:
    return [cluster.slot_names[slot] for slot in cluster.order]


def test_a_what_if_that_removes_and_adds_back_leaves_both_orders_as_they_were() -> None:
    cluster = _cluster()
    pods = [make_pod(name).req(cpu="1").node("n1").obj() for name in ("a", "b", "c")]
    for pod in pods:
        apply_object(cluster, pod)
    node_order = _names(cluster)
    pod_order = list(cluster.pods_on[cluster.slot_of["n1"]])

    with cluster.keeping_order():
        # Pretend a (the first pod) and n1 (the first node) were not there, then put them
        # back: each goes to the end of its list, as in upstream's NodeInfo and NodeTree.
        apply_object(cluster, pods[0], deleted=True)
        apply_object(cluster, pods[0])
        cluster.remove_node("n1")
        apply_object(cluster, make_node("n1").capacity(cpu="4", memory="8Gi").zone("z0").obj())
        assert list(cluster.pods_on[cluster.slot_of["n1"]]) != pod_order
        assert _names(cluster) != node_order

    assert list(cluster.pods_on[cluster.slot_of["n1"]]) == pod_order
    assert _names(cluster) == node_order


def test_restoring_a_nodes_pod_order_restores_the_places_preemption_reads() -> None:
    # Preemption's dry run orders equally important victims by their place among the node's
    # pods (the victim columns), not by the dictionary: both must follow the restore.
    cluster = _cluster(("n1",))
    pods = [make_pod(name).req(cpu="1").node("n1").obj() for name in ("a", "b", "c", "d")]
    for pod in pods:
        apply_object(cluster, pod)
    columns = cluster.victim_columns
    assert columns is not None

    def places() -> list[int]:
        on_node = cluster.pods_on[cluster.slot_of["n1"]]
        return [int(columns.place[cluster.pod_row[uid]]) for uid in on_node]

    with cluster.keeping_order():
        apply_object(cluster, pods[1], deleted=True)  # d takes b's place, b goes to the end
        apply_object(cluster, pods[1])
        assert places() == sorted(places())

    assert [cluster.pods_on[cluster.slot_of["n1"]][uid].name
            for uid in cluster.pods_on[cluster.slot_of["n1"]]] == ["a", "b", "c", "d"]
    assert places() == sorted(places())


def test_nested_blocks_each_restore_their_own_start() -> None:
    cluster = _cluster(("n1",))
    pods = [make_pod(name).req(cpu="1").node("n1").obj() for name in ("a", "b", "c")]
    for pod in pods:
        apply_object(cluster, pod)
    on_n1 = cluster.pods_on[cluster.slot_of["n1"]]

    def order() -> list[str]:
        return [cluster.pods_on[cluster.slot_of["n1"]][uid].name
                for uid in cluster.pods_on[cluster.slot_of["n1"]]]

    with cluster.keeping_order():
        apply_object(cluster, pods[0], deleted=True)
        apply_object(cluster, pods[0])
        moved = order()
        assert moved == ["c", "b", "a"]
        with cluster.keeping_order():
            apply_object(cluster, pods[2], deleted=True)
            apply_object(cluster, pods[2])
            assert order() != moved
        assert order() == moved
    assert order() == ["a", "b", "c"]
    assert len(on_n1) == 3


def test_a_pod_that_stays_away_leaves_the_others_in_their_new_order() -> None:
    # Not the same pods: nothing to put back in order.
    cluster = _cluster(("n1",))
    pods = [make_pod(name).req(cpu="1").node("n1").obj() for name in ("a", "b", "c")]
    for pod in pods:
        apply_object(cluster, pod)
    with cluster.keeping_order():
        apply_object(cluster, pods[0], deleted=True)
    assert sorted(cluster.pods_on[cluster.slot_of["n1"]][uid].name
                  for uid in cluster.pods_on[cluster.slot_of["n1"]]) == ["b", "c"]


def _codes(cluster: ClusterState, key: str) -> tuple[list[int], tuple[str, ...]]:
    topology = cluster.topology_codes(key)
    return topology.codes[: len(cluster.slot_names)].tolist(), topology.values


def test_topology_codes_come_back_when_the_same_nodes_do() -> None:
    cluster = _cluster(("n1", "n2", "n3", "n4"))
    key = "topology.kubernetes.io/zone"
    before = cluster.topology_codes(key)
    with cluster.keeping_order():
        cluster.remove_node("n1")
        assert _codes(cluster, key)[0][cluster.slot_of["n1"]] == -1
        apply_object(cluster, make_node("n1").capacity(cpu="4", memory="8Gi").zone("z0").obj())
    # The same nodes, labels and order as before the block: the codes read before it.
    assert cluster.topology_codes(key) is before
    fresh = ClusterState()
    for name in ("n1", "n2", "n3", "n4"):
        slot = cluster.slot_of[name]
        fresh_slot = fresh.add_node(cluster.node(slot))
        assert fresh_slot == slot
    assert np.array_equal(fresh.topology_codes(key).codes[:4], before.codes[:4])


def test_topology_codes_are_rebuilt_when_a_node_comes_back_with_other_labels() -> None:
    cluster = _cluster(("n1", "n2"))
    key = "topology.kubernetes.io/zone"
    cluster.topology_codes(key)
    with cluster.keeping_order():
        apply_object(cluster, make_node("n1").capacity(cpu="4", memory="8Gi").zone("z9").obj())
    codes, values = _codes(cluster, key)
    assert values[codes[cluster.slot_of["n1"]]] == "z9"
    with cluster.keeping_order():
        cluster.remove_node("n2")
    codes, _ = _codes(cluster, key)
    assert codes[cluster.slot_of["n2"]] == -1


def test_a_node_added_in_the_block_and_gone_after_it_leaves_the_codes_valid() -> None:
    cluster = _cluster(("n1",))
    key = "topology.kubernetes.io/zone"
    cluster.topology_codes(key)
    with cluster.keeping_order():
        for i in range(100):  # more slots than the arrays hold: they grow
            apply_object(cluster, make_node(f"x{i}").capacity(cpu="1", memory="1Gi").obj())
        for i in range(100):
            cluster.remove_node(f"x{i}")
    topology = cluster.topology_codes(key)
    assert len(topology.codes) == cluster.capacity
    assert _codes(cluster, key)[1] == ("z0",)
