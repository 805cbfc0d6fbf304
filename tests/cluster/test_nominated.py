"""NominatedLoad: the nominated pods summed per node. A cycle's nominated-pods pass through
the load must give every node the verdict (code, reasons, plugin) that adding the nominated
pods one by one gives, on random clusters with pods of several priorities nominated, the pod
itself nominated, nominations to nodes not there yet, and pods the sums cannot stand for."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from kaudit.cluster.nominated import NominatedLoad
from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.runtime import FilterRun, Framework
from kaudit.model.pod import PodInfo
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod


class Nominations:
    """Nominated pods by node, with or without their load (as the replay keeps both)."""

    def __init__(self, pods: list[PodInfo], cluster: ClusterState, *, summed: bool) -> None:
        self.by_node: dict[str, list[PodInfo]] = {}
        for pod in pods:
            self.by_node.setdefault(pod.nominated_node_name, []).append(pod)
        if summed:
            self.load = NominatedLoad()
            for pod in pods:
                self.load.add(pod, pod.nominated_node_name, cluster)

    def __call__(self, node: str) -> list[PodInfo]:
        return list(self.by_node.get(node, []))

    def nodes(self) -> list[str]:
        return list(self.by_node)


def random_case(seed: int, *, irregular: bool = False
                ) -> tuple[ClusterState, list[PodInfo], PodInfo]:
    rng = random.Random(seed)
    cluster = ClusterState()
    names = [f"n{i}" for i in range(rng.randint(6, 30))]
    for name in names:
        capacity = {"cpu": str(rng.choice([2, 4, 8])), "memory": "8Gi",
                    "pods": str(rng.randint(2, 6))}
        if rng.random() < 0.3:
            capacity["example.com/fpga"] = "2"
        cluster.add_node(make_node(name).capacity(**capacity).obj())
    for i in range(rng.randint(0, 2 * len(names))):
        builder = make_pod(f"p{i}").node(rng.choice(names)).req(
            cpu=rng.choice(["250m", "1", "2"]), memory=rng.choice(["256Mi", "2Gi"]))
        if rng.random() < 0.15:
            builder.host_port(8080)
        cluster.add_pod(pod_info(cluster, builder.priority(rng.choice([0, 10])).obj()))
    nominated = []
    for i in range(rng.randint(1, 2 * len(names))):
        builder = make_pod(f"nominated{i}").req(cpu=rng.choice(["100m", "500m", "2"]),
                                                memory=rng.choice(["128Mi", "3Gi"]))
        if rng.random() < 0.2:
            builder.req(**{"example.com/fpga": "1"})
        if irregular and rng.random() < 0.3:
            builder.host_port(8080)
        pod = pod_info(cluster, builder.priority(rng.choice([5, 10, 15, 30])).obj())
        node = rng.choice(names) if rng.random() < 0.9 else "not-there-yet"
        nominated.append(replace(pod, nominated_node_name=node))
    pod = pod_info(cluster, make_pod("incoming").req(cpu=rng.choice(["500m", "1", "3"]),
                                                     memory="1Gi")
                   .priority(rng.choice([5, 10, 15])).obj())
    if rng.random() < 0.3:
        pod = replace(pod, nominated_node_name=rng.choice(names))
        nominated.append(pod)  # the pod itself, tried again: its own nomination is left out
    return cluster, nominated, pod


def _framework(pod: PodInfo) -> Framework:
    config, registry = load()
    framework = build_scheduler(config, registry, seed=3).framework_for(pod)
    assert framework is not None
    return framework


def _verdicts(run: FilterRun) -> list[tuple[object, ...]]:
    result = []
    for i in range(len(run.slots)):
        status = run.status(i)
        result.append((bool(run.feasible[i]), status.code, status.reasons, status.plugin))
    return result


def _both(cluster: ClusterState, nominated: list[PodInfo], pod: PodInfo, *,
          exhaustive: bool = False) -> tuple[FilterRun, FilterRun]:
    framework = _framework(pod)
    state = CycleState()
    framework.run_pre_filter(state, pod, cluster)
    assert framework.nominated_pods_settle_verdicts(state)
    slots = cluster.order_array
    one_by_one = framework.run_filter_with_nominated(
        state, pod, cluster, slots, Nominations(nominated, cluster, summed=False),
        exhaustive=exhaustive)
    summed = framework.run_filter_with_nominated(
        state, pod, cluster, slots, Nominations(nominated, cluster, summed=True),
        exhaustive=exhaustive)
    return one_by_one, summed


@pytest.mark.parametrize("seed", range(60))
def test_the_summed_pass_gives_every_node_its_one_by_one_verdict(seed: int) -> None:
    cluster, nominated, pod = random_case(seed)
    one_by_one, summed = _both(cluster, nominated, pod)
    assert _verdicts(summed) == _verdicts(one_by_one)


@pytest.mark.parametrize("seed", range(20))
def test_every_plugin_verdict_agrees_when_every_plugin_runs(seed: int) -> None:
    cluster, nominated, pod = random_case(seed)
    one_by_one, summed = _both(cluster, nominated, pod, exhaustive=True)
    assert np.array_equal(summed.codes, one_by_one.codes)
    assert _verdicts(summed) == _verdicts(one_by_one)


@pytest.mark.parametrize("seed", range(20))
def test_pods_with_host_ports_are_added_one_by_one(seed: int) -> None:
    cluster, nominated, pod = random_case(seed, irregular=True)
    one_by_one, summed = _both(cluster, nominated, pod)
    assert _verdicts(summed) == _verdicts(one_by_one)
    nominations = Nominations(nominated, cluster, summed=True)
    if any(p.host_ports and p.uid != pod.uid and p.priority >= pod.priority
           for p in nominated if p.nominated_node_name in cluster.slot_of):
        assert nominations.load.view(cluster, pod) is None


def _added_one_by_one(cluster: ClusterState, nominated: list[PodInfo], pod: PodInfo
                      ) -> ClusterState:
    forked = cluster.fork(list(cluster.order), nodes_only=True)
    forked.add_pods(replace(p, node_name=p.nominated_node_name) for p in nominated
                    if p.uid != pod.uid and p.priority >= pod.priority
                    and p.nominated_node_name in cluster.slot_of)
    return forked


@pytest.mark.parametrize("seed", range(20))
def test_the_view_holds_what_adding_the_pods_gives(seed: int) -> None:
    cluster, nominated, pod = random_case(seed)
    before = (cluster.requested.copy(), cluster.pod_count.copy(),
              [dict(pods) for pods in cluster.pods_on])
    view = Nominations(nominated, cluster, summed=True).load.view(cluster, pod)
    assert view is not None
    expected = _added_one_by_one(cluster, nominated, pod)
    assert np.array_equal(view.requested, expected.requested)
    assert np.array_equal(view.non_zero, expected.non_zero)
    assert np.array_equal(view.pod_count, expected.pod_count)
    for slot in cluster.order:
        assert view.pods_on[slot].keys() == expected.pods_on[slot].keys()
    assert [dict(p) for p in view.pods_on] == [dict(p) for p in expected.pods_on]
    for priority, counts in expected.priority_counts.items():
        assert np.array_equal(view.priority_counts[priority], counts)
    assert np.array_equal(cluster.requested, before[0])  # the view left the cluster alone
    assert np.array_equal(cluster.pod_count, before[1])
    assert [dict(pods) for pods in cluster.pods_on] == before[2]


def test_a_nomination_to_a_node_added_later_counts_once_the_node_is_there() -> None:
    cluster = ClusterState()
    cluster.add_node(make_node("a").capacity(cpu="4", memory="8Gi", pods="10").obj())
    waiting = replace(pod_info(cluster, make_pod("w").req(cpu="3").priority(10).obj()),
                      nominated_node_name="b")
    load = NominatedLoad()
    load.add(waiting, "b", cluster)
    incoming = pod_info(cluster, make_pod("i").req(cpu="2").priority(5).obj())
    assert load.view(cluster, incoming) is cluster
    cluster.add_node(make_node("b").capacity(cpu="4", memory="8Gi", pods="10").obj())
    view = load.view(cluster, incoming)
    assert view is not None and view is not cluster
    assert int(view.requested[cluster.slot_of["b"], 0]) == 3000
    assert int(cluster.requested[cluster.slot_of["b"], 0]) == 0


def test_released_nominations_leave_the_cluster_as_it_is() -> None:
    cluster, nominated, pod = random_case(7)
    load = NominatedLoad()
    for other in nominated:
        load.add(other, other.nominated_node_name, cluster)
    version = load.version
    for other in nominated:
        load.remove(other.uid)
    assert load.version > version and len(load) == 0
    assert load.view(cluster, pod) is cluster
    load.remove("never-nominated")
    assert len(load) == 0


def test_a_pod_nominated_again_counts_once_on_its_new_node() -> None:
    cluster = ClusterState()
    for name in "ab":
        cluster.add_node(make_node(name).capacity(cpu="4", memory="8Gi", pods="10").obj())
    pod = pod_info(cluster, make_pod("w").req(cpu="3").priority(10).obj())
    load = NominatedLoad()
    load.add(pod, "a", cluster)
    load.add(pod, "b", cluster)
    incoming = pod_info(cluster, make_pod("i").req(cpu="1").priority(1).obj())
    view = load.view(cluster, incoming)
    assert view is not None
    assert view.requested[[cluster.slot_of["a"], cluster.slot_of["b"]], 0].tolist() == [0, 3000]
    assert view.pod_count[[cluster.slot_of["a"], cluster.slot_of["b"]]].tolist() == [0, 1]


def test_the_pod_s_own_nomination_with_a_host_port_is_left_out() -> None:
    cluster = ClusterState()
    for name in "ab":
        cluster.add_node(make_node(name).capacity(cpu="4", memory="8Gi", pods="10").obj())
    pod = replace(pod_info(cluster, make_pod("p").req(cpu="1").host_port(8080).priority(10)
                           .obj()), nominated_node_name="a")  # the preemptor, tried again
    other = replace(pod_info(cluster, make_pod("q").req(cpu="1").priority(10).obj()),
                    nominated_node_name="b")
    one_by_one, summed = _both(cluster, [pod, other], pod)
    assert _verdicts(summed) == _verdicts(one_by_one)
    assert all(feasible for feasible, *_ in _verdicts(summed))


def test_node_volume_limits_is_judged_with_the_nominated_pods_one_by_one() -> None:
    """A VolumeAttachment of the pod's own volume counts on top of the pod's use of it unless
    a pod on the node mounts it: a nominated pod with that volume turns the failure into a
    pass, so the filter is not only hindered by added pods and the two passes stay."""
    uri = "/subscriptions/x/disk-1"
    cluster = ClusterState()
    cluster.add_node(make_node("n").capacity(cpu="8", memory="8Gi", pods="10").obj())
    cluster.set_object("CSINode", {"kind": "CSINode", "metadata": {"name": "n"}, "spec": {
        "drivers": [{"name": "disk.csi.azure.com", "nodeID": "n",
                     "allocatable": {"count": 1}}]}})
    cluster.set_object("PersistentVolume", {"kind": "PersistentVolume",
                                            "metadata": {"name": "pv1"}, "spec": {"csi": {
                                                "driver": "disk.csi.azure.com",
                                                "volumeHandle": uri}}})
    cluster.set_object("VolumeAttachment", {"kind": "VolumeAttachment",
                                            "metadata": {"name": "va"}, "spec": {
                                                "nodeName": "n",
                                                "attacher": "disk.csi.azure.com",
                                                "source": {"persistentVolumeName": "pv1"}}})

    def with_disk(name: str, priority: int) -> PodInfo:
        obj = make_pod(name).req(cpu="100m").priority(priority).obj()
        obj["spec"]["volumes"] = [{"name": "d", "azureDisk": {"diskName": "d1",
                                                              "diskURI": uri}}]
        return pod_info(cluster, obj)

    nominated = [replace(with_disk("q", 10), nominated_node_name="n")]
    pod = with_disk("r", 5)
    framework = _framework(pod)
    state = CycleState()
    framework.run_pre_filter(state, pod, cluster)
    assert not framework.nominated_pods_settle_verdicts(state)
    slots = cluster.order_array
    runs = [framework.run_filter_with_nominated(
        state, pod, cluster, slots, Nominations(nominated, cluster, summed=summed))
        for summed in (False, True)]
    assert _verdicts(runs[0]) == _verdicts(runs[1])
    assert not runs[1].feasible.any()  # upstream's pass 1 fails: too many volumes
