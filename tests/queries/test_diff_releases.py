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


def test_a_pod_scheduled_in_one_release_only_is_tied_to_the_plugin_that_rejected_it() -> None:
    """The other run's last attempt rejected the node the pod got: that plugin's changes,
    the gates turned on among them (here DRA's beta features, on from v1.36)."""
    upgrade = _release_changes("v1.34.2", "v1.37.2")
    assert upgrade is not None
    only_b = PodChange("ns/p", "scheduled-only-in-b", {}, {}, "never bound in a",
                       rejected_by="DynamicResources")
    cause = _release_cause(only_b, upgrade)
    assert cause.startswith("DynamicResources rejected it in one release only, and changed in")
    assert "v1.36.3: DRAPartitionableDevices on" in cause
    assert "v1.36.3: DRAConsumableCapacity on" in cause
    unchanged = PodChange("ns/q", "scheduled-only-in-a", {}, {}, "", rejected_by="NodePorts")
    assert _release_cause(unchanged, upgrade).startswith(
        "NodePorts's code is the same in both releases")
    unknown = PodChange("ns/r", "scheduled-only-in-a", {}, {})
    assert "the cluster differed by then" in _release_cause(unknown, upgrade)
