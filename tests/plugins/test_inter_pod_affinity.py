"""InterPodAffinity beyond upstream's tables: PreFilter extensions, clone, and the vectorised
Filter/Score checked against a plain per-node reading of upstream's rules on random clusters."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.status import Code
from kaudit.model.pod import AffinityTerm, PodInfo, parse_pod
from kaudit.plugins.inter_pod_affinity import (
    PRE_FILTER_STATE_KEY,
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
    PreFilterState,
)
from kaudit.plugins.inter_pod_affinity.common import pod_index
from tests.conftest import DATA

KEYS = ("zone", "rack", "kubernetes.io/hostname", "absent")
NAMESPACES = {"ns-a": {"team": "x"}, "ns-b": {"team": "y"}, "ns-c": {}}
POD_NAMESPACES = ("ns-a", "ns-b", "ns-c", "ns-ghost")  # ns-ghost has no Namespace object
APPS = ("a", "b", "c")
Json = dict[str, Any]


# --------------------------------------------------------------------------- generators

def _selector(rng: random.Random) -> Json:
    choice = rng.randrange(6)
    if choice == 0:
        return {}
    if choice == 1:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    operator = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
    key = rng.choice(["app", "tier"])
    expression: Json = {"key": key, "operator": operator}
    if operator in ("In", "NotIn"):
        expression["values"] = rng.sample(APPS if key == "app" else ["1", "2"], 1)
    return {"matchExpressions": [expression]}


def _term(rng: random.Random) -> Json:
    term: Json = {"labelSelector": _selector(rng), "topologyKey": rng.choice(KEYS)}
    namespaces = rng.randrange(5)
    if namespaces == 1:
        term["namespaces"] = rng.sample(POD_NAMESPACES, rng.randint(1, 2))
    elif namespaces == 2:
        term["namespaceSelector"] = {}
    elif namespaces == 3:
        term["namespaceSelector"] = {"matchLabels": {"team": rng.choice("xy")}}
    elif namespaces == 4:
        term["namespaceSelector"] = {"matchExpressions": [{"key": "team",
                                                           "operator": "DoesNotExist"}]}
    return term


def _affinity(rng: random.Random, chance: float) -> Json:
    affinity: Json = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section: Json = {}
        if rng.random() < chance:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _term(rng) for _ in range(rng.randint(1, 2))]
        if rng.random() < chance:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng)}
                for _ in range(rng.randint(1, 2))]
        if section:
            affinity[kind] = section
    return affinity


def make_pod(rng: random.Random, name: str, node: str = "", chance: float = 0.3) -> PodInfo:
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice("12")
    spec: Json = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    affinity = _affinity(rng, chance)
    if affinity:
        spec["affinity"] = affinity
    metadata: Json = {"name": name, "namespace": rng.choice(POD_NAMESPACES), "uid": name,
                      "labels": labels}
    if node and rng.random() < 0.1:  # terminating: upstream's NodeInfo still lists it
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return parse_pod({"metadata": metadata, "spec": spec})


def _replica(pod: PodInfo, name: str, node: str) -> PodInfo:
    """Another pod of ``pod``'s workload: the same labels and terms, elsewhere."""
    obj = pod.obj
    return parse_pod({**obj, "metadata": {**obj["metadata"], "name": name, "uid": name},
                      "spec": {**obj["spec"], "nodeName": node}})


def make_cluster(rng: random.Random, nodes: int = 12, pods: int = 30) -> ClusterState:
    cluster = ClusterState()
    for name, labels in NAMESPACES.items():
        cluster.set_object("Namespace", {"metadata": {"name": name, "labels": labels}})
    for i in range(nodes):
        labels = {"kubernetes.io/hostname": f"node-{i}"}
        if rng.random() < 0.8:
            labels["zone"] = f"z{rng.randrange(3)}"
        if rng.random() < 0.7:
            labels["rack"] = f"r{rng.randrange(4)}"
        cluster.add_node({"metadata": {"name": f"node-{i}", "labels": labels},
                          "status": {"allocatable": {"cpu": "8", "pods": "110"}}})
    previous: PodInfo | None = None
    for i in range(pods):
        node = f"node-{rng.randrange(nodes)}" if rng.random() < 0.9 else "ghost-node"
        if previous is not None and rng.random() < 0.3:
            previous = _replica(previous, f"pod-{i}", node)
        else:
            previous = make_pod(rng, f"pod-{i}", node)
        cluster.add_pod(previous)
    if rng.random() < 0.5:
        cluster.remove_node(f"node-{rng.randrange(nodes)}")  # its pods stay, unseen
    return cluster


# --------------------------------------------------------------------------- reference

def _incoming_matches(term: AffinityTerm, other: PodInfo, cluster: ClusterState) -> bool:
    """An incoming pod's term, its namespaceSelector resolved against existing namespaces;
    before v1.37 (the release these tests run as) the selector also stays on the term and is
    tried on an empty label set (upstream's value receiver in
    ``mergeAffinityTermNamespacesIfNotEmpty``, checked against its own cycle in
    ``tests/oracle/test_namespace_selectors.py``)."""
    selector = term.namespace_selector
    in_namespace = (other.namespace in term.namespaces or selector.empty
                    or (not selector.nothing and other.namespace in cluster.namespaces
                        and selector.matches(cluster.namespaces[other.namespace]))
                    or (not selector.nothing and selector.matches({})))
    return in_namespace and term.selector.matches(other.labels)


def _existing(cluster: ClusterState) -> list[tuple[Mapping[str, str], PodInfo]]:
    return [(cluster.node(slot).labels, pod) for slot in cluster.order
            for pod in cluster.pods_on[slot].values()]


def _same_domain(key: str, a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    return key in a and key in b and a[key] == b[key]


def naive_filter(cluster: ClusterState, pod: PodInfo, slot: int) -> tuple[str, ...]:
    """Upstream's Filter for one node, by looking at every existing pod."""
    labels = cluster.node(slot).labels
    existing = _existing(cluster)
    terms = pod.required_affinity
    if terms:
        def all_match(other: PodInfo) -> bool:
            return all(_incoming_matches(t, other, cluster) for t in terms)
        if any(t.topology_key not in labels for t in terms):
            return (REASON_AFFINITY,)
        satisfied = all(any(_same_domain(t.topology_key, labels, node) and all_match(other)
                            for node, other in existing) for t in terms)
        anywhere = any(all_match(other) and any(t.topology_key in node for t in terms)
                       for node, other in existing)
        if not satisfied and (anywhere or not all_match(pod)):
            return (REASON_AFFINITY,)
    for term in pod.required_anti_affinity:
        if any(_same_domain(term.topology_key, labels, node)
               and _incoming_matches(term, other, cluster) for node, other in existing):
            return (REASON_ANTI_AFFINITY,)
    namespace_labels = cluster.namespace_labels(pod.namespace)
    for node, other in existing:
        for term in other.required_anti_affinity:
            if (_same_domain(term.topology_key, labels, node)
                    and term.matches(pod, namespace_labels)):
                return (REASON_EXISTING_ANTI_AFFINITY,)
    return ()


def naive_scores(cluster: ClusterState, pod: PodInfo, slots: list[int], hard: int
                 ) -> list[int] | None:
    """Upstream's PreScore/Score/NormalizeScore; None where PreScore skips."""
    score: dict[str, dict[str, int]] = {}
    touched = False

    def add(key: str, node: Mapping[str, str], weight: int) -> None:
        nonlocal touched
        if key in node:
            touched = True
            values = score.setdefault(key, {})
            values[node[key]] = values.get(node[key], 0) + weight

    namespace_labels = cluster.namespace_labels(pod.namespace)
    for node, other in _existing(cluster):
        for term in pod.preferred_affinity:
            if _incoming_matches(term, other, cluster):
                add(term.topology_key, node, term.weight)
        for term in pod.preferred_anti_affinity:
            if _incoming_matches(term, other, cluster):
                add(term.topology_key, node, -term.weight)
        for term in other.required_affinity if hard > 0 else ():
            if term.matches(pod, namespace_labels):
                add(term.topology_key, node, hard)
        for term in other.preferred_affinity:
            if term.matches(pod, namespace_labels):
                add(term.topology_key, node, term.weight)
        for term in other.preferred_anti_affinity:
            if term.matches(pod, namespace_labels):
                add(term.topology_key, node, -term.weight)
    if not touched:
        return None
    if not slots:
        return []
    raw = []
    for slot in slots:
        labels = cluster.node(slot).labels
        raw.append(sum(values.get(labels[key], 0) for key, values in score.items()
                       if key in labels))
    low, high = min(raw), max(raw)
    if high == low:
        return [0] * len(raw)
    return [int(100.0 * ((r - low) / (high - low))) for r in raw]


# --------------------------------------------------------------------------- helpers

def _pre_filter(plugin: InterPodAffinity, pod: PodInfo, cluster: ClusterState
                ) -> tuple[CycleState, Code]:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, cluster)
    return state, status.code


def _counters(state: CycleState) -> tuple[dict[Any, int], ...]:
    prefilter = state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(prefilter, PreFilterState)
    return (prefilter.existing_anti_affinity_counts, prefilter.affinity_counts,
            prefilter.anti_affinity_counts)


def _incoming_with_required_terms(rng: random.Random) -> PodInfo:
    while True:
        pod = make_pod(rng, "incoming", chance=0.7)
        if pod.required_affinity or pod.required_anti_affinity:
            return pod


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize("seed", range(120))
def test_filter_matches_naive_reference(seed: int) -> None:
    rng = random.Random(seed)
    cluster = make_cluster(rng, nodes=rng.randint(1, 14), pods=rng.randint(0, 40))
    pod = make_pod(rng, "incoming", chance=0.6)
    plugin = InterPodAffinity({}, None)
    state, code = _pre_filter(plugin, pod, cluster)
    slots = cluster.order_array
    expected = [naive_filter(cluster, pod, int(s)) for s in slots]
    if code == Code.SKIP:
        assert all(reasons == () for reasons in expected)
        return
    assert code == Code.SUCCESS
    verdicts = plugin.filter(state, pod, cluster, slots)
    got = [verdicts.status(i).reasons for i in range(len(slots))]
    assert got == expected
    for i, reasons in enumerate(expected):
        want = {(): Code.SUCCESS, (REASON_AFFINITY,): Code.UNSCHEDULABLE_AND_UNRESOLVABLE}
        assert verdicts.status(i).code == want.get(reasons, Code.UNSCHEDULABLE)
    # One slot at a time gives the same answers (the harness and preemption do that).
    for i, slot in enumerate(slots.tolist()):
        single = plugin.filter(state, pod, cluster, np.asarray([slot]))
        assert single.status(0).reasons == expected[i]


@pytest.mark.parametrize("seed", range(80))
@pytest.mark.parametrize("hard", [0, 1, 5])
def test_score_matches_naive_reference(seed: int, hard: int) -> None:
    rng = random.Random(seed)
    cluster = make_cluster(rng, nodes=rng.randint(1, 14), pods=rng.randint(0, 40))
    pod = make_pod(rng, "incoming", chance=0.6)
    plugin = InterPodAffinity({"hardPodAffinityWeight": hard}, None)
    slots = [s for s in cluster.order if rng.random() < 0.8]
    state = CycleState()
    status = plugin.pre_score(state, pod, cluster, np.asarray(slots, dtype=np.int64))
    expected = naive_scores(cluster, pod, slots, hard)
    if expected is None:
        assert status.code == Code.SKIP
        return
    assert status.ok
    array = np.asarray(slots, dtype=np.int64)
    raw = plugin.score(state, pod, cluster, array)
    normalized = plugin.normalize(state, pod, array, raw)
    assert (raw if normalized is None else normalized).tolist() == expected


def test_ignore_preferred_terms_of_existing_pods_skips_without_own_preferences() -> None:
    rng = random.Random(7)
    cluster = make_cluster(rng)
    pod = make_pod(rng, "incoming", chance=0.0)
    plugin = InterPodAffinity({"ignorePreferredTermsOfExistingPods": True}, None)
    status = plugin.pre_score(CycleState(), pod, cluster, cluster.order_array)
    assert status.code == Code.SKIP
    assert plugin.pre_score(CycleState(), pod, cluster,
                            np.zeros(0, dtype=np.int64)).code == Code.SKIP


def _upstream_case(name: str) -> tuple[ClusterState, PodInfo, dict[str, Any]]:
    """The cluster, incoming pod and args of a transcribed row of upstream's scoring table."""
    path = DATA / "conformance" / "cases" / "interpodaffinity_scoring.json"
    case = next(c for c in json.loads(path.read_text())["cases"] if c["name"] == name)
    cluster = ClusterState()
    for obj in case["objects"]:
        cluster.set_object(obj["kind"], obj)
    for node in case["nodes"]:
        cluster.add_node(node)
    for pod in case["pods"]:
        cluster.add_pod(parse_pod(pod))
    return cluster, parse_pod(case["pod"]), case["args"]


def test_prescore_on_no_nodes_decides_from_the_snapshot() -> None:
    """Upstream's PreScore never reads the nodes passed in: with none to score it succeeds
    when an existing pod's terms score (its ``topologyScore`` is built from the snapshot)."""
    cluster, pod, args = _upstream_case(
        "TestPreferredAffinity/Do not ignore preferred terms of existing pods")
    plugin = InterPodAffinity(args, None)
    no_nodes = np.zeros(0, dtype=np.int64)
    state = CycleState()
    assert plugin.pre_score(state, pod, cluster, no_nodes).code == Code.SUCCESS
    assert plugin.score(state, pod, cluster, no_nodes).tolist() == []


@pytest.mark.parametrize("seed", range(60))
def test_add_and_remove_pod_equal_counters_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    cluster = make_cluster(rng, nodes=rng.randint(2, 10), pods=rng.randint(0, 30))
    pod = _incoming_with_required_terms(rng)
    plugin = InterPodAffinity({}, None)
    state, code = _pre_filter(plugin, pod, cluster)
    assert code == Code.SUCCESS
    before = copy.deepcopy(_counters(state))
    added = []
    for i in range(rng.randint(1, 4)):
        slot = rng.choice(cluster.order)
        other = make_pod(rng, f"added-{i}", cluster.node(slot).name, chance=0.7)
        cluster.add_pod(other)
        assert plugin.add_pod(state, pod, other, slot, cluster).ok
        added.append((other, slot))
        fresh, _ = _pre_filter(plugin, pod, cluster)
        assert _counters(state) == _counters(fresh)
    for other, slot in reversed(added):
        cluster.remove_pod(other.uid)
        assert plugin.remove_pod(state, pod, other, slot, cluster).ok
    assert _counters(state) == before


def test_clone_is_independent() -> None:
    rng = random.Random(3)
    cluster = make_cluster(rng)
    pod = parse_pod({
        "metadata": {"name": "incoming", "namespace": "ns-a", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c"}], "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "a"}},
                 "topologyKey": "kubernetes.io/hostname"}]}}}})
    plugin = InterPodAffinity({}, None)
    state, code = _pre_filter(plugin, pod, cluster)
    assert code == Code.SUCCESS
    before = copy.deepcopy(_counters(state))
    slot = cluster.order[0]
    clone = state.clone()
    twin = dataclasses.replace(pod, uid="twin", name="twin", node_name=cluster.node(slot).name)
    assert plugin.add_pod(clone, pod, twin, slot, cluster).ok
    assert _counters(state) == before
    assert _counters(clone) != before
    slots = np.asarray([slot])
    assert plugin.filter(clone, pod, cluster, slots).status(0).reasons == (REASON_ANTI_AFFINITY,)
    assert plugin.filter(state, pod, cluster, slots).status(0).reasons == naive_filter(
        cluster, pod, slot)


def test_add_pod_without_prefilter_state_is_an_error() -> None:
    rng = random.Random(4)
    cluster = make_cluster(rng)
    pod = make_pod(rng, "incoming")
    plugin = InterPodAffinity({}, None)
    slot = cluster.order[0]
    assert plugin.add_pod(CycleState(), pod, pod, slot, cluster).code == Code.ERROR
    verdicts = plugin.filter(CycleState(), pod, cluster, np.asarray([slot]))
    assert verdicts.status(0).code == Code.ERROR


def test_invalid_selector_fails_prefilter_and_prescore_with_upstream_text() -> None:
    bad = {"matchExpressions": [{"key": "service", "operator": "In",
                                 "values": ["{{.bad-value.}}"]}]}
    obj = {"metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c"}], "affinity": {"podAffinity": {
               "preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 5, "podAffinityTerm": {"labelSelector": bad,
                                                     "topologyKey": "zone"}}],
               "requiredDuringSchedulingIgnoredDuringExecution": [
                   {"labelSelector": bad, "topologyKey": "zone"}]}}}}
    clean = copy.deepcopy(obj)
    del clean["spec"]["affinity"]
    pod = dataclasses.replace(parse_pod(clean), obj=obj)  # as if parsed leniently
    cluster = make_cluster(random.Random(5))
    plugin = InterPodAffinity({}, None)
    _, status = plugin.pre_filter(CycleState(), pod, cluster)
    detail = ('values[0][service]: Invalid value: "{{.bad-value.}}": a valid label must be an '
              "empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
              "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
              "or '12345', regex used for validation is "
              "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f"parsing pod: [requiredAffinityTerms: {detail}, "
                              f"preferredAffinityTerms: {detail}]",)
    score_status = plugin.pre_score(CycleState(), pod, cluster, cluster.order_array)
    assert score_status.code == Code.ERROR
    assert score_status.message.startswith("failed to parse pod: [requiredAffinityTerms: ")


def test_pods_of_one_workload_share_their_terms_and_the_index_groups_them() -> None:
    rng = random.Random(7)
    first = _incoming_with_required_terms(rng)
    second = _replica(first, "second", "node-1")

    assert all(a is b for a, b in zip(first.required_affinity + first.required_anti_affinity,
                                      second.required_affinity
                                      + second.required_anti_affinity, strict=True))
    cluster = make_cluster(random.Random(1), pods=0)
    for pod in (_replica(first, "one", "node-0"), second):
        cluster.add_pod(pod)
    index = pod_index(cluster)
    for term in first.required_anti_affinity:
        assert index.anti_affinity_terms[term] == [0, 1]


def test_the_term_index_is_rebuilt_only_when_pods_with_terms_or_nodes_change() -> None:
    cluster = make_cluster(random.Random(2))
    index = pod_index(cluster)
    plain = parse_pod({"metadata": {"name": "plain", "namespace": "ns-a", "uid": "plain"},
                       "spec": {"containers": [{"name": "c"}], "nodeName": "node-0"}})
    cluster.add_pod(plain)
    assert pod_index(cluster) is index

    with_terms = _replica(_incoming_with_required_terms(random.Random(3)), "t", "node-0")
    cluster.add_pod(with_terms)
    grown = pod_index(cluster)
    assert grown is not index
    assert with_terms.required_affinity
    assert all(0 in grown.scoring_terms[(0, term)] for term in with_terms.required_affinity)
    cluster.remove_node("node-0")
    assert all(0 not in slots for slots in pod_index(cluster).anti_affinity_terms.values())
