"""GPU allocation and fragmentation against arrived workload, as the FGD paper reports them.

Mirrors the FGD authors' simulator (hkust-adsl/kubernetes-scheduler-simulator):
``ClusterGpuFragReport`` in ``pkg/simulator/analysis.go`` samples after every pod it tries, and
``experiments/analysis/merge_{alloc,frag,frag_ratio}_discrete.py`` turn the samples into curves:

* **arrived workload** = GPU-milli asked by every pod tried so far (failed ones included) ÷
  (GPUs × 10), in %, rounded to an integer;
* **allocation** = GPU-milli held by pods ÷ (GPUs × 10), in % (2 decimals); the paper plots
  **unallocated GPU** = 100 − allocation;
* **fragmentation amount** = 100 × fragment milli ÷ 1000 ÷ GPUs ("Frag / Total %") and
  **fragmentation rate** = fragment ÷ idle GPU-milli (%), the fragment being the sum of every
  category of :mod:`kaudit.cluster.gpu_frag` but ``q3_satisfied``;
* at each integer percent 0–130 the curve is the mean of the samples whose arrived workload
  rounds to it, else of those within one point of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kaudit.cluster.gpu_frag import CATEGORIES, Q3, FragMeasure, NodeStateMemo
from kaudit.cluster.state import ClusterState
from kaudit.model.gpu import MILLI_PER_GPU
from kaudit.model.pod import PodInfo

#: The arrived-workload percents the curves are sampled at.
ARRIVED_PERCENTS = range(0, 131)


@dataclass
class GpuSharingTracker:
    measure: FragMeasure
    arrived_milli: int = 0
    _samples: list[tuple[int, int, int, float, float]] = field(default_factory=list)
    _categories: np.ndarray = field(default_factory=lambda: np.zeros(len(CATEGORIES)))
    _memo: NodeStateMemo = field(default_factory=NodeStateMemo)
    _generation: int = -1
    _amounts: np.ndarray = field(default_factory=lambda: np.zeros((0, len(CATEGORIES))))

    def tried(self, pod: PodInfo) -> None:
        """A pod is tried for the first time: its GPU request has arrived."""
        if pod.gpu is not None:
            self.arrived_milli += pod.gpu.total_milli

    def _node_amounts(self, cluster: ClusterState) -> np.ndarray:
        """Every slot's fragment amounts by category, recomputed where the node changed."""
        stale, cpu, free = self._memo.changed(cluster)
        if self._generation != self._memo.generation:
            self._generation = self._memo.generation
            self._amounts = np.zeros((self._memo.size, len(CATEGORIES)))
        if len(stale):
            self._amounts[stale] = self.measure.amounts(
                cpu[stale], free[stale], [cluster.gpus.models[s] for s in stale.tolist()])
        return self._amounts

    def sample(self, cluster: ClusterState) -> None:
        """``ClusterGpuFragReport`` after a pod was tried."""
        amounts = self._node_amounts(cluster)
        live = cluster.live[:len(amounts)]
        free = cluster.gpus.free[:len(amounts)][live]
        gpus = int((free >= 0).sum())
        left = int(np.where(free >= 0, free, 0).sum())
        totals = amounts[live].sum(axis=0)
        self._categories = totals
        self._samples.append((self.arrived_milli, gpus * MILLI_PER_GPU - left, gpus,
                              float(totals.sum() - totals[Q3]), float(totals.sum())))

    @property
    def samples(self) -> int:
        return len(self._samples)

    def curves(self) -> dict[str, list[float | None]]:
        """The discrete curves over :data:`ARRIVED_PERCENTS` (None where no sample is near)."""
        if not self._samples:
            return {}
        data = np.array(self._samples, dtype=np.float64)
        arrived, used, gpus, fragment, idle = data.T
        total = gpus[-1] if gpus[-1] > 0 else 1.0
        arrive_pct = np.round(arrived / total / 10, 0)
        alloc_pct = np.round(used / total / 10, 2)
        frag_ratio = np.where(idle > 0, 100 * fragment / np.where(idle > 0, idle, 1), 0.0)
        out: dict[str, list[float | None]] = {"arrived": [], "allocated": [], "unallocated": [],
                                              "fragAmount": [], "fragRate": []}
        for percent in ARRIVED_PERCENTS:
            near = arrive_pct == percent
            if not near.any():
                near = (arrive_pct >= percent - 1) & (arrive_pct <= percent + 1)
            out["arrived"].append(float(percent))
            if not near.any():
                for name in ("allocated", "unallocated", "fragAmount", "fragRate"):
                    out[name].append(None)
                continue
            allocated = round(float(alloc_pct[near].mean()), 2)
            out["allocated"].append(allocated)
            out["unallocated"].append(round(100 - allocated, 2))
            out["fragAmount"].append(round(float(100 * fragment[near].mean() / 1000 / total), 2))
            out["fragRate"].append(round(float(frag_ratio[near].mean()), 2))
        return out

    def as_json(self) -> dict[str, Any]:
        gpus = self._samples[-1][2] if self._samples else 0
        return {
            "gpus": gpus,
            "arrivedMilli": self.arrived_milli,
            "allocatedMilli": self._samples[-1][1] if self._samples else 0,
            "samples": len(self._samples),
            "typicalPods": [{"cpuMilli": t.shape.cpu, "gpuMilli": t.shape.milli,
                             "gpuCount": t.shape.count, "gpuModels": t.shape.models,
                             "frequency": round(t.frequency, 6)}
                            for t in self.measure.typical],
            "fragmentAtEnd": {name: round(float(v), 1)
                              for name, v in zip(CATEGORIES, self._categories, strict=True)},
            "curves": self.curves(),
        }
