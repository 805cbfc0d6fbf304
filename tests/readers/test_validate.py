"""Object validation: identity fields and resource quantities, errors naming the field."""

from __future__ import annotations

import pytest

from kaudit.readers.validate import ObjectError, validate_object
from kaudit.tracegen.builders import make_node, make_pod


def test_valid_pod_and_node() -> None:
    pod = make_pod("web", "shop").req(cpu="500m", memory="1Gi").obj()
    assert validate_object(pod, "ADDED")[:3] == ("Pod", "shop", "web")
    node = make_node("n1").capacity(cpu="4", memory="16Gi").obj()
    assert validate_object(node, "ADDED")[:3] == ("Node", "", "n1")


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda o: o.pop("kind"), "object.kind: missing"),
    (lambda o: o.update(kind=""), "object.kind: must be a non-empty string"),
    (lambda o: o.pop("metadata"), "object.metadata: missing"),
    (lambda o: o["metadata"].pop("name"), "object.metadata.name: missing"),
    (lambda o: o["metadata"].update(namespace=3), "object.metadata.namespace"),
    (lambda o: o["spec"]["containers"][0]["resources"]["requests"].update(cpu="1x"),
     "object.spec.containers[0].resources.requests.cpu: invalid quantity '1x'"),
    (lambda o: o["spec"]["containers"][0]["resources"]["requests"].update(memory="-1Gi"),
     "object.spec.containers[0].resources.requests.memory: quantity '-1Gi' must not be negative"),
    (lambda o: o["spec"].update(overhead={"cpu": "lots"}), "object.spec.overhead.cpu"),
    (lambda o: o["spec"].update(containers=[]), "object.spec.containers: a Pod needs at least"),
    (lambda o: o["spec"].update(initContainers=[{"name": "i", "resources": {
        "limits": {"memory": "1.2.3"}}}]), "object.spec.initContainers[0].resources.limits"),
    (lambda o: o["spec"].update(resources={"requests": {"cpu": True}}),
     "object.spec.resources.requests.cpu: quantity must be a string"),
])
def test_invalid_pod(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod("web").req(cpu="1").obj()
    mutate(pod)
    with pytest.raises(ObjectError, match=None) as caught:
        validate_object(pod, "ADDED")
    assert message in str(caught.value)


def test_invalid_node_quantity() -> None:
    node = make_node("n1").capacity(cpu="4", memory="16Gi").obj()
    node["status"]["allocatable"]["nvidia.com/gpu"] = "two"
    with pytest.raises(ObjectError, match=r"object.status.allocatable.nvidia.com/gpu"):
        validate_object(node, "ADDED")


def test_deleted_pod_needs_only_metadata() -> None:
    assert validate_object({"kind": "Pod", "metadata": {"name": "p", "namespace": "d"}},
                           "DELETED")[2] == "p"


@pytest.mark.parametrize(("status", "message"), [
    ({"disruptionsAllowed": "unknown"}, "object.status.disruptionsAllowed: must be"),
    ({"disruptionsAllowed": 2**31}, "object.status.disruptionsAllowed"),
    ({"disruptedPods": ["web-0"]}, "object.status.disruptedPods: must be an object"),
])
def test_invalid_disruption_budget_status(status: dict, message: str) -> None:
    """Preemption reads a budget's disruptions allowed and disrupted pods."""
    pdb = {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
           "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}}, "status": status}
    with pytest.raises(ObjectError, match=message):
        validate_object(pdb, "ADDED")
    pdb["status"] = {"disruptionsAllowed": 1, "disruptedPods": {"web-0": "2026-01-05T08:00:00Z"}}
    assert validate_object(pdb, "ADDED")[:3] == ("PodDisruptionBudget", "shop", "web")


def _dra_objects() -> dict[str, dict]:  # type: ignore[type-arg]
    from kaudit.tracegen.dra import (
        claim,
        claim_spec,
        claim_template,
        device_class,
        exact_request,
        gpu,
        resource_slice,
    )
    return {"claim": claim("c", claim_spec(exact_request("gpu", "gpu.example.com", 2))),
            "template": claim_template("t", claim_spec(exact_request("gpu", "g"))),
            "slice": resource_slice("s", "gpu.example.com", "n1",
                                    [gpu(0, "A100", "80Gi", "pci-0")], node="n1"),
            "class": device_class("gpu.example.com", 'device.driver == "gpu.example.com"')}


@pytest.mark.parametrize(("which", "mutate", "message"), [
    ("claim", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(count="2"),
     "object.spec.devices.requests[0].exactly.count: must be an integer"),
    ("claim", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(count=0),
     "object.spec.devices.requests[0].exactly.count: must be at least 1"),
    ("claim", lambda o: o["spec"]["devices"].update(requests={"gpu": {}}),
     "object.spec.devices.requests: must be a list"),
    ("claim", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(
        selectors=[{"cel": {"expression": 3}}]),
     "object.spec.devices.requests[0].exactly.selectors[0].cel.expression: must be a string"),
    ("template", lambda o: o["spec"]["spec"]["devices"]["requests"][0].update(name=""),
     "object.spec.spec.devices.requests[0].name: must be a non-empty string"),
    ("slice", lambda o: o["spec"]["devices"][0]["capacity"]["memory"].update(value="lots"),
     "object.spec.devices[0].capacity.memory: invalid quantity 'lots'"),
    ("slice", lambda o: o["spec"]["devices"][0]["attributes"].update(model="A100"),
     "object.spec.devices[0].attributes.model: must be an object"),
    ("slice", lambda o: o["spec"]["devices"][0]["attributes"].update(
        model={"string": "A100", "int": 1}),
     "object.spec.devices[0].attributes.model: exactly one of int, bool, string and version"),
    ("slice", lambda o: o["spec"]["pool"].update(generation="1"),
     "object.spec.pool.generation: must be an integer"),
    ("class", lambda o: o["spec"].update(selectors=[{"cel": None}, "x"]),
     "object.spec.selectors[1]: must be an object"),
])
def test_invalid_dra_objects(which: str, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    obj = _dra_objects()[which]
    assert validate_object(obj, "ADDED")[0] == obj["kind"]
    mutate(obj)
    with pytest.raises(ObjectError) as caught:
        validate_object(obj, "ADDED")
    assert message in str(caught.value)


def test_v1beta1_dra_objects_are_checked_in_the_v1_shape() -> None:
    beta = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "d"},
            "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "g",
                                               "count": "one"}]}}}
    with pytest.raises(ObjectError, match=r"requests\[0\]\.exactly\.count: must be an integer"):
        validate_object(beta, "ADDED")


@pytest.mark.parametrize(("which", "mutate", "message"), [
    ("claim", lambda o: o["spec"]["devices"]["requests"].append(
        {"name": "gpu", "exactly": {"deviceClassName": "g"}}), "'gpu' is used by another"),
    ("claim", lambda o: o["spec"]["devices"]["requests"][0].update(
        firstAvailable=[{"name": "a", "deviceClassName": "g"}]),
     "exactly one of exactly and firstAvailable must be set"),
    ("claim", lambda o: o["spec"]["devices"]["requests"][0].pop("exactly"),
     "exactly one of exactly and firstAvailable must be set"),
    ("claim", lambda o: o["spec"]["devices"]["requests"].__setitem__(0, {
        "name": "gpu", "firstAvailable": [{"name": f"s{i}", "deviceClassName": "g"}
                                          for i in range(9)]}), "9 subrequests, more than 8"),
    ("claim", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(
        allocationMode="All"), "count: must not be set when allocationMode is All"),
    ("claim", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(
        allocationMode="Most"), "'Most' is not ExactCount or All"),
    ("claim", lambda o: o["spec"]["devices"].update(
        constraints=[{"requests": ["cpu"], "matchAttribute": "gpu.example.com/x"}]),
     "'cpu' names no request"),
    ("claim", lambda o: o["spec"]["devices"].update(
        constraints=[{"matchAttribute": "model"}]), "fully qualified attribute name"),
    ("claim", lambda o: o.update(apiVersion="resource.k8s.io/v9"), "is not a version kaudit"),
    ("slice", lambda o: o["spec"].update(allNodes=True), "exactly one of nodeName"),
    ("slice", lambda o: o["spec"]["devices"][0].update(name="GPU_0"), "not a DNS label"),
    ("slice", lambda o: o["spec"]["devices"][0]["attributes"].update(
        driverVersion={"version": "not-semver"}), "is not a semantic version"),
    ("slice", lambda o: o["spec"]["pool"].update(resourceSliceCount=0), "must be at least 1"),
    ("class", lambda o: o["spec"].update(selectors=[{"cel": {"expression": ""}}]),
     "a CEL expression is required"),
])
def test_dra_objects_the_api_server_would_refuse(which: str, mutate,  # type: ignore[no-untyped-def]
                                                 message: str) -> None:
    obj = _dra_objects()[which]
    mutate(obj)
    with pytest.raises(ObjectError) as caught:
        validate_object(obj, "ADDED")
    assert message in str(caught.value)


@pytest.mark.parametrize(("claims", "message"), [
    ([None], "object.spec.resourceClaims[0]: must be an object, not null"),
    ("gpu", "object.spec.resourceClaims: must be a list"),
    ([{"name": "gpu"}], "exactly one of resourceClaimName and resourceClaimTemplateName"),
    ([{"name": "gpu", "resourceClaimName": 3}], "resourceClaimName: must be a non-empty string"),
    ([{"name": "a", "resourceClaimName": "c"}, {"name": "a", "resourceClaimName": "d"}],
     "'a' is used by another entry"),
])
def test_a_pods_resource_claims_are_checked(claims: object, message: str) -> None:
    pod = make_pod("p").req(cpu="1").obj()
    pod["spec"]["resourceClaims"] = claims
    with pytest.raises(ObjectError) as caught:
        validate_object(pod, "ADDED")
    assert message in str(caught.value)


def test_a_malformed_v1beta1_object_is_an_error_not_a_crash() -> None:
    beta = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "d"}, "spec": {"devices": "x"}}
    with pytest.raises(ObjectError, match=r"object\.spec\.devices: must be an object"):
        validate_object(beta, "ADDED")


@pytest.mark.parametrize(("requests", "message"), [
    ({"cpu": "1e18"}, "requests.cpu: quantity '1e18' is too large (beyond int64) once converted "
                      "to millicores"),
    ({"cpu": "1Ei"}, "requests.cpu: quantity '1Ei' is too large (beyond int64) once converted "
                     "to millicores"),
    ({"cpu": "1" + "0" * 5000}, "requests.cpu: quantity '1000000000000000…' (5001 characters) "
                                "is too large"),
    ({"cpu": "0." + "0" * 5000 + "1"}, "requests.cpu: invalid quantity"),
    ({"memory": "1e19"}, "requests.memory: quantity '1e19' is too large (beyond int64) once "
                         "converted to whole units"),
    ({"ephemeral-storage": "9223372036854775808"}, "requests.ephemeral-storage: quantity"),
    ({"example.com/foo": "1e400"}, "requests.example.com/foo: quantity '1e400' is too large"),
])
def test_a_quantity_must_fit_int64_in_the_unit_kaudit_stores(requests: dict[str, str],
                                                             message: str) -> None:
    """Upstream's MilliValue (cpu) and Value (the rest) are int64."""
    pod = make_pod("web").obj()
    pod["spec"]["containers"][0]["resources"] = {"requests": requests}
    with pytest.raises(ObjectError) as caught:
        validate_object(pod, "ADDED")
    assert f"object.spec.containers[0].resources.{message}" in str(caught.value)


def test_a_pods_summed_requests_must_fit_int64() -> None:
    pod = make_pod("web").obj()
    pod["spec"]["containers"][0]["resources"] = {"requests": {
        "cpu": "9223372036854775807m", "memory": "8Ei", "example.com/foo": "9223372036854775807"}}
    validate_object(pod, "ADDED")  # the largest that fit
    half = {"resources": {"requests": {"cpu": "5e15"}}}
    pod["spec"]["containers"] = [{"name": "a", **half}, {"name": "b", **half}]
    with pytest.raises(ObjectError, match=r"^object.spec: the pod's total request of cpu is too "
                                          r"large \(beyond int64\) once converted to millicores"):
        validate_object(pod, "ADDED")


def test_node_allocatable_and_capacity_must_fit_int64_once_converted() -> None:
    node = make_node("n1").capacity(cpu="4", memory="16Gi").obj()
    node["status"]["capacity"]["cpu"] = "1e18"
    with pytest.raises(ObjectError, match=r"object.status.capacity.cpu: quantity '1e18' is too "
                                          r"large \(beyond int64\) once converted to millicores"):
        validate_object(node, "ADDED")


def test_a_generic_ephemeral_volume_is_accepted_and_its_shape_checked() -> None:
    """``spec.volumes[].ephemeral`` is an object (a claim template): accepted, and a value of
    the wrong type named by its path (the schema used to crash on any ephemeral volume)."""
    pod = make_pod("p").req(cpu="1").obj()
    pod["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}}}}]
    validate_object(pod, "ADDED")
    pod["spec"]["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["spec"]["accessModes"] = "RWO"
    with pytest.raises(ObjectError, match=r"volumes\[0\]\.ephemeral\.volumeClaimTemplate\.spec"
                                          r"\.accessModes: must be a list"):
        validate_object(pod, "ADDED")
