"""Strict decoding checks: unknown fields and wrong types, with field paths.

kube-scheduler decodes its configuration strictly (``k8s.io/apimachinery`` strict
serializer over ``sigs.k8s.io/yaml``): an unknown field, or a value that does not fit the
Go type (a string for an ``int32``, ``3000000000`` for an ``int32``), is an error. This
module describes the v1 Go types as small schemas and reports every such problem with
its path. ``null`` is accepted everywhere and means "not set", as for Go pointers.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

from kaudit.config.duration import parse_duration
from kaudit.config.fielderrors import FieldError, child, forbidden, index, key, type_invalid

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@dataclass(frozen=True)
class ListOf:
    item: Spec


@dataclass(frozen=True)
class MapOf:
    value: Spec


@dataclass(frozen=True)
class Obj:
    fields: Mapping[str, Spec]


# A leaf kind ("string", "bool", "int32", "int64", "float", "duration", "bytes" (base64),
# "object" for any mapping, "any") or a composite schema.
Spec = Union[str, ListOf, MapOf, Obj]  # noqa: UP007 (a runtime alias with forward refs)


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _check_scalar(value: Any, kind: str, path: str) -> list[FieldError]:
    if kind == "any":
        return []
    if kind == "string" and isinstance(value, str):
        return []
    if kind == "bool" and isinstance(value, bool):
        return []
    if kind == "object" and isinstance(value, dict):
        return []
    if kind == "float" and isinstance(value, int | float) and not isinstance(value, bool):
        return []
    if kind in _INT_RANGES and isinstance(value, int | float) and not isinstance(value, bool):
        low, high = _INT_RANGES[kind]
        if isinstance(value, float) and not value.is_integer():
            return [type_invalid(path, value, f"expected {kind}, got a fraction")]
        if not low <= value <= high:
            return [type_invalid(path, value, f"number out of range for {kind}")]
        return []
    if kind == "bytes" and isinstance(value, str):  # a Go []byte: standard base64
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            return [type_invalid(path, value, f"illegal base64 data: {exc}")]
        return []
    if kind == "duration" and isinstance(value, str):
        try:
            parse_duration(value)
        except ValueError as exc:
            return [type_invalid(path, value, str(exc))]
        return []
    return [type_invalid(path, value, f"expected {kind}, got {json_type(value)}")]


def check(value: Any, spec: Spec, path: str = "") -> list[FieldError]:
    """Every unknown field and type mismatch in ``value`` against ``spec``."""
    if value is None:
        return []
    if isinstance(spec, str):
        return _check_scalar(value, spec, path)
    if isinstance(spec, ListOf):
        if not isinstance(value, list):
            return [type_invalid(path, value, f"expected array, got {json_type(value)}")]
        # kube-scheduler decodes a null item as a zero-valued one, which its validation then
        # refuses or which means nothing; kaudit refuses it at once.
        return [e for i, item in enumerate(value) for e in (
            [type_invalid(index(path, i), item, "expected a value, got null")] if item is None
            else check(item, spec.item, index(path, i)))]
    if not isinstance(value, dict):
        return [type_invalid(path, value, f"expected object, got {json_type(value)}")]
    if isinstance(spec, MapOf):
        return [e for k, v in value.items() for e in check(v, spec.value, key(path, str(k)))]
    errors: list[FieldError] = []
    for name, item in value.items():
        field_path = child(path, str(name))
        if name not in spec.fields:
            errors.append(forbidden(field_path, f'unknown field "{name}"'))
        else:
            errors.extend(check(item, spec.fields[name], field_path))
    return errors


def as_int(value: Any) -> int:
    """An integer a schema accepted (YAML may give ``3.0`` for an integer field)."""
    return int(value)
