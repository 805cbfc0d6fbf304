"""Choosing among the nodes tied at the highest score, as each release's ``selectHost`` does.

Kubernetes v1.34 (``pkg/scheduler/schedule_one.go``, ``selectHost``) samples uniformly among the
nodes with the top total score: kaudit draws with an RNG seeded by (run seed, pod UID, attempt),
so a replay is reproducible.

From v1.35 (``pkg/scheduler/schedule_one.go``: ``prioritizeNodes``, ``newSortedNodeScores``,
``nodeScoreHeap``; upstream PR #135231) the scored nodes, in the order Filter found them, go
into a ``container/heap`` ordered by total score, then by a ``Randomizer`` that only nodes an
extender scored get (``rand.Int()``); ``Pop`` returns the root. With no extender every
randomizer is 0, and which of the tied nodes ends at the root follows from ``heap.Init``'s
sift-downs: :func:`heap_root` computes it.
"""

from __future__ import annotations

import random

import numpy as np

#: Go's ``rand.Int()`` is a non-negative int63.
_INT63 = 2**63


def heap_root(keys: np.ndarray) -> int:
    """The index of the element ``container/heap``'s ``Init`` leaves at the root of the
    max-heap over ``keys`` (``Less(i, j)`` is ``keys[i] > keys[j]``), without building it.

    ``down(i)`` swaps ``h[i]`` with its greater child (the right one only when strictly greater
    than the left) while that child is strictly greater, and ``Init`` runs it from ``n/2 - 1``
    to 0. When ``down(i)`` runs, ``h[i]`` still holds its own element and each child subtree is
    a heap whose root is its maximum, so the element that ends at ``i`` is its own when it is
    its subtree's maximum, else the winner of the left subtree when that holds the maximum,
    else the right one's: the first element of greatest key in pre-order (node, left subtree,
    right subtree). Its path from the root is the binary form of ``index + 1`` after the
    leading 1 (0 left, 1 right); padded to the deepest level, paths order as pre-order does,
    an ancestor (a prefix) coming first.
    """
    n = len(keys)
    if n == 0:
        raise ValueError("heap_root of no keys")
    candidates = np.flatnonzero(keys == keys.max())
    if len(candidates) == 1:
        return int(candidates[0])
    position = candidates.astype(np.int64) + 1
    depth = np.frexp(position.astype(np.float64))[1] - 1  # floor(log2(position)), exactly
    deepest = int(depth.max())
    order = (position << (deepest - depth)) * (deepest + 1) + depth
    return int(candidates[int(np.argmin(order))])


def heap_keys(total: np.ndarray, randomized: np.ndarray | None, seed: str) -> np.ndarray:
    """Keys ordering the nodes as ``nodeScoreHeap.Less``: total score, then randomizer. Nodes
    in ``randomized`` (an extender scored them) draw theirs from an RNG seeded by ``seed``;
    the others have 0. Returned as ranks, so one comparison orders both."""
    if randomized is None or not randomized.any():
        return total
    rng = random.Random(seed)
    randomizer = np.zeros(len(total), dtype=np.int64)
    for i in np.flatnonzero(randomized).tolist():
        randomizer[i] = rng.randrange(_INT63)
    order = np.lexsort((randomizer, total))
    ranks = np.empty(len(total), dtype=np.int64)
    ranks[order] = np.arange(len(total))
    # Equal (total, randomizer) pairs keep equal ranks, as Less cannot tell them apart.
    pairs = np.stack([total[order], randomizer[order]], axis=1)
    same = np.concatenate([[False], (pairs[1:] == pairs[:-1]).all(axis=1)])
    group_start = np.maximum.accumulate(np.where(same, 0, np.arange(len(total))))
    ranks[order] = group_start
    return ranks


def uniform_choice(count: int, seed: str) -> int:
    """v1.34's ``selectHost``: one of ``count`` tied nodes, uniformly, from a seeded RNG."""
    return random.Random(seed).randrange(count)


class ScoreHeap:
    """``sortedNodeScores``: the scored nodes in ``container/heap`` order, popped one by one
    as upstream's Opportunistic Batching pops them (``Init``, then ``Pop`` per hint). Holds
    node slots; ``keys`` order them as :func:`heap_keys` does."""

    def __init__(self, keys: np.ndarray, slots: np.ndarray) -> None:
        self._keys: list[int] = [int(k) for k in keys.tolist()]
        self._slots: list[int] = [int(s) for s in slots.tolist()]
        n = len(self._keys)
        for i in range(n // 2 - 1, -1, -1):
            self._down(i, n)

    def __len__(self) -> int:
        return len(self._keys)

    def _less(self, i: int, j: int) -> bool:
        return self._keys[i] > self._keys[j]

    def _swap(self, i: int, j: int) -> None:
        keys, slots = self._keys, self._slots
        keys[i], keys[j] = keys[j], keys[i]
        slots[i], slots[j] = slots[j], slots[i]

    def _down(self, i0: int, n: int) -> None:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                return
            j = j1
            j2 = j1 + 1
            if j2 < n and self._less(j2, j1):
                j = j2
            if not self._less(j, i):
                return
            self._swap(i, j)
            i = j

    def pop(self) -> int:
        """``heap.Pop``: the root's slot; the heap keeps the rest."""
        n = len(self._keys) - 1
        self._swap(0, n)
        self._down(0, n)
        self._keys.pop()
        return self._slots.pop()
