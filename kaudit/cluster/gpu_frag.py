"""GPU fragmentation as the FGD paper measures it: typical pods and each node's fragment amount.

Mirrors hkust-adsl/kubernetes-scheduler-simulator, ``pkg/utils/frag.go``
(``GetTypicalPods``, ``GetNodePodFrag``, ``NodeGpuShareFragAmount``,
``FragAmountSumExceptQ3``) and ``pkg/type/resource.go`` (``PodResource``, the typical-pod order):

* **Typical pods.** The workload's pod shapes (non-zero CPU milli, GPU-milli per GPU, GPU count,
  accepted GPU models), counted, sorted by decreasing count (equal counts: the larger shape
  first), and taken in that order until they cover ``threshold`` % (95) of the pods, CPU-only
  pods included; their frequencies are renormalised to sum to 1.
* **A node's fragment amount for one typical pod** of frequency *f*, with *L* the node's free
  GPU-milli in total: a CPU-only pod counts *f·L* as ``xl_satisfied`` (its CPU fits) or
  ``xr_lack_cpu``; a GPU pod whose GPU models exclude the node's counts *f·L* as
  ``no_access``; a pod the node's devices can hold (``count`` devices with at least its milli
  free) counts, when its CPU fits, the milli of devices with less than its milli free as
  ``q2_lack_gpu`` and the rest as ``q3_satisfied``, else *f·L* as ``q4_lack_cpu``; a pod the
  devices cannot hold counts *f·L* as ``q2_lack_gpu`` (CPU fits) or ``q1_lack_both``.
* **The fragment amount** of a node is the sum over typical pods of every category but
  ``q3_satisfied``: the GPU-milli the typical workload is expected not to be able to use.

Everything is evaluated for many node states at once (numpy over states × typical pods ×
devices), since FGD scores every feasible node and every device a share could take.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kaudit.model.gpu import GpuDemand

if TYPE_CHECKING:
    from kaudit.cluster.state import ClusterState

CATEGORIES = ("q1_lack_both", "q2_lack_gpu", "q3_satisfied", "q4_lack_cpu", "xl_satisfied",
              "xr_lack_cpu", "no_access")
Q1, Q2, Q3, Q4, XL, XR, NA = range(len(CATEGORIES))
#: The artifact's ``podPopularityThreshold`` (percent of pods the typical shapes cover).
POPULARITY_THRESHOLD = 95


@dataclass(frozen=True, slots=True, order=True)
class PodShape:
    """What the fragmentation measure reads of a pod (``PodResource``)."""

    cpu: int           # non-zero CPU request, milli
    milli: int         # GPU-milli per GPU (0 for a CPU-only pod)
    count: int         # GPUs
    models: str = ""   # accepted GPU models, ``|``-separated and sorted ("": any)

    @property
    def total_milli(self) -> int:
        return self.milli * self.count


def pod_shape(non_zero_cpu: int, demand: GpuDemand | None) -> PodShape:
    if demand is None:
        return PodShape(non_zero_cpu, 0, 0)
    return PodShape(non_zero_cpu, demand.milli, demand.count, "|".join(sorted(demand.models)))


@dataclass(frozen=True, slots=True)
class TypicalPod:
    shape: PodShape
    frequency: float


def typical_pods(shapes: Iterable[PodShape], threshold: int = POPULARITY_THRESHOLD
                 ) -> tuple[TypicalPod, ...]:
    """The most popular shapes covering ``threshold`` % of ``shapes`` (``GetTypicalPods``
    with CPU-only pods involved, increase step 1 and no GPU weight)."""
    counts = Counter(shapes)
    total = sum(counts.values())
    if total == 0:
        return ()
    ordered = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    chosen: list[tuple[PodShape, int]] = []
    covered = 0
    for shape, count in ordered:
        if covered >= threshold * total / 100:
            break
        chosen.append((shape, count))
        covered += count
    return tuple(TypicalPod(shape, count / covered) for shape, count in chosen)


class FragMeasure:
    """The fragment amount of node states against a fixed set of typical pods."""

    def __init__(self, typical: Sequence[TypicalPod]) -> None:
        self.typical = tuple(typical)
        self.cpu = np.array([t.shape.cpu for t in typical], dtype=np.int64)
        self.milli = np.array([t.shape.milli for t in typical], dtype=np.int64)
        self.count = np.array([t.shape.count for t in typical], dtype=np.int64)
        self.freq = np.array([t.frequency for t in typical], dtype=np.float64)
        self.models = [frozenset(m for m in t.shape.models.split("|") if m) for t in typical]
        self.gpu_pod = self.milli > 0
        self._access: dict[str, np.ndarray] = {}

    def _accessible(self, models: Sequence[str]) -> np.ndarray:
        """states × typical: whether the state's GPU model is one the typical pod accepts
        (``IsNodeAccessibleToPod``: any model when it names none; none on a node without)."""
        rows = []
        for model in models:
            row = self._access.get(model)
            if row is None:
                row = np.array([not wanted or (bool(model) and model in wanted)
                                for wanted in self.models], dtype=bool)
                self._access[model] = row
            rows.append(row)
        return np.array(rows, dtype=bool).reshape(len(models), len(self.typical))

    def amounts(self, cpu_left: np.ndarray, free: np.ndarray, models: Sequence[str]
                ) -> np.ndarray:
        """states × categories: the fragment amount of each state (CPU milli left, its
        devices' free milli with -1 where absent, its GPU model) by category."""
        states = len(cpu_left)
        out = np.zeros((states, len(CATEGORIES)), dtype=np.float64)
        if states == 0 or not self.typical:
            return out
        left = np.where(free >= 0, free, 0).astype(np.int64)           # S × D
        total = left.sum(axis=1).astype(np.float64)                     # S
        cpu_ok = cpu_left[:, None] >= self.cpu[None, :]                 # S × T
        weighted = self.freq[None, :] * total[:, None]                  # S × T
        cpu_pod = ~self.gpu_pod[None, :]
        out[:, XL] = np.where(cpu_pod & cpu_ok, weighted, 0).sum(axis=1)
        out[:, XR] = np.where(cpu_pod & ~cpu_ok, weighted, 0).sum(axis=1)
        access = self._accessible(models) & self.gpu_pod[None, :]       # S × T
        out[:, NA] = np.where(self.gpu_pod[None, :] & ~access, weighted, 0).sum(axis=1)
        fits = left[:, None, :] >= self.milli[None, :, None]            # S × T × D
        can_host = fits.sum(axis=2) >= self.count[None, :]
        satisfied = access & can_host & cpu_ok
        short = (left[:, None, :] * ~fits).sum(axis=2) * self.freq[None, :]
        out[:, Q2] = (np.where(satisfied, short, 0).sum(axis=1)
                      + np.where(access & ~can_host & cpu_ok, weighted, 0).sum(axis=1))
        out[:, Q3] = np.where(satisfied, weighted - short, 0).sum(axis=1)
        out[:, Q4] = np.where(access & can_host & ~cpu_ok, weighted, 0).sum(axis=1)
        out[:, Q1] = np.where(access & ~can_host & ~cpu_ok, weighted, 0).sum(axis=1)
        return out

    def fragment(self, cpu_left: np.ndarray, free: np.ndarray, models: Sequence[str]
                 ) -> np.ndarray:
        """Each state's fragment amount: every category but ``q3_satisfied``."""
        amounts = self.amounts(cpu_left, free, models)
        fragment: np.ndarray = amounts.sum(axis=1) - amounts[:, Q3]
        return fragment


def cpu_left(cluster: ClusterState, slots: np.ndarray | slice = slice(None)) -> np.ndarray:
    """CPU milli not requested on each slot (``NodeResource.MilliCpuLeft``)."""
    column = cluster.resources["cpu"]
    return np.asarray(cluster.allocatable[slots, column] - cluster.requested[slots, column],
                      dtype=np.int64)


class NodeStateMemo:
    """Which slots' node state (CPU milli left, devices' free milli, GPU model) changed since a
    value was last computed for them, so that only those are computed again. The memo starts
    afresh (``generation`` changes) when the device table grows or a node's model changes."""

    def __init__(self) -> None:
        self.generation = 0
        self.size = 0
        self._cpu = np.zeros(0, np.int64)
        self._free = np.zeros((0, 0), np.int32)
        self._models: list[str] = []
        self._known = np.zeros(0, dtype=bool)

    def changed(self, cluster: ClusterState, slots: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the slots of ``slots``, default all, to compute again, every slot's CPU left, every
        slot's devices); the returned slots count as computed from now on."""
        gpus = cluster.gpus
        gpus.grow(len(cluster.allocatable))
        cpu, free = cpu_left(cluster), gpus.free
        if self._free.shape != free.shape or self._models != gpus.models:
            self.generation += 1
            self.size = len(cpu)
            self._cpu, self._free = cpu.copy(), free.copy()
            self._models = list(gpus.models)
            self._known = np.zeros(len(cpu), dtype=bool)
        chosen = np.arange(len(cpu)) if slots is None else slots
        stale = ~self._known[chosen] | (self._cpu[chosen] != cpu[chosen]) | \
            (self._free[chosen] != free[chosen]).any(axis=1)
        todo = chosen[stale]
        self._cpu[todo], self._free[todo], self._known[todo] = cpu[todo], free[todo], True
        return todo, cpu, free
