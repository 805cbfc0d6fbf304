"""Cluster allocation over virtual time: how full the nodes are, how evenly, how fragmented.

Sampled after every change of placements or nodes, weighted by how long each state lasted:

* ``allocation``: per resource (cpu, memory and every extended resource), the time-weighted
  mean and the peak of requested ÷ allocatable over live nodes;
* ``imbalance``: the time-weighted mean of the standard deviation of the nodes' CPU
  utilisation (0 is perfectly even);
* ``fragmentation`` (at the end): pods left waiting whose cpu and memory requests fit the
  cluster's free capacity in total but no single node's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.model.pod import PodInfo


@dataclass
class AllocationTracker:
    last_us: int | None = None
    span_us: int = 0
    weighted: dict[str, float] = field(default_factory=dict)
    peak: dict[str, float] = field(default_factory=dict)
    imbalance_weighted: float = 0.0
    _current: dict[str, float] = field(default_factory=dict)
    _imbalance: float = 0.0

    def observe(self, now: int, cluster: ClusterState) -> None:
        """Close the interval since the last observation, then take the new state."""
        if self.last_us is not None and now > self.last_us:
            dt = now - self.last_us
            self.span_us += dt
            for name, value in self._current.items():
                self.weighted[name] = self.weighted.get(name, 0.0) + value * dt
            self.imbalance_weighted += self._imbalance * dt
        self.last_us = now
        # Sums over the live rows in place: no copy of two nodes × resources arrays per
        # observation (a recording of thousands of nodes is observed at every event).
        live = cluster.live[:, None]
        totals = cluster.allocatable.sum(axis=0, where=live).tolist()
        used_totals = cluster.requested.sum(axis=0, where=live).tolist()
        current: dict[str, float] = {}
        for name, column in cluster.resources.items():
            if name == "pods":
                continue
            allocatable_total = totals[column]
            if allocatable_total > 0:
                value = float(used_totals[column]) / allocatable_total
                current[name] = value
                self.peak[name] = max(self.peak.get(name, 0.0), value)
        self._current = current
        cpu = cluster.resources["cpu"]
        allocatable = cluster.allocatable[:, cpu]
        used = cluster.requested[:, cpu]
        mask = cluster.live & (allocatable > 0)
        self._imbalance = float(np.std(used[mask] / allocatable[mask])) if mask.any() else 0.0

    @property
    def current(self) -> dict[str, float]:
        """The allocated share of each resource now."""
        return self._current

    def as_json(self) -> dict[str, Any]:
        span = self.span_us or 1
        return {
            "allocation": {name: {"mean": round(self.weighted.get(name, 0.0) / span, 4),
                                  "peak": round(self.peak.get(name, 0.0), 4)}
                           for name in sorted(self.peak)},
            "imbalance": round(self.imbalance_weighted / span, 4),
        }


def fragmentation(cluster: ClusterState, waiting: list[PodInfo]) -> dict[str, Any]:
    """Waiting pods whose cpu and memory fit the cluster in total but no single node."""
    live = cluster.live
    cpu, memory = cluster.resources["cpu"], cluster.resources["memory"]
    free_cpu = cluster.allocatable[live, cpu] - cluster.requested[live, cpu]
    free_memory = cluster.allocatable[live, memory] - cluster.requested[live, memory]
    fragmented = [p for p in waiting
                  if p.requests.get("cpu", 0) <= free_cpu.sum()
                  and p.requests.get("memory", 0) <= free_memory.sum()
                  and not ((free_cpu >= p.requests.get("cpu", 0))
                           & (free_memory >= p.requests.get("memory", 0))).any()]
    return {"pods": len(fragmented),
            "cpuMilli": sum(p.requests.get("cpu", 0) for p in fragmented),
            "memoryBytes": sum(p.requests.get("memory", 0) for p in fragmented)}
