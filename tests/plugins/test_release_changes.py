"""What the plugins do differently from one mirrored release to the next: each ungated change
of v1.35 and v1.36 (:mod:`kaudit.versions`) against the release before it, and the
NodeDeclaredFeatures plugin (a default plugin from v1.36)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.config import FeatureGates, parse_feature_gates
from kaudit.errors import ConfigError
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import QueueingHint
from kaudit.framework.plugin import Handle
from kaudit.framework.status import Code
from kaudit.plugins.dynamic_resources.plugin import DynamicResources
from kaudit.plugins.dynamic_resources.pools import Slice, gather_pools
from kaudit.plugins.image_locality import ImageLocality
from kaudit.plugins.inter_pod_affinity import InterPodAffinity
from kaudit.plugins.node_declared_features import REASON, NodeDeclaredFeatures
from kaudit.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from kaudit.plugins.pod_topology_spread import PodTopologySpread
from kaudit.scheduler.build import load
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.versions import KubernetesVersion
from kaudit.versions.v1_34 import V1_34_2
from kaudit.versions.v1_35 import V1_35_4
from kaudit.versions.v1_36 import V1_36_3
from kaudit.versions.v1_37 import V1_37_2


def handle(version: KubernetesVersion, gates: str = "") -> Handle:
    return Handle(feature_gates=parse_feature_gates(gates, version))


def one_node(**capacity: str) -> ClusterState:
    cluster = ClusterState()
    cluster.add_node(make_node("n").capacity(**capacity).obj())
    return cluster


# --------------------------------------------------------------- BalancedAllocation (v1.36)

@pytest.mark.parametrize(("version", "expected"), [(V1_35_4, 93), (V1_36_3, 75)])
def test_balanced_allocation_weighs_the_pods_change_from_v1_36(version: KubernetesVersion,
                                                                expected: int) -> None:
    """Upstream's worked example: 4 cpu / 8Gi with 1 cpu / 1Gi requested, the pod 1 cpu / 2Gi:
    the balance is 93 with and without the pod, so v1.36 scores 50 + (50 + 93 - 93) / 2."""
    cluster = one_node(cpu="4", memory="8Gi")
    cluster.add_pod(pod_info(cluster, make_pod("x").node("n").req(cpu="1", memory="1Gi").obj()))
    pod = pod_info(cluster, make_pod("p").req(cpu="1", memory="2Gi").obj())
    plugin = NodeResourcesBalancedAllocation({}, handle(version))
    assert plugin.score(CycleState(), pod, cluster, np.asarray([0])).tolist() == [expected]


def test_a_pod_that_improves_the_balance_scores_above_75() -> None:
    cluster = one_node(cpu="4", memory="8Gi")
    cluster.add_pod(pod_info(cluster, make_pod("x").node("n").req(cpu="2", memory="1Gi").obj()))
    pod = pod_info(cluster, make_pod("p").req(cpu="100m", memory="3Gi").obj())
    score = NodeResourcesBalancedAllocation({}, handle(V1_36_3)).score(
        CycleState(), pod, cluster, np.asarray([0]))
    assert 75 < int(score[0]) <= 100


# --------------------------------------------------------------- ImageLocality (v1.36)

@pytest.mark.parametrize(("version", "counted"), [(V1_35_4, False), (V1_36_3, True)])
def test_image_volumes_count_from_v1_36(version: KubernetesVersion, counted: bool) -> None:
    cluster = ClusterState()
    cluster.add_node(make_node("n").capacity(cpu="4", memory="8Gi")
                     .image(500 * 1024 * 1024, "models/llama:v1").obj())
    obj = make_pod("p").image("busybox").obj()
    obj["spec"]["volumes"] = [{"name": "m", "image": {"reference": "models/llama:v1"}}]
    score = ImageLocality({}, handle(version)).score(CycleState(), pod_info(cluster, obj),
                                                     cluster, np.asarray([0]))
    assert (int(score[0]) > 0) is counted


# --------------------------------------------------------------- NodeDeclaredFeatures

def restarting_pod() -> dict[str, Any]:
    obj = make_pod("p").image("busybox").obj()
    obj["spec"]["containers"][0]["restartPolicyRules"] = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]
    return obj


def test_node_declared_features_filters_nodes_lacking_the_pods_needs() -> None:
    cluster = ClusterState()
    bare = make_node("bare").capacity(cpu="4", memory="8Gi").obj()
    able = make_node("able").capacity(cpu="4", memory="8Gi").obj()
    able["status"]["declaredFeatures"] = ["RestartAllContainersOnContainerExits", "Unknown"]
    cluster.add_node(bare)
    cluster.add_node(able)
    plugin = NodeDeclaredFeatures({}, handle(V1_36_3))
    state = CycleState()
    _, status = plugin.pre_filter(state, pod_info(cluster, restarting_pod()), cluster)
    assert status.ok
    verdicts = plugin.filter(state, pod_info(cluster, restarting_pod()), cluster,
                             np.asarray([cluster.slot_of["bare"], cluster.slot_of["able"]]))
    assert verdicts.status(0).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdicts.status(0).reasons == (REASON,)
    assert verdicts.status(1).ok
    # A pod that needs nothing skips the plugin; with the gate off (v1.35) every pod does.
    plain = pod_info(cluster, make_pod("q").obj())
    assert plugin.pre_filter(CycleState(), plain, cluster)[1].code == Code.SKIP
    off = NodeDeclaredFeatures({}, handle(V1_35_4))
    assert off.pre_filter(CycleState(), pod_info(cluster, restarting_pod()),
                          cluster)[1].code == Code.SKIP
    assert off.events_to_register() == []


def test_node_declared_features_is_a_default_plugin_from_v1_36() -> None:
    def filters(version: KubernetesVersion) -> list[str]:
        config, _ = load(None, FeatureGates(version=version))
        return [p.name for p in config.profiles["default-scheduler"].plugins["Filter"]]
    assert "NodeDeclaredFeatures" not in filters(V1_35_4)
    assert filters(V1_36_3)[-1] == "NodeDeclaredFeatures"
    with pytest.raises(ConfigError, match=r"NodeDeclaredFeatures=true: kaudit does not model"):
        load(None, parse_feature_gates("NodeDeclaredFeatures=true", V1_35_4))


def test_node_declared_features_hints() -> None:
    plugin = NodeDeclaredFeatures({}, handle(V1_36_3))
    (node_event, pod_event) = plugin.events_to_register()
    cluster = ClusterState()
    node = make_node("n").capacity(cpu="4", memory="8Gi").obj()
    cluster.add_node(node)
    before = cluster.node(0)
    declaring = {**node, "status": {**node["status"],
                                    "declaredFeatures": ["RestartAllContainersOnContainerExits"]}}
    cluster.add_node(declaring)
    after = cluster.node(0)
    pod = pod_info(cluster, restarting_pod())
    assert node_event.hint(pod, before, after) == QueueingHint.QUEUE
    assert node_event.hint(pod, after, after) == QueueingHint.QUEUE_SKIP
    other = pod_info(cluster, make_pod("other").obj())
    assert pod_event.hint(pod, other, other) == QueueingHint.QUEUE_SKIP


# --------------------------------------------------------------- affinity hints (v1.36)

@pytest.mark.parametrize(("version", "expected"), [(V1_35_4, QueueingHint.QUEUE_SKIP),
                                                   (V1_36_3, QueueingHint.QUEUE)])
def test_a_nominated_pods_release_requeues_anti_affinity_from_v1_36(
        version: KubernetesVersion, expected: QueueingHint) -> None:
    cluster = ClusterState()
    waiting = make_pod("shy").obj()
    waiting["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}},
             "topologyKey": "kubernetes.io/hostname"}]}}
    shy = pod_info(cluster, waiting)
    holder = replace(pod_info(cluster, make_pod("db").label("app", "db").obj()),
                     nominated_node_name="n1")
    ipa = InterPodAffinity({}, handle(version))
    pod_events = [e for e in ipa.events_to_register() if e.event.resource == "Pod"]
    assert pod_events[0].hint(shy, holder, None) == expected
    pts = PodTopologySpread({"defaultingType": "List"}, handle(version))
    assert pts.nominated_pods_count is (version is V1_36_3)


# --------------------------------------------------------------- DRA pools (v1.35)

def test_a_pool_spread_over_nodes_is_complete_from_v1_35() -> None:
    def piece(name: str, node: str) -> Slice:
        return Slice.of({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                         "metadata": {"name": name},
                         "spec": {"driver": "gpu.example.com", "nodeName": node,
                                  "pool": {"name": "shared", "generation": 1,
                                           "resourceSliceCount": 2},
                                  "devices": [{"name": f"dev-{name}"}]}})
    cluster = one_node(cpu="1", memory="1Gi")
    mine, theirs = piece("a", "n"), piece("b", "other")
    (alone,) = gather_pools([mine], cluster.node(0))
    assert alone.incomplete  # v1.34: only the node's slices count
    (spanning,) = gather_pools([mine], cluster.node(0), every_slice=[mine, theirs])
    assert not spanning.incomplete
    newer = Slice.of({**theirs.obj, "spec": {**theirs.obj["spec"], "pool": {
        "name": "shared", "generation": 2, "resourceSliceCount": 2}}})
    assert gather_pools([mine], cluster.node(0), every_slice=[mine, newer]) == []


@pytest.mark.parametrize(("version", "counters_left_out", "groups_left_out"), [
    (V1_34_2, False, False), (V1_35_4, False, False), (V1_36_3, True, False),
    (V1_37_2, True, True)])
def test_slices_the_allocator_leaves_out_as_each_release(
        version: KubernetesVersion, counters_left_out: bool, groups_left_out: bool) -> None:
    """Without partitionable devices (the gate turned off), v1.36 leaves out slices with
    shared counters; v1.37 leaves out those whose devices name compatibility groups while
    DRADeviceCompatibilityGroups is off (``pools_stable.go``, GatherPools)."""
    def piece(name: str, **spec: Any) -> Slice:
        return Slice.of({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                         "metadata": {"name": name},
                         "spec": {"driver": "gpu.example.com", "nodeName": "n",
                                  "pool": {"name": name, "generation": 1,
                                           "resourceSliceCount": 1}, **spec}})
    counters = piece("counters", sharedCounters=[{"name": "set", "counters": {
        "memory": {"value": "40Gi"}}}], devices=[{"name": "whole"}])
    groups = piece("groups", devices=[{"name": "part", "consumesCounters": [{
        "counterSet": "set", "counters": {"memory": {"value": "10Gi"}},
        "compatibilityGroups": ["a"]}]}])
    off = "DRAPartitionableDevices=false" if version.release >= (1, 36) else ""
    rules = DynamicResources({}, handle(version, off)).features.slice_rules()
    node = one_node(cpu="1", memory="1Gi").node(0)
    found = {pool.name for pool in gather_pools([counters, groups], node, rules)}
    assert ("counters" not in found) is counters_left_out
    assert ("groups" not in found) is groups_left_out


@pytest.mark.parametrize(("version", "message"), [
    (V1_36_3, "claim default/c: number of requested devices 40 exceeds the claim limit of 32"),
    (V1_37_2, "claim default/c, request b: adding 20 devices exceeds the claim limit of 32, "
              "with 20 already accounted for")])
def test_a_claim_over_the_device_limit_is_refused_in_each_releases_words(
        version: KubernetesVersion, message: str) -> None:
    """v1.37 checks the limit request by request (``Allocate``, ``allocator_stable.go``)."""
    from kaudit.plugins.dynamic_resources.allocator import AllocationError, Allocator
    from kaudit.plugins.dynamic_resources.cel_env import SelectorCache
    from kaudit.tracegen.dra import claim, claim_spec, device_class, exact_request

    features = DynamicResources({}, handle(version)).features
    allocator = Allocator(features, set(), {"gpu": device_class("gpu")}, [], SelectorCache())
    wanted = claim("c", claim_spec(exact_request("a", "gpu", 20), exact_request("b", "gpu", 20)))
    node = one_node(cpu="1", memory="1Gi").node(0)
    with pytest.raises(AllocationError) as raised:
        allocator.allocate(node, [wanted])
    assert str(raised.value) == message


def test_removed_gates_keep_their_behaviour_and_cannot_be_set() -> None:
    assert FeatureGates(version=V1_36_3).enabled("CSIMigrationPortworx")
    with pytest.raises(ConfigError, match="unrecognized feature gate: CSIMigrationPortworx"):
        parse_feature_gates("CSIMigrationPortworx=true", V1_36_3)
    assert FeatureGates(version=V1_34_2).enabled("CSIMigrationPortworx")


def test_unmodelled_gates_warn_when_set_not_when_on_by_default() -> None:
    """A release's defaults load quietly (a run warns when its trace uses such a feature,
    ``tests/replay/test_unmodelled_warnings.py``); a gate the user turns on warns."""
    config, _ = load(None, FeatureGates(version=V1_36_3))
    assert config.warnings == ()
    explicit, _ = load(None, parse_feature_gates("DRADeviceTaints=true", V1_35_4))
    assert explicit.warnings == ("feature gate DRADeviceTaints: kaudit does not model it; "
                                 "DynamicResources allocates as with it off",)


# --------------------------------------------------------------- v1.37

def test_image_volumes_raise_the_cap_from_v1_37() -> None:
    cluster = ClusterState()
    cluster.add_node(make_node("n").capacity(cpu="4", memory="8Gi")
                     .image(500 * 1024 * 1024, "models/llama:v1").obj())
    obj = make_pod("p").image("busybox").obj()
    obj["spec"]["volumes"] = [{"name": "m", "image": {"reference": "models/llama:v1"}}]
    pod = pod_info(cluster, obj)
    scores = {v.name: int(ImageLocality({}, handle(v)).score(CycleState(), pod, cluster,
                                                             np.asarray([0]))[0])
              for v in (V1_36_3, V1_37_2)}
    assert 0 < scores["v1.37.2"] < scores["v1.36.3"], scores


def test_post_filter_messages_of_v1_37() -> None:
    """DynamicResources' PostFilter stops saying it had nothing to deallocate, and a
    preemption that found room says where."""
    from kaudit.scheduler.build import build_scheduler

    def message(version: KubernetesVersion) -> str | None:
        cluster = ClusterState()
        cluster.add_node(make_node("n1").capacity(cpu="4", memory="8Gi").obj())
        cluster.add_pod(pod_info(cluster, make_pod("low").node("n1").req(cpu="3")
                                 .priority(0).obj()))
        config, registry = load(None, FeatureGates(version=version))
        scheduler = build_scheduler(config, registry)
        pod = pod_info(cluster, make_pod("high").req(cpu="3").priority(100).obj())
        return scheduler.schedule(cluster, pod).message

    assert message(V1_36_3) == "0/1 nodes are available: 1 Insufficient cpu."
    assert message(V1_37_2) == ("0/1 nodes are available: 1 Insufficient cpu. preemption: "
                                "found a potential placement for pod on node n1, preempting "
                                "1 victims")
