"""One scheduling cycle: node order, sampling, filtering, scoring, ties and the FitError text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.diagnosis import Diagnosis, fit_error_message
from kaudit.framework.status import Code, Status
from kaudit.scheduler.build import build_scheduler, load
from kaudit.scheduler.schedule import Scheduler, num_feasible_nodes_to_find
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import V1_34, gates_at


def scheduler(tmp_path: Path | None = None, config: str | None = None, seed: int = 0
              ) -> Scheduler:
    path = None
    if config is not None:
        assert tmp_path is not None
        path = tmp_path / "config.yaml"
        path.write_text(config)
    loaded, registry = load(path, gates_at(V1_34))  # the upstream examples are v1.34's
    return build_scheduler(loaded, registry, seed=seed)


def cluster_of(*nodes: dict, pods: tuple[dict, ...] = ()) -> ClusterState:
    cluster = ClusterState()
    for node in nodes:
        cluster.add_node(node)
    for pod in pods:
        cluster.add_pod(pod_info(cluster, pod))
    return cluster


def node(name: str, zone: str = "z1", cpu: str = "4", memory: str = "8Gi") -> dict:
    return make_node(name).zone(zone, "r").capacity(cpu=cpu, memory=memory).obj()


@pytest.mark.parametrize(("nodes", "percentage", "expected"), [
    (50, None, 50), (99, None, 99), (100, None, 100), (1000, None, 420), (5000, None, 500),
    (6000, None, 300), (1000, 10, 100), (1000, 50, 500), (20000, None, 1000),
])
def test_num_feasible_nodes_to_find(nodes: int, percentage: int | None, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, 0, nodes) == expected


def test_node_tree_interleaves_zones() -> None:
    cluster = cluster_of(node("a1", "A"), node("a2", "A"), node("a3", "A"), node("b1", "B"))
    assert cluster.names(cluster.order) == ["a1", "b1", "a2", "a3"]
    cluster.remove_node("b1")
    assert cluster.names(cluster.order) == ["a1", "a2", "a3"]
    cluster.add_node(node("b1", "B"))
    assert cluster.names(cluster.order) == ["a1", "b1", "a2", "a3"]


def test_fit_error_messages_match_upstream_examples() -> None:
    diagnosis = Diagnosis(node_statuses={
        "n1": Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)"),
        "n2": Status.of(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory"),
        "n3": Status.of(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory"),
    }, post_filter_message="preemption: 0/3 nodes are available: 3 Preemption is not helpful "
                           "for scheduling.")
    assert fit_error_message(3, diagnosis) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu, "
        "2 Insufficient memory. preemption: 0/3 nodes are available: 3 Preemption is not "
        "helpful for scheduling.")
    prefilter = Diagnosis(pre_filter_message="pod has unbound immediate PersistentVolumeClaims",
                          post_filter_message="preemption: 0/3 nodes are available: 3 "
                                              "Preemption is not helpful for scheduling.")
    assert fit_error_message(3, prefilter) == (
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    counts = Diagnosis(node_statuses={f"n{i}": Status.of(Code.UNSCHEDULABLE, "x")
                                      for i in range(10)} | {"m": Status.of(Code.UNSCHEDULABLE,
                                                                             "y")})
    counts.node_statuses.update({"m2": Status.of(Code.UNSCHEDULABLE, "y")})
    assert fit_error_message(12, counts) == "0/12 nodes are available: 10 x, 2 y."


def test_unschedulable_pod_gets_upstreams_message() -> None:
    busy = tuple(make_pod(f"busy{i}").node(f"busy{i}").req(cpu="1").obj() for i in (1, 2))
    cluster = cluster_of(
        make_node("tainted").capacity(cpu="4", memory="8Gi").taint("k", "v", "NoSchedule").obj(),
        node("busy1", cpu="2"), node("busy2", cpu="2"), node("small", cpu="1"), pods=busy)
    pod = pod_info(cluster, make_pod("big").req(cpu="2", memory="1Gi").obj())
    attempt = scheduler().schedule(cluster, pod)
    assert attempt.selected is None
    # The busy nodes are preemption candidates (Unschedulable: 2 cores would fit once their
    # pod left) but hold no lower-priority victims; the tainted node, and the small one whose
    # whole allocatable is below the request, are UnschedulableAndUnresolvable: never tried.
    assert attempt.message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/4 nodes are available: 2 No preemption "
        "victims found for incoming pod, 2 Preemption is not helpful for scheduling.")


def test_request_above_allocatable_is_unresolvable() -> None:
    """``fitsRequest`` marks a request larger than the node's whole allocatable Unresolvable
    (``noderesources/fit.go``, v1.34); "Too many pods" never is."""
    full = tuple(make_pod(f"p{i}").node("n").req(cpu="1").obj() for i in range(2))
    cluster = cluster_of(make_node("n").capacity(cpu="4", memory="1Gi", pods="2").obj(),
                         pods=full)
    fit = scheduler().frameworks["default-scheduler"].instances["NodeResourcesFit"]
    slots = np.asarray([cluster.slot_of["n"]])

    def verdict(**requests: str) -> tuple[Code, tuple[str, ...]]:
        status = fit.filter(None, pod_info(cluster, make_pod("x").req(**requests).obj()),
                            cluster, slots).status(0)
        return status.code, status.reasons

    assert verdict(cpu="3") == (Code.UNSCHEDULABLE, ("Too many pods", "Insufficient cpu"))
    assert verdict(cpu="5") == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                ("Too many pods", "Insufficient cpu"))
    assert verdict(memory="2Gi")[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdict(**{"example.com/gpu": "1"}) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Too many pods", "Insufficient example.com/gpu"))
    assert verdict(cpu="1") == (Code.UNSCHEDULABLE, ("Too many pods",))


def test_single_feasible_node_is_not_scored() -> None:
    cluster = cluster_of(node("fits", cpu="4"), node("small", cpu="1"))
    pod = pod_info(cluster, make_pod("p").req(cpu="2").obj())
    attempt = scheduler().schedule(cluster, pod)
    assert attempt.selected == "fits" and attempt.scores is None
    whatif = scheduler().schedule(cluster, pod, exhaustive=True)
    assert whatif.selected == "fits" and whatif.scores is not None


def test_ties_are_seeded_and_recorded() -> None:
    cluster = cluster_of(*(node(f"n{i}") for i in range(6)))
    pod = pod_info(cluster, make_pod("p").req(cpu="1").obj())
    picks = {scheduler(seed=s).schedule(cluster, pod).selected for s in range(20)}
    assert len(picks) > 1
    first = scheduler(seed=7).schedule(cluster, pod)
    again = scheduler(seed=7).schedule(cluster, pod)
    assert first.selected == again.selected
    assert sorted(first.tied) == [f"n{i}" for i in range(6)]


def test_other_tie_breaks_take_the_first_name_or_a_seeded_order_of_names() -> None:
    cluster = cluster_of(*(node(f"n{i}") for i in (3, 1, 5, 0, 4, 2)))
    pod = pod_info(cluster, make_pod("p").req(cpu="1").obj())
    loaded, registry = load()

    def pick(tie_break: str, seed: int) -> str | None:
        attempt = build_scheduler(loaded, registry, seed=seed,
                                  tie_break=tie_break).schedule(cluster, pod)
        assert attempt.tie_break == tie_break
        return attempt.selected

    assert {pick("name", s) for s in range(10)} == {"n0"}
    shuffled = [pick("shuffled-name", s) for s in range(20)]
    assert len(set(shuffled)) > 1  # the order depends on the seed ...
    assert shuffled == [pick("shuffled-name", s) for s in range(20)]  # ... and only on it
    with pytest.raises(ValueError, match="tie_break must be one of"):
        build_scheduler(loaded, registry, tie_break="coin")


def test_rotation_and_sampling_on_large_clusters() -> None:
    cluster = cluster_of(*(node(f"n{i:04d}", zone=f"z{i % 3}") for i in range(1000)))
    sched = scheduler()
    pod = pod_info(cluster, make_pod("p").req(cpu="1").obj())
    first = sched.schedule(cluster, pod)
    assert first.evaluated == 420 and first.feasible == 420
    assert sched.next_start_node_index == 420
    second = sched.schedule(cluster, pod)
    assert int(second.filters.slots[0]) == cluster.order[420]
    assert sched.next_start_node_index == 840


def test_prefilter_result_restricts_nodes_and_names_absent_ones() -> None:
    cluster = cluster_of(node("a", cpu="1"), node("b"), node("c"))
    pod_obj = make_pod("p").req(cpu="2").obj()
    pod_obj["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}]}}}
    attempt = scheduler().schedule(cluster, pod_info(cluster, pod_obj))
    assert attempt.evaluated == 1
    assert attempt.message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) "
        "[NodeAffinity].")


def test_nominated_pods_hold_their_room() -> None:
    cluster = cluster_of(node("only", cpu="2"))
    sched = scheduler()
    waiting = pod_info(cluster, make_pod("high").req(cpu="2").priority(1000).obj())
    pod = pod_info(cluster, make_pod("low").req(cpu="1").priority(10).obj())

    def nominator(name: str) -> list:
        return [waiting] if name == "only" else []

    blocked = sched.schedule(cluster, pod, nominator=nominator)
    assert blocked.selected is None and "1 Insufficient cpu" in blocked.message
    free = sched.schedule(cluster, pod)
    assert free.selected == "only"


def test_preemption_prefers_nodes_without_pdb_violations() -> None:
    guarded = [make_pod(f"g{i}", "batch").req(cpu="1").labels(app="guarded").priority(1)
               .node("n1").obj() for i in range(2)]
    loose = [make_pod(f"l{i}", "batch").req(cpu="1").labels(app="loose").priority(1)
             .node("n2").obj() for i in range(2)]
    cluster = cluster_of(node("n1", cpu="2"), node("n2", cpu="2"), pods=(*guarded, *loose))
    cluster.set_object("PodDisruptionBudget", {
        "kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "batch"},
        "spec": {"selector": {"matchLabels": {"app": "guarded"}}},
        "status": {"disruptionsAllowed": 0}})
    preemptor = pod_info(cluster, make_pod("vip").req(cpu="2").priority(100).obj())
    attempt = scheduler().schedule(cluster, preemptor)
    assert attempt.selected is None
    details = attempt.post_filter_result.details
    assert details.chosen.node == "n2"
    assert sorted(v.name for v in details.chosen.victims) == ["l0", "l1"]
    assert details.chosen.pdb_violations == 0
    assert attempt.post_filter_result.nominated_node_name == "n2"


def test_preemption_reprieves_what_it_can() -> None:
    pods = [make_pod("keep", "d").req(cpu="1").priority(5).node("n1").obj(),
            make_pod("evict", "d").req(cpu="2").priority(1).node("n1").obj()]
    cluster = cluster_of(node("n1", cpu="3"), pods=tuple(pods))
    preemptor = pod_info(cluster, make_pod("vip").req(cpu="2").priority(100).obj())
    attempt = scheduler().schedule(cluster, preemptor)
    assert [v.name for v in attempt.post_filter_result.details.chosen.victims] == ["evict"]


def test_never_preempting_pods_say_so() -> None:
    cluster = cluster_of(node("n1", cpu="1"),
                         pods=(make_pod("x").req(cpu="1").priority(1).node("n1").obj(),))
    obj = make_pod("vip").req(cpu="1").priority(100).obj()
    obj["spec"]["preemptionPolicy"] = "Never"
    attempt = scheduler().schedule(cluster, pod_info(cluster, obj))
    assert attempt.message.endswith(
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.")


def test_scores_are_weighted_and_explained() -> None:
    cluster = cluster_of(node("busy", cpu="4"), node("idle", cpu="4"),
                         pods=(make_pod("x").req(cpu="3").node("busy").obj(),))
    pod = pod_info(cluster, make_pod("p").req(cpu="500m", memory="1Gi").obj())
    attempt = scheduler().schedule(cluster, pod)
    assert attempt.selected == "idle"
    scores = attempt.scores
    assert scores is not None
    names = cluster.names(scores.slots.tolist())
    fit = dict(zip(names, scores.normalized["NodeResourcesFit"].tolist(), strict=True))
    assert fit["idle"] > fit["busy"]
    assert np.array_equal(scores.total, sum(scores.normalized[p] * scores.weights[p]
                                            for p in scores.normalized))


def test_profiles_by_scheduler_name(tmp_path: Path) -> None:
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packer
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""
    cluster = cluster_of(node("busy", cpu="4"), node("idle", cpu="4"),
                         pods=(make_pod("x").req(cpu="3").node("busy").obj(),))
    sched = scheduler(tmp_path, config)
    packed = pod_info(cluster, make_pod("p").req(cpu="500m").scheduler("bin-packer").obj())
    spread = pod_info(cluster, make_pod("q").req(cpu="500m").obj())
    assert sched.schedule(cluster, packed).selected == "busy"
    assert sched.schedule(cluster, spread).selected == "idle"
