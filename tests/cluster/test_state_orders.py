"""The node tree's order and each node's pod order survive a what-if that moves things."""

from __future__ import annotations

from kaudit.cluster.objects import apply_object
from kaudit.cluster.state import ClusterState
from kaudit.tracegen.builders import make_node, make_pod


def test_a_what_if_that_removes_and_adds_back_leaves_both_orders_as_they_were() -> None:
    cluster = ClusterState()
    for name in ("n1", "n2", "n3"):
        apply_object(cluster, make_node(name).capacity(cpu="4", memory="8Gi").zone("z").obj())
    pods = [make_pod(name).req(cpu="1").node("n1").obj() for name in ("a", "b", "c")]
    for pod in pods:
        apply_object(cluster, pod)
    zones, orders = cluster.zone_lists(), cluster.pod_orders()
    node_order = [cluster.slot_names[slot] for slot in cluster.order]
    pod_order = list(cluster.pods_on[cluster.slot_of["n1"]])

    # Pretend a (the first pod) and n1 (the first node) were not there, then put them back:
    # each goes to the end of its list, as in upstream's NodeInfo and NodeTree.
    apply_object(cluster, pods[0], deleted=True)
    apply_object(cluster, pods[0])
    cluster.remove_node("n1")
    apply_object(cluster, make_node("n1").capacity(cpu="4", memory="8Gi").zone("z").obj())
    assert list(cluster.pods_on[cluster.slot_of["n1"]]) != pod_order
    assert [cluster.slot_names[slot] for slot in cluster.order] != node_order

    cluster.restore_zone_lists(zones)
    cluster.restore_pod_orders(orders)
    assert list(cluster.pods_on[cluster.slot_of["n1"]]) == pod_order
    assert [cluster.slot_names[slot] for slot in cluster.order] == node_order


def test_restoring_a_nodes_pod_order_restores_the_places_preemption_reads() -> None:
    # Preemption's dry run orders equally important victims by their place among the node's
    # pods (the victim columns), not by the dictionary: both must follow the restore.
    cluster = ClusterState()
    apply_object(cluster, make_node("n1").capacity(cpu="8", memory="8Gi").obj())
    pods = [make_pod(name).req(cpu="1").node("n1").obj() for name in ("a", "b", "c", "d")]
    for pod in pods:
        apply_object(cluster, pod)
    orders = cluster.pod_orders()
    columns = cluster.victim_columns
    assert columns is not None

    def places() -> list[int]:
        on_node = cluster.pods_on[cluster.slot_of["n1"]]
        return [int(columns.place[cluster.pod_row[uid]]) for uid in on_node]

    apply_object(cluster, pods[1], deleted=True)  # d takes b's place, b goes to the end
    apply_object(cluster, pods[1])
    assert places() == sorted(places())

    cluster.restore_pod_orders(orders)
    assert [cluster.pods_on[cluster.slot_of["n1"]][uid].name
            for uid in cluster.pods_on[cluster.slot_of["n1"]]] == ["a", "b", "c", "d"]
    assert places() == sorted(places())
