"""DeviceTaintRules patched into ResourceSlices as the scheduler's slice tracker serves them
(``applyPatches`` of ``k8s.io/dynamic-resource-allocation/resourceslice/tracker``, v1.37.2)."""

from __future__ import annotations

from typing import Any

from kaudit.model.dra import taint_rule_selects, with_taint_rules

JSON = dict[str, Any]
TAINT = {"key": "example.com/maintenance", "effect": "NoSchedule"}


def _rule(**selector: str) -> JSON:
    return {"kind": "DeviceTaintRule", "metadata": {"name": "r"},
            "spec": {"deviceSelector": selector, "taint": TAINT}}


SLICE: JSON = {"kind": "ResourceSlice", "metadata": {"name": "s"},
               "spec": {"driver": "gpu.example.com", "pool": {"name": "n1"},
                        "devices": [{"name": "gpu-0"},
                                    {"name": "gpu-1", "taints": [{"key": "a",
                                                                  "effect": "None"}]}]}}


def _taints(piece: JSON) -> list[list[JSON]]:
    return [d.get("taints") or [] for d in piece["spec"]["devices"]]


def test_a_rule_taints_the_devices_its_selector_names() -> None:
    assert _taints(with_taint_rules(SLICE, [_rule(driver="gpu.example.com")])) == [
        [TAINT], [{"key": "a", "effect": "None"}, TAINT]]
    assert _taints(with_taint_rules(SLICE, [_rule(pool="n1", device="gpu-0")])) == [
        [TAINT], [{"key": "a", "effect": "None"}]]


def test_a_rule_that_selects_nothing_leaves_the_slice_as_it_was() -> None:
    for rule in (_rule(driver="other"), _rule(pool="n2"), _rule(device="gpu-9"),
                 {"kind": "DeviceTaintRule", "spec": {"taint": TAINT}}):  # no selector: none
        assert with_taint_rules(SLICE, [rule]) is SLICE
    assert _taints(SLICE)[0] == []  # never changed in place
    assert taint_rule_selects(_rule(pool="n1"), "gpu.example.com", "n1")
    assert not taint_rule_selects(_rule(pool="n1", device="gpu-0"), "gpu.example.com", "n1",
                                  "gpu-1")
