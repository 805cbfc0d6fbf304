"""Which random offsets of preemption's dry run nominate a given node.

Upstream's ``DryRunPreemption`` (``pkg/scheduler/framework/preemption/preemption.go``,
Kubernetes v1.34) walks the potential nodes from a random offset (``GetOffsetAndNumCandidates``)
and stops once a candidate without PodDisruptionBudget violations exists and ``numCandidates``
candidates are found; ``pickOneNodeForPreemption`` then chooses among those alone. So when the
potential nodes hold more candidates than that, which node is nominated depends on the offset.

Given every candidate of the potential nodes (a dry run that examined them all), this module
rebuilds the candidates each offset finds, without examining a node again: an offset between
two candidates finds what an offset at the next candidate finds, so only offsets at candidates
are tried, walking back from the target (as the offset moves back, the walk stops no later, so
once the target drops out of the found candidates it does not come back).

The walk is upstream's order when one worker examines the nodes; upstream's workers examine
chunks of them at once, so a dry run can also find candidates a single walk would not
(:func:`window_in_parallel`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from kaudit.framework.parallelize import chunks_and_workers


class _Candidate(Protocol):
    @property
    def node(self) -> str: ...

    @property
    def pdb_violations(self) -> int: ...


C = TypeVar("C", bound=_Candidate)


@dataclass(frozen=True)
class OffsetWindow(Generic[C]):
    """What a dry run from ``start`` finds: its candidates (non-violating first, each group in
    walk order, as upstream appends them), the potential nodes it examined, and the best."""

    start: str
    candidates: list[C]
    examined: int
    best: list[C]


def found_from(walk: Sequence[C], first: int, wanted: int) -> list[C]:
    """The candidates a dry run finds starting at ``walk[first]``: ``walk`` holds every
    candidate in the potential nodes' order, ``wanted`` is ``numCandidates``."""
    non_violating: list[C] = []
    violating: list[C] = []
    for step in range(len(walk)):
        candidate = walk[(first + step) % len(walk)]
        (non_violating if candidate.pdb_violations == 0 else violating).append(candidate)
        if non_violating and len(non_violating) + len(violating) >= wanted:
            break
    # Each list keeps at most ``numCandidates`` (``newCandidateList``): later ones are dropped.
    return non_violating[:wanted] + violating[:wanted]


def window_nominating(
        candidates: Sequence[C], position: dict[str, int], potential: int, target: str,
        wanted: int, best: Callable[[list[C]], list[C]]) -> OffsetWindow[C] | None:
    """The first offset, walking back from ``target``'s own, whose dry run finds ``target``
    among its best candidates (``best``: ``pickOneNodeForPreemption``'s ties); None when no
    offset does. ``position`` gives each candidate node's place among the ``potential`` nodes
    in the walk's order."""
    walk = sorted(candidates, key=lambda c: position[c.node])
    at = next((i for i, c in enumerate(walk) if c.node == target), None)
    if at is None:
        return None
    for back in range(len(walk)):
        first = (at - back) % len(walk)
        found = found_from(walk, first, wanted)
        if all(c.node != target for c in found):
            return None
        tied = best(found)
        if any(c.node == target for c in tied):
            start = position[walk[first].node]
            last = max((position[c.node] - start) % potential for c in found)
            return OffsetWindow(walk[first].node, found, last + 1, tied)
    return None


def window_in_parallel(
        candidates: Sequence[C], position: dict[str, int], potential: int, target: str,
        wanted: int, beats: Callable[[C, C], bool], parallelism: int) -> OffsetWindow[C] | None:
    """A dry run that finds ``target`` among its best candidates when its workers interleave,
    though no single walk does (:func:`window_nominating`); None when none is found.

    Upstream's ``DryRunPreemption`` does not walk the potential nodes one by one: it hands
    them to ``parallelism`` workers (``Parallelizer.Until``, ``workqueue.ParallelizeUntil`` in
    ``staging/src/k8s.io/client-go/util/workqueue/parallelizer.go``) in chunks of consecutive
    nodes (:mod:`kaudit.framework.parallelize`); each worker takes the next chunk when it finishes
    one, and all stop once enough candidates are found. So what a dry run finds is a prefix
    of each started chunk, in whatever proportions the workers' interleaving gave. This tries
    the offsets that put ``target`` first in one of the chunks started at once, and keeps of
    every started chunk the candidates before the first that ``beats`` the target in
    ``pickOneNodeForPreemption``'s order; when those are enough (and one violates no budget),
    an interleaving that stops among them nominates ``target`` or ties it."""
    chosen = next((c for c in candidates if c.node == target), None)
    if chosen is None or target not in position:
        return None
    size, chunks, workers = chunks_and_workers(potential, parallelism)
    good = {c.node: not beats(c, chosen) for c in candidates}
    for first_chunk_of_target in range(workers):
        offset = (position[target] - first_chunk_of_target * size) % potential
        in_chunk: dict[int, list[C]] = {}
        for candidate in sorted(candidates, key=lambda c: (position[c.node] - offset) % potential):
            in_chunk.setdefault(((position[candidate.node] - offset) % potential) // size,
                                []).append(candidate)
        usable: dict[int, list[C]] = {}
        for chunk, members in in_chunk.items():
            bad = next((i for i, c in enumerate(members) if not good[c.node]), len(members))
            usable[chunk] = members[:bad]
        # A worker that finishes a chunk takes the next one: chunks without a better candidate
        # can be finished, each starting one more.
        started = workers
        for chunk in range(chunks):
            if chunk >= started:
                break
            if len(usable.get(chunk, ())) == len(in_chunk.get(chunk, ())):
                started += 1
        found = [chosen] + [c for chunk in range(min(started, chunks))
                            for c in usable.get(chunk, ()) if c.node != target]
        if len(found) < wanted or not any(c.pdb_violations == 0 for c in found):
            continue
        # The interleaving that stops first: the target, then the others chunk by chunk
        # until a budget-respecting candidate and ``wanted`` candidates are found.
        stopped = _stop(found, wanted)
        start = next((node for node, at in position.items() if at == offset), target)
        # Each chunk's nodes up to its last candidate taken were examined.
        reached: dict[int, int] = {}
        for candidate in stopped:
            walked = (position[candidate.node] - offset) % potential
            reached[walked // size] = max(reached.get(walked // size, 0), walked % size + 1)
        kept = [c for c in stopped if c.pdb_violations == 0][:wanted] + \
            [c for c in stopped if c.pdb_violations][:wanted]
        return OffsetWindow(start, kept, sum(reached.values()),
                            [c for c in kept if not beats(chosen, c)])
    return None


def _stop(found: list[C], wanted: int) -> list[C]:
    """The candidates taken in order until upstream's stop condition holds."""
    taken: list[C] = []
    for candidate in found:
        taken.append(candidate)
        if len(taken) >= wanted and any(c.pdb_violations == 0 for c in taken):
            break
    return taken
