"""Validate Kubernetes objects from a trace: identity fields, field types and quantities.

Checks everything replay reads, in the spirit of the API server's validation, so that any
trace ingest accepts replays: ``kind`` and ``metadata.name`` are non-empty strings and names
are usable as Kubernetes path segments (no ``/``, ``%`` or control characters, at most 253
characters; namespaces 63); a Pod that exists has containers; labels, annotations and node
selectors are maps of strings; tolerations, taints, affinity terms, topology spread
constraints, ports, volumes and scheduling gates have the types of the Kubernetes API
(``int32`` priorities, weights and skews; ``int64`` image sizes); every resource quantity
(container and pod-level requests and limits, overhead, node capacity and allocatable, volume
capacity) parses as a Kubernetes quantity, is not negative and fits an ``int64`` once
converted as the scheduler converts it (millicores for cpu, whole units for the rest), and so
do a pod's summed requests. Errors name the field. Fields replay never reads are not checked.
"""

from __future__ import annotations

import re
from typing import Any

from kaudit.errors import QuantityError
from kaudit.model import dra
from kaudit.model.gpu import gpu_demand
from kaudit.model.resources import CPU, pod_requests, resource_units, to_units
from kaudit.plugins.dynamic_resources.cel_cost import MAX_COST
from kaudit.plugins.dynamic_resources.cel_env import estimated_cost
from kaudit.quantity import QuantityTooLargeError, parse_quantity, shortened


class ObjectError(ValueError):
    """An object is invalid; the message starts with the offending field's path."""


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ObjectError(f"{path}: must be an object, not {type_name(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise ObjectError(f"{path}: must be a list, not {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def _check(value: Any, schema: Any, path: str) -> None:
    """Check ``value`` against ``schema``: ``str``, ``bool``, ``INT32``/``INT64`` (ranges),
    ``"int-or-string"``, ``("map", schema)``, ``("list", schema)`` or a dict of fields (an
    object; fields not named are not checked). ``null`` stands for an absent field."""
    if value is None:
        return
    if schema is str or schema is bool:
        if type(value) is not schema:
            raise ObjectError(f"{path}: must be {type_name(schema())}, not "
                              f"{type_name(value)}")
    elif schema is INT32 or schema is INT64 or schema == "int-or-string":
        if schema == "int-or-string" and isinstance(value, str):
            return
        if type(value) is not int:
            shown = type_name(value) if not isinstance(value, float) else repr(value)
            raise ObjectError(f"{path}: must be an integer, not {shown}")
        low, high = INT64 if schema == "int-or-string" else schema
        if not low <= value <= high:
            bits = 32 if schema is INT32 else 64
            raise ObjectError(f"{path}: {value} does not fit an int{bits}")
    elif isinstance(schema, tuple) and schema[0] == "map":
        for key, item in _mapping(value, path).items():
            _check_present(item, schema[1], f"{path}.{key}")
    elif isinstance(schema, tuple) and schema[0] == "list":
        for index, item in enumerate(_list(value, path)):
            _check_present(item, schema[1], f"{path}[{index}]")
    else:
        body = _mapping(value, path)
        for field, inner in schema.items():
            if field in body:
                _check(body[field], inner, f"{path}.{field}")


def _check_present(value: Any, schema: Any, path: str) -> None:
    """A map's value or a list's item: ``null`` is not an absent field there."""
    if value is None:
        raise ObjectError(f"{path}: must not be null")
    _check(value, schema, path)


def _list_of(schema: Any) -> tuple[str, Any]:
    return ("list", schema)


STRINGS = _list_of(str)
STRING_MAP = ("map", str)
LABEL_SELECTOR = {"matchLabels": STRING_MAP, "matchExpressions": _list_of(
    {"key": str, "operator": str, "values": STRINGS})}
NODE_SELECTOR_TERM = {field: _list_of({"key": str, "operator": str, "values": STRINGS})
                      for field in ("matchExpressions", "matchFields")}
POD_AFFINITY_TERM = {"labelSelector": LABEL_SELECTOR, "namespaceSelector": LABEL_SELECTOR,
                     "namespaces": STRINGS, "topologyKey": str, "matchLabelKeys": STRINGS,
                     "mismatchLabelKeys": STRINGS}
POD_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": _list_of(POD_AFFINITY_TERM),
    "preferredDuringSchedulingIgnoredDuringExecution": _list_of(
        {"weight": INT32, "podAffinityTerm": POD_AFFINITY_TERM})}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": _list_of(NODE_SELECTOR_TERM)},
        "preferredDuringSchedulingIgnoredDuringExecution": _list_of(
            {"weight": INT32, "preference": NODE_SELECTOR_TERM})},
    "podAffinity": POD_AFFINITY,
    "podAntiAffinity": POD_AFFINITY,
}
CONTAINER = {"name": str, "image": str, "ports": _list_of(
    {"containerPort": INT32, "hostPort": INT32, "protocol": str, "hostIP": str})}
METADATA = {"labels": STRING_MAP, "annotations": STRING_MAP, "generateName": str,
            "ownerReferences": _list_of({"kind": str, "name": str, "uid": str,
                                         "controller": bool}),
            "deletionTimestamp": str, "creationTimestamp": str}
POD_SPEC = {
    "nodeSelector": STRING_MAP, "affinity": AFFINITY, "priority": INT32,
    "priorityClassName": str, "schedulerName": str, "preemptionPolicy": str,
    "tolerations": _list_of({"key": str, "operator": str, "value": str, "effect": str,
                             "tolerationSeconds": INT64}),
    "topologySpreadConstraints": _list_of({
        "maxSkew": INT32, "topologyKey": str, "whenUnsatisfiable": str,
        "labelSelector": LABEL_SELECTOR, "minDomains": INT32, "nodeAffinityPolicy": str,
        "nodeTaintsPolicy": str, "matchLabelKeys": STRINGS}),
    "containers": _list_of(CONTAINER), "initContainers": _list_of(CONTAINER),
    "volumes": _list_of({"name": str, "persistentVolumeClaim": {"claimName": str},
                         "ephemeral": {"volumeClaimTemplate": {
                             "spec": {"storageClassName": str, "accessModes": STRINGS}}}}),
    "schedulingGates": _list_of({"name": str}), "hostNetwork": bool,
}
POD_STATUS = {"phase": str, "nominatedNodeName": str}
NODE_SPEC = {"unschedulable": bool, "taints": _list_of(
    {"key": str, "value": str, "effect": str})}
NODE_STATUS = {"images": _list_of({"names": STRINGS, "sizeBytes": INT64})}
# Dynamic resource allocation (``resource.k8s.io/v1``; older versions are checked after
# conversion to v1, see ``kaudit.model.dra.normalize``).
NODE_SELECTOR = {"nodeSelectorTerms": _list_of(NODE_SELECTOR_TERM)}
DEVICE_SELECTORS = _list_of({"cel": {"expression": str}})
DEVICE_TAINT = {"key": str, "value": str, "effect": str, "timeAdded": str}
DEVICE_TOLERATIONS = _list_of({"key": str, "operator": str, "value": str, "effect": str,
                                "tolerationSeconds": INT64})
DEVICE_SUB_REQUEST = {"name": str, "deviceClassName": str, "selectors": DEVICE_SELECTORS,
                      "allocationMode": str, "count": INT64, "tolerations": DEVICE_TOLERATIONS}
DEVICE_REQUEST = {"name": str, "exactly": {**DEVICE_SUB_REQUEST, "adminAccess": bool},
                  "firstAvailable": _list_of(DEVICE_SUB_REQUEST)}
CLAIM_SPEC = {"devices": {"requests": _list_of(DEVICE_REQUEST),
                          "constraints": _list_of({"requests": STRINGS, "matchAttribute": str,
                                                   "distinctAttribute": str}),
                          "config": _list_of({"requests": STRINGS})}}
CLAIM_STATUS = {
    "allocation": {"devices": {"results": _list_of({
        "request": str, "driver": str, "pool": str, "device": str, "adminAccess": bool,
        "tolerations": DEVICE_TOLERATIONS, "shareID": str,
        "consumedCapacity": ("map", "int-or-string")})},
        "nodeSelector": NODE_SELECTOR},
    "reservedFor": _list_of({"resource": str, "name": str, "uid": str}),
}
SLICE_DEVICE = {"name": str, "attributes": ("map", {"int": INT64, "bool": bool, "string": str,
                                                     "version": str}),
                "capacity": ("map", {"value": "int-or-string"}), "nodeName": str,
                "allNodes": bool, "nodeSelector": NODE_SELECTOR,
                "consumesCounters": _list_of({"counterSet": str,
                                              "counters": ("map", {"value": "int-or-string"})}),
                "taints": _list_of(DEVICE_TAINT), "allowMultipleAllocations": bool}
SLICE_SPEC = {"driver": str, "pool": {"name": str, "generation": INT64,
                                      "resourceSliceCount": INT64},
              "nodeName": str, "allNodes": bool, "nodeSelector": NODE_SELECTOR,
              "perDeviceNodeSelection": bool, "devices": _list_of(SLICE_DEVICE),
              "sharedCounters": _list_of({"name": str,
                                          "counters": ("map", {"value": "int-or-string"})})}
DRA_FIELDS: dict[str, dict[str, Any]] = {
    "ResourceClaim": {"spec": CLAIM_SPEC, "status": CLAIM_STATUS},
    "ResourceClaimTemplate": {"spec": {"spec": CLAIM_SPEC}},
    "ResourceSlice": {"spec": SLICE_SPEC},
    "DeviceClass": {"spec": {"selectors": DEVICE_SELECTORS}},
    "DeviceTaintRule": {"spec": {"deviceSelector": {"driver": str, "pool": str, "device": str},
                                 "taint": DEVICE_TAINT}},
}
KIND_FIELDS: dict[str, dict[str, Any]] = {
    "Pod": {"spec": POD_SPEC, "status": POD_STATUS},
    "Node": {"spec": NODE_SPEC, "status": NODE_STATUS},
    "PriorityClass": {"value": INT32, "preemptionPolicy": str, "globalDefault": bool},
    "PodDisruptionBudget": {"spec": {"selector": LABEL_SELECTOR,
                                     "minAvailable": "int-or-string",
                                     "maxUnavailable": "int-or-string"},
                            "status": {"disruptionsAllowed": INT32,
                                       "disruptedPods": STRING_MAP}},
    "Namespace": {},
}


def _name(value: Any, path: str, limit: int) -> str:
    if not isinstance(value, str) or not value:
        raise ObjectError(f"{path}: missing" if value is None
                          else f"{path}: must be a non-empty string, not {value!r}")
    if len(value) > limit:
        raise ObjectError(f"{path}: longer than {limit} characters")
    if value in (".", "..") or "/" in value or "%" in value:
        raise ObjectError(f"{path}: {value!r} may not be '.' or '..' nor contain '/' or '%'")
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise ObjectError(f"{path}: {value!r} contains a control character")
    return value


def _quantities(resources: Any, path: str) -> None:
    if resources is None:
        return
    for name, text in _mapping(resources, path).items():
        if type(text) is not str:
            if not isinstance(text, int | float) or isinstance(text, bool):
                raise ObjectError(f"{path}.{name}: quantity must be a string, "
                                  f"not {type_name(text)}")
            text = str(text)
        try:
            quantity = parse_quantity(text)
        except QuantityTooLargeError as exc:
            raise ObjectError(f"{path}.{name}: {exc} (beyond int64)") from None
        except QuantityError as exc:
            raise ObjectError(f"{path}.{name}: invalid quantity {shortened(text)}: "
                              f"{exc}") from None
        if quantity.nanos < 0:
            raise ObjectError(f"{path}.{name}: quantity {text!r} must not be negative")
        if to_units(name, quantity.nanos) > INT64[1]:
            raise ObjectError(f"{path}.{name}: quantity {text!r} is too large (beyond int64) "
                              f"once converted to {_unit(name)}")


def _unit(resource: str) -> str:
    return "millicores" if resource == CPU else "whole units"


def _pod_totals(spec: dict[str, Any]) -> None:
    """The pod's requests as the scheduler sums them (containers, init containers, pod-level
    requests, overhead) must fit an int64 too: upstream adds them as int64."""
    for name, units in resource_units(pod_requests(spec)).items():
        if units > INT64[1]:
            raise ObjectError(f"object.spec: the pod's total request of {name} is too large "
                              f"(beyond int64) once converted to {_unit(name)}")


def _requirements(resources: Any, path: str) -> None:
    if resources is None:
        return
    body = _mapping(resources, path)
    _quantities(body.get("requests"), f"{path}.requests")
    _quantities(body.get("limits"), f"{path}.limits")


def _containers(containers: Any, path: str) -> None:
    for index, container in enumerate(_list(containers, path)):
        where = f"{path}[{index}]"
        body = _mapping(container, where)
        _requirements(body.get("resources"), f"{where}.resources")


def _validate_pod(obj: dict[str, Any], exists: bool) -> None:
    spec = obj.get("spec")
    if spec is None:
        if exists:
            raise ObjectError("object.spec: a Pod needs a spec with containers")
        return
    spec = _mapping(spec, "object.spec")
    containers = spec.get("containers")
    if exists and not containers:
        raise ObjectError("object.spec.containers: a Pod needs at least one container")
    if containers is not None:
        _containers(containers, "object.spec.containers")
    if spec.get("initContainers") is not None:
        _containers(spec["initContainers"], "object.spec.initContainers")
    _quantities(spec.get("overhead"), "object.spec.overhead")
    _requirements(spec.get("resources"), "object.spec.resources")
    _pod_totals(spec)
    _validate_pod_claims(spec, obj.get("status"))
    node_name = spec.get("nodeName")
    if node_name is not None and not isinstance(node_name, str):
        raise ObjectError(f"object.spec.nodeName: must be a string, not {type_name(node_name)}")
    annotations = (obj.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        try:
            gpu_demand(annotations)
        except ValueError as exc:
            raise ObjectError(f"object.{exc}") from None


def _validate_node(obj: dict[str, Any]) -> None:
    status = obj.get("status")
    if status is None:
        return
    status = _mapping(status, "object.status")
    _quantities(status.get("capacity"), "object.status.capacity")
    _quantities(status.get("allocatable"), "object.status.allocatable")


def _validate_persistent_volume(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if spec is not None:
        _quantities(_mapping(spec, "object.spec").get("capacity"), "object.spec.capacity")


def _validate_claim(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if spec is not None:
        _requirements(_mapping(spec, "object.spec").get("resources"), "object.spec.resources")


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$")
_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
_MAX_SUBREQUESTS = 8  # FirstAvailableDeviceRequestMaxSize
_MAX_EXPRESSION = 10 * 1024  # CELSelectorExpressionMaxLength


def _validate_dra_version(obj: dict[str, Any]) -> None:
    version = obj.get("apiVersion")
    if isinstance(version, str) and version.startswith(dra.GROUP + "/") and \
            version not in dra.KNOWN_VERSIONS:
        raise ObjectError(f"object.apiVersion: {version!r} is not a version kaudit reads "
                          f"({', '.join(sorted(dra.KNOWN_VERSIONS))})")


def _selectors(selectors: Any, path: str) -> None:
    for index, selector in enumerate(_list(selectors, path) if selectors is not None else []):
        expression = (_mapping(selector, f"{path}[{index}]").get("cel") or {})
        expression = _mapping(expression, f"{path}[{index}].cel").get("expression")
        if not isinstance(expression, str) or not expression.strip():
            raise ObjectError(f"{path}[{index}].cel.expression: a CEL expression is required")
        # ``validateCELSelector``: upstream's length and cost-estimate limits, its words.
        size = len(expression.encode("utf-8", "surrogatepass"))
        if size > _MAX_EXPRESSION:
            raise ObjectError(f"{path}[{index}].cel.expression: Too long: may not be more than "
                              f"{_MAX_EXPRESSION} bytes ({size} bytes)")
        cost = estimated_cost(expression)
        if cost is not None and cost > MAX_COST:
            raise ObjectError(f"{path}[{index}].cel.expression: Forbidden: too complex, exceeds "
                              f"cost limit (estimated cost {cost}, limit {MAX_COST})")


def _exact(body: dict[str, Any], path: str) -> None:
    if not body.get("deviceClassName"):
        raise ObjectError(f"{path}.deviceClassName: required")
    mode = body.get("allocationMode")
    if mode not in (None, "ExactCount", "All"):
        raise ObjectError(f"{path}.allocationMode: {mode!r} is not ExactCount or All")
    count = body.get("count")
    if mode == "All" and count not in (None, 0):
        raise ObjectError(f"{path}.count: must not be set when allocationMode is All")
    if mode != "All" and count is not None and count < 1:
        raise ObjectError(f"{path}.count: must be at least 1, not {count}")
    _selectors(body.get("selectors"), f"{path}.selectors")
    capacity = body.get("capacity")
    if capacity is not None:
        _quantities(_mapping(capacity, f"{path}.capacity").get("requests"),
                    f"{path}.capacity.requests")


def _request_policy(policy: Any, path: str) -> None:
    """A device capacity's ``requestPolicy``: its amounts must be quantities."""
    policy = _mapping(policy, path)
    _quantities({"default": policy["default"]} if policy.get("default") is not None else None,
                path)
    valid_range = policy.get("validRange")
    if valid_range is not None:
        _quantities({k: v for k, v in _mapping(valid_range, f"{path}.validRange").items()
                     if k in ("min", "max", "step") and v is not None}, f"{path}.validRange")
    values = policy.get("validValues")
    if values is not None:
        _quantities(dict(enumerate(_list(values, f"{path}.validValues"))),
                    f"{path}.validValues")


def _validate_dra_class(obj: dict[str, Any]) -> None:
    _validate_dra_version(obj)
    spec = obj.get("spec")
    if spec is not None:
        _selectors(_mapping(spec, "object.spec").get("selectors"), "object.spec.selectors")


#: Upstream's ``resource.ResourceSliceMaxDevices`` (``pkg/apis/resource/types.go``, v1.34): the
#: API server refuses a ResourceSlice with more devices (``validateSet`` in
#: ``pkg/apis/resource/validation/validation.go``, which also refuses a device name twice).
RESOURCE_SLICE_MAX_DEVICES = 128
#: ``ResourceSliceMaxDevicesWithAdvancedFeatures`` (v1.37): the limit when a device has taints
#: or consumes counters.
RESOURCE_SLICE_MAX_ADVANCED_DEVICES = 64


def _validate_slice(obj: dict[str, Any]) -> None:
    _validate_dra_version(obj)
    obj = dra.normalize(obj)
    spec = _mapping(obj.get("spec"), "object.spec")
    if not spec.get("driver"):
        raise ObjectError("object.spec.driver: required")
    pool = _mapping(spec.get("pool"), "object.spec.pool")
    if not pool.get("name"):
        raise ObjectError("object.spec.pool.name: required")
    if (pool.get("resourceSliceCount") or 0) < 1:
        raise ObjectError("object.spec.pool.resourceSliceCount: must be at least 1")
    chosen = [field for field in _NODE_SELECTION if spec.get(field) not in (None, False, "")]
    if len(chosen) != 1:
        raise ObjectError(f"object.spec: exactly one of {', '.join(_NODE_SELECTION)} must be "
                          f"set{' (got ' + ', '.join(chosen) + ')' if chosen else ''}")
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        raise ObjectError("object.spec: only one of `sharedCounters` or `devices` is allowed")
    counter_sets: set[str] = set()
    for index, counter_set in enumerate(_list(spec.get("sharedCounters") or [],
                                              "object.spec.sharedCounters")):
        where = f"object.spec.sharedCounters[{index}]"
        name = _name(_mapping(counter_set, where).get("name"), f"{where}.name", 63)
        if name in counter_sets:
            raise ObjectError(f'{where}.name: Duplicate value: "{name}"')
        counter_sets.add(name)
        _counters(counter_set.get("counters"), f"{where}.counters")
    devices = _list(spec.get("devices") or [], "object.spec.devices")
    advanced = any(isinstance(d, dict) and (d.get("taints") or d.get("consumesCounters"))
                   for d in devices)
    limit = RESOURCE_SLICE_MAX_ADVANCED_DEVICES if advanced else RESOURCE_SLICE_MAX_DEVICES
    if len(devices) > limit:
        raise ObjectError(f"object.spec.devices: Too many: {len(devices)}: must have at most "
                          f"{limit} items")
    names: set[str] = set()
    for index, device in enumerate(devices):
        where = f"object.spec.devices[{index}]"
        device = _mapping(device, where)
        if device.get("basic") is not None:
            raise ObjectError(f"{where}.basic: must be an object")
        name = _name(device.get("name"), f"{where}.name", 63)
        if not _DNS_LABEL.match(name):
            raise ObjectError(f"{where}.name: {name!r} is not a DNS label (lower-case letters, "
                              "digits and '-')")
        if name in names:
            raise ObjectError(f'{where}.name: Duplicate value: "{name}"')
        names.add(name)
        for attribute, value in (device.get("attributes") or {}).items():
            if len([kind for kind in ("int", "bool", "string", "version")
                    if value.get(kind) is not None]) != 1:
                raise ObjectError(f"{where}.attributes.{attribute}: exactly one of int, bool, "
                                  "string and version must be set")
            version = value.get("version")
            if version is not None and not _SEMVER.match(version):
                raise ObjectError(f"{where}.attributes.{attribute}.version: {version!r} is not "
                                  "a semantic version")
        capacity = {name: (value or {}).get("value")
                    for name, value in (device.get("capacity") or {}).items()}
        _quantities(capacity, f"{where}.capacity")
        for name, value in (device.get("capacity") or {}).items():
            if isinstance(value, dict) and value.get("requestPolicy") is not None:
                _request_policy(value["requestPolicy"], f"{where}.capacity.{name}.requestPolicy")
        for k, consumption in enumerate(device.get("consumesCounters") or []):
            if not consumption.get("counterSet"):
                raise ObjectError(f"{where}.consumesCounters[{k}].counterSet: required")
            _counters(consumption.get("counters"), f"{where}.consumesCounters[{k}].counters")


def _counters(counters: Any, path: str) -> None:
    """A counter set's or a device consumption's ``counters``: name → ``{"value": quantity}``."""
    values = {name: (value or {}).get("value") for name, value in (counters or {}).items()}
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise ObjectError(f"{path}.{missing[0]}.value: required")
    _quantities(values, path)


def _validate_taint_rule(obj: dict[str, Any]) -> None:
    _validate_dra_version(obj)
    spec = _mapping(obj.get("spec"), "object.spec")
    taint = _mapping(spec.get("taint"), "object.spec.taint")
    if not taint.get("key"):
        raise ObjectError("object.spec.taint.key: required")
    if taint.get("effect") not in ("NoSchedule", "NoExecute", "None"):
        raise ObjectError(f"object.spec.taint.effect: Unsupported value: "
                          f"{taint.get('effect')!r}: supported values: \"NoSchedule\", "
                          "\"NoExecute\", \"None\"")


def _validate_requests(spec: Any, path: str) -> None:
    devices = (_mapping(spec, path).get("devices") or {}) if spec is not None else {}
    names: set[str] = set()
    for index, request in enumerate(devices.get("requests") or []):
        where = f"{path}.devices.requests[{index}]"
        name = _name(request.get("name"), f"{where}.name", 63)
        if name in names:
            raise ObjectError(f"{where}.name: {name!r} is used by another request")
        names.add(name)
        exactly, subs = request.get("exactly"), request.get("firstAvailable")
        if (exactly is None) == (not subs):
            raise ObjectError(f"{where}: exactly one of exactly and firstAvailable must be set")
        if exactly is not None:
            _exact(exactly, f"{where}.exactly")
            continue
        if len(subs) > _MAX_SUBREQUESTS:
            raise ObjectError(f"{where}.firstAvailable: {len(subs)} subrequests, more than "
                              f"{_MAX_SUBREQUESTS}")
        sub_names: set[str] = set()
        for sub_index, sub in enumerate(subs):
            sub_where = f"{where}.firstAvailable[{sub_index}]"
            sub_name = _name(sub.get("name"), f"{sub_where}.name", 63)
            if sub_name in sub_names:
                raise ObjectError(f"{sub_where}.name: {sub_name!r} is used by another "
                                  "subrequest")
            sub_names.add(sub_name)
            names.add(f"{name}/{sub_name}")
            _exact(sub, sub_where)
    for index, constraint in enumerate(devices.get("constraints") or []):
        where = f"{path}.devices.constraints[{index}]"
        match, distinct = constraint.get("matchAttribute"), constraint.get("distinctAttribute")
        if (match is None) == (distinct is None):
            raise ObjectError(f"{where}: exactly one of matchAttribute and distinctAttribute "
                              "must be set")
        attribute = match if match is not None else distinct
        field = "matchAttribute" if match is not None else "distinctAttribute"
        if not attribute or "/" not in attribute:
            raise ObjectError(f"{where}.{field}: a fully qualified attribute name "
                              "(domain/id) is required")
        for request in constraint.get("requests") or []:
            if request not in names:
                raise ObjectError(f"{where}.requests: {request!r} names no request of the claim")


def _validate_dra_claim(obj: dict[str, Any], template: bool) -> None:
    _validate_dra_version(obj)
    obj = dra.normalize(obj)
    spec = obj.get("spec")
    if template:
        spec = _mapping(spec, "object.spec").get("spec") if spec is not None else None
        _validate_requests(spec, "object.spec.spec")
    else:
        _validate_requests(spec, "object.spec")


def _validate_pod_claims(spec: dict[str, Any], status: Any) -> None:
    entries = spec.get("resourceClaims")
    names: set[str] = set()
    for index, entry in enumerate(_list(entries, "object.spec.resourceClaims")
                                  if entries is not None else []):
        where = f"object.spec.resourceClaims[{index}]"
        entry = _mapping(entry, where)
        name = _name(entry.get("name"), f"{where}.name", 63)
        if name in names:
            raise ObjectError(f"{where}.name: {name!r} is used by another entry")
        names.add(name)
        claim, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        if (claim is None) == (template is None):
            raise ObjectError(f"{where}: exactly one of resourceClaimName and "
                              "resourceClaimTemplateName must be set")
        field = "resourceClaimName" if claim is not None else "resourceClaimTemplateName"
        _name(entry[field], f"{where}.{field}", 253)
    statuses = (status or {}).get("resourceClaimStatuses") if isinstance(status, dict) else None
    for index, entry in enumerate(_list(statuses, "object.status.resourceClaimStatuses")
                                  if statuses is not None else []):
        where = f"object.status.resourceClaimStatuses[{index}]"
        entry = _mapping(entry, where)
        _name(entry.get("name"), f"{where}.name", 63)
        if entry.get("resourceClaimName") is not None:
            _name(entry["resourceClaimName"], f"{where}.resourceClaimName", 253)


_KIND_CHECKS = {
    "ResourceSlice": lambda obj, exists: _validate_slice(obj) if exists else None,
    "ResourceClaim": lambda obj, exists: _validate_dra_claim(obj, False) if exists else None,
    "ResourceClaimTemplate": lambda obj, exists: _validate_dra_claim(obj, True)
    if exists else None,
    "DeviceClass": lambda obj, exists: _validate_dra_class(obj) if exists else None,
    "DeviceTaintRule": lambda obj, exists: _validate_taint_rule(obj) if exists else None,
    "Node": lambda obj, exists: _validate_node(obj),
    "Pod": _validate_pod,
    "PersistentVolume": lambda obj, exists: _validate_persistent_volume(obj),
    "PersistentVolumeClaim": lambda obj, exists: _validate_claim(obj),
}


def validate_object(obj: Any, event_type: str) -> tuple[str, str, str, str | None]:
    """Check ``obj``; return ``(kind, namespace, name, uid)`` or raise :class:`ObjectError`."""
    obj = _mapping(obj, "object")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ObjectError("object.kind: missing" if kind is None
                          else f"object.kind: must be a non-empty string, not {kind!r}")
    metadata = obj.get("metadata")
    if metadata is None:
        raise ObjectError("object.metadata: missing")
    metadata = _mapping(metadata, "object.metadata")
    name = _name(metadata.get("name"), "object.metadata.name", 253)
    namespace = metadata.get("namespace") or ""
    if namespace:
        _name(namespace, "object.metadata.namespace", 63)
    uid = metadata.get("uid")
    if uid is not None and not isinstance(uid, str):
        raise ObjectError(f"object.metadata.uid: must be a string, not {uid!r}")
    _check(metadata, METADATA, "object.metadata")
    if kind in DRA_FIELDS:
        obj = dra.normalize(obj)
    fields = KIND_FIELDS.get(kind) or DRA_FIELDS.get(kind)
    if fields:
        _check(obj, fields, "object")
    check = _KIND_CHECKS.get(kind)
    if check is not None:
        check(obj, event_type != "DELETED")
    return kind, namespace, name, uid
