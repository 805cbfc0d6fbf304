"""Ingest checks the objects of DRA's beta device features as the API server does, naming the
field: counter sets and devices never in one slice, counters that are quantities, a device's
consumption naming its counter set, the lower device limit of slices with taints or counters,
and a DeviceTaintRule's taint (``pkg/apis/resource/validation/validation.go``, v1.37.2)."""

from __future__ import annotations

from typing import Any

import pytest

from kaudit.readers.validate import ObjectError, validate_object

JSON = dict[str, Any]
API = "resource.k8s.io/v1"


def _slice(**spec: Any) -> JSON:
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     **spec}}


COUNTERS = [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]


def _part(name: str = "p", **extra: Any) -> JSON:
    return {"name": name, "consumesCounters": [
        {"counterSet": "gpu-0", "counters": {"memory": {"value": "10Gi"}}}], **extra}


def test_well_formed_objects_are_accepted() -> None:
    validate_object(_slice(sharedCounters=COUNTERS), "ADDED")
    validate_object(_slice(devices=[_part(taints=[{"key": "k", "effect": "NoSchedule"}])]),
                    "ADDED")
    validate_object({"apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": "r"},
                     "spec": {"deviceSelector": {"pool": "n1"},
                              "taint": {"key": "k", "value": "v", "effect": "NoExecute"}}},
                    "ADDED")


@pytest.mark.parametrize(("obj", "message"), [
    (_slice(sharedCounters=COUNTERS, devices=[{"name": "d"}]),
     "object.spec: only one of `sharedCounters` or `devices` is allowed"),
    (_slice(sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "lots"}}}]),
     "object.spec.sharedCounters[0].counters.memory: invalid quantity 'lots'"),
    (_slice(sharedCounters=[*COUNTERS, *COUNTERS]),
     'object.spec.sharedCounters[1].name: Duplicate value: "gpu-0"'),
    (_slice(sharedCounters=[{"name": "gpu-0", "counters": {"memory": {}}}]),
     "object.spec.sharedCounters[0].counters.memory.value: required"),
    (_slice(devices=[{"name": "p", "consumesCounters": [{"counters": {}}]}]),
     "object.spec.devices[0].consumesCounters[0].counterSet: required"),
    (_slice(devices=[_part(f"p{i}") for i in range(65)]),
     "object.spec.devices: Too many: 65: must have at most 64 items"),
    (_slice(devices=[{"name": "d", "taints": [{"key": 7}]}]),
     "object.spec.devices[0].taints[0].key"),
    ({"apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": "r"},
      "spec": {"taint": {"key": "k", "effect": "Evict"}}},
     "object.spec.taint.effect: Unsupported value: 'Evict'"),
    ({"apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": "r"},
      "spec": {"taint": {"effect": "NoSchedule"}}}, "object.spec.taint.key: required"),
])
def test_malformed_objects_are_refused_naming_the_field(obj: JSON, message: str) -> None:
    with pytest.raises(ObjectError) as raised:
        validate_object(obj, "ADDED")
    assert str(raised.value).startswith(message), str(raised.value)


def test_a_slice_without_taints_or_counters_keeps_the_128_device_limit() -> None:
    validate_object(_slice(devices=[{"name": f"d{i}"} for i in range(128)]), "ADDED")


def test_consumable_capacity_fields_are_checked_as_quantities() -> None:
    shared = _slice(devices=[{"name": "d", "allowMultipleAllocations": True, "capacity": {
        "memory": {"value": "80Gi", "requestPolicy": {
            "default": "10Gi", "validRange": {"min": "5Gi", "step": "5Gi"}}}}}])
    validate_object(shared, "ADDED")
    bad = _slice(devices=[{"name": "d", "capacity": {"memory": {
        "value": "80Gi", "requestPolicy": {"validValues": ["8Gi", "lots"]}}}}])
    with pytest.raises(ObjectError, match=r"^object.spec.devices\[0\].capacity.memory."
                                          r"requestPolicy.validValues.1: invalid quantity"):
        validate_object(bad, "ADDED")
    claim = {"apiVersion": API, "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                 "deviceClassName": "gpu", "capacity": {"requests": {"memory": "x"}}}}]}}}
    with pytest.raises(ObjectError, match=r"^object.spec.devices.requests\[0\].exactly."
                                          r"capacity.requests.memory: invalid quantity"):
        validate_object(claim, "ADDED")
