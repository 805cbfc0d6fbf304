"""How upstream's scheduler splits parallel work among its workers.

``Parallelizer.Until`` (``pkg/scheduler/framework/parallelize/parallelism.go``, Kubernetes
v1.34) hands the pieces (nodes, for filtering and for preemption's dry run) to ``parallelism``
workers through ``workqueue.ParallelizeUntil`` (``staging/src/k8s.io/client-go/util/workqueue/
parallelizer.go``) in chunks of consecutive pieces: each worker takes the next chunk when it
finishes one, and all stop at the next piece once the work is cancelled. What a cancelled
run examined is therefore a prefix of each chunk it started, not a prefix of the pieces.
"""

from __future__ import annotations

import math


def chunk_size(pieces: int, parallelism: int) -> int:
    """How many consecutive pieces one worker takes at a time (``chunkSizeFor``): √n, at most
    n / parallelism + 1, at least 1."""
    size = math.isqrt(pieces)
    limit = pieces // parallelism + 1
    if size > limit:
        size = limit
    elif size < 1:
        size = 1
    return size


def chunks_and_workers(pieces: int, parallelism: int) -> tuple[int, int, int]:
    """The chunk size, the number of chunks, and how many workers start at once (no more
    than there are chunks)."""
    size = chunk_size(pieces, parallelism)
    chunks = -(-pieces // size)
    return size, chunks, min(parallelism, chunks)
