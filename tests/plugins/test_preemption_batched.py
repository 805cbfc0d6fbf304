"""DefaultPreemption's batched dry run judges many nodes in one forked state: on random
clusters (priorities, PodDisruptionBudgets, host ports, nominated pods) each node's outcome
and the whole dry run must equal those of upstream's one-node-at-a-time dry run."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from kaudit.cluster.objects import apply_pod, pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.ports import HandlePorts
from kaudit.framework.status import Code
from kaudit.model.pod import PodInfo
from kaudit.plugins.default_preemption import DefaultPreemption, PreemptionDetails
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod


class Nominations:
    """Nominated pods by node, as the replay's nominator answers."""

    def __init__(self, pods: list[PodInfo]) -> None:
        self.by_node: dict[str, list[PodInfo]] = {}
        for pod in pods:
            self.by_node.setdefault(pod.nominated_node_name, []).append(pod)

    def __call__(self, node: str) -> list[PodInfo]:
        return list(self.by_node.get(node, []))

    def nodes(self) -> list[str]:
        return list(self.by_node)


def random_cluster(seed: int) -> tuple[ClusterState, list[PodInfo], PodInfo]:
    rng = random.Random(seed)
    cluster = ClusterState()
    names = [f"n{i}" for i in range(rng.randint(8, 40))]
    for name in names:
        cluster.add_node(make_node(name).capacity(cpu=str(rng.choice([2, 4, 8])),
                                                  memory="16Gi", pods=str(rng.randint(3, 9)))
                         .obj())
    for i in range(rng.randint(4, 3 * len(names))):
        builder = (make_pod(f"p{i}").node(rng.choice(names))
                   .req(cpu=rng.choice(["250m", "500m", "1", "1500m"]),
                        memory=rng.choice(["256Mi", "1Gi", "4Gi"]))
                   .priority(rng.choice([0, 5, 10, 20])).label("app", rng.choice("ab")))
        if rng.random() < 0.1:
            builder.host_port(8080)
        obj = builder.obj()
        obj["status"] = {"phase": "Running"}
        if rng.random() < 0.85:  # else it counts as starting now
            obj["status"]["startTime"] = f"2026-01-05T08:{rng.randint(0, 3):02d}:00Z"
        cluster.add_pod(pod_info(cluster, obj))
    # Updated pods leave their node (its last pod takes their place) and join it again last.
    for uid in rng.sample(sorted(cluster.pods), len(cluster.pods) // 4):
        pod = cluster.pods[uid]
        cluster.remove_pod(uid)
        cluster.add_pod(pod)
    # Pods without a uid, applied again as a trace updates them (on the same node or not).
    for i in range(rng.randint(0, 6)):
        obj = (make_pod(f"q{i}").node(rng.choice(names)).req(cpu="500m").priority(0)
               .label("app", rng.choice("ab")).obj())
        del obj["metadata"]["uid"]
        apply_pod(cluster, obj)
        if rng.random() < 0.5:
            obj["spec"]["nodeName"] = rng.choice(names)
        apply_pod(cluster, obj)
    # Victims being deleted (terminating), a pod that requests an extended resource (the
    # pod-by-pod path then judges the block), a node gone with its pods still bound.
    for uid in rng.sample(sorted(cluster.pods), min(3, len(cluster.pods))):
        pod = cluster.pods[uid]
        cluster.remove_pod(uid)
        cluster.add_pod(replace(pod, terminating=True))
    if seed % 4 == 0:
        obj = make_pod("widget").node(names[0]).req(cpu="100m").priority(0).obj()
        obj["spec"]["containers"][0]["resources"]["requests"]["example.com/widget"] = "1"
        cluster.add_pod(pod_info(cluster, obj))
    if seed % 3 == 0:
        cluster.remove_node(names[-1])
    for i, app in enumerate("ab"):
        if rng.random() < 0.7:
            cluster.set_object("PodDisruptionBudget", {
                "metadata": {"name": f"pdb{i}", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": app}}},
                "status": {"disruptionsAllowed": rng.randint(0, 2),
                           "disruptedPods": {f"p{rng.randint(0, 20)}": "2026-01-05T08:00:00Z"}}})
    cluster.set_object("PodDisruptionBudget", {
        "metadata": {"name": "elsewhere", "namespace": "other"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}}, "status": {"disruptionsAllowed": 0}})
    nominated = []
    for i in range(rng.randint(0, 6)):
        pod = pod_info(cluster, make_pod(f"nominated{i}").req(cpu=rng.choice(["500m", "2"]))
                       .priority(rng.choice([5, 15, 30])).obj())
        nominated.append(replace(pod, nominated_node_name=rng.choice(names)))
    preemptor = make_pod("high").req(cpu=rng.choice(["1", "2", "3"]), memory="1Gi").priority(15)
    if rng.random() < 0.2:
        preemptor.host_port(8080)
    return cluster, nominated, pod_info(cluster, preemptor.obj())


def _after_pre_filter(cluster: ClusterState, pod: PodInfo, nominator: Nominations
                      ) -> tuple[Any, DefaultPreemption, CycleState]:
    config, registry = load()
    scheduler = build_scheduler(config, registry, seed=3, ports=HandlePorts(nominator=nominator))
    framework = scheduler.framework_for(pod)
    assert framework is not None
    plugin = framework.instances["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    state = CycleState()
    framework.run_pre_filter(state, pod, cluster)
    return framework, plugin, state


def _comparable(outcome: tuple[Any, ...]) -> tuple[Any, ...]:
    victims, violations, status, find_ties = outcome
    return [v.key for v in victims], violations, (status.code, status.reasons,
                                                  status.plugin), find_ties()


@pytest.mark.parametrize("seed", range(40))
def test_each_node_outcome_equals_its_own_dry_run(seed: int) -> None:
    cluster, nominated, pod = random_cluster(seed)
    nominator = Nominations(nominated)
    framework, plugin, state = _after_pre_filter(cluster, pod, nominator)
    assert framework.judges_nodes_independently(state)
    pdbs = list(cluster.objects["PodDisruptionBudget"].values())
    slots = list(cluster.order)
    before = (cluster.requested.copy(), dict(cluster.pods), cluster.pod_count.copy())
    batched = plugin.select_victims_on_nodes(state, pod, cluster, slots, pdbs)
    one_by_one = [plugin.select_victims_on_node(state.clone(), pod, cluster, slot, pdbs)
                  for slot in slots]
    assert [_comparable(o) for o in batched] == [_comparable(o) for o in one_by_one]
    assert np.array_equal(before[0], cluster.requested) and before[1] == cluster.pods
    assert np.array_equal(before[2], cluster.pod_count)


def _details(cluster: ClusterState, pod: PodInfo, nominator: Nominations, *, batched: bool
             ) -> PreemptionDetails:
    framework, plugin, state = _after_pre_filter(cluster, pod, nominator)
    if not batched:
        framework.judges_nodes_independently = lambda state: False
    potential = list(cluster.order)
    details = PreemptionDetails()
    plugin._dry_run(state, pod, cluster, potential, len(potential) // 3, details)
    return details


@pytest.mark.parametrize("seed", range(40))
def test_the_dry_run_finds_what_the_one_node_dry_run_finds(seed: int) -> None:
    cluster, nominated, pod = random_cluster(seed)
    nominator = Nominations(nominated)
    batched = _details(cluster, pod, nominator, batched=True)
    one_by_one = _details(cluster, pod, nominator, batched=False)
    assert batched.as_json() == one_by_one.as_json()
    assert batched.examined_nodes == one_by_one.examined_nodes
    assert {n: (s.code, s.reasons) for n, s in batched.node_statuses.items()} == \
        {n: (s.code, s.reasons) for n, s in one_by_one.node_statuses.items()}


def test_a_preemptor_with_pod_affinity_is_judged_node_by_node() -> None:
    cluster, nominated, _ = random_cluster(1)
    pod = pod_info(cluster, make_pod("high").req(cpu="2").priority(15)
                   .pod_affinity("podAntiAffinity", "kubernetes.io/hostname", {"app": "a"})
                   .obj())
    framework, _, state = _after_pre_filter(cluster, pod, Nominations(nominated))
    # InterPodAffinity's PreFilter extensions change the cycle state per added pod.
    assert not framework.judges_nodes_independently(state)


@pytest.mark.parametrize("seed", range(20))
def test_an_affinity_preemptor_is_judged_in_a_nodes_only_fork_as_in_a_full_copy(
        seed: int) -> None:
    """InterPodAffinity's Filter reads its node and the cycle state only: the one-node dry
    run and the nominated pods' pass fork that node alone, as upstream clones one NodeInfo,
    and find what a copy of the whole cluster finds."""
    cluster, nominated, _ = random_cluster(seed)
    kind = ("podAntiAffinity", "podAffinity")[seed % 2]
    pod = pod_info(cluster, make_pod("high").req(cpu="2").priority(15).label("app", "a")
                   .pod_affinity(kind, "kubernetes.io/hostname", {"app": "a"}).obj())
    found = []
    for nodes_only in (True, False):
        framework, plugin, state = _after_pre_filter(cluster, pod, Nominations(nominated))
        assert not framework.judges_nodes_independently(state)
        assert framework.filters_read_only_their_node(state)
        if not nodes_only:
            framework.filters_read_only_their_node = lambda state: False
        details = PreemptionDetails()
        plugin._dry_run(state, pod, cluster, list(cluster.order), len(cluster.order) // 3,
                        details)
        found.append((details.as_json(), {n: (s.code, s.reasons)
                                          for n, s in details.node_statuses.items()}))
    assert found[0] == found[1]


@pytest.mark.parametrize("seed", range(20))
def test_the_nominated_pods_pass_judges_each_node_as_in_a_fork_of_its_own(seed: int) -> None:
    cluster, nominated, pod = random_cluster(seed)
    nominator = Nominations(nominated)
    verdicts = []
    for independent in (True, False):
        framework, _, state = _after_pre_filter(cluster, pod, nominator)
        framework.judges_nodes_independently = lambda state, answer=independent: answer
        run = framework.run_filter_with_nominated(state, pod, cluster, cluster.order_array,
                                                  nominator)
        verdicts.append([(s.code, s.reasons, s.plugin) for s in map(run.status,
                                                                     range(len(run.slots)))])
    assert verdicts[0] == verdicts[1]


def test_a_cluster_without_lower_priority_pods_offers_no_victims_anywhere() -> None:
    cluster = ClusterState()
    for i in range(5):
        cluster.add_node(make_node(f"n{i}").capacity(cpu="1", memory="1Gi").obj())
        cluster.add_pod(pod_info(cluster, make_pod(f"p{i}").node(f"n{i}").req(cpu="1")
                                 .priority(15).obj()))
    pod = pod_info(cluster, make_pod("high").req(cpu="1").priority(15).obj())
    details = _details(cluster, pod, Nominations([]), batched=True)
    assert details.candidates == [] and details.examined_nodes == 5
    assert {(s.code, s.reasons) for s in details.node_statuses.values()} == {
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("No preemption victims found for incoming pod",))}
    assert list(details.node_statuses) == [cluster.node(s).name for s in
                                           cluster.order[5 // 3:] + cluster.order[:5 // 3]]


def test_a_filter_error_past_the_stopping_node_does_not_fail_the_dry_run() -> None:
    """The walk stops at n1; n2, where NodeVolumeLimits errs (an ephemeral claim its pod does
    not own), is never reached node by node, so judging blocks must not reach it either."""
    cluster = ClusterState()
    for name in ("n0", "n1", "n2"):
        cluster.add_node(make_node(name).capacity(cpu="2", memory="16Gi", pods="10").obj())
    cluster.set_object("CSINode", {"metadata": {"name": "n2"}, "spec": {"drivers": [
        {"name": "disk.csi.azure.com", "nodeID": "n2", "allocatable": {"count": 8}}]}})
    for builder in (make_pod("a0").node("n0").req(cpu="1").priority(0),
                    make_pod("h0").node("n0").req(cpu="1").priority(100),
                    make_pod("a1").node("n1").req(cpu="2").priority(0),
                    make_pod("a2").node("n2").req(cpu="1900m").priority(0)):
        cluster.add_pod(pod_info(cluster, builder.obj()))
    h2 = make_pod("h2").node("n2").req(cpu="100m").priority(100).obj()
    h2["spec"]["volumes"] = [{"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    cluster.add_pod(pod_info(cluster, h2))
    cluster.set_object("PersistentVolumeClaim", {
        "metadata": {"name": "h2-data", "namespace": "default"}, "spec": {"volumeName": ""}})
    preemptor = make_pod("high").req(cpu="1500m").priority(10).obj()
    preemptor["spec"]["volumes"] = [{"name": "az",
                                     "azureDisk": {"diskName": "d", "diskURI": "uri-d"}}]
    pod = pod_info(cluster, preemptor)
    framework, plugin, state = _after_pre_filter(cluster, pod, Nominations([]))
    assert framework.judges_nodes_independently(state)
    plugin.min_absolute = 1
    details = PreemptionDetails()
    plugin._dry_run(state, pod, cluster, list(cluster.order), 0, details)
    assert [(c.node, [v.key for v in c.victims]) for c in details.candidates] == [
        ("n1", ["default/a1"])]
    assert details.examined_nodes == 2


def test_equal_victims_list_budget_violators_first_in_both_dry_runs() -> None:
    """b (no budget) joined the node before a (its budget allows no disruption), both equally
    ranked and both evicted: upstream lists the violating victim first."""
    cluster = ClusterState()
    cluster.add_node(make_node("n0").capacity(cpu="2", memory="16Gi", pods="10").obj())
    for name, app in (("b", "other"), ("a", "guarded")):
        obj = make_pod(name).node("n0").req(cpu="1").priority(0).label("app", app).obj()
        obj["status"] = {"phase": "Running", "startTime": "2026-01-05T08:00:00Z"}
        cluster.add_pod(pod_info(cluster, obj))
    cluster.set_object("PodDisruptionBudget", {
        "metadata": {"name": "guard", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "guarded"}}},
        "status": {"disruptionsAllowed": 0}})
    pod = pod_info(cluster, make_pod("high").req(cpu="2").priority(15).obj())
    _, plugin, state = _after_pre_filter(cluster, pod, Nominations([]))
    pdbs = list(cluster.objects["PodDisruptionBudget"].values())
    for outcome in (plugin.select_victims_on_nodes(state, pod, cluster, [0], pdbs)[0],
                    plugin.select_victims_on_node(state.clone(), pod, cluster, 0, pdbs)):
        victims, violations, status, find_ties = outcome
        assert status.ok and [v.name for v in victims] == ["a", "b"] and violations == 1
        assert find_ties() == (("default/b", "default/a"),)
