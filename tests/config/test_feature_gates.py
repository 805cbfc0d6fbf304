"""Feature gates: v1.34 defaults and locks, and ``--feature-gates`` parsing (as v1.34.2, whose
table these cases are taken from; every release's table is checked in ``tests/versions``).

Expected states come from the versioned specs in ``pkg/features/kube_features.go``;
messages from ``k8s.io/component-base/featuregate``.
"""

from __future__ import annotations

import pytest

from kaudit import versions
from kaudit.config import FeatureGates
from kaudit.errors import ConfigError
from tests.conftest import V1_34, gates_at

RELEASE = versions.get(V1_34)
GATE_SPECS = RELEASE.gates


def parse_feature_gates(text: str) -> FeatureGates:
    return gates_at(V1_34, text)


@pytest.mark.parametrize(("gate", "default", "locked"), [
    ("DynamicResourceAllocation", True, False),  # GA in 1.34, locked only from 1.35
    ("VolumeAttributesClass", True, False),
    ("SchedulerQueueingHints", True, True),
    ("SchedulerAsyncPreemption", True, False),
    ("SchedulerPopFromBackoffQ", True, False),
    ("PodLevelResources", True, False),
    ("InPlacePodVerticalScaling", True, False),
    ("MatchLabelKeysInPodTopologySpread", True, False),
    ("NodeInclusionPolicyInPodTopologySpread", True, True),
    ("StorageCapacityScoring", False, False),
    ("SidecarContainers", True, True),
    ("PodSchedulingReadiness", True, True),
    ("DRASchedulerFilterTimeout", True, False),
    ("DRAExtendedResource", False, False),
])
def test_v1_34_gate_states(gate: str, default: bool, locked: bool) -> None:
    assert FeatureGates(version=RELEASE).enabled(gate) is default
    assert GATE_SPECS[gate].locked is locked


def test_parse_sets_values_and_keeps_the_rest_default() -> None:
    gates = parse_feature_gates(" StorageCapacityScoring = true ,,PodLevelResources=False")
    assert gates.enabled("StorageCapacityScoring") and not gates["PodLevelResources"]
    assert gates.enabled("SchedulerAsyncPreemption")
    assert gates.overrides == {"StorageCapacityScoring": True, "PodLevelResources": False}
    assert gates.non_default() == {"PodLevelResources": False, "StorageCapacityScoring": True}
    assert str(gates) == "PodLevelResources=false,StorageCapacityScoring=true"
    assert parse_feature_gates("") == FeatureGates(version=RELEASE)
    assert parse_feature_gates("SchedulerAsyncPreemption=1").enabled("SchedulerAsyncPreemption")


@pytest.mark.parametrize(("text", "message"), [
    ("Foo=true", "unrecognized feature gate: Foo"),
    ("SidecarContainers=false",
     "cannot set feature gate SidecarContainers to false, feature is locked to true"),
    ("SchedulerQueueingHints=false,NodeInclusionPolicyInPodTopologySpread=false",
     "[cannot set feature gate SchedulerQueueingHints to false, feature is locked to true, "
     "cannot set feature gate NodeInclusionPolicyInPodTopologySpread to false, feature is "
     "locked to true]"),
    ("StorageCapacityScoring", "missing bool value for StorageCapacityScoring"),
    ("StorageCapacityScoring=yes", "invalid value of StorageCapacityScoring=yes, err: "
     'strconv.ParseBool: parsing "yes": invalid syntax'),
])
def test_parse_errors_use_upstream_wording(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_feature_gates(text)
    assert str(info.value) == message


def test_a_locked_gate_may_be_set_to_its_default() -> None:
    assert parse_feature_gates("SidecarContainers=true").enabled("SidecarContainers")


def test_all_alpha_enables_every_unset_alpha_gate() -> None:
    gates = parse_feature_gates("AllAlpha=true,DRAExtendedResource=false")
    alpha = [n for n, s in GATE_SPECS.items() if s.stage == "ALPHA"]
    assert gates.enabled("StorageCapacityScoring") and not gates["DRAExtendedResource"]
    assert all(gates[n] for n in alpha if n != "DRAExtendedResource")
    off = parse_feature_gates("AllBeta=false")
    assert not off["SchedulerAsyncPreemption"] and off["SchedulerQueueingHints"]  # GA, locked


def test_gates_are_an_immutable_mapping() -> None:
    gates = FeatureGates({"StorageCapacityScoring": True}, RELEASE)
    assert dict(gates)["StorageCapacityScoring"] and len(gates) == len(GATE_SPECS)
    assert gates.with_overrides({"PodLevelResources": False}).overrides == {
        "StorageCapacityScoring": True, "PodLevelResources": False}
    assert hash(gates) == hash(FeatureGates({"StorageCapacityScoring": True}, RELEASE))
    with pytest.raises(KeyError):
        gates.enabled("NoSuchGate")
    with pytest.raises(ConfigError, match="unrecognized feature gate: Bar"):
        FeatureGates({"Bar": True}, RELEASE)


def test_unmodelled_dra_gates_load_with_a_warning() -> None:
    """The alpha DRA gates kaudit does not model: a configuration may turn them on (as a
    cluster's may), and loading it says that DynamicResources allocates as with them off."""
    from kaudit.scheduler.build import load

    config, _ = load(None, parse_feature_gates("DRAPartitionableDevices=true,DRADeviceTaints=true"))
    assert [w for w in config.warnings if "kaudit does not model it" in w] == [
        "feature gate DRAPartitionableDevices: kaudit does not model it; DynamicResources "
        "allocates as with it off",
        "feature gate DRADeviceTaints: kaudit does not model it; DynamicResources allocates "
        "as with it off"]
    config, _ = load(None, parse_feature_gates(
        "DynamicResourceAllocation=false,DRADeviceTaints=true"))
    assert not [w for w in config.warnings if "kaudit does not model it" in w]
