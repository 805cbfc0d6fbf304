"""PodTopologySpread: reasons, PreFilter extensions, cloning, defaults, and the vectorised
plugin against a node-by-node transcription of upstream's loops on random clusters."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import Handle
from kaudit.framework.status import Code
from kaudit.model.pod import PodInfo, SpreadConstraint, parse_pod
from kaudit.model.selectors import LabelSelector
from kaudit.plugins.helper import go_round
from kaudit.plugins.pod_topology_spread import (
    LABEL_HOSTNAME,
    LABEL_ZONE,
    PRE_FILTER_STATE_KEY,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
    PreFilterState,
    default_selector,
)
from kaudit.plugins.taint_toleration import untolerated_taint

# --------------------------------------------------------------------------- builders


def node(name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None
         ) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"pods": "110"}}}


def pod(name: str, labels: dict[str, str], node_name: str = "", namespace: str = "default",
        constraints: list[dict[str, Any]] | None = None, terminating: bool = False,
        **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"{namespace}/{name}",
                                "labels": labels}
    if terminating:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    body = {"containers": [{"name": "c"}], "nodeName": node_name, **spec}
    if constraints:
        body["topologySpreadConstraints"] = constraints
    return {"kind": "Pod", "metadata": metadata, "spec": body}


def spread(key: str, max_skew: int = 1, action: str = "DoNotSchedule",
           selector: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action,
            "labelSelector": selector if selector is not None else {"matchLabels": {"app": "a"}},
            **extra}


def cluster_of(nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
               objects: list[dict[str, Any]] = ()) -> ClusterState:
    cluster = ClusterState()
    for obj in objects:
        cluster.set_object(obj["kind"], obj)
    for obj in nodes:
        cluster.add_node(obj)
    for obj in pods:
        cluster.add_pod(parse_pod(obj))
    return cluster


class Gates:
    def __init__(self, **values: bool) -> None:
        self.values = values

    def enabled(self, name: str) -> bool:
        return self.values.get(name, True)


def run_filter(plugin: PodTopologySpread, cluster: ClusterState, incoming: PodInfo,
               state: CycleState | None = None) -> dict[str, tuple[str, tuple[str, ...]]]:
    if state is None:
        state = CycleState()
        _, status = plugin.pre_filter(state, incoming, cluster)
        assert status.ok, status
    slots = cluster.order_array
    verdicts = plugin.filter(state, incoming, cluster, slots)
    return {cluster.node(int(s)).name: (verdicts.status(i).code.label, verdicts.status(i).reasons)
            for i, s in enumerate(slots)}


# --------------------------------------------------------------------------- reasons


def test_filter_reason_strings() -> None:
    cluster = cluster_of(
        [node("a", {"zone": "z1"}), node("b", {"zone": "z2"}), node("c", {})],
        [pod("p1", {"app": "a"}, "a"), pod("p2", {"app": "a"}, "a")])
    incoming = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone")]))
    got = run_filter(PodTopologySpread({"defaultingType": "List"}), cluster, incoming)
    assert got == {
        "a": ("Unschedulable", (REASON_CONSTRAINTS_NOT_MATCH,)),
        "b": ("Success", ()),
        "c": ("UnschedulableAndUnresolvable", (REASON_NODE_LABEL_NOT_MATCH,)),
    }
    assert REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert REASON_NODE_LABEL_NOT_MATCH == (
        "node(s) didn't match pod topology spread constraints (missing required label)")


def test_filter_stops_at_first_failing_constraint() -> None:
    # Node "a" violates the zone constraint before its missing "rack" label is looked at.
    cluster = cluster_of(
        [node("a", {"zone": "z1"}), node("a2", {"zone": "z1", "rack": "r1"}),
         node("b", {"zone": "z2", "rack": "r2"})],
        [pod("p1", {"app": "a"}, "a2"), pod("p2", {"app": "a"}, "a2")])
    incoming = parse_pod(pod("in", {"app": "a"},
                             constraints=[spread("zone"), spread("rack", max_skew=5)]))
    got = run_filter(PodTopologySpread({"defaultingType": "List"}), cluster, incoming)
    assert got["a"] == ("Unschedulable", (REASON_CONSTRAINTS_NOT_MATCH,))
    assert got["b"] == ("Success", ())


@pytest.mark.parametrize(("min_domains", "expected"), [
    (3, {"a": "Success", "b": "Success", "c": "Success"}),
    (4, {"a": "Unschedulable", "b": "Unschedulable", "c": "Unschedulable"}),
])
def test_min_domains_turns_the_global_minimum_to_zero(
        min_domains: int, expected: dict[str, str]) -> None:
    # Counts 3/2/2: with 3 domains the minimum is 2; below minDomains it is 0.
    placement = ["a", "a", "a", "b", "b", "c", "c"]
    cluster = cluster_of([node(n, {"rack": n}) for n in "abc"],
                         [pod(f"p{i}", {"app": "a"}, n) for i, n in enumerate(placement)])
    incoming = parse_pod(pod("in", {"app": "a"}, constraints=[
        spread("rack", max_skew=2, minDomains=min_domains)]))
    got = run_filter(PodTopologySpread({"defaultingType": "List"}), cluster, incoming)
    assert {name: code for name, (code, _) in got.items()} == expected


def test_go_round_rounds_half_away_from_zero() -> None:
    values = np.asarray([0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 2.4999, 7.75])
    assert go_round(values).tolist() == [0, 0, 1, 2, 3, 2, 8]


def test_pre_filter_skips_without_hard_constraints() -> None:
    cluster = cluster_of([node("a", {"zone": "z1"})], [])
    soft = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone", action="ScheduleAnyway")]))
    _, status = PodTopologySpread({}).pre_filter(CycleState(), soft, cluster)
    assert status.code == Code.SKIP
    bare = parse_pod(pod("in", {"app": "a"}))
    _, status = PodTopologySpread({}).pre_filter(CycleState(), bare, cluster)
    assert status.code == Code.SKIP


def test_malformed_selector_is_an_error_for_its_own_extension_point() -> None:
    cluster = cluster_of([node("a", {"zone": "z1"})], [])
    bad = {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}
    plugin = PodTopologySpread({})
    hard_bad = parse_pod(pod("in", {"app": "a"}, constraints=[
        spread("zone", selector=bad), spread("zone", action="ScheduleAnyway")]))
    _, status = plugin.pre_filter(CycleState(), hard_bad, cluster)
    assert status.code == Code.ERROR
    assert status.message.startswith(
        "get constraints from pod: obtaining pod's hard topology spread constraints: ")
    assert plugin.pre_score(CycleState(), hard_bad, cluster, cluster.order_array).ok
    soft_bad = parse_pod(pod("in", {"app": "a"}, constraints=[
        spread("zone"), spread("zone", action="ScheduleAnyway", selector=bad)]))
    assert plugin.pre_filter(CycleState(), soft_bad, cluster)[1].ok
    status = plugin.pre_score(CycleState(), soft_bad, cluster, cluster.order_array)
    assert status.code == Code.ERROR
    assert "obtaining pod's soft topology spread constraints" in status.message


def test_pre_score_skips() -> None:
    empty = ClusterState()
    soft = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone", action="ScheduleAnyway")]))
    plugin = PodTopologySpread({})
    assert plugin.pre_score(CycleState(), soft, empty, np.zeros(0, np.int64)).code == Code.SKIP
    cluster = cluster_of([node("a", {"zone": "z1"})], [])
    hard = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone")]))
    assert plugin.pre_score(CycleState(), hard, cluster, cluster.order_array).code == Code.SKIP
    # System defaults without any Service or controller selecting the pod: nothing to spread.
    bare = parse_pod(pod("in", {"app": "a"}))
    assert plugin.pre_score(CycleState(), bare, cluster, cluster.order_array).code == Code.SKIP


# --------------------------------------------------------------------------- defaults and gates


def test_default_selector_from_services_and_controllers() -> None:
    objects = [
        {"kind": "Service", "metadata": {"name": "s1", "namespace": "default"},
         "spec": {"selector": {"app": "a"}}},
        {"kind": "Service", "metadata": {"name": "s2", "namespace": "default"},
         "spec": {"selector": {"app": "b"}}},  # does not select the pod
        {"kind": "Service", "metadata": {"name": "s3", "namespace": "other"},
         "spec": {"selector": {"app": "a"}}},  # other namespace
        {"kind": "Service", "metadata": {"name": "s4", "namespace": "default"}, "spec": {}},
        {"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
         "spec": {"selector": {"matchExpressions": [
             {"key": "tier", "operator": "In", "values": ["web"]}]}}},
        {"kind": "ReplicationController", "metadata": {"name": "rc", "namespace": "default"},
         "spec": {"selector": {"tier": "web"}}},
        {"kind": "StatefulSet", "metadata": {"name": "ss", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"role": "db"}}}},
    ]
    cluster = cluster_of([node("n", {})], [], objects)

    def selector(owner: dict[str, Any] | None) -> LabelSelector:
        obj = pod("in", {"app": "a", "tier": "web", "role": "db"})
        if owner is not None:
            obj["metadata"]["ownerReferences"] = [{"controller": True, **owner}]
        return default_selector(parse_pod(obj), cluster)

    def pairs(sel: LabelSelector) -> set[tuple[str, str, tuple[str, ...]]]:
        return {(r.key, r.operator, tuple(sorted(r.values))) for r in sel.requirements}

    app = ("app", "In", ("a",))
    assert pairs(selector(None)) == {app}
    assert pairs(selector({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"})) == {
        app, ("tier", "In", ("web",))}
    assert pairs(selector({"apiVersion": "v1", "kind": "ReplicationController",
                           "name": "rc"})) == {app, ("tier", "In", ("web",))}
    assert pairs(selector({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ss"})) == {
        app, ("role", "In", ("db",))}
    # Wrong group/version, or a missing owner: only the Services count.
    assert pairs(selector({"apiVersion": "extensions/v1beta1", "kind": "ReplicaSet",
                           "name": "rs"})) == {app}
    assert pairs(selector({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x"})) == {app}


def test_system_defaults_score_with_a_service() -> None:
    # Nodes without a zone still get hostname spreading (no ignored nodes): weight ln(3 + 2),
    # raw scores round(2w + 2) = 5, round(w + 2) = 4, 2; then 100 * (5 + 2 - s) / 5.
    nodes = [node(n, {LABEL_HOSTNAME: n}) for n in ("a", "b", "c")]
    pods = [pod("p1", {"app": "a"}, "a"), pod("p2", {"app": "a"}, "a"),
            pod("p3", {"app": "a"}, "b")]
    service = {"kind": "Service", "metadata": {"name": "s", "namespace": "default"},
               "spec": {"selector": {"app": "a"}}}
    cluster = cluster_of(nodes, pods, [service])
    incoming = parse_pod(pod("in", {"app": "a"}))
    assert score_vectorised(PodTopologySpread({}), cluster, incoming,
                            cluster.order_array) == {"a": 40, "b": 60, "c": 100}


def test_match_label_keys_gate_off_ignores_match_label_keys() -> None:
    nodes = [node("a", {"zone": "z1"}), node("b", {"zone": "z2"})]
    pods = [pod("p1", {"app": "a", "rev": "1"}, "a"), pod("p2", {"app": "a", "rev": "1"}, "a"),
            pod("p3", {"app": "a", "rev": "2"}, "b")]
    cluster = cluster_of(nodes, pods)
    raw = pod("in", {"app": "a", "rev": "2"},
              constraints=[spread("zone", matchLabelKeys=["rev"])])
    incoming = parse_pod(raw)
    on = PodTopologySpread({"defaultingType": "List"}, Handle(Gates()))  # type: ignore[arg-type]
    off = PodTopologySpread({"defaultingType": "List"},
                            Handle(Gates(MatchLabelKeysInPodTopologySpread=False)))  # type: ignore[arg-type]
    # On: only rev=2 pods count (z1: 0, z2: 1) -> placing in z2 gives skew 2.
    assert run_filter(on, cluster, incoming)["b"][0] == "Unschedulable"
    assert run_filter(on, cluster, incoming)["a"][0] == "Success"
    # Off: every app=a pod counts (z1: 2, z2: 1) -> z1 is the one that fails.
    assert run_filter(off, cluster, incoming)["a"][0] == "Unschedulable"
    assert run_filter(off, cluster, incoming)["b"][0] == "Success"


def test_node_inclusion_gate_off_uses_default_policies() -> None:
    nodes = [node("a", {"zone": "z1"}), node("b", {"zone": "z2"}),
             node("c", {"zone": "z3"}, [{"key": "k", "effect": "NoSchedule"}])]
    pods = [pod("p1", {"app": "a"}, "a"), pod("p2", {"app": "a"}, "b")]
    cluster = cluster_of(nodes, pods)
    incoming = parse_pod(pod("in", {"app": "a"},
                             constraints=[spread("zone", nodeTaintsPolicy="Honor")]))
    on = PodTopologySpread({"defaultingType": "List"}, Handle(Gates()))  # type: ignore[arg-type]
    off = PodTopologySpread({"defaultingType": "List"}, Handle(
        Gates(NodeInclusionPolicyInPodTopologySpread=False)))  # type: ignore[arg-type]
    # Honor: tainted z3 is not a domain, min is 1, every node passes.
    assert {v[0] for v in run_filter(on, cluster, incoming).values()} == {"Success"}
    # Gate off: taints ignored, z3 is an empty domain, z1 and z2 fail.
    assert run_filter(off, cluster, incoming)["a"][0] == "Unschedulable"


# --------------------------------------------------------------------------- extensions, clone


def _hard_pod(rng: random.Random) -> PodInfo:
    constraints = [spread("zone", rng.randint(1, 2), selector=_random_selector(rng, empty=False)),
                   spread(LABEL_HOSTNAME, rng.randint(1, 3),
                          selector=_random_selector(rng, empty=False),
                          nodeTaintsPolicy=rng.choice(["Honor", "Ignore"]),
                          nodeAffinityPolicy=rng.choice(["Honor", "Ignore"]))]
    spec: dict[str, Any] = {}
    if rng.random() < 0.5:
        spec["nodeSelector"] = {"disk": "ssd"}
    return parse_pod(pod("in", {"app": rng.choice("abc")}, constraints=constraints, **spec))


def _state(plugin: PodTopologySpread, cluster: ClusterState, incoming: PodInfo
           ) -> tuple[CycleState, PreFilterState]:
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, cluster)
    assert status.ok
    s = state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(s, PreFilterState)
    return state, s


def _snapshot(s: PreFilterState) -> list[dict[str, int]]:
    return [s.domains(i) for i in range(len(s.constraints))]


@pytest.mark.parametrize("seed", range(20))
def test_add_and_remove_pod_match_state_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = random_objects(rng, terminating=0.0)
    plugin = PodTopologySpread({"defaultingType": "List"})
    incoming = _hard_pod(rng)
    base = cluster_of(nodes, pods)
    state, s = _state(plugin, base, incoming)
    before = _snapshot(s)

    target = rng.choice(nodes)["metadata"]["name"]
    extra = pod("extra", {"app": rng.choice("abc"), "tier": rng.choice("xy")}, target)
    grown = cluster_of(nodes, [*pods, extra])
    slot = grown.slot_of[target]
    added = state.clone()
    assert plugin.add_pod(added, incoming, parse_pod(extra), slot, grown).ok
    _, scratch = _state(plugin, grown, incoming)
    assert _snapshot(added.read(PRE_FILTER_STATE_KEY)) == _snapshot(scratch)
    assert run_filter(plugin, grown, incoming, added) == run_filter(plugin, grown, incoming)

    # Removing it again restores the original counts.
    assert plugin.remove_pod(added, incoming, parse_pod(extra), slot, base).ok
    assert _snapshot(added.read(PRE_FILTER_STATE_KEY)) == before

    # Removing an existing pod matches a cluster built without it.
    victim = rng.choice(pods)
    shrunk = cluster_of(nodes, [p for p in pods if p is not victim])
    removed = state.clone()
    victim_slot = base.slot_of[victim["spec"]["nodeName"]]
    assert plugin.remove_pod(removed, incoming, parse_pod(victim), victim_slot, shrunk).ok
    _, scratch = _state(plugin, shrunk, incoming)
    assert _snapshot(removed.read(PRE_FILTER_STATE_KEY)) == _snapshot(scratch)
    assert _snapshot(s) == before  # the original state was never touched


def test_add_pod_ignores_other_namespaces_and_keyless_nodes() -> None:
    cluster = cluster_of([node("a", {"zone": "z1"}), node("b", {})],
                         [pod("p1", {"app": "a"}, "a")])
    incoming = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone")]))
    plugin = PodTopologySpread({"defaultingType": "List"})
    state, s = _state(plugin, cluster, incoming)
    other = parse_pod(pod("x", {"app": "a"}, "a", namespace="other"))
    plugin.add_pod(state, incoming, other, cluster.slot_of["a"], cluster)
    keyless = parse_pod(pod("y", {"app": "a"}, "b"))
    plugin.add_pod(state, incoming, keyless, cluster.slot_of["b"], cluster)
    assert s.domains(0) == {"z1": 1}


def test_clone_is_independent() -> None:
    cluster = cluster_of([node("a", {"zone": "z1"}), node("b", {"zone": "z2"})],
                         [pod("p1", {"app": "a"}, "a")])
    incoming = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone")]))
    plugin = PodTopologySpread({"defaultingType": "List"})
    state, s = _state(plugin, cluster, incoming)
    copy = state.clone()
    cloned = copy.read(PRE_FILTER_STATE_KEY)
    assert cloned is not s
    plugin.add_pod(copy, incoming, parse_pod(pod("x", {"app": "a"}, "b")),
                   cluster.slot_of["b"], cluster)
    plugin.add_pod(copy, incoming, parse_pod(pod("y", {"app": "a"}, "b")),
                   cluster.slot_of["b"], cluster)
    assert s.domains(0) == {"z1": 1, "z2": 0}
    assert cloned.domains(0) == {"z1": 1, "z2": 2}
    assert run_filter(plugin, cluster, incoming, state) == {
        "a": ("Unschedulable", (REASON_CONSTRAINTS_NOT_MATCH,)), "b": ("Success", ())}
    assert run_filter(plugin, cluster, incoming, copy)["b"][0] == "Unschedulable"
    # And the other way round: changing the original leaves the clone alone.
    plugin.remove_pod(state, incoming, parse_pod(pod("p1", {"app": "a"}, "a")),
                      cluster.slot_of["a"], cluster)
    assert cloned.domains(0) == {"z1": 1, "z2": 2}


# --------------------------------------------------------------------------- naive reference

ZONES = ("z1", "z2", "z3", "")
RACKS = ("r1", "r2", "r3", "r4", "r5")


def _random_selector(rng: random.Random, empty: bool = True) -> dict[str, Any] | None:
    kind = rng.randrange(7 if empty else 5)
    if kind == 0:
        return {"matchLabels": {"app": rng.choice("abc")}}
    if kind == 1:
        return {"matchExpressions": [{"key": "app", "operator": "In",
                                      "values": rng.sample(["a", "b", "c"], 2)}]}
    if kind == 2:
        return {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    if kind == 3:
        return {"matchLabels": {"app": rng.choice("abc")},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}
    if kind == 4:
        return {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["c"]}]}
    return {} if kind == 5 else None


def random_objects(rng: random.Random, terminating: float = 0.1
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = []
    for i in range(rng.randint(4, 40)):
        labels = {}
        if rng.random() < 0.9:
            labels[LABEL_HOSTNAME] = f"n{i}"
        zone = rng.choice(ZONES)
        if zone or rng.random() < 0.3:
            labels[LABEL_ZONE] = zone
            labels["zone"] = zone
        if rng.random() < 0.8:
            labels["rack"] = rng.choice(RACKS)
        if rng.random() < 0.7:
            labels["disk"] = "ssd"
        taints = ([{"key": "dedicated", "value": "x", "effect": rng.choice(
            ["NoSchedule", "NoExecute", "PreferNoSchedule"])}] if rng.random() < 0.25 else [])
        nodes.append(node(f"n{i}", labels, taints))
    pods = []
    for i in range(rng.randint(0, 6 * len(nodes))):
        labels = {"app": rng.choice("abc")}
        if rng.random() < 0.5:
            labels["tier"] = rng.choice("xy")
        pods.append(pod(f"p{i}", labels, rng.choice(nodes)["metadata"]["name"],
                        namespace=rng.choice(["default", "default", "other"]),
                        terminating=rng.random() < terminating))
    return nodes, pods


def random_incoming(rng: random.Random) -> dict[str, Any]:
    constraints = []
    for _ in range(rng.randint(0, 3)):
        action = rng.choice(["DoNotSchedule", "ScheduleAnyway"])
        extra: dict[str, Any] = {}
        if action == "DoNotSchedule" and rng.random() < 0.3:
            extra["minDomains"] = rng.randint(1, 6)
        if rng.random() < 0.3:
            extra["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.3:
            extra["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.2:
            extra["matchLabelKeys"] = ["tier"]
        key = rng.choice([LABEL_HOSTNAME, "zone", LABEL_ZONE, "rack"])
        constraints.append(spread(key, rng.randint(1, 4), action, _random_selector(rng), **extra))
    labels = {"app": rng.choice("abc")}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice("xy")
    spec: dict[str, Any] = {}
    if rng.random() < 0.4:
        spec["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.3:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "rack", "operator": "NotIn", "values": ["r1"]}]}]}}}
    if rng.random() < 0.4:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    return pod("incoming", labels, constraints=constraints, **spec)


def _policies_pass(c: SpreadConstraint, incoming: PodInfo, cluster: ClusterState, slot: int
                   ) -> bool:
    """``matchNodeInclusionPolicies`` for one node."""
    info = cluster.node(slot)
    if c.node_affinity_policy == "Honor":
        if any(info.labels.get(k) != v for k, v in incoming.node_selector.items()):
            return False
        required = incoming.required_node_affinity
        if required is not None and not required.matches(info.labels, info.name):
            return False
    return not (c.node_taints_policy == "Honor"
                and untolerated_taint(info.taints, incoming.tolerations) is not None)


def _count(cluster: ClusterState, slot: int, selector: LabelSelector, namespace: str) -> int:
    """``countPodsMatchSelector`` (v1.34, with the ``selector.Empty()`` short-cut)."""
    if selector.empty:
        return 0
    return sum(1 for p in cluster.pods_on[slot].values()
               if not p.terminating and p.namespace == namespace and selector.matches(p.labels))


def naive_filter(constraints: tuple[SpreadConstraint, ...], incoming: PodInfo,
                 cluster: ClusterState) -> dict[str, str]:
    matches: list[dict[str, int]] = [{} for _ in constraints]
    for slot in cluster.order:
        labels = cluster.node(slot).labels
        if not all(c.topology_key in labels for c in constraints):
            continue
        for i, c in enumerate(constraints):
            if _policies_pass(c, incoming, cluster, slot):
                value = labels[c.topology_key]
                matches[i][value] = (matches[i].get(value, 0)
                                     + _count(cluster, slot, c.selector, incoming.namespace))
    result = {}
    for slot in cluster.order:
        info = cluster.node(slot)
        result[info.name] = "Success"
        for i, c in enumerate(constraints):
            if c.topology_key not in info.labels:
                result[info.name] = "UnschedulableAndUnresolvable"
                break
            low = min(matches[i].values(), default=2**31 - 1)
            if len(matches[i]) < c.min_domains:
                low = 0
            own = 1 if c.selector.matches(incoming.labels) else 0
            if matches[i].get(info.labels[c.topology_key], 0) + own - low > c.max_skew:
                result[info.name] = "Unschedulable"
                break
    return result


def _go_round(value: float) -> int:
    return int(value + 0.5) if value - int(value) >= 0.5 else int(value)


def naive_score(constraints: tuple[SpreadConstraint, ...], require_all: bool,
                incoming: PodInfo, cluster: ClusterState, feasible: list[int]
                ) -> dict[str, int]:
    import math

    keys = [c.topology_key for c in constraints]
    ignored = {s for s in feasible if require_all
               and not all(k in cluster.node(s).labels for k in keys)}
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for s in feasible:
        if s in ignored:
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != LABEL_HOSTNAME:
                counts[i].setdefault(cluster.node(s).labels.get(c.topology_key, ""), 0)
    weights = [math.log((len(feasible) - len(ignored) if c.topology_key == LABEL_HOSTNAME
                         else len(counts[i])) + 2) for i, c in enumerate(constraints)]
    for slot in cluster.order:
        labels = cluster.node(slot).labels
        if require_all and not all(k in labels for k in keys):
            continue
        for i, c in enumerate(constraints):
            if not _policies_pass(c, incoming, cluster, slot):
                continue
            value = labels.get(c.topology_key, "")
            if value in counts[i]:
                counts[i][value] += _count(cluster, slot, c.selector, incoming.namespace)
    raw: dict[int, int] = {}
    for s in feasible:
        if s in ignored:
            raw[s] = 0
            continue
        total = 0.0
        labels = cluster.node(s).labels
        for i, c in enumerate(constraints):
            if c.topology_key in labels:
                cnt = (_count(cluster, s, c.selector, incoming.namespace)
                       if c.topology_key == LABEL_HOSTNAME else counts[i][labels[c.topology_key]])
                total += float(cnt) * weights[i] + float(c.max_skew - 1)
        raw[s] = _go_round(total)
    valid = [raw[s] for s in feasible if s not in ignored]
    low, high = min(valid, default=2**63 - 1), max([0, *valid])
    final = {}
    for s in feasible:
        name = cluster.node(s).name
        if s in ignored:
            final[name] = 0
        elif high == 0:
            final[name] = 100
        else:
            final[name] = 100 * (high + low - raw[s]) // high
    return final


def score_vectorised(plugin: PodTopologySpread, cluster: ClusterState, incoming: PodInfo,
                     slots: np.ndarray) -> dict[str, int] | None:
    state = CycleState()
    status = plugin.pre_score(state, incoming, cluster, slots)
    if status.code == Code.SKIP:
        return None
    assert status.ok, status
    scores = plugin.score(state, incoming, cluster, slots)
    final = plugin.normalize(state, incoming, slots, scores)
    assert final is not None
    return {cluster.node(int(s)).name: int(v) for s, v in zip(slots, final, strict=True)}


def _random_cluster(rng: random.Random) -> tuple[ClusterState, list[dict[str, Any]]]:
    nodes, pods = random_objects(rng)
    services = [{"kind": "Service", "metadata": {"name": f"s{i}", "namespace": "default"},
                 "spec": {"selector": {"app": app}}} for i, app in enumerate("ab")]
    cluster = cluster_of(nodes, pods, services)
    if len(nodes) > 2 and rng.random() < 0.5:  # a removed node keeps its pods but leaves
        cluster.remove_node(rng.choice(nodes)["metadata"]["name"])
    if rng.random() < 0.3:  # a pod bound to a node the cluster does not know yet
        cluster.add_pod(parse_pod(pod("ghost", {"app": "a"}, "unknown-node")))
    return cluster, nodes


@pytest.mark.parametrize("seed", range(60))
def test_vectorised_matches_node_by_node_reference(seed: int) -> None:
    rng = random.Random(1000 + seed)
    cluster, _ = _random_cluster(rng)
    incoming = parse_pod(random_incoming(rng))
    defaulting = rng.choice(["System", "List"])
    args: dict[str, Any] = {"defaultingType": defaulting}
    if defaulting == "List" and rng.random() < 0.5:
        args["defaultConstraints"] = [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway"}]
    plugin = PodTopologySpread(args)

    hard = plugin.constraints(incoming, cluster, "DoNotSchedule")
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, cluster)
    assert (status.code == Code.SKIP) == (not hard)
    if hard:
        got = {name: code for name, (code, _) in
               run_filter(plugin, cluster, incoming, state).items()}
        assert got == naive_filter(hard, incoming, cluster)

    order = list(cluster.order)
    feasible = sorted(rng.sample(order, rng.randint(1, len(order))))
    soft = plugin.constraints(incoming, cluster, "ScheduleAnyway")
    got_scores = score_vectorised(plugin, cluster, incoming, np.asarray(feasible, np.int64))
    assert (got_scores is None) == (not soft)
    if soft:
        require_all = bool(incoming.spread_constraints) or defaulting != "System"
        assert got_scores == naive_score(soft, require_all, incoming, cluster, feasible)


def test_counting_skips_terminating_pods_other_namespaces_and_empty_selectors() -> None:
    cluster = cluster_of(
        [node("a", {"zone": "z1"}), node("b", {"zone": "z2"})],
        [pod("p1", {"app": "a"}, "a", terminating=True), pod("p2", {"app": "a"}, "a", "other"),
         pod("p3", {"app": "a"}, "b"), pod("p4", {"app": "a"}, "b")])
    plugin = PodTopologySpread({"defaultingType": "List"})
    incoming = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone")]))
    _, s = _state(plugin, cluster, incoming)
    assert s.domains(0) == {"z1": 0, "z2": 2}
    # v1.34's countPodsMatchSelector returns 0 for a selector without requirements.
    everything = parse_pod(pod("in", {"app": "a"}, constraints=[spread("zone", selector={})]))
    _, s = _state(plugin, cluster, everything)
    assert s.domains(0) == {"z1": 0, "z2": 0}


def test_large_cluster_is_vectorised() -> None:
    rng = random.Random(7)
    zones = [f"z{i}" for i in range(5)]
    cluster = ClusterState()
    for i in range(2000):
        cluster.add_node(node(f"n{i}", {LABEL_HOSTNAME: f"n{i}", "zone": zones[i % 5]}))
    for i in range(6000):
        target = f"n{rng.randrange(2000)}"
        cluster.add_pod(parse_pod(pod(f"p{i}", {"app": rng.choice("ab")}, target)))
    incoming = parse_pod(pod("in", {"app": "a"}, constraints=[
        spread("zone", 1), spread(LABEL_HOSTNAME, 1, "ScheduleAnyway")]))
    plugin = PodTopologySpread({})
    state = CycleState()
    assert plugin.pre_filter(state, incoming, cluster)[1].ok
    verdicts = plugin.filter(state, incoming, cluster, cluster.order_array)
    assert len(verdicts.codes) == 2000
    scores = score_vectorised(plugin, cluster, incoming, cluster.order_array)
    assert scores is not None and max(scores.values()) == 100
