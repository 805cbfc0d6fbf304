"""The attempt codec on attempts narrowed by a PreFilterResult: one naming only nodes that do
not exist leaves upstream's ``findNodesThatPassFilters`` nothing to filter, and the record
keeps the filter plugins with no verdicts; the nodes a result leaves out count as rejected by
its plugin."""

from __future__ import annotations

from kaudit.cluster.objects import pod_info
from kaudit.eventlog.codec import pack_attempt, unpack_attempt
from tests.framework.fakes import daemonset_pod
from tests.scheduler.test_schedule import cluster_of, node, scheduler


def test_an_attempt_that_filtered_no_node_packs_and_unpacks() -> None:
    cluster = cluster_of(node("a"), node("b"))
    sched = scheduler()
    pod = pod_info(cluster, daemonset_pod("gone-node"))
    framework = sched.framework_for(pod)
    assert framework is not None
    attempt = sched.schedule(cluster, pod)
    assert attempt.filters is not None and len(attempt.filters.plugins) > 0
    document, blob = pack_attempt(attempt, framework, cluster, cycle=1, number=1)
    names = {cluster.slot_of[name]: name for name in ("a", "b")}
    shaped = unpack_attempt(document, blob, names)
    assert shaped["nodes"] == {}
    assert (shaped["evaluatedNodes"], shaped["feasibleNodes"]) == (0, 0)
    assert shaped["preFilter"]["NodeAffinity"]["nodeNames"] == ["gone-node"]
    assert shaped["message"] == attempt.message
    assert document["filterPlugins"] == attempt.filters.plugins
    # NodeAffinity left out both nodes: the log filtered by plugin finds the attempt.
    assert document["rejectedBy"] == {"NodeAffinity": 2}


def test_a_pre_filter_result_counts_the_nodes_it_left_out() -> None:
    """Upstream counts the plugin among the rejecting ones; the nodes outside its result fail
    with the absent-nodes status, beside the nodes its filters rejected."""
    cluster = cluster_of(node("a", cpu="500m"), node("b"), node("c"))
    sched = scheduler()
    pod = pod_info(cluster, daemonset_pod("a", "gone-node"))
    framework = sched.framework_for(pod)
    assert framework is not None
    attempt = sched.schedule(cluster, pod)
    assert attempt.message is not None and attempt.message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) "
        "[NodeAffinity].")
    document, _ = pack_attempt(attempt, framework, cluster, cycle=1, number=1)
    assert document["rejectedBy"] == {"NodeAffinity": 2, "NodeResourcesFit": 1}
