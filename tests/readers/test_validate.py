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
