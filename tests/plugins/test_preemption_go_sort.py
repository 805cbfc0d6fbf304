"""``go_sort``: the order Go's ``sort.Slice`` leaves by ``MoreImportantPod``, including pods
without a start time (each read as a fresh ``time.Now()``, so each of two equal ones is
the more important when asked first)."""

from __future__ import annotations

import random

import pytest

from kaudit.plugins.preemption_go_sort import _GoSort, go_sort

#: Pod ``pNN`` of equal priority: every fifth from the fourth has a start time in the past,
#: the others none. What Go 1.26's ``sort.Slice`` printed for ``MoreImportantPod`` over
#: them, listed in name order.
GO_ORDERS = {
    4: "p03 p02 p01 p00",
    12: "p03 p08 p11 p10 p09 p07 p06 p05 p04 p02 p01 p00",
    13: "p03 p08 p11 p10 p00 p07 p06 p05 p04 p02 p01 p12 p09",
    20: "p18 p03 p08 p13 p17 p06 p04 p07 p00 p15 p09 p05 p01 p16 p14 p12 p02 p11 p19 p10",
    40: "p33 p03 p13 p28 p38 p18 p08 p23 p32 p22 p37 p34 p00 p21 p10 p24 p04 p09 p01 p16 "
        "p11 p05 p25 p12 p26 p36 p31 p07 p29 p02 p06 p14 p30 p19 p35 p17 p39 p15 p27 p20",
}


def _unstarted(key: tuple[int, ...]) -> bool:
    return key[-1] == 1


@pytest.mark.parametrize("count", sorted(GO_ORDERS))
def test_pods_without_a_start_time_are_sorted_as_go_sorts_them(count: int) -> None:
    names = [f"p{i:02d}" for i in range(count)]
    keys = {name: (0, 0, 0) if i % 5 == 3 else (0, 100, 1) for i, name in enumerate(names)}
    go_sort(names, keys.__getitem__, _unstarted)
    assert " ".join(names) == GO_ORDERS[count]


def test_the_short_path_is_go_s_insertion_sort_step_by_step() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        keys = [(rng.randint(0, 2), rng.randint(0, 2), rng.randint(0, 1))
                for _ in range(rng.randint(0, 12))]
        items = list(range(len(keys)))
        go_sort(items, keys.__getitem__, _unstarted)
        order = list(range(len(keys)))
        _GoSort(keys, order, _unstarted).insertion_sort(0, len(order))
        assert items == order, keys
