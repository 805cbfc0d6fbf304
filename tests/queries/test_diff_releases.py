"""A diff of two runs that mirrored different releases names the release changes behind each
changed pod (``kaudit compare TRACE --kubernetes-version A --kubernetes-version B``)."""

from __future__ import annotations

from kaudit.queries.diff import PodChange, _release_cause, _release_changes


def test_a_move_is_tied_to_the_changes_of_the_plugin_that_decided_it() -> None:
    upgrade = _release_changes("v1.34.2", "v1.36.3")
    assert upgrade is not None
    moved = PodChange("ns/p", "moved", {}, {}, "", {"NodeResourcesBalancedAllocation": 9,
                                                  "NodeResourcesFit": -2})
    assert _release_cause(moved, upgrade) == (
        "NodeResourcesBalancedAllocation decided it, and changed in v1.36.3: "
        "balanced-allocation-with-and-without-pod (or the cluster differed by then)")
    drifted = PodChange("ns/q", "moved", {}, {}, "", {"NodeResourcesFit": 7})
    assert "the cluster differed by then" in _release_cause(drifted, upgrade)
    flip = PodChange("ns/r", "tie-flip", {}, {})
    assert _release_cause(flip, upgrade) == "v1.35.4: select-host-heap"
    assert _release_changes("v1.36.3", "v1.36.3") is None
    assert _release_changes(None, "v1.36.3") is None
