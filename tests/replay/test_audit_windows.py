"""The audit's sampled windows: a window's totals, computed from the whole cycle's scores
(PreScore run again only where a plugin reads the nodes it is given), equal those of a cycle
that scored only the window's nodes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.replay.audit_sampling import WindowScores
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def _cluster(seed: int) -> ClusterState:
    """300 nodes over zones a and b, zone c only 4 nodes (the node tree interleaves zones, so
    later windows lack c), some nodes without a zone (ignored by an explicit constraint),
    preferred taints and labels, and pods of app=web spread unevenly."""
    rng = random.Random(seed)
    cluster = ClusterState()
    for i in range(300):
        node = make_node(f"n{i:03d}").capacity(cpu="8", memory="32Gi")
        if i % 37 == 5:
            pass  # no zone label
        elif i < 8 and i % 2 == 0:
            node.zone("c", "r")
        else:
            node.zone("a" if i % 2 else "b", "r")
        if rng.random() < 0.2:
            node.taint("spot", "true", "PreferNoSchedule")
        if rng.random() < 0.3:
            node.label("disk", rng.choice(["ssd", "hdd"]))
        cluster.add_node(node.obj())
    names = [f"n{i:03d}" for i in range(300)]
    for j in range(400):
        pod = (make_pod(f"web-{j}").req(cpu="100m", memory="256Mi").label("app", "web")
               .node(rng.choice(names[: rng.choice([30, 300])])))
        cluster.add_pod(pod_info(cluster, pod.obj()))
    cluster.set_object("ReplicaSet", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-rs", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}}})
    return cluster


def _incoming(explicit: bool) -> dict:
    pod = (make_pod("p").req(cpu="500m", memory="1Gi").label("app", "web")
           .preferred_node_affinity(20, "disk", "In", ["ssd"])
           .pod_affinity("podAntiAffinity", "kubernetes.io/hostname", {"app": "web"}, weight=5))
    if explicit:
        pod.spread(ZONE, 1, "ScheduleAnyway", {"app": "web"})
        pod.spread("kubernetes.io/hostname", 2, "ScheduleAnyway", {"app": "web"})
    else:
        pod.owner("ReplicaSet", "web-rs")
    return pod.obj()


@pytest.mark.parametrize("explicit", [True, False])
def test_each_window_scores_as_a_cycle_over_its_nodes_alone(explicit: bool) -> None:
    cluster = _cluster(seed=3)
    loaded, registry = load(None)
    scheduler = build_scheduler(loaded, registry, seed=0)
    pod = pod_info(cluster, _incoming(explicit))
    attempt = scheduler.schedule(cluster, pod, exhaustive=True)
    framework = scheduler.framework_for(pod)
    assert framework is not None and attempt.scores is not None and attempt.state is not None
    assert "PodTopologySpread" in attempt.scores.raw
    windows = WindowScores(attempt, framework, cluster)
    count = len(attempt.scores.slots)
    rng = random.Random(7)
    plugin = framework.instances["PodTopologySpread"]
    keys = set()
    for size, start in [(5, 0), (5, rng.randrange(count)), (40, 0), (100, rng.randrange(count)),
                        (180, rng.randrange(count))]:
        run_of_nodes = np.arange(start, start + size + 30) % count
        totals = windows.totals(run_of_nodes, size)
        members = np.lib.stride_tricks.sliding_window_view(run_of_nodes, size)
        read = plugin.nodes_read_by_pre_score(attempt.state, cluster,
                                              attempt.scores.slots[members])
        keys.update(tuple(row) for row in read.tolist())
        for row, expected in zip(members, totals, strict=True):
            window = attempt.scores.slots[row]
            state = attempt.state.clone()
            pre_score = framework.run_pre_score(state, pod, cluster, window)
            fresh = framework.run_score(state, pod, cluster, window, pre_score)
            assert expected.tolist() == fresh.total.tolist()
    # Windows with or without zone c or a node lacking the key read differently.
    assert len(keys) > 5
