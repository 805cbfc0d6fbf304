"""Which of preemption's random offsets nominate a node (kaudit.plugins.preemption_offsets)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from kaudit.framework.parallelize import chunk_size
from kaudit.plugins.preemption_offsets import (
    found_from,
    window_in_parallel,
    window_nominating,
)


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


# ----------------------------------------------------------------- workers interleaved

def beats(one: Cand, other: Cand) -> bool:
    return one.rank < other.rank


def test_chunk_sizes_follow_upstreams_formula() -> None:
    # chunkSizeFor: √n, at most n / parallelism + 1, at least 1.
    assert chunk_size(1000, 16) == 31
    assert chunk_size(5000, 16) == 70
    assert chunk_size(100, 16) == 7
    assert chunk_size(10, 16) == 1
    assert chunk_size(0, 16) == 1
    assert chunk_size(1, 16) == 1


def simulate(potential: int, offset: int, parallelism: int, at: dict[int, Cand],
             steps: list[int], wanted: int) -> list[Cand]:
    """Upstream's ``DryRunPreemption`` under ``workqueue.ParallelizeUntil`` with a chosen
    interleaving: each step lets the worker holding chunk ``steps[i]`` examine its next node
    (a chunk must have been handed out: the first ``workers``, then one more per finished
    chunk). ``at`` maps a walk index to the candidate found there."""
    size = chunk_size(potential, parallelism)
    chunks = -(-potential // size)
    workers = min(parallelism, chunks)
    next_piece = {c: c * size for c in range(chunks)}
    finished = 0
    non_violating: list[Cand] = []
    violating: list[Cand] = []
    for chunk in steps:
        assert chunk < workers + finished, "chunk not handed out yet"
        piece = next_piece[chunk]
        assert piece < min((chunk + 1) * size, potential), "chunk already done"
        next_piece[chunk] += 1
        if next_piece[chunk] == min((chunk + 1) * size, potential):
            finished += 1
        candidate = at.get(piece)
        if candidate is None:
            continue
        (non_violating if candidate.pdb_violations == 0 else violating).append(candidate)
        if non_violating and len(non_violating[:wanted]) + len(violating[:wanted]) >= wanted:
            break
    else:
        raise AssertionError("the interleaving ended before the dry run stopped")
    return non_violating[:wanted] + violating[:wanted]


def steps_for(at: dict[int, Cand], potential: int, parallelism: int, target: Cand) -> list[int]:
    """An interleaving: the target (first in its chunk) examined first, then each chunk in
    turn as far as it goes before a candidate that beats the target."""
    size = chunk_size(potential, parallelism)
    chunks = -(-potential // size)
    own = next(w for w, c in at.items() if c is target) // size
    steps = [own]
    for chunk in range(chunks):
        first = chunk * size + (1 if chunk == own else 0)
        for piece in range(first, min((chunk + 1) * size, potential)):
            if piece in at and beats(at[piece], target):
                break
            steps.append(chunk)
    return steps


def test_workers_interleaved_reach_a_target_no_single_walk_elects() -> None:
    # 100 potential nodes, every one a candidate, 10 wanted: the nine nodes on either side
    # of n50 beat it, so every window of ten consecutive candidates holding n50 prefers
    # another. Upstream's workers take chunks of 7 nodes at once, so a dry run can find n50
    # first in its chunk and the rest in other chunks, among nodes it beats.
    names = [f"n{i:02d}" for i in range(100)]
    candidates = [Cand(name, rank=10 if name == "n50" else 1 if abs(i - 50) <= 9 else 20)
                  for i, name in enumerate(names)]
    order = positions(*names)
    assert window_nominating(candidates, order, 100, "n50", 10, best) is None
    window = window_in_parallel(candidates, order, 100, "n50", 10, beats, 16)
    assert window is not None
    assert "n50" in [c.node for c in window.best]
    assert len(window.candidates) == 10
    offset = order[window.start]
    at = {(order[c.node] - offset) % 100: c for c in candidates}
    found = simulate(100, offset, 16, at, steps_for(at, 100, 16, candidates[50]), 10)
    assert {c.node for c in found} == {c.node for c in window.candidates}


def test_workers_interleaved_cannot_help_when_every_other_candidate_wins() -> None:
    names = [f"n{i:02d}" for i in range(100)]
    candidates = [Cand(name, rank=10 if name == "n50" else 1) for name in names]
    assert window_in_parallel(candidates, positions(*names), 100, "n50", 10, beats, 16) is None
    # One worker: the chunks are the whole walk; nothing beyond a single walk.
    few = [Cand(name, rank=10 if name == "n50" else 1 if abs(i - 50) <= 9 else 20)
           for i, name in enumerate(names)]
    assert window_in_parallel(few, positions(*names), 100, "n50", 10, beats, 1) is None


def test_every_interleaved_window_found_is_one_upstreams_workers_can_produce() -> None:
    rng = random.Random(7)
    for _ in range(300):
        potential = rng.randint(20, 400)
        names = [f"n{i:03d}" for i in range(potential)]
        candidates = [Cand(name, pdb_violations=int(rng.random() < 0.3), rank=rng.randint(0, 9))
                      for name in names if rng.random() < 0.6]
        if len(candidates) < 3:
            continue
        order = positions(*names)
        target = rng.choice(candidates).node
        wanted = rng.randint(2, max(2, len(candidates) // 3))
        parallelism = rng.choice([2, 4, 16])
        window = window_in_parallel(candidates, order, potential, target, wanted, beats,
                                    parallelism)
        if window is None:
            continue
        offset = order[window.start]
        at = {(order[c.node] - offset) % potential: c for c in candidates}
        chosen = next(c for c in candidates if c.node == target)
        found = simulate(potential, offset, parallelism, at,
                         steps_for(at, potential, parallelism, chosen), wanted)
        assert {c.node for c in found} == {c.node for c in window.candidates}
        assert target in {c.node for c in best(found)}
