"""The FGD paper's six score plugins, on small clusters whose scores follow from the authors'
formulas (``pkg/simulator/plugin/*_score.go`` of hkust-adsl/kubernetes-scheduler-simulator)."""

from __future__ import annotations

import math

import numpy as np

from kaudit.cluster.gpu_frag import FragMeasure, PodShape, TypicalPod, pod_shape
from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.fgd.best_fit import BestFitScore
from kaudit.fgd.dot_product import DotProductScore
from kaudit.fgd.fgd_score import FgdScores, fgd_choice
from kaudit.fgd.gpu_clustering import GpuClusteringScore
from kaudit.fgd.gpu_packing import GpuPackingScore
from kaudit.fgd.random_score import RandomScore
from kaudit.framework.cycle_state import DECISION_SEED_KEY, CycleState
from kaudit.model.pod import PodInfo
from kaudit.tracegen.builders import make_node, make_pod

MODEL = "alibabacloud.com/gpu-card-model"


def _cluster(*nodes: tuple[str, int, int]) -> ClusterState:
    """Nodes of (name, CPUs, GPUs), all of model T4."""
    cluster = ClusterState()
    for name, cpus, gpus in nodes:
        cluster.add_node(make_node(name).capacity(cpu=str(cpus), memory="512Gi", pods="110")
                         .extended("nvidia.com/gpu", str(gpus)).label(MODEL, "T4").obj())
    return cluster


def _pod(name: str, cpu_milli: int, milli: int = 0, count: int = 0) -> PodInfo:
    pod = make_pod(name).req(cpu=f"{cpu_milli}m", memory="1Gi")
    if count:
        pod = pod.annotation("alibabacloud.com/gpu-milli", str(milli)).annotation(
            "alibabacloud.com/gpu-count", str(count))
    return pod_info(ClusterState(), pod.obj())


def _place(cluster: ClusterState, name: str, node: str, cpu_milli: int, milli: int = 0,
           devices: tuple[int, ...] = ()) -> None:
    pod = make_pod(name).req(cpu=f"{cpu_milli}m", memory="1Gi").node(node)
    if devices:
        pod = pod.annotation("alibabacloud.com/gpu-milli", str(milli)).annotation(
            "alibabacloud.com/gpu-count", str(len(devices)))
    info = pod_info(cluster, pod.obj())
    cluster.add_pod(info)
    if devices:
        cluster.gpus.assign(info.uid, cluster.slot_of[node], devices, milli)


def _slots(cluster: ClusterState) -> np.ndarray:
    return np.arange(cluster.node_count, dtype=np.int64)


def test_best_fit_prefers_the_node_left_fullest_then_normalises() -> None:
    cluster = _cluster(("a", 64, 4), ("b", 32, 2), ("c", 128, 8))
    _place(cluster, "x", "b", 16000, 500, (0,))
    plugin = BestFitScore()
    pod = _pod("p", 8000, 1000, 1)
    raw = plugin.score(CycleState(), pod, cluster, _slots(cluster))
    # 100 × (1 − 0.5 × (free cpu − 8000) / 128000 − 0.5 × (free gpu − 1000) / 8000)
    expected = [math.trunc((1 - (56000 / 128000 * 0.5 + 3000 / 8000 * 0.5)) * 100),
                math.trunc((1 - (8000 / 128000 * 0.5 + 500 / 8000 * 0.5)) * 100),
                math.trunc((1 - (120000 / 128000 * 0.5 + 7000 / 8000 * 0.5)) * 100)]
    assert raw.tolist() == expected
    normalised = plugin.normalize(CycleState(), pod, _slots(cluster), raw)
    assert normalised is not None
    assert normalised.tolist() == [(expected[0] - expected[2]) * 100 // (expected[1] - expected[2]),
                                   100, 0]


def test_dot_product_prefers_the_smaller_product() -> None:
    cluster = _cluster(("a", 64, 4), ("b", 16, 1))
    pod = _pod("p", 4000, 500, 1)
    scores = DotProductScore().score(CycleState(), pod, cluster, _slots(cluster))
    product_a = 64000 / 128000 * 4000 / 128000 + 4000 / 8000 * 500 / 8000
    product_b = 16000 / 128000 * 4000 / 128000 + 1000 / 8000 * 500 / 8000
    assert scores.tolist() == [math.trunc(100 * (1 - product_a / 2)),
                               math.trunc(100 * (1 - product_b / 2))]


def test_gpu_packing_ranks_shared_gpus_then_used_nodes_then_idle_ones() -> None:
    cluster = _cluster(("idle", 64, 8), ("shared", 64, 4), ("used", 64, 4))
    _place(cluster, "s", "shared", 1000, 500, (1,))
    _place(cluster, "u", "used", 1000, 1000, (0,))
    plugin = GpuPackingScore()
    share = plugin.score(CycleState(), _pod("p", 1000, 300, 1), cluster, _slots(cluster))
    assert share.tolist() == [max(33 - 8, 8), 100 - (500 * 100 // 1000) // 10, 49]
    whole = plugin.score(CycleState(), _pod("q", 1000, 1000, 2), cluster, _slots(cluster))
    assert whole.tolist() == [25, 48, 48]
    assert plugin.score(CycleState(), _pod("c", 1000), cluster, _slots(cluster)).tolist() == \
        [0, 0, 0]


def test_gpu_clustering_groups_pods_that_ask_gpus_alike() -> None:
    cluster = _cluster(("same", 64, 4), ("mixed", 64, 4), ("idle", 64, 4), ("other", 64, 4))
    _place(cluster, "s1", "same", 1000, 300, (0,))
    _place(cluster, "m1", "mixed", 1000, 300, (0,))
    _place(cluster, "m2", "mixed", 1000, 1000, (1, 2))
    _place(cluster, "o1", "other", 1000, 1000, (0,))
    scores = GpuClusteringScore().score(CycleState(), _pod("p", 1000, 200, 1), cluster,
                                        _slots(cluster))
    base = [25 * (8000 - left) // 8000 for left in (3700, 1700, 4000, 3000)]
    assert scores.tolist() == [base[0] + 75, base[1] + 50, base[2] + 25, base[3]]


def test_random_gives_one_drawn_node_the_maximum() -> None:
    cluster = _cluster(("a", 8, 1), ("b", 8, 1), ("c", 8, 1))
    plugin = RandomScore()
    chosen = set()
    for seed in range(30):
        state = CycleState()
        state.write(DECISION_SEED_KEY, f"{seed}")
        plugin.pre_score(state, _pod("p", 1000), cluster, _slots(cluster))
        scores = plugin.score(state, _pod("p", 1000), cluster, _slots(cluster))
        assert sorted(scores.tolist()) == [0, 0, 100]
        chosen.add(int(np.argmax(scores)))
    assert chosen == {0, 1, 2}


MEASURE = FragMeasure([TypicalPod(PodShape(2000, 500, 1), 0.4),
                       TypicalPod(PodShape(8000, 1000, 2), 0.3),
                       TypicalPod(PodShape(4000, 0, 0), 0.3)])


def test_fgd_scores_the_fragment_decrease_and_picks_the_device() -> None:
    cpu = np.array([16000])
    free = np.array([[1000, 600, 1000, -1]], dtype=np.int32)
    shape = PodShape(2000, 500, 1)
    scores, devices = fgd_choice(MEASURE, shape, cpu, free, ["T4"])
    before = MEASURE.fragment(cpu, free, ["T4"])[0]
    expected = {}
    for device in (0, 1, 2):
        after_free = free.copy()
        after_free[0, device] -= 500
        after = MEASURE.fragment(cpu - 2000, after_free, ["T4"])[0]
        expected[device] = math.trunc(100 / (1 + math.exp(-(before - after) / 1000)))
    best = max(expected.values())
    assert scores.tolist() == [best]
    assert devices.tolist() == [min(d for d, s in expected.items() if s == best)]
    # A pod of whole GPUs takes the lowest wholly free devices; no device is named.
    whole, none = fgd_choice(MEASURE, PodShape(8000, 1000, 2), cpu, free, ["T4"])
    after = MEASURE.fragment(cpu - 8000, np.array([[0, 600, 0, -1]], np.int32), ["T4"])[0]
    assert whole.tolist() == [math.trunc(100 / (1 + math.exp(-(before - after) / 1000)))]
    assert none.tolist() == [-1]


def test_fgd_scores_kept_per_shape_follow_every_change_of_the_nodes() -> None:
    cluster = _cluster(("a", 32, 4), ("b", 16, 2), ("c", 64, 8))
    table = FgdScores(MEASURE)
    pods = [_pod("s", 2000, 500, 1), _pod("w", 8000, 1000, 2), _pod("c", 4000)]
    for step, (node, milli, devices) in enumerate([("a", 500, (0,)), ("c", 1000, (1, 2)),
                                                   ("a", 500, (0,)), ("b", 300, (1,))]):
        for pod in pods:
            shape = pod_shape(pod.non_zero_cpu, pod.gpu)
            cached = table.scores(cluster, shape, _slots(cluster))
            fresh = FgdScores(MEASURE).scores(cluster, shape, _slots(cluster))
            assert [c.tolist() for c in cached] == [f.tolist() for f in fresh], step
        _place(cluster, f"x{step}", node, 1000, milli, devices)
