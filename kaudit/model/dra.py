"""Dynamic resource allocation objects (``resource.k8s.io``) as kaudit reads them.

Traces may carry DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate objects
of ``resource.k8s.io/v1`` (GA in v1.34) or of the older ``v1beta1`` and ``v1beta2`` versions;
:func:`normalize` turns them into the v1 shape the scheduler reads, as the API server's
conversion does (``pkg/apis/resource/v1beta1/conversion.go``): a v1beta1 request's fields move
under ``exactly`` and a v1beta1 device's ``basic`` fields move up to the device.

The helpers mirror ``staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/
resourceclaim.go`` (v1.34): which claim a pod's ``spec.resourceClaims`` entry names, whether a
claim was generated for the pod, and whether it is (or can be) reserved for it.
"""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]

GROUP = "resource.k8s.io"
API_VERSION = f"{GROUP}/v1"
DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
             "DeviceTaintRule")
#: ``AllocationResultsMaxSize``: how many devices one claim's allocation may hold.
ALLOCATION_RESULTS_MAX_SIZE = 32
#: The finalizer the scheduler adds to claims it allocates.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: The versions of the group kaudit reads (v1alpha3 shares v1beta1's shape).
KNOWN_VERSIONS = frozenset(f"{GROUP}/{v}" for v in ("v1", "v1beta2", "v1beta1", "v1alpha3"))
#: The annotation the resourceclaim controller puts on claims it generates from templates.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"

_REQUEST_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                   "tolerations", "capacity")


def _exact_requests(spec: Any) -> None:
    """A v1beta1 claim spec's requests in the v1 shape (in place; what is not shaped as the
    API's is left for validation to name)."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, dict) or "exactly" in request or request.get("firstAvailable"):
            continue
        exactly = {name: request.pop(name) for name in _REQUEST_FIELDS if name in request}
        if exactly:
            request["exactly"] = exactly


def normalize(obj: JSON) -> JSON:
    """``obj`` in the ``resource.k8s.io/v1`` shape (a copy when it had to change)."""
    version = str(obj.get("apiVersion") or "")
    if version not in KNOWN_VERSIONS or version == API_VERSION:
        return obj  # v1 already, or a version kaudit does not read (ingest refuses it)
    kind = obj.get("kind")
    converted = copy.deepcopy(obj)
    converted["apiVersion"] = API_VERSION
    spec = converted.get("spec")
    if version.endswith(("/v1beta1", "/v1alpha3")) and isinstance(spec, dict):
        if kind == "ResourceClaim":
            _exact_requests(spec)
        elif kind == "ResourceClaimTemplate":
            _exact_requests(spec.get("spec"))
        elif kind == "ResourceSlice":
            devices = spec.get("devices")
            for device in devices if isinstance(devices, list) else []:
                if isinstance(device, dict) and isinstance(device.get("basic"), dict):
                    device.update(device.pop("basic"))
    return converted


# --------------------------------------------------------------------------- claims of a pod

def _metadata(obj: JSON) -> JSON:
    return obj.get("metadata") or {}


def claim_name(pod: JSON, pod_claim: JSON) -> tuple[str | None, bool, str | None]:
    """``resourceclaim.Name``: (the claim's name or None, whether the pod must own it, an
    error message)."""
    meta = _metadata(pod)
    where = f'pod "{meta.get("namespace", "")}/{meta.get("name", "")}"'
    if pod_claim.get("resourceClaimName") is not None:
        return str(pod_claim["resourceClaimName"]), False, None
    if pod_claim.get("resourceClaimTemplateName") is not None:
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True, None
        return None, False, f"{where}: ResourceClaim not created yet"
    return None, False, (f'{where}, spec.resourceClaim "{pod_claim.get("name", "")}": '
                         "none of the supported fields are set")


def is_for_pod(pod: JSON, claim: JSON) -> str | None:
    """``resourceclaim.IsForPod``: None when the pod controls the claim, else the error."""
    pod_meta, claim_meta = _metadata(pod), _metadata(claim)
    uid = pod_meta.get("uid")
    controlled = any(ref.get("controller") and ref.get("uid") == uid
                     for ref in claim_meta.get("ownerReferences") or [])
    if claim_meta.get("namespace") != pod_meta.get("namespace") or not controlled:
        return (f"ResourceClaim {claim_meta.get('namespace', '')}/{claim_meta.get('name', '')} "
                f"was not created for pod {pod_meta.get('namespace', '')}/"
                f"{pod_meta.get('name', '')} (pod is not owner)")
    return None


def reserved_for(claim: JSON) -> list[JSON]:
    return list((claim.get("status") or {}).get("reservedFor") or [])


def is_reserved_for_pod(pod_uid: str, claim: JSON) -> bool:
    return any(ref.get("uid") == pod_uid for ref in reserved_for(claim))


def can_be_reserved(claim: JSON) -> bool:
    """``CanBeReserved``: in v1 there is no limit on sharing (the API server enforces
    ``reservedFor``'s maximum size)."""
    return True


def allocation(claim: JSON) -> JSON | None:
    return (claim.get("status") or {}).get("allocation")


def generated_claim_name(pod_name: str, pod_claim_name: str, suffix: str) -> str:
    """The name the resourceclaim controller gives a claim generated from a template
    (``handleClaim`` in ``pkg/controller/resourceclaim/controller.go``): ``<pod>-<claim>-``
    with both parts shortened in proportion when longer than 57 characters, then the API
    server's five random characters (``suffix``)."""
    base = f"{pod_name}-{pod_claim_name}-"
    if len(base) > 57:
        pod_part = pod_name[:len(pod_name) * 57 // len(base)]
        claim_part = pod_claim_name[:len(pod_claim_name) * 57 // len(base)]
        base = f"{pod_part}-{claim_part}"
    return base + suffix


def taint_rule_selects(rule: JSON, driver: str, pool: str, device: str | None = None) -> bool:
    """Whether a DeviceTaintRule (v1.37: ``spec.deviceSelector``; none selects no device)
    applies to ``device`` (any device, for None) of the pool ``driver``/``pool``
    (``applyPatches`` of ``k8s.io/dynamic-resource-allocation/resourceslice/tracker``)."""
    selector = (rule.get("spec") or {}).get("deviceSelector")
    if not isinstance(selector, dict):
        return False
    if selector.get("driver") is not None and selector["driver"] != driver:
        return False
    if selector.get("pool") is not None and selector["pool"] != pool:
        return False
    return device is None or selector.get("device") is None or selector["device"] == device


def with_taint_rules(slice_obj: JSON, rules: list[JSON]) -> JSON:
    """The slice as the scheduler's slice tracker serves it: each rule's taint appended to
    the devices it selects, in the rules' order (a copy when any applies)."""
    spec = slice_obj.get("spec") or {}
    driver = str(spec.get("driver") or "")
    pool = str((spec.get("pool") or {}).get("name") or "")
    patched = slice_obj
    for rule in rules:
        taint = (rule.get("spec") or {}).get("taint")
        if not isinstance(taint, dict) or not taint_rule_selects(rule, driver, pool):
            continue
        for index, device in enumerate(spec.get("devices") or []):
            if not taint_rule_selects(rule, driver, pool, str(device.get("name") or "")):
                continue
            if patched is slice_obj:
                patched = copy.deepcopy(slice_obj)
            target = patched["spec"]["devices"][index]
            target["taints"] = [*(target.get("taints") or []), taint]
    return patched
