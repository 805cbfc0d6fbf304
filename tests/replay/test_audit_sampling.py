"""Whether percentageOfNodesToScore explains a binding kaudit scores below its top
(kaudit.replay.audit_sampling): one window of consecutive feasible nodes, or the chunks of
upstream's parallel filter workers."""

from __future__ import annotations

import numpy as np

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.replay.audit_sampling import reachable_with_workers, sampling_likelihood
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod

NODES = 300  # numFeasibleNodesToFind: 47 % of 300 = 141; chunks of 17 nodes, 16 workers


def _cluster(pods_on: dict[int, int]) -> ClusterState:
    """300 alike nodes in one zone; node i holds ``pods_on.get(i, 2)`` pods of 1 CPU and
    4 GiB (fewer pods: a higher LeastAllocated score, balance unchanged)."""
    cluster = ClusterState()
    for i in range(NODES):
        cluster.add_node(make_node(f"n{i:03d}").capacity(cpu="8", memory="32Gi")
                         .zone("a", "r").obj())
        for j in range(pods_on.get(i, 2)):
            cluster.add_pod(pod_info(cluster, make_pod(f"p{i}-{j}").req(cpu="1", memory="4Gi")
                                     .node(f"n{i:03d}").obj()))
    return cluster


def _judged(cluster: ClusterState, recorded: str) -> tuple[bool, float]:
    loaded, registry = load(None)
    scheduler = build_scheduler(loaded, registry, seed=0)
    pod = pod_info(cluster, make_pod("incoming").req(cpu="1", memory="4Gi").obj())
    attempt = scheduler.schedule(cluster, pod, exhaustive=True)
    assert attempt.scores is not None
    index = int(np.flatnonzero(attempt.scores.slots == cluster.slot_of[recorded])[0])
    assert attempt.scores.total[index] < attempt.scores.total.max()
    return (reachable_with_workers(attempt, scheduler, cluster, index),
            sampling_likelihood(attempt, scheduler, cluster, index))


def test_a_node_no_window_puts_on_top_can_be_found_on_top_by_interleaved_workers() -> None:
    # n150 holds one pod; its ten neighbours on either side none (they outscore it); every
    # other node two. Each run of 141 consecutive nodes holding n150 holds a neighbour, but
    # a worker that starts its chunk at n150 stops there, and the other chunks supply the
    # other 140 nodes from among the fuller ones.
    pods_on = {150: 1, **{i: 0 for i in range(140, 161) if i != 150}}
    reachable, likelihood = _judged(_cluster(pods_on), "n150")
    assert likelihood == 0
    assert reachable


def test_no_interleaving_helps_a_node_that_too_many_nodes_outscore() -> None:
    # Every node but the fullest ten outscores n150: no chunk supplies enough others.
    pods_on = {i: 0 for i in range(NODES)}
    pods_on.update({150: 1, **{i: 3 for i in range(10)}})
    reachable, likelihood = _judged(_cluster(pods_on), "n150")
    assert likelihood == 0
    assert not reachable
