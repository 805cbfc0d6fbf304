"""Database writes a stop request must not cut in half.

A signal handler that stops the process at once (a second Ctrl-C, a stop request the work did
not honour in time) calls :func:`stop_now`. On a thread inside :func:`transaction`, the stop is
held until that transaction has committed or rolled back, then raised: a stop never leaves a
half-written batch or an SQLite write lock behind, so the run's final status can be written.
Signal handlers run on the main thread only, so the depth is kept per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine

_state = threading.local()


def _depth() -> int:
    return getattr(_state, "depth", 0)  # type: ignore[no-any-return]


@contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """``engine.begin()``, during which :func:`stop_now` waits for the transaction's end."""
    depth = _depth()
    _state.depth = depth + 1
    try:
        with engine.begin() as connection:
            yield connection
    finally:
        _state.depth = depth
        pending: BaseException | None = getattr(_state, "pending", None)
        if depth == 0 and pending is not None:
            _state.pending = None
            raise pending


def stop_now(stop: BaseException) -> None:
    """Raise ``stop`` here, or at the end of the transaction in progress (the first one held
    wins)."""
    if _depth() == 0:
        raise stop
    if getattr(_state, "pending", None) is None:
        _state.pending = stop
