"""The release's ``selectHost`` among tied nodes: v1.35's score heap against a step-by-step
``container/heap`` (``Init`` then ``Pop``), and the scheduler choosing by it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kaudit.scheduler.select_host import ScoreHeap, heap_keys, heap_root


def go_heap_pop(keys: list[int]) -> int:
    """The index (in the input order) ``heap.Pop`` returns after ``heap.Init`` of a max-heap
    with ``Less(i, j) = keys[i] > keys[j]``: Go's ``container/heap`` ``down`` step by step."""
    h = list(enumerate(keys))
    n = len(h)

    def less(i: int, j: int) -> bool:
        return h[i][1] > h[j][1]

    def down(i0: int, size: int) -> None:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= size:
                break
            j = j1
            j2 = j1 + 1
            if j2 < size and less(j2, j1):
                j = j2
            if not less(j, i):
                break
            h[i], h[j] = h[j], h[i]
            i = j

    for i in range(n // 2 - 1, -1, -1):
        down(i, n)
    # Pop: swap the root with the last, sift down, remove the last.
    h[0], h[n - 1] = h[n - 1], h[0]
    down(0, n - 1)
    return h[n - 1][0]


@pytest.mark.parametrize("seed", range(300))
def test_heap_root_equals_go_heap_init_and_pop(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 64, 100, 257, 1000, 2049])
    spread = rng.choice([1, 2, 3, 10])
    keys = [rng.randrange(spread) for _ in range(n)]
    assert heap_root(np.asarray(keys, dtype=np.int64)) == go_heap_pop(keys)


def test_all_tied_gives_the_first_node() -> None:
    assert heap_root(np.zeros(500, dtype=np.int64)) == 0


def test_a_tie_below_the_root_follows_the_sift_down() -> None:
    # [1, 2, 2]: down(0) takes the left child (the right is not strictly greater).
    assert heap_root(np.asarray([1, 2, 2])) == 1
    # [1, 3, 2, 3]: down(1) keeps 3 at index 1 (its child is not strictly greater), then
    # down(0) takes the left child: the first of the two 3s.
    assert heap_root(np.asarray([1, 3, 2, 3])) == 1
    # [1, 2, 3, 3]: down(1) lifts index 3 over index 1; down(0) then sees 3 on both sides
    # and takes the left subtree's root, index 3, not the right child, index 2.
    assert heap_root(np.asarray([1, 2, 3, 3])) == 3 == go_heap_pop([1, 2, 3, 3])

def test_heap_keys_rank_by_total_then_randomizer() -> None:
    total = np.asarray([5, 7, 7, 7, 3], dtype=np.int64)
    assert heap_keys(total, None, "s") is total
    randomized = np.asarray([False, False, True, True, False])
    keys = heap_keys(total, randomized, "seed")
    # An extender-scored node beats an unscored one of the same total; both beat lower totals.
    assert keys[2] > keys[1] and keys[3] > keys[1] and keys[1] > keys[0] > keys[4]
    assert keys[2] != keys[3]
    assert np.array_equal(keys, heap_keys(total, randomized, "seed"))


@pytest.mark.parametrize("seed", range(100))
def test_score_heap_pops_as_go_heap(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([1, 2, 3, 9, 40, 130])
    keys = [rng.randrange(rng.choice([2, 5, 50])) for _ in range(n)]
    heap = ScoreHeap(np.asarray(keys, dtype=np.int64), np.arange(n) + 1000)
    assert heap.pop() - 1000 == go_heap_pop(keys) == heap_root(np.asarray(keys))
    popped = [heap.pop() - 1000 for _ in range(len(heap))]
    # Every later pop is a maximum of what remains (the order of equal keys is the heap's).
    remaining = sorted(range(n), key=lambda i: -keys[i])
    assert sorted(keys[i] for i in popped) == sorted(keys[i] for i in remaining[1:])
    assert [keys[i] for i in popped] == sorted((keys[i] for i in popped), reverse=True)
