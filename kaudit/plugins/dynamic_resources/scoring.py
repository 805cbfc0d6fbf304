"""DynamicResources' Score (Kubernetes v1.35 on): prefer nodes where a claim's
``firstAvailable`` request got one of its earlier subrequests.

Mirrors ``Score``, ``computeScore`` and ``NormalizeScore`` of
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`` (v1.35.4, upstream PR
#134711): a node's raw score sums, over the pod's claims and their ``firstAvailable`` requests,
``FirstAvailableDeviceRequestMaxSize - i`` (8 - i) for the subrequest ``i`` its Filter-time
allocation used; ``exactly`` requests add nothing; ``DefaultNormalizeScore`` scales by the
highest. A node without an allocation from Filter (no claim to allocate) scores 0.

Upstream walks *all* the pod's claims by index but reads the allocations of only those it had
to allocate: with an allocated claim before an unallocated one it reads the wrong allocation,
and with fewer allocations than claims it fails the cycle (``number of allocations N is smaller
than number of claims``). kaudit does the same, so that its cycles agree with upstream's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: ``resourceapi.FirstAvailableDeviceRequestMaxSize``.
FIRST_AVAILABLE_MAX_SIZE = 8

JSON = dict[str, Any]


class ScoreError(Exception):
    """``computeScore``'s error: the cycle fails with it."""


def compute_score(claims: Sequence[JSON], allocations: Sequence[JSON]) -> int:
    """``computeScore``: the raw score of one node, from its allocations (those of the claims
    to allocate, in order) indexed by the position of each of *all* the claims."""
    score = 0
    for index, claim in enumerate(claims):
        if index >= len(allocations):
            raise ScoreError(f"number of allocations {len(allocations)} is smaller than "
                             "number of claims")
        results = (allocations[index].get("devices") or {}).get("results") or []
        allocated = {str(r.get("request") or "") for r in results
                     if "/" in str(r.get("request") or "")}
        requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
        for request in requests:
            if request.get("exactly") is not None:
                continue
            name = str(request.get("name") or "")
            for position, sub in enumerate(request.get("firstAvailable") or []):
                if f"{name}/{sub.get('name') or ''}" in allocated:
                    score += FIRST_AVAILABLE_MAX_SIZE - position
    return score
