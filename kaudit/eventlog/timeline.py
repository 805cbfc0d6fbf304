"""A run's timeline, kept as the replay goes, for the dashboard's history and charts.

The event log says what happened; the timeline says what *was*, at any moment, without
replaying the log again:

* node intervals: each node's allocatable, zone and labels over ``[start, end)``; a change of
  any of them closes the interval and opens another;
* placements: each pod held by a node over ``[start, end)`` (assumed or bound, by kaudit or by
  the trace) with the requests the scheduler accounted for it;
* queue spans: each pod's stay in activeQ, backoffQ, unschedulablePods or the gated set;
* series: after each virtual instant that changed anything, the queue lengths, the number of
  placed pods and the allocated share of every resource.

Intervals still open when the run ends keep ``end = None``. :class:`NoTimeline` records
nothing (used when the event log is off).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from kaudit.model.node import ZONE_LABELS, NodeInfo
from kaudit.model.pod import PodInfo
from kaudit.scheduler.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE

QUEUES = (ACTIVE, BACKOFF, UNSCHEDULABLE, GATED)
#: Amounts with columns of their own; every other one (ephemeral-storage included, so a
#: rejection for it can name the free amount) is stored in ``extended``.
_BASE = ("cpu", "memory", "pods")


def _json(value: dict[str, Any]) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _extended(amounts: dict[str, int]) -> str:
    return _json({k: v for k, v in amounts.items() if k not in _BASE and v})


def display_zone(labels: dict[str, str]) -> str:
    """The node's zone label (newest label first), "" without one."""
    return next((labels[k] for k in reversed(ZONE_LABELS) if labels.get(k)), "")


@dataclass
class Timeline:
    #: Rows ``[slot, name, zone, start, end, cpu, memory, pods, extended, labels,
    #: unschedulable, taints]``.
    nodes: list[list[Any]] = field(default_factory=list)
    #: Rows ``[pod, node, start, end, by, priority, cpu, memory, extended]``.
    placements: list[list[Any]] = field(default_factory=list)
    #: Rows ``[pod, queue, start, end]``.
    queue_spans: list[list[Any]] = field(default_factory=list)
    #: Rows ``(ts, active, backoff, unschedulable, gated, placed, allocation)``.
    series: list[tuple[Any, ...]] = field(default_factory=list)
    _open_nodes: dict[str, int] = field(default_factory=dict)
    _open_placements: dict[str, int] = field(default_factory=dict)
    _open_spans: dict[str, int] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUEUES, 0))
    _last_state: tuple[Any, ...] | None = None

    # ------------------------------------------------------------------ nodes

    def node(self, now: int, slot: int, info: NodeInfo) -> None:
        """The node ``info`` exists from ``now`` (added, or changed)."""
        allocatable = info.allocatable
        row = [slot, info.name, display_zone(info.labels), now, None,
               allocatable.get("cpu", 0), allocatable.get("memory", 0),
               allocatable.get("pods", 0), _extended(allocatable), _json(info.labels),
               info.unschedulable, len(info.taints)]
        self._open(self.nodes, self._open_nodes, info.name, row, 4, now)

    def node_removed(self, now: int, name: str) -> None:
        index = self._open_nodes.pop(name, None)
        if index is not None:
            self.nodes[index][4] = now

    # ------------------------------------------------------------------ pods

    def place(self, now: int, pod: PodInfo, by: str) -> None:
        """``pod`` is held by ``pod.node_name`` from ``now`` (a re-placement on the same node
        with the same requests changes nothing)."""
        requests = pod.requests
        row = [pod.key, pod.node_name, now, None, by, pod.priority, requests.get("cpu", 0),
               requests.get("memory", 0), _extended(requests)]
        self._open(self.placements, self._open_placements, pod.uid, row, 3, now)

    def release(self, now: int, uid: str) -> None:
        index = self._open_placements.pop(uid, None)
        if index is not None:
            self.placements[index][3] = now

    def queue(self, now: int, pod: PodInfo, source: str, target: str) -> None:
        if source in self._counts:
            self._counts[source] -= 1
            index = self._open_spans.pop(pod.uid, None)
            if index is not None:
                self.queue_spans[index][3] = now
        if target in self._counts:
            self._counts[target] += 1
            self._open_spans[pod.uid] = len(self.queue_spans)
            self.queue_spans.append([pod.key, target, now, None])

    # ------------------------------------------------------------------ series

    def sample(self, now: int, allocation: dict[str, float]) -> None:
        """The state after instant ``now``; kept only when it differs from the last one."""
        counts = self._counts
        state = (counts[ACTIVE], counts[BACKOFF], counts[UNSCHEDULABLE], counts[GATED],
                 len(self._open_placements), tuple(sorted(allocation.items())))
        if state == self._last_state:
            return
        self._last_state = state
        rounded = {name: round(value, 6) for name, value in allocation.items()}
        self.series.append((now, *state[:5], _json(rounded)))

    @staticmethod
    def _open(rows: list[list[Any]], opened: dict[str, int], key: str, row: list[Any],
              end_column: int, now: int) -> None:
        """Open ``row`` for ``key`` from ``now``, closing the interval open for it; nothing
        changes when the open one equals ``row`` but for its start and end."""
        index = opened.get(key)
        if index is not None:
            old = rows[index]
            if old[:end_column - 1] + old[end_column + 1:] == \
                    row[:end_column - 1] + row[end_column + 1:]:
                return
            old[end_column] = now
        opened[key] = len(rows)
        rows.append(row)


class NoTimeline(Timeline):
    """Keeps nothing: the replay runs with the event log off."""

    def node(self, now: int, slot: int, info: NodeInfo) -> None:
        return None

    def node_removed(self, now: int, name: str) -> None:
        return None

    def place(self, now: int, pod: PodInfo, by: str) -> None:
        return None

    def release(self, now: int, uid: str) -> None:
        return None

    def queue(self, now: int, pod: PodInfo, source: str, target: str) -> None:
        return None

    def sample(self, now: int, allocation: dict[str, float]) -> None:
        return None
