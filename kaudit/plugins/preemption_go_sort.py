"""Go's ``sort.Slice``, step for step: the order it leaves equal elements in.

``SelectVictimsOnNode`` (``pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption.go``, Kubernetes v1.34) sorts a node's potential victims with
``sort.Slice`` by ``MoreImportantPod``. Up to 12 elements that is an insertion sort, which
keeps equal elements in order (as Python's sort does); past 12 it is Go's pattern-defeating
quicksort (``src/sort/zsortfunc.go``, unchanged since Go 1.19), which moves equal elements
about in a fixed, deterministic way. Which equally ranked victims upstream reprieves follows
from it, so :func:`go_sort` mirrors it exactly (``pdqsort_func`` and its helpers; the
stable-sort half of the file is not needed).

``MoreImportantPod`` (``pkg/scheduler/util/utils.go``) reads a pod without a start time as
starting ``time.Now()``, called afresh for each argument, the first first: of two such pods of
equal priority, whichever is asked about first is the more important, both ways round. So
``sort.Slice`` leaves those pods in no order a key can give (up to 12 pods, in the reverse of
the order they were listed in); ``unordered`` names their keys and :meth:`_GoSort.less`
answers as upstream's comparison does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: The longest slice ``sort.Slice`` sorts by insertion (keeping equal elements in order).
INSERTION_SORT_MAX = 12
_INCREASING, _DECREASING, _UNKNOWN = 1, 2, 0
_MASK64 = (1 << 64) - 1


def go_sort(items: list[T], key: Callable[[T], Any],
            unordered: Callable[[Any], bool] | None = None) -> None:
    """Sort ``items`` in place as Go's ``sort.Slice`` would with ``less(i, j) = key(items[i])
    < key(items[j])``, or, when ``unordered(key)`` holds for equal keys, ``less(i, j)`` true
    (two pods without start times, ``MoreImportantPod``)."""
    keys = [key(item) for item in items]
    if unordered is None or not any(unordered(k) for k in keys):
        unordered = None
        if len(items) <= INSERTION_SORT_MAX or len(set(keys)) == len(items):
            # The same order: stable for a short slice, unique otherwise.
            order = sorted(range(len(items)), key=keys.__getitem__)
            items[:] = [items[i] for i in order]
            return
    elif len(items) <= INSERTION_SORT_MAX:
        items[:] = _insertion_sorted(items, keys, unordered)
        return
    order = list(range(len(items)))
    _GoSort(keys, order, unordered).pdqsort(0, len(order), len(order).bit_length())
    items[:] = [items[i] for i in order]


def started_now(key: tuple[int, ...]) -> bool:
    """Whether an importance key (``-priority, start, 1 without a start time``) is a pod
    without a start time's: ``go_sort``'s ``unordered`` for ``MoreImportantPod``."""
    return key[-1] == 1


def _insertion_sorted(items: list[T], keys: list[Any], unordered: Callable[[Any], bool]
                      ) -> list[T]:
    """Go's insertion sort with ``unordered`` keys: each such item moves before every equal
    one already sorted, so a stable sort with each run of equal ``unordered`` keys reversed."""
    order = sorted(range(len(items)), key=keys.__getitem__)
    out: list[T] = []
    run: list[int] = []
    for index in order:
        if run and keys[run[0]] != keys[index]:
            out.extend(items[i] for i in (reversed(run) if unordered(keys[run[0]]) else run))
            run = []
        run.append(index)
    out.extend(items[i] for i in (reversed(run) if run and unordered(keys[run[0]]) else run))
    return out


class _GoSort:
    """``lessSwap`` over ``order`` (indices into ``keys``)."""

    def __init__(self, keys: Sequence[Any], order: list[int],
                 unordered: Callable[[Any], bool] | None = None) -> None:
        self.keys = keys
        self.order = order
        self.unordered = unordered

    def less(self, i: int, j: int) -> bool:
        a, b = self.keys[self.order[i]], self.keys[self.order[j]]
        if self.unordered is not None and a == b and self.unordered(a):
            return True
        return bool(a < b)

    def swap(self, i: int, j: int) -> None:
        order = self.order
        order[i], order[j] = order[j], order[i]

    def insertion_sort(self, a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and self.less(j, j - 1):
                self.swap(j, j - 1)
                j -= 1

    def sift_down(self, lo: int, hi: int, first: int) -> None:
        root = lo
        while True:
            child = 2 * root + 1
            if child >= hi:
                return
            if child + 1 < hi and self.less(first + child, first + child + 1):
                child += 1
            if not self.less(first + root, first + child):
                return
            self.swap(first + root, first + child)
            root = child

    def heap_sort(self, a: int, b: int) -> None:
        first, lo, hi = a, 0, b - a
        for i in range((hi - 1) // 2, -1, -1):
            self.sift_down(i, hi, first)
        for i in range(hi - 1, -1, -1):
            self.swap(first, first + i)
            self.sift_down(lo, i, first)

    def pdqsort(self, a: int, b: int, limit: int) -> None:
        was_balanced = was_partitioned = True
        while True:
            length = b - a
            if length <= INSERTION_SORT_MAX:
                self.insertion_sort(a, b)
                return
            if limit == 0:
                self.heap_sort(a, b)
                return
            if not was_balanced:
                self.break_patterns(a, b)
                limit -= 1
            pivot, hint = self.choose_pivot(a, b)
            if hint == _DECREASING:
                self.reverse_range(a, b)
                pivot = (b - 1) - (pivot - a)
                hint = _INCREASING
            if was_balanced and was_partitioned and hint == _INCREASING \
                    and self.partial_insertion_sort(a, b):
                return
            if a > 0 and not self.less(a - 1, pivot):
                a = self.partition_equal(a, b, pivot)
                continue
            mid, was_partitioned = self.partition(a, b, pivot)
            left, right = mid - a, b - mid
            threshold = length // 8
            if left < right:
                was_balanced = left >= threshold
                self.pdqsort(a, mid, limit)
                a = mid + 1
            else:
                was_balanced = right >= threshold
                self.pdqsort(mid + 1, b, limit)
                b = mid

    def partition(self, a: int, b: int, pivot: int) -> tuple[int, bool]:
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while i <= j and self.less(i, a):
            i += 1
        while i <= j and not self.less(j, a):
            j -= 1
        if i > j:
            self.swap(j, a)
            return j, True
        self.swap(i, j)
        i, j = i + 1, j - 1
        while True:
            while i <= j and self.less(i, a):
                i += 1
            while i <= j and not self.less(j, a):
                j -= 1
            if i > j:
                break
            self.swap(i, j)
            i, j = i + 1, j - 1
        self.swap(j, a)
        return j, False

    def partition_equal(self, a: int, b: int, pivot: int) -> int:
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while True:
            while i <= j and not self.less(a, i):
                i += 1
            while i <= j and self.less(a, j):
                j -= 1
            if i > j:
                return i
            self.swap(i, j)
            i, j = i + 1, j - 1

    def partial_insertion_sort(self, a: int, b: int) -> bool:
        max_steps, shortest_shifting = 5, 50
        i = a + 1
        for _ in range(max_steps):
            while i < b and not self.less(i, i - 1):
                i += 1
            if i == b:
                return True
            if b - a < shortest_shifting:
                return False
            self.swap(i, i - 1)
            if i - a >= 2:
                for j in range(i - 1, 0, -1):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
            if b - i >= 2:
                for j in range(i + 1, b):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
        return False

    def break_patterns(self, a: int, b: int) -> None:
        length = b - a
        if length < 8:
            return
        random = length
        modulus = 1 << length.bit_length()
        for idx in range(a + (length // 4) * 2 - 1, a + (length // 4) * 2 + 2):
            random ^= (random << 13) & _MASK64
            random ^= random >> 7
            random ^= (random << 17) & _MASK64
            other = random & (modulus - 1)
            if other >= length:
                other -= length
            self.swap(idx, a + other)

    def choose_pivot(self, a: int, b: int) -> tuple[int, int]:
        shortest_ninther, max_swaps = 50, 4 * 3
        length = b - a
        swaps = [0]
        i, j, k = a + length // 4 * 1, a + length // 4 * 2, a + length // 4 * 3
        if length >= 8:
            if length >= shortest_ninther:
                i = self.median(i - 1, i, i + 1, swaps)
                j = self.median(j - 1, j, j + 1, swaps)
                k = self.median(k - 1, k, k + 1, swaps)
            j = self.median(i, j, k, swaps)
        if swaps[0] == 0:
            return j, _INCREASING
        if swaps[0] == max_swaps:
            return j, _DECREASING
        return j, _UNKNOWN

    def order2(self, a: int, b: int, swaps: list[int]) -> tuple[int, int]:
        if self.less(b, a):
            swaps[0] += 1
            return b, a
        return a, b

    def median(self, a: int, b: int, c: int, swaps: list[int]) -> int:
        a, b = self.order2(a, b, swaps)
        b, c = self.order2(b, c, swaps)
        a, b = self.order2(a, b, swaps)
        return b

    def reverse_range(self, a: int, b: int) -> None:
        i, j = a, b - 1
        while i < j:
            self.swap(i, j)
            i, j = i + 1, j - 1
