"""Whether ``percentageOfNodesToScore`` explains a binding kaudit scores below its top.

A sampled cycle (``findNodesThatPassFilters`` in ``pkg/scheduler/schedule_one.go``, Kubernetes
v1.34) stops filtering once ``numFeasibleNodesToFind`` nodes passed, starting at the
scheduler's rotating ``nextStartNodeIndex``, and scores only those. :func:`sampling_likelihood`
takes the nodes examined one by one: a window of consecutive feasible nodes, for each start.
Upstream examines them with ``parallelism`` workers in chunks (``Parallelizer.Until``), so the
nodes found are a prefix of each chunk the workers started, in whatever proportions their
interleaving gave: :func:`reachable_with_workers` looks for such a set in which the recorded
node is on top. Either set is scored as upstream scores it (:class:`WindowScores`): PreScore
again where a plugin reads the nodes, NormalizeScore over them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.parallelize import chunks_and_workers
from kaudit.framework.plugin import ScorePlugin
from kaudit.framework.runtime import Framework
from kaudit.model.pod import PodInfo
from kaudit.scheduler.schedule import Attempt, Scheduler, num_feasible_nodes_to_find


def total_scores(attempt: Attempt) -> np.ndarray:
    """Each scored node's total: the plugins' weighted sum plus the extenders' scores."""
    assert attempt.scores is not None
    total = attempt.scores.total
    for column in attempt.extender_scores.values():
        total = total + column
    return total


def _sampled_cycle(attempt: Attempt, scheduler: Scheduler
                   ) -> tuple[Framework, int, np.ndarray] | None:
    """The profile's framework, ``numFeasibleNodesToFind``, and where each evaluated node is
    among the scored ones (-1: not scored), in the order the cycle evaluated them; None when
    the attempt has no scores to sample from."""
    framework = scheduler.framework_for(attempt.pod)
    run, scores = attempt.filters, attempt.scores
    if framework is None or run is None or scores is None or attempt.state is None:
        return None
    to_find = num_feasible_nodes_to_find(framework.percentage_of_nodes_to_score,
                                         scheduler.percentage_of_nodes_to_score, len(run.slots))
    slots = scores.slots
    scored_at = np.full(max(int(run.slots.max()), int(slots.max())) + 1, -1, dtype=np.int64)
    scored_at[slots] = np.arange(len(slots))
    return framework, to_find, scored_at[run.slots]


def sampling_likelihood(attempt: Attempt, scheduler: Scheduler, cluster: ClusterState,
                         index: int) -> float:
    """The probability, over a uniformly random start node, that the window of feasible nodes
    a sampled cycle scores contains the recorded node (``index`` among the scored) and picks
    it (0 without sampling). Each window is scored as upstream scores it: PreScore given the
    window's nodes where a plugin reads them, NormalizeScore over the window."""
    sampled = _sampled_cycle(attempt, scheduler)
    if sampled is None:
        return 0.0
    framework, to_find, along_run = sampled
    considered = len(along_run)
    feasible_positions = np.flatnonzero(along_run >= 0)
    count = len(feasible_positions)
    if to_find >= count:
        return 0.0
    in_order = along_run[feasible_positions]  # the scored nodes in the scheduler's order
    r = int(np.flatnonzero(in_order == index)[0])
    # A start position s picks the window beginning at the first feasible node at or after s:
    # feasible node j starts a window for (p_j - p_{j-1}) start positions (circularly).
    gaps = np.diff(np.concatenate([[feasible_positions[-1] - considered], feasible_positions]))
    # The windows holding the recorded node, one per row: row i starts i + 1 - to_find
    # feasible nodes before it, so it sits at column to_find - 1 - i.
    starts = np.arange(r - to_find + 1, r + 1)
    run_of_nodes = in_order[np.arange(r - to_find + 1, r + to_find) % count]
    totals = WindowScores(attempt, framework, cluster).totals(run_of_nodes, to_find)
    if totals.ndim == 2:
        top = totals.max(axis=1)
        mine = totals[np.arange(to_find), to_find - 1 - np.arange(to_find)]
        wins = (mine == top) / (totals == top[:, None]).sum(axis=1)
    else:  # every window scores each node alike: the windows' maxima in one pass
        k, mine = to_find, totals[to_find - 1]
        left = np.maximum.accumulate(totals[:k][::-1])[::-1]  # max of totals[a .. k-1]
        right = np.maximum.accumulate(totals[k - 1:])  # max of totals[k-1 .. e]
        top = np.maximum(left, right[:k])  # window [a, a + k - 1]
        equal = np.concatenate([[0], np.cumsum(totals == mine)])
        wins = (top == mine) / np.maximum(equal[k:2 * k] - equal[:k], 1)
    return float((wins * gaps[starts % count]).sum() / considered)


def reachable_with_workers(attempt: Attempt, scheduler: Scheduler, cluster: ClusterState,
                           index: int) -> bool:
    """Whether a sampled cycle whose filter workers interleave can find the recorded node
    (``index`` among the scored) among its ``numFeasibleNodesToFind`` feasible nodes and
    score it on top. Tried: each start that puts the recorded node first in one of the chunks
    the workers begin with; from every chunk started, the feasible nodes before the first
    that outscores the recorded node in the whole cycle (a chunk without one can be finished,
    and its worker starts the next chunk), taken in chunk order until enough are found. That
    set is then scored as a cycle scores it, and the recorded node must be its top (ties
    included: ``selectHost`` picks among them at random)."""
    sampled = _sampled_cycle(attempt, scheduler)
    if sampled is None:
        return False
    framework, to_find, along_run = sampled
    nodes = len(along_run)
    if to_find >= int((along_run >= 0).sum()):
        return False
    total = total_scores(attempt)
    outscores = np.zeros(nodes, dtype=bool)
    outscores[along_run >= 0] = total[along_run[along_run >= 0]] > total[index]
    recorded_at = int(np.flatnonzero(along_run == index)[0])
    size, chunks, workers = chunks_and_workers(nodes, framework.parallelism)
    windows = WindowScores(attempt, framework, cluster)
    for chunk_of_recorded in range(workers):
        offset = (recorded_at - chunk_of_recorded * size) % nodes
        walk, beaten = np.roll(along_run, -offset), np.roll(outscores, -offset)
        found = [index]
        started = workers
        for chunk in range(chunks):
            if chunk >= started or len(found) >= to_find:
                break
            piece = walk[chunk * size:(chunk + 1) * size]
            better = np.flatnonzero(beaten[chunk * size:(chunk + 1) * size])
            stop = int(better[0]) if len(better) else len(piece)
            members = piece[:stop][piece[:stop] >= 0].tolist()
            found += members[1:] if chunk == chunk_of_recorded else members
            if stop == len(piece):
                started += 1  # a finished chunk: its worker takes the next one
        if len(found) < to_find:
            continue
        totals = windows.totals(np.asarray(found[:to_find], dtype=np.int64), to_find)
        row = totals[0] if totals.ndim == 2 else totals
        if int(row[0]) == int(row.max()):
            return True
    return False


def _normalizes(plugin: Any) -> bool:
    """Whether the plugin has a NormalizeScore extension."""
    return type(plugin).normalize is not ScorePlugin.normalize


class WindowScores:
    """The total scores of cycles that scored only some of the feasible nodes."""

    def __init__(self, attempt: Attempt, framework: Framework, cluster: ClusterState) -> None:
        assert attempt.scores is not None and attempt.state is not None
        self.attempt, self.cluster, self.scores = attempt, cluster, attempt.scores
        self.plugins = [plugin for plugin in framework.plugins("Score")
                        if plugin.name in self.scores.raw]

    def totals(self, run_of_nodes: np.ndarray, size: int) -> np.ndarray:
        """The weighted totals of the cycles each scoring ``size`` consecutive nodes of
        ``run_of_nodes`` (positions in the whole cycle's scores), one row per window, as such
        a cycle computes them; or, when every window scores each node alike, each node's
        total along ``run_of_nodes`` (1-D)."""
        attempt, scores, state = self.attempt, self.scores, self.attempt.state
        assert state is not None

        def windowed(values: np.ndarray) -> np.ndarray:
            """``values`` of each window's nodes, one row per window (a view, not a copy)."""
            return sliding_window_view(values[run_of_nodes], size)

        windows = windowed(scores.slots)
        # Plugins without NormalizeScore whose PreScore reads no other node score every
        # window's node as the whole cycle did: their weighted sum is taken once.
        plain = np.zeros(len(scores.slots), dtype=np.int64)
        for column in attempt.extender_scores.values():
            plain = plain + column
        varying: list[tuple[Any, int, np.ndarray | None, np.ndarray]] = []
        for plugin in self.plugins:
            weight = scores.weights.get(plugin.name, 1)
            read = plugin.nodes_read_by_pre_score(state, self.cluster, windows)
            raw = scores.raw[plugin.name]
            if read is None and not _normalizes(plugin):
                plain += raw * weight
                continue
            if read is None and plugin.normalizes_rows and len(raw) and (raw == raw[0]).all():
                # The same score on every node: every window normalizes it alike.
                plain += scores.normalized[plugin.name] * weight
                continue
            varying.append((plugin, weight, read, raw))
        if not varying:
            return plain[run_of_nodes]
        total = windowed(plain).copy()
        for plugin, weight, read, raw in varying:
            if read is None:
                total += self._normalized(plugin, state, windows, windowed(raw),
                                          attempt.pod) * weight
                continue
            # PreScore again over each group of windows it reads alike.
            _, group = np.unique(read, axis=0, return_inverse=True)
            group = group.reshape(-1)
            for rows in np.split(np.argsort(group, kind="stable"),
                                 np.flatnonzero(np.diff(np.sort(group))) + 1):
                again = state.clone()
                plugin.pre_score(again, attempt.pod, self.cluster, windows[rows[0]])
                raw = np.asarray(plugin.score(again, attempt.pod, self.cluster,
                                              windows[rows].reshape(-1)), dtype=np.int64)
                total[rows] += self._normalized(plugin, again, windows[rows],
                                                raw.reshape(len(rows), -1),
                                                attempt.pod) * weight
        return total

    @staticmethod
    def _normalized(plugin: Any, state: CycleState, windows: np.ndarray,
                    raw: np.ndarray, pod: PodInfo) -> np.ndarray:
        if not _normalizes(plugin):
            return raw
        if plugin.normalizes_rows:
            normalized = plugin.normalize(state, pod, windows, raw)
            return raw if normalized is None else np.asarray(normalized, dtype=np.int64)
        rows = [plugin.normalize(state, pod, window, row) for window, row in zip(windows, raw,
                                                                                   strict=True)]
        return np.asarray([row if result is None else result
                           for row, result in zip(raw, rows, strict=True)], dtype=np.int64)
