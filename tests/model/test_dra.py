"""DRA objects as kaudit reads them: older API versions in the v1 shape, a pod's claim names
(``resourceclaim.Name``), ownership, and the names the resourceclaim controller generates."""

from __future__ import annotations

from kaudit.model import dra


def test_v1beta1_claims_templates_and_slices_take_the_v1_shape() -> None:
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "ns"},
             "spec": {"devices": {"requests": [
                 {"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2,
                  "allocationMode": "ExactCount", "adminAccess": False},
                 {"name": "alt", "firstAvailable": [{"name": "a", "deviceClassName": "x"}]}]}}}
    converted = dra.normalize(claim)
    assert converted["apiVersion"] == "resource.k8s.io/v1"
    requests = converted["spec"]["devices"]["requests"]
    assert requests[0] == {"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "count": 2, "allocationMode": "ExactCount",
        "adminAccess": False}}
    assert requests[1] == claim["spec"]["devices"]["requests"][1]
    assert claim["apiVersion"] == "resource.k8s.io/v1beta1"  # the input is left alone
    template = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t"}, "spec": {"spec": claim["spec"]}}
    assert dra.normalize(template)["spec"]["spec"]["devices"]["requests"][0]["exactly"][
        "count"] == 2
    piece = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
             "metadata": {"name": "s"}, "spec": {"devices": [
                 {"name": "d", "basic": {"attributes": {"a": {"int": 1}},
                                         "capacity": {"m": {"value": "1Gi"}}}}]}}
    assert dra.normalize(piece)["spec"]["devices"] == [
        {"name": "d", "attributes": {"a": {"int": 1}}, "capacity": {"m": {"value": "1Gi"}}}]
    beta2 = {**claim, "apiVersion": "resource.k8s.io/v1beta2"}
    assert dra.normalize(beta2)["spec"] == claim["spec"]  # v1beta2 already has v1's shape
    v1 = {**claim, "apiVersion": "resource.k8s.io/v1"}
    assert dra.normalize(v1) is v1


def test_claim_names_of_a_pod() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
           "status": {"resourceClaimStatuses": [{"name": "gen", "resourceClaimName": "p-gen-x"},
                                                {"name": "none"}]}}
    assert dra.claim_name(pod, {"name": "c", "resourceClaimName": "mine"}) == ("mine", False,
                                                                               None)
    assert dra.claim_name(pod, {"name": "gen", "resourceClaimTemplateName": "t"}) == (
        "p-gen-x", True, None)
    assert dra.claim_name(pod, {"name": "none", "resourceClaimTemplateName": "t"}) == (
        None, True, None)  # the controller decided no claim is needed
    assert dra.claim_name(pod, {"name": "new", "resourceClaimTemplateName": "t"})[2] == \
        'pod "ns/p": ResourceClaim not created yet'
    assert dra.claim_name(pod, {"name": "x"})[2] == (
        'pod "ns/p", spec.resourceClaim "x": none of the supported fields are set')
    owned = {"metadata": {"name": "p-gen-x", "namespace": "ns", "ownerReferences": [
        {"kind": "Pod", "name": "p", "uid": "u", "controller": True}]}}
    assert dra.is_for_pod(pod, owned) is None
    assert dra.is_for_pod(pod, {"metadata": {"name": "c", "namespace": "ns"}}) == (
        "ResourceClaim ns/c was not created for pod ns/p (pod is not owner)")


def test_generated_names_shorten_both_parts_in_proportion() -> None:
    assert dra.generated_claim_name("train-1", "gpu", "abcde") == "train-1-gpu-abcde"
    long = dra.generated_claim_name("p" * 60, "c" * 30, "abcde")
    # 92 characters with both hyphens: each part cut to its share of 57 (60·57/92 = 37 and
    # 30·57/92 = 18), joined by one hyphen; the API server's suffix follows directly.
    assert long == "p" * 37 + "-" + "c" * 18 + "abcde"
