"""The cyclic garbage collector's pace while a replay runs.

A replay keeps hundreds of thousands of long-lived objects (pods, their parsed JSON, the
queue) and allocates short-lived ones by the million (statuses, candidates, arrays). With
CPython's default thresholds (700, 10, 10) the collector walks the young generations every
700 allocations and the whole heap whenever enough objects have survived, which took a
quarter of a 5,000-node preemption replay's time while finding next to no cycles: almost
everything a replay drops is freed by reference counting. During a replay the thresholds are
raised, and put back afterwards; cycles are still collected, only less often.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between young collections, and collections between older ones.
REPLAY_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def replay_pace() -> Iterator[None]:
    """Raise the collector's thresholds (never lower them) for the block, then restore."""
    before = gc.get_threshold()
    gc.set_threshold(*(max(old, new) for old, new in zip(before, REPLAY_THRESHOLDS,
                                                          strict=False)))
    try:
        yield
    finally:
        gc.set_threshold(*before)
