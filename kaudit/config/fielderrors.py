"""Field errors as kube-scheduler's validation reports them.

Mirrors ``k8s.io/apimachinery/pkg/util/validation/field`` (``errors.go``, ``path.go``):
the ``ErrorType`` strings (``FieldValueInvalid`` ...), their human labels (``Invalid
value``) and how ``Error.Error()`` renders ``<field>: <label>: <value>: <detail>``: a
``string`` value as ``%q`` (:func:`~kaudit.gostrings.go_quote`), ints, floats and bools as
``%v``, anything else (lists, maps, nil, a named string type such as ``v1.ResourceName``)
as ``encoding/json`` marshals it (:mod:`kaudit.k8s.values`, which also holds
:class:`GoNamedString` and :class:`GoStruct`; they are importable from here too). Paths are
plain strings built with :func:`child`, :func:`index` and :func:`key`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from kaudit.gostrings import go_quote
from kaudit.k8s.values import GoNamedString as GoNamedString
from kaudit.k8s.values import GoStruct as GoStruct
from kaudit.k8s.values import go_float_v as go_float_v
from kaudit.k8s.values import go_json as go_json
from kaudit.k8s.values import render_value as render_value

NOT_FOUND = "FieldValueNotFound"
REQUIRED = "FieldValueRequired"
DUPLICATE = "FieldValueDuplicate"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
INTERNAL = "InternalError"
TYPE_INVALID = "FieldValueTypeInvalid"

_LABELS = {
    NOT_FOUND: "Not found", REQUIRED: "Required value", DUPLICATE: "Duplicate value",
    INVALID: "Invalid value", NOT_SUPPORTED: "Unsupported value", FORBIDDEN: "Forbidden",
    TOO_LONG: "Too long", TOO_MANY: "Too many", INTERNAL: "Internal error",
    TYPE_INVALID: "Invalid value",
}
# Error types whose rendering leaves the bad value out, as upstream's ErrorBody does.
_WITHOUT_VALUE = frozenset({REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL})


class _NoValue:
    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE: Any = _NoValue()


@dataclasses.dataclass(frozen=True)
class FieldError:
    """One validation failure: its type (``FieldValueInvalid`` ...), the field path
    (relative to whatever was validated) and the detail text. ``value`` is the offending
    value, used only for rendering and ignored by ``==``."""

    type: str
    field: str
    detail: str
    value: Any = dataclasses.field(default=NO_VALUE, compare=False, repr=False)

    def message(self) -> str:
        """``<field>: <label>[: <value>][: <detail>]``, like Go's ``field.Error.Error()``."""
        body = _LABELS.get(self.type, self.type)
        if self.type not in _WITHOUT_VALUE and self.value is not NO_VALUE:
            body += f": {render_value(self.value)}"
        if self.detail:
            body += f": {self.detail}"
        return f"{self.field}: {body}" if self.field else body

    def under(self, prefix: str) -> FieldError:
        """The same error with its field path re-rooted under ``prefix``."""
        return dataclasses.replace(self, field=child(prefix, self.field))

    def __str__(self) -> str:
        return self.message()


def child(path: str, name: str) -> str:
    if not path:
        return name
    if not name:
        return path
    return f"{path}{name}" if name.startswith("[") else f"{path}.{name}"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(INVALID, path, detail, value)


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(TYPE_INVALID, path, detail, value)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, path, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, path, detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(DUPLICATE, path, "", value)


def not_found(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(NOT_FOUND, path, detail, value)


def not_supported(path: str, value: Any, valid: Sequence[str]) -> FieldError:
    """``field.NotSupported``: each supported value as ``strconv.Quote(fmt.Sprint(v))``."""
    detail = "supported values: " + ", ".join(go_quote(str(v)) for v in valid) if valid else ""
    return FieldError(NOT_SUPPORTED, path, detail, value)


def format_errors(source: str, errors: Iterable[FieldError]) -> str:
    """One line per error, each prefixed with the source (a file name)."""
    return "\n".join(f"{source}: {error.message()}" for error in errors)
