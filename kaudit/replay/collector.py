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
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between young collections, and collections between older ones.
REPLAY_THRESHOLDS = (100_000, 50, 100)

_lock = threading.Lock()
_replays = 0
_before: tuple[int, ...] = ()


@contextmanager
def replay_pace() -> Iterator[None]:
    """Raise the collector's thresholds (never lower them) for the block, then restore them.
    Replays in several threads of one process share one raise: the last to end restores.
    A collector switched off (threshold 0) stays off."""
    global _replays, _before
    with _lock:
        if _replays == 0:
            _before = gc.get_threshold()
            if _before[0] > 0:
                gc.set_threshold(*(max(old, new) for old, new in
                                   zip(_before, REPLAY_THRESHOLDS, strict=False)))
        _replays += 1
    try:
        yield
    finally:
        with _lock:
            _replays -= 1
            if _replays == 0:
                gc.set_threshold(*_before)
