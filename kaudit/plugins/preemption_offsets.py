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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


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
    return non_violating + violating


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
