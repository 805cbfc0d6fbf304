"""``FGDScore``: Fragmentation Gradient Descent, the paper's policy.

Mirrors ``FGDScorePlugin`` of hkust-adsl/kubernetes-scheduler-simulator
(``pkg/simulator/plugin/fgd_score.go``, ``calculateGpuShareFragExtendScore``) over the
fragmentation measure of ``pkg/utils/frag.go`` (:mod:`kaudit.cluster.gpu_frag`). With F(n) the
fragment amount of node state n against the workload's typical pods:

* a pod sharing one GPU is tried on each device with room for it, in index order; the node
  scores ``int64(sigmoid((F(before) − F(after)) / 1000) × 100)`` for its best device, and that
  device (the lowest-numbered among equal scores) is the one it takes
  (``gpuSelMethod: FGDScore`` in ``OpenGpuShare``);
* a pod of whole GPUs takes the lowest-numbered wholly free devices, a CPU-only pod only CPU
  (``NodeResource.Sub``); the node scores the same sigmoid of its fragment's decrease. A node
  with less CPU left than the pod asks is left as it is (``Sub`` fails), scoring 50.

The scores of a pod shape on a node depend only on the node's CPU left, devices and model, so
they are kept per shape and recomputed only for nodes whose state changed since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kaudit.cluster.gpu_frag import FragMeasure, NodeStateMemo, PodShape, pod_shape
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, FeatureGates, FieldError
from kaudit.config.schema import Obj
from kaudit.fgd.node_gpus import truncate
from kaudit.fgd.workload import TYPICAL_PODS_SCHEMA, frag_measure, validate_typical_pods
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import MAX_NODE_SCORE, ScorePlugin
from kaudit.model.gpu import MILLI_PER_GPU
from kaudit.model.pod import PodInfo

NAME = "FGDScore"


def _sigmoid_scores(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    gradient = (before - after) / 1000
    return truncate(1.0 / (1.0 + np.exp(-gradient)) * float(MAX_NODE_SCORE))


def fgd_choice(measure: FragMeasure, shape: PodShape, cpu: np.ndarray, free: np.ndarray,
               models: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """For node states (CPU milli left, devices' free milli, model): FGD's score and, for a
    pod sharing a GPU, the device it takes (-1 where none fits or the pod shares none)."""
    states = len(cpu)
    before = measure.fragment(cpu, free, models)
    device = np.full(states, -1, dtype=np.int64)
    if shape.count == 1 and 0 < shape.milli < MILLI_PER_GPU:
        rows, devices = np.nonzero(free >= shape.milli)
        after_free = free[rows].copy()
        after_free[np.arange(len(rows)), devices] -= shape.milli
        after = measure.fragment(cpu[rows] - shape.cpu, after_free,
                                 [models[r] for r in rows.tolist()])
        candidate = _sigmoid_scores(before[rows], after)
        scores = np.zeros(states, dtype=np.int64)
        # Per state its best device: the highest score, the lowest-numbered among equals.
        order = np.lexsort((devices, -candidate, rows))
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]] if len(order) else order
        scores[rows[first]] = candidate[first]
        device[rows[first]] = devices[first]
        return scores, device
    fits_cpu = cpu >= shape.cpu
    after_cpu = np.where(fits_cpu, cpu - shape.cpu, cpu)
    after_free = free
    if shape.count:
        whole = free == MILLI_PER_GPU
        taken = whole & (np.cumsum(whole, axis=1) <= shape.count)
        enough = whole.sum(axis=1) >= shape.count
        ok = fits_cpu & enough
        after_free = np.where(ok[:, None] & taken, free - MILLI_PER_GPU, free)
        after_cpu = np.where(ok, cpu - shape.cpu, cpu)
    after = measure.fragment(after_cpu, after_free, models)
    return _sigmoid_scores(before, after), device


@dataclass
class _ShapeScores:
    """FGD's scores of one pod shape on every slot, and the states they were computed from."""

    memo: NodeStateMemo = field(default_factory=NodeStateMemo)
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    devices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    generation: int = -1


class FgdScores:
    """FGD's scores of every pod shape seen, kept until the nodes they were computed on
    change."""

    def __init__(self, measure: FragMeasure) -> None:
        self.measure = measure
        self._shapes: dict[PodShape, _ShapeScores] = {}

    def scores(self, cluster: ClusterState, shape: PodShape, slots: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        cached = self._shapes.setdefault(shape, _ShapeScores())
        todo, cpu, free = cached.memo.changed(cluster, slots)
        if cached.generation != cached.memo.generation:
            cached.generation = cached.memo.generation
            cached.scores = np.zeros(cached.memo.size, np.int64)
            cached.devices = np.full(cached.memo.size, -1, np.int64)
        if len(todo):
            cached.scores[todo], cached.devices[todo] = fgd_choice(
                self.measure, shape, cpu[todo], free[todo],
                [cluster.gpus.models[s] for s in todo.tolist()])
        return cached.scores[slots], cached.devices[slots]


def _defaults(args: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    return {"typicalPods": args.get("typicalPods")}


def _validate(args: dict[str, Any], gates: FeatureGates) -> list[FieldError]:
    return validate_typical_pods(args.get("typicalPods"))


class FGDScore(ScorePlugin):
    name = NAME
    args_spec = ArgsSpec(kind="FGDScoreArgs", schema=Obj({"typicalPods": TYPICAL_PODS_SCHEMA}),
                         set_defaults=_defaults, validate=_validate)

    _cache: FgdScores | None = None

    #: The trace's pods, for the typical pods when the configuration names none.
    ports_needed = frozenset({"workload"})

    def table(self) -> FgdScores:
        if self._cache is None:
            self._cache = FgdScores(frag_measure(self.handle, self.args.get("typicalPods")))
        return self._cache

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        if not pod.requests and pod.gpu is None:  # nothing asked
            return np.full(len(slots), MAX_NODE_SCORE, dtype=np.int64)
        scores, _ = self.table().scores(cluster, pod_shape(pod.non_zero_cpu, pod.gpu), slots)
        return scores
