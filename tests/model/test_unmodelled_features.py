"""Which features an object uses that its release turns on and kaudit does not model.

Each feature is detected from a realistic object of the kind upstream gives the field to
(``k8s.io/api@v0.37.2/resource/v1/types.go`` and friends); nothing is detected where the gate
is off (v1.34.2, v1.35.4, or turned off), and fields the scheduler ignores are not uses.
"""

from __future__ import annotations

from typing import Any

import pytest

from kaudit import versions
from kaudit.config import FeatureGates, parse_feature_gates
from kaudit.config.load import UNMODELLED_GATES, UNMODELLED_OTHER_GATES
from kaudit.model.unmodelled_features import (
    FEATURES,
    FeatureDetector,
    FeatureUse,
    enabled_features,
    object_ref,
    unmodelled_feature_uses,
    warning_message,
)

JSON = dict[str, Any]
V1 = "resource.k8s.io/v1"


def gates(release: str = "v1.37.2", text: str = "") -> FeatureGates:
    return parse_feature_gates(text, versions.get(release))


def meta(name: str, namespace: str | None = None) -> JSON:
    found: JSON = {"name": name, "uid": f"uid-{name}"}
    if namespace:
        found["namespace"] = namespace
    return found


def gpu(name: str = "gpu-0", **extra: Any) -> JSON:
    return {"name": name, "attributes": {"model": {"string": "A100"}},
            "capacity": {"memory": {"value": "80Gi"}}, **extra}


def slice_of(*devices: JSON, name: str = "node-0-gpus", **spec: Any) -> JSON:
    body: JSON = {"driver": "gpu.example.com",
                  "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1},
                  **spec}
    if "perDeviceNodeSelection" not in spec and "sharedCounters" not in spec:
        body.setdefault("nodeName", "node-0")
    if devices:
        body["devices"] = list(devices)
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": meta(name), "spec": body}


def request(name: str = "gpu", **exactly: Any) -> JSON:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com",
                                      "allocationMode": "ExactCount", "count": 1, **exactly}}


def claim(*requests: JSON, status: JSON | None = None, annotations: JSON | None = None,
          constraints: list[JSON] | None = None) -> JSON:
    devices: JSON = {"requests": list(requests or [request()])}
    if constraints:
        devices["constraints"] = constraints
    obj: JSON = {"apiVersion": V1, "kind": "ResourceClaim",
                 "metadata": meta("train-0-gpu", "ml"), "spec": {"devices": devices}}
    if annotations:
        obj["metadata"]["annotations"] = annotations
    if status is not None:
        obj["status"] = status
    return obj


def template(*requests: JSON) -> JSON:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": meta("one-gpu", "ml"),
            "spec": {"spec": {"devices": {"requests": list(requests)}}}}


def allocated(**result: Any) -> JSON:
    return {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0",
         **result}]}, "allocationTimestamp": "2026-03-02T09:00:01Z"},
        "reservedFor": [{"resource": "pods", "name": "train-0", "uid": "uid-train-0"}]}


def pod(requests: JSON | None = None, *, status: JSON | None = None) -> JSON:
    container: JSON = {"name": "main", "image": "trainer:1"}
    if requests is not None:
        container["resources"] = {"requests": requests, "limits": dict(requests)}
    spec: JSON = {"containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta("train-0", "ml"), "spec": spec,
            "status": status or {"phase": "Pending"}}


SHARED_COUNTERS = slice_of(name="node-0-counters", nodeName="node-0", sharedCounters=[
    {"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}}])
CONSUMES_COUNTERS = slice_of(
    gpu("gpu-0-half-0", consumesCounters=[{"counterSet": "gpu-0-counters",
                                           "counters": {"memory": {"value": "40Gi"}}}]))
PER_DEVICE = slice_of(gpu("gpu-0", nodeName="node-0"), gpu("gpu-1", nodeName="node-1"),
                      perDeviceNodeSelection=True)
TAINTED = slice_of(gpu("gpu-0"), gpu("gpu-1", taints=[
    {"key": "gpu.example.com/unhealthy", "value": "ecc", "effect": "NoSchedule"}]))
SHAREABLE = slice_of(gpu("gpu-0", allowMultipleAllocations=True))
REQUEST_POLICY = slice_of({"name": "gpu-0", "capacity": {"memory": {
    "value": "80Gi", "requestPolicy": {"default": "10Gi",
                                       "validRange": {"min": "1Gi", "step": "1Gi"}}}}})
BINDING = slice_of(gpu("gpu-0", bindingConditions=["gpu.example.com/attached"],
                       bindingFailureConditions=["gpu.example.com/attach-failed"]),
                   name="fabric-gpus", allNodes=True)
BINDS_TO_NODE = slice_of(gpu("gpu-0", bindsToNode=True))
EXTENDED_CLASS: JSON = {
    "apiVersion": V1, "kind": "DeviceClass", "metadata": meta("gpu.example.com"),
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
             "extendedResourceName": "example.com/gpu"}}
TAINT_RULE: JSON = {
    "apiVersion": V1, "kind": "DeviceTaintRule", "metadata": meta("drain-node-0"),
    "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-0"},
             "taint": {"key": "example.com/maintenance", "effect": "NoExecute"}}}
CSI_DRIVER: JSON = {
    "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": meta("ebs.csi.aws.com"),
    "spec": {"attachRequired": True, "preventPodSchedulingIfMissing": True}}

DETECTED = [
    (SHARED_COUNTERS, "DRAPartitionableDevices", "spec.sharedCounters"),
    (CONSUMES_COUNTERS, "DRAPartitionableDevices", "device consumesCounters"),
    (PER_DEVICE, "DRAPartitionableDevices", "spec.perDeviceNodeSelection"),
    (TAINTED, "DRADeviceTaints", "device taint NoSchedule"),
    (claim(request(tolerations=[{"key": "gpu.example.com/unhealthy", "operator": "Exists",
                                 "effect": "NoSchedule"}])),
     "DRADeviceTaints", "request tolerations"),
    (template({"name": "gpu", "firstAvailable": [
        {"name": "a100", "deviceClassName": "gpu.example.com", "tolerations": [
            {"key": "gpu.example.com/unhealthy", "operator": "Exists"}]}]}),
     "DRADeviceTaints", "request tolerations"),
    (claim(status=allocated(tolerations=[{"key": "k", "operator": "Exists"}])),
     "DRADeviceTaints", "allocation result tolerations"),
    (TAINT_RULE, "DRADeviceTaintRules", "a NoExecute taint"),
    (SHAREABLE, "DRAConsumableCapacity", "device allowMultipleAllocations"),
    (REQUEST_POLICY, "DRAConsumableCapacity", "device capacity requestPolicy"),
    (claim(request(capacity={"requests": {"memory": "10Gi"}})),
     "DRAConsumableCapacity", "request capacity"),
    (claim(request("a"), request("b"), constraints=[
        {"requests": ["a", "b"], "distinctAttribute": "gpu.example.com/uuid"}]),
     "DRAConsumableCapacity", "constraint distinctAttribute"),
    (claim(status=allocated(shareID="7d7ad0b0-2b0c-4f0e-9a5e-0d9d6a1f0e11",
                            consumedCapacity={"memory": "10Gi"})),
     "DRAConsumableCapacity", "allocation result shareID"),
    (BINDING, "DRADeviceBindingConditions", "device bindingConditions"),
    (BINDS_TO_NODE, "DRADeviceBindingConditions", "device bindsToNode"),
    (claim(status=allocated(bindingConditions=["gpu.example.com/attached"])),
     "DRADeviceBindingConditions", "allocation result bindingConditions"),
    (EXTENDED_CLASS, "DRAExtendedResource", "spec.extendedResourceName"),
    (pod({"cpu": "1", "deviceclass.resource.kubernetes.io/gpu.example.com": "1"}),
     "DRAExtendedResource",
     "a container request of deviceclass.resource.kubernetes.io/gpu.example.com"),
    (pod({"cpu": "1", "example.com/gpu": "1"}, status={
        "phase": "Running", "extendedResourceClaimStatus": {
            "resourceClaimName": "train-0-extended-resources-x2k9q",
            "requestMappings": [{"containerName": "main", "resourceName": "example.com/gpu",
                                 "requestName": "container-0-request-0"}]}}),
     "DRAExtendedResource", "status.extendedResourceClaimStatus"),
    (claim(annotations={"resource.kubernetes.io/extended-resource-claim": "true"}),
     "DRAExtendedResource", "annotation resource.kubernetes.io/extended-resource-claim"),
    (CSI_DRIVER, "VolumeLimitScaling", "a CSIDriver (before v1.36 every driver is checked for)"),
]


def _id(case: tuple[JSON, str, str]) -> str:
    return f"{case[0]['kind']}-{case[2].replace(' ', '-')}"


#: Features kaudit models from a release on, and a release before it where the user may turn
#: them on (partitionable devices and device taints from v1.36, DeviceTaintRules from v1.37).
MODELLED_LATER = {"DRAPartitionableDevices": "v1.35.4", "DRADeviceTaints": "v1.35.4",
                  "DRAConsumableCapacity": "v1.35.4", "DRADeviceTaintRules": "v1.36.3",
                  "VolumeLimitScaling": "v1.35.4"}
MODELLED_FROM_V1_36 = tuple(g for g, before in MODELLED_LATER.items() if before == "v1.35.4")


def unmodelled_at(gate: str) -> FeatureGates:
    """Gates of a release where ``gate`` is on and kaudit does not model it."""
    before = MODELLED_LATER.get(gate)
    if before is not None:
        needs = ",DRADeviceTaints=true" if gate == "DRADeviceTaintRules" else ""
        return gates(before, f"{gate}=true{needs}")
    return gates()


@pytest.mark.parametrize(("obj", "gate", "uses"), DETECTED, ids=[_id(c) for c in DETECTED])
def test_each_feature_is_detected_from_a_realistic_object(obj: JSON, gate: str,
                                                          uses: str) -> None:
    assert unmodelled_feature_uses(obj, unmodelled_at(gate)) == [FeatureUse(gate, uses)]


@pytest.mark.parametrize("release", ["v1.36.3", "v1.37.2"])
@pytest.mark.parametrize(("obj", "gate", "uses"),
                         [c for c in DETECTED if c[1] in MODELLED_FROM_V1_36],
                         ids=[_id(c) for c in DETECTED if c[1] in MODELLED_FROM_V1_36])
def test_partitionable_devices_and_device_taints_are_modelled_from_v1_36(
        obj: JSON, gate: str, uses: str, release: str) -> None:
    assert gate not in enabled_features(gates(release))
    assert unmodelled_feature_uses(obj, gates(release)) == []


@pytest.mark.parametrize("release", ["v1.34.2", "v1.35.4"])
@pytest.mark.parametrize(("obj", "gate", "uses"), DETECTED, ids=[_id(c) for c in DETECTED])
def test_nothing_is_detected_where_the_release_keeps_the_gates_off(
        obj: JSON, gate: str, uses: str, release: str) -> None:
    assert enabled_features(gates(release)) == frozenset()
    assert unmodelled_feature_uses(obj, gates(release)) == []


def test_v1_36_turns_on_the_dra_features_but_not_rules_nor_volume_limit_scaling() -> None:
    at = gates("v1.36.3")
    assert [u.gate for u in unmodelled_feature_uses(BINDING, at)] == \
        ["DRADeviceBindingConditions"]
    assert unmodelled_feature_uses(SHAREABLE, at) == []  # modelled from v1.36
    assert unmodelled_feature_uses(TAINT_RULE, at) == []
    assert unmodelled_feature_uses(CSI_DRIVER, at) == []


@pytest.mark.parametrize(("text", "obj"), [
    ("DRAConsumableCapacity=false", SHAREABLE),
    ("DRADeviceTaints=false", TAINTED),
    ("DRADeviceTaints=false", TAINT_RULE),  # rules need device taints
    ("VolumeLimitScaling=false", CSI_DRIVER),
])
def test_a_gate_turned_off_is_not_detected(text: str, obj: JSON) -> None:
    assert unmodelled_feature_uses(obj, gates(text=text)) == []


class _WithoutDra:
    """v1.37.2's gates with DynamicResourceAllocation off (locked on there; any object with
    ``enabled`` will do)."""

    def enabled(self, name: str) -> bool:
        return name != "DynamicResourceAllocation" and gates().enabled(name)


def test_the_dra_features_need_dynamic_resource_allocation() -> None:
    # Without a release (the gates here have none) VolumeLimitScaling counts as unmodelled.
    assert enabled_features(_WithoutDra()) == {"VolumeLimitScaling"}
    assert unmodelled_feature_uses(CONSUMES_COUNTERS, _WithoutDra()) == []
    assert unmodelled_feature_uses(EXTENDED_CLASS, _WithoutDra()) == []
    assert [u.gate for u in unmodelled_feature_uses(CSI_DRIVER, _WithoutDra())] == \
        ["VolumeLimitScaling"]


def test_fields_the_scheduler_ignores_are_not_uses() -> None:
    at = gates()
    plain = [
        slice_of(gpu("gpu-0", taints=[{"key": "note", "effect": "None"}])),
        slice_of(gpu("gpu-0", allowMultipleAllocations=False, bindsToNode=False)),
        {**TAINT_RULE, "spec": {**TAINT_RULE["spec"], "taint": {"key": "k", "effect": "None"}}},
        CSI_DRIVER,  # VolumeLimitScaling is modelled at v1.37
        # Every claim the scheduler of v1.36 on binds carries an allocation timestamp.
        claim(status=allocated()),
        claim(constraints=[{"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"}]),
        # An extended resource no DeviceClass is named for here.
        pod({"cpu": "1", "example.com/gpu": "1"}),
        {"apiVersion": "v1", "kind": "Node", "metadata": meta("node-0"), "spec": {}},
    ]
    assert [unmodelled_feature_uses(obj, at) for obj in plain] == [[]] * len(plain)


def test_one_object_may_use_several_features_each_named_once() -> None:
    both = slice_of(
        gpu("gpu-0", taints=[{"key": "a", "effect": "NoExecute"}]),
        gpu("gpu-1", taints=[{"key": "b", "effect": "NoSchedule"}],
            allowMultipleAllocations=True, bindingConditions=["ready"]))
    at = gates("v1.35.4", "DRADeviceTaints=true,DRAConsumableCapacity=true,"
               "DRADeviceBindingConditions=true")
    assert unmodelled_feature_uses(both, at) == [
        FeatureUse("DRADeviceTaints", "device taint NoExecute"),
        FeatureUse("DRAConsumableCapacity", "device allowMultipleAllocations"),
        FeatureUse("DRADeviceBindingConditions", "device bindingConditions")]
    assert unmodelled_feature_uses(both, gates()) == [  # v1.37 models the first two
        FeatureUse("DRADeviceBindingConditions", "device bindingConditions")]


def test_older_api_versions_are_read_in_the_v1_shape() -> None:
    beta1: JSON = {
        "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
        "metadata": meta("node-0-gpus"),
        "spec": {"driver": "gpu.example.com", "nodeName": "node-0",
                 "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0", "basic": {
                     "taints": [{"key": "k", "effect": "NoSchedule"}]}}]}}
    assert [u.gate for u in unmodelled_feature_uses(beta1, unmodelled_at("DRADeviceTaints"))] \
        == ["DRADeviceTaints"]
    claim_beta1 = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
                   "metadata": meta("c", "ml"), "spec": {"devices": {"requests": [
                       {"name": "gpu", "deviceClassName": "gpu.example.com",
                        "capacity": {"requests": {"memory": "1Gi"}}}]}}}
    assert [u.gate for u in unmodelled_feature_uses(
        claim_beta1, unmodelled_at("DRAConsumableCapacity"))] == ["DRAConsumableCapacity"]
    assert "basic" in beta1["spec"]["devices"][0]  # the trace's object is left as it was


def test_v1_35_checks_every_csi_driver_when_the_gate_is_turned_on() -> None:
    """Before v1.36 there is no opt-in: VolumeLimitScaling checks every CSIDriver."""
    at = gates("v1.35.4", "VolumeLimitScaling=true")
    plain = {**CSI_DRIVER, "spec": {"attachRequired": True}}
    assert [u.gate for u in unmodelled_feature_uses(plain, at)] == ["VolumeLimitScaling"]
    assert unmodelled_feature_uses(plain, gates()) == []


def test_malformed_objects_are_not_uses() -> None:
    at = gates()
    for obj in ({"kind": "ResourceSlice", "spec": "x"}, {"kind": "ResourceSlice"},
                {"kind": "ResourceClaim", "spec": {"devices": {"requests": ["x", 1]}}},
                {"kind": "Pod", "spec": {"containers": [None, {"resources": []}]}},
                {"kind": None}, {}):
        assert unmodelled_feature_uses(obj, at) == []


def test_the_features_are_config_loads_unmodelled_gates() -> None:
    """The gates loading a configuration warns about when the user turns them on are the
    gates detected here, and the other gates' sentences are the same."""
    assert set(FEATURES) == {*UNMODELLED_GATES, *UNMODELLED_OTHER_GATES}
    for gate, instead in UNMODELLED_OTHER_GATES.items():
        assert FEATURES[gate].instead == instead
    assert enabled_features(gates()) == frozenset(FEATURES) - set(MODELLED_LATER)
    assert enabled_features(gates("v1.35.4", "DRADeviceTaints=true")) == {"DRADeviceTaints"}


def test_the_detector_stops_looking_for_what_it_found() -> None:
    detector = FeatureDetector(gates())
    assert {"ResourceSlice", "Pod", "DeviceClass"} <= detector.kinds
    assert not {"Node", "DeviceTaintRule", "CSIDriver"} & detector.kinds
    assert detector.uses("ResourceSlice", BINDING) == [
        FeatureUse("DRADeviceBindingConditions", "device bindingConditions")]
    detector.found("DRADeviceBindingConditions")
    assert detector.uses("ResourceSlice", BINDING) == []
    before = FeatureDetector(unmodelled_at("DRADeviceTaintRules"))
    assert "DeviceTaintRule" in before.kinds
    before.found("DRADeviceTaintRules")
    assert "DeviceTaintRule" not in before.kinds
    for gate in FEATURES:
        detector.found(gate)
    assert detector.kinds == frozenset()
    assert FeatureDetector(gates("v1.34.2")).kinds == frozenset()


def test_the_warning_names_the_gate_the_object_and_where() -> None:
    use = FeatureUse("DRAConsumableCapacity", "device capacity requestPolicy")
    subject = object_ref("ResourceSlice", None, "gpu-node-0001-slice")
    message = warning_message(use, subject, release="v1.37.2", where="dra.jsonl:12")
    assert message.startswith(
        "Kubernetes v1.37.2 turns on DRAConsumableCapacity, which kaudit does not model: "
        "ResourceSlice gpu-node-0001-slice uses it (device capacity requestPolicy, at "
        "dra.jsonl:12); kaudit schedules as with the gate off: DynamicResources allocates")
    explicit = warning_message(use, object_ref("ResourceClaim", "ml", "c"), release="v1.35.4",
                               explicit=True)
    assert explicit.startswith("feature gate DRAConsumableCapacity=true, which kaudit does "
                               "not model: ResourceClaim ml/c uses it (device capacity "
                               "requestPolicy); ")
