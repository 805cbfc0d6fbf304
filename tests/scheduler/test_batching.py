"""Opportunistic Batching (v1.35): when a pod reuses the previous cycle's scores, and that what
it picks is what scheduling it alone would pick (a node of the top score)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.config import parse_feature_gates
from kaudit.scheduler.batching import MAX_BATCH_AGE_US, sign_pod
from kaudit.scheduler.build import build_scheduler, load
from kaudit.scheduler.schedule import Scheduler
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.versions.v1_35 import V1_35_4

#: PodTopologySpread without default constraints: pods without constraints can be signed.
BATCHABLE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List}
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: STRATEGY
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""


def scheduler_of(tmp_path: Path, gates: str = "", strategy: str = "MostAllocated",
                 config: str | None = BATCHABLE) -> Scheduler:
    path = None
    if config is not None:
        path = tmp_path / "config.yaml"
        path.write_text(config.replace("STRATEGY", strategy))
    loaded, registry = load(path, parse_feature_gates(gates, V1_35_4))
    return build_scheduler(loaded, registry, seed=1)


def small_nodes(count: int) -> ClusterState:
    cluster = ClusterState()
    for i in range(count):
        cluster.add_node(make_node(f"n{i}").zone(f"z{i % 2}", "r")
                         .capacity(cpu="2", memory="4Gi").obj())
    return cluster


def place(cluster: ClusterState, pod: dict, node: str) -> None:
    pod["spec"]["nodeName"] = node
    cluster.add_pod(pod_info(cluster, pod))


def test_the_default_configuration_never_batches(tmp_path: Path) -> None:
    """PodTopologySpread's system default constraints refuse every pod."""
    scheduler = scheduler_of(tmp_path, config=None)
    framework = scheduler.frameworks["default-scheduler"]
    cluster = small_nodes(3)
    assert sign_pod(framework, pod_info(cluster, make_pod("p").req(cpu="1").obj())) is None
    for k in range(6):
        pod = make_pod(f"p{k}").req(cpu="1").obj()
        attempt = scheduler.schedule(cluster, pod_info(cluster, pod), cycle=k + 1)
        assert not attempt.node_hint
        place(cluster, pod, attempt.selected or "")


def test_a_full_node_hands_the_next_pod_the_next_best(tmp_path: Path) -> None:
    scheduler = scheduler_of(tmp_path)
    cluster = small_nodes(4)
    chosen, hints = [], []
    for k in range(8):
        pod = make_pod(f"p{k}").req(cpu="1", memory="1Gi").obj()
        attempt = scheduler.schedule(cluster, pod_info(cluster, pod), cycle=k + 1)
        chosen.append(attempt.selected)
        hints.append(attempt.hint_used)
        place(cluster, pod, attempt.selected or "")
    # Bin packing: two pods fill a node; the pod after a node filled takes the hint.
    assert hints == [False, False, True, False, True, False, True, False]
    assert len(set(chosen)) == 4 and all(chosen.count(n) == 2 for n in set(chosen))


@pytest.mark.parametrize("breaker", ["gate-off", "cycle-gap", "other-pod", "too-old",
                                     "room-left"])
def test_no_hint_without_every_condition(tmp_path: Path, breaker: str) -> None:
    scheduler = scheduler_of(tmp_path, "OpportunisticBatching=false"
                             if breaker == "gate-off" else "")
    cluster = small_nodes(3)
    first = make_pod("p0").req(cpu="2" if breaker != "room-left" else "1", memory="1Gi").obj()
    done = scheduler.schedule(cluster, pod_info(cluster, first), cycle=1, now_us=0)
    place(cluster, first, done.selected or "")
    second = make_pod("p1").req(cpu="2" if breaker != "room-left" else "1", memory="1Gi")
    if breaker == "other-pod":
        second = second.label("app", "other")
    cycle = 3 if breaker == "cycle-gap" else 2
    now = MAX_BATCH_AGE_US + 1 if breaker == "too-old" else MAX_BATCH_AGE_US
    attempt = scheduler.schedule(cluster, pod_info(cluster, second.obj()), cycle=cycle,
                                 now_us=now)
    assert not attempt.hint_used and not attempt.node_hint


def test_the_control_case_takes_the_hint(tmp_path: Path) -> None:
    scheduler = scheduler_of(tmp_path)
    cluster = small_nodes(3)
    first = make_pod("p0").req(cpu="2", memory="1Gi").obj()
    done = scheduler.schedule(cluster, pod_info(cluster, first), cycle=1, now_us=0)
    place(cluster, first, done.selected or "")
    second = make_pod("p1").req(cpu="2", memory="1Gi").obj()
    attempt = scheduler.schedule(cluster, pod_info(cluster, second), cycle=2,
                                 now_us=MAX_BATCH_AGE_US)
    assert attempt.hint_used and attempt.evaluated == 1 and attempt.scores is None


@pytest.mark.parametrize("strategy", ["MostAllocated", "LeastAllocated"])
def test_a_hinted_node_is_one_scheduling_alone_would_pick(tmp_path: Path,
                                                          strategy: str) -> None:
    """KEP-5598's claim: batching changes no outcome. Each hinted node is among the nodes a
    cycle without batching scores highest on the same state (which of them wins a tie
    follows filter order, which batching keeps from the cycle that scored)."""
    hints = 0
    for seed in range(40):
        rng = random.Random(seed)
        batched = scheduler_of(tmp_path, strategy=strategy)
        alone = scheduler_of(tmp_path, "OpportunisticBatching=false", strategy)
        cluster = ClusterState()
        for i in range(rng.randrange(3, 25)):
            node = make_node(f"n{i:02d}").zone(f"z{i % 3}", "r").capacity(
                cpu=str(rng.choice([2, 4, 8])), memory=rng.choice(["4Gi", "8Gi", "16Gi"]))
            for taint in range(rng.choice([0, 0, 1, 2])):
                node = node.taint(f"t{taint}", None, "PreferNoSchedule")
            if rng.random() < 0.5:
                node = node.label("disk", rng.choice(["ssd", "hdd"]))
            cluster.add_node(node.obj())
        shapes = [(rng.choice(["500m", "1", "2"]), rng.choice(["512Mi", "1Gi", "2Gi"]))
                  for _ in range(2)]
        for k in range(rng.randrange(5, 50)):
            cpu, memory = shapes[0] if rng.random() < 0.8 else shapes[1]
            pod = (make_pod(f"p{k}").req(cpu=cpu, memory=memory)
                   .preferred_node_affinity(5, "disk", "In", ["ssd"]).obj())
            info = pod_info(cluster, pod)
            attempt = batched.schedule(cluster, info, cycle=k + 1)
            if attempt.hint_used:
                hints += 1
                assert attempt.selected in alone.schedule(cluster, info, exhaustive=True).tied
            if attempt.selected is not None:
                place(cluster, pod, attempt.selected)
    assert hints > 100
