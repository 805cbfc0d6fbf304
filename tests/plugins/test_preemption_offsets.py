"""Which of preemption's random offsets nominate a node (kaudit.plugins.preemption_offsets)."""

from __future__ import annotations

from dataclasses import dataclass

from kaudit.plugins.preemption_offsets import found_from, window_nominating


@dataclass(frozen=True)
class Cand:
    node: str
    pdb_violations: int = 0
    rank: int = 0  # lower is better


def best(found: list[Cand]) -> list[Cand]:
    top = min(c.rank for c in found)
    return [c for c in found if c.rank == top]


def positions(*names: str) -> dict[str, int]:
    return {name: i for i, name in enumerate(names)}


def test_a_dry_run_stops_at_enough_candidates_once_one_violates_no_budget() -> None:
    walk = [Cand("a", 1), Cand("b", 1), Cand("c"), Cand("d")]
    # Two wanted: a and b are enough in number but both violate a budget, so the walk goes
    # on to c; violating candidates come after the others, as upstream appends them.
    assert [c.node for c in found_from(walk, 0, 2)] == ["c", "a", "b"]
    assert [c.node for c in found_from(walk, 2, 2)] == ["c", "d"]
    # It wraps around the potential nodes.
    assert [c.node for c in found_from(walk, 3, 2)] == ["d", "a"]


def test_the_first_offset_before_the_target_that_nominates_it_is_found() -> None:
    # Ranks: n3 beats n2, which beats n1. From n2, the two candidates found are n2 and n3:
    # n3 wins. Only from n1 (n1, n2) does n2 win.
    candidates = [Cand("n1", rank=3), Cand("n2", rank=2), Cand("n3", rank=1),
                  Cand("n4", rank=4)]
    order = positions("n0", "n1", "n2", "n3", "n4", "n5")
    window = window_nominating(candidates, order, 6, "n2", 2, best)
    assert window is not None
    assert window.start == "n1"
    assert [c.node for c in window.candidates] == ["n1", "n2"]
    assert [c.node for c in window.best] == ["n2"]
    assert window.examined == 2


def test_no_offset_when_every_window_holding_the_target_prefers_another() -> None:
    candidates = [Cand("n1", rank=1), Cand("n2", rank=2), Cand("n3", rank=1)]
    order = positions("n1", "n2", "n3")
    # Any two consecutive candidates holding n2 hold n1 or n3 too.
    assert window_nominating(candidates, order, 3, "n2", 2, best) is None
    # A node that is no candidate is nominated from no offset.
    assert window_nominating(candidates, order, 3, "n9", 2, best) is None


def test_a_tie_with_the_target_counts_and_examined_spans_the_gaps() -> None:
    candidates = [Cand("n0", rank=1), Cand("n5", rank=1), Cand("n8", rank=1)]
    order = positions(*(f"n{i}" for i in range(10)))
    window = window_nominating(candidates, order, 10, "n5", 2, best)
    assert window is not None
    # From n5 itself: n5 and n8, tied; n5 among the best. The walk examined n5 to n8.
    assert (window.start, window.examined) == ("n5", 4)
    assert {c.node for c in window.best} == {"n5", "n8"}


def test_an_offset_that_wraps_around_reaches_the_target() -> None:
    # n0 is best only beside n9 (the walk from n9 wraps to n0); n1 beats it otherwise.
    candidates = [Cand("n0", rank=2), Cand("n1", rank=1), Cand("n9", rank=3)]
    order = positions(*(f"n{i}" for i in range(10)))
    window = window_nominating(candidates, order, 10, "n0", 2, best)
    assert window is not None
    assert window.start == "n9"
    assert [c.node for c in window.candidates] == ["n9", "n0"]
    assert window.examined == 2
