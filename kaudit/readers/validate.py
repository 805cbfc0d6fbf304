"""Validate Kubernetes objects from a trace: identity fields and resource quantities.

Checks what replay depends on, in the spirit of the API server's validation: ``kind`` and
``metadata.name`` are non-empty strings, a Pod that exists has containers, and every resource
quantity (container and pod-level requests and limits, overhead, node capacity and allocatable,
volume capacity) parses as a Kubernetes quantity and is not negative. Errors name the field.
"""

from __future__ import annotations

from typing import Any

from kaudit.errors import QuantityError
from kaudit.quantity import parse_quantity


class ObjectError(ValueError):
    """An object is invalid; the message starts with the offending field's path."""


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ObjectError(f"{path}: must be an object, not {_type_name(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise ObjectError(f"{path}: must be a list, not {_type_name(value)}")
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _quantities(resources: Any, path: str) -> None:
    if resources is None:
        return
    for name, text in _mapping(resources, path).items():
        if type(text) is not str:
            if not isinstance(text, int | float) or isinstance(text, bool):
                raise ObjectError(f"{path}.{name}: quantity must be a string, "
                                  f"not {_type_name(text)}")
            text = str(text)
        try:
            quantity = parse_quantity(text)
        except QuantityError as exc:
            raise ObjectError(f"{path}.{name}: invalid quantity {text!r}: {exc}") from None
        if quantity.nanos < 0:
            raise ObjectError(f"{path}.{name}: quantity {text!r} must not be negative")


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
    node_name = spec.get("nodeName")
    if node_name is not None and not isinstance(node_name, str):
        raise ObjectError(f"object.spec.nodeName: must be a string, not {_type_name(node_name)}")


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


_KIND_CHECKS = {
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
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError("object.metadata.name: missing" if name is None
                          else f"object.metadata.name: must be a non-empty string, not {name!r}")
    namespace = metadata.get("namespace") or ""
    if not isinstance(namespace, str):
        raise ObjectError(f"object.metadata.namespace: must be a string, not {namespace!r}")
    uid = metadata.get("uid")
    if uid is not None and not isinstance(uid, str):
        raise ObjectError(f"object.metadata.uid: must be a string, not {uid!r}")
    check = _KIND_CHECKS.get(kind)
    if check is not None:
        check(obj, event_type != "DELETED")
    return kind, namespace, name, uid
