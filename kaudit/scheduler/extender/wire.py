"""Extender answers read as kube-scheduler reads them: Go's ``encoding/json`` into the types
of ``staging/src/k8s.io/kube-scheduler/extender/v1/types.go`` (Kubernetes v1.34).

What Go does, and so what this does: only the first JSON value of the body is read (an empty
body is ``EOF``); an object's keys are matched to a struct's fields ignoring case, and a later
key overwrites an earlier one (or adds to a map); unknown keys are ignored; ``null`` makes a
pointer, map or slice nil and leaves a string or a number as it is; a value of the wrong type
is an error naming the field (``json: cannot unmarshal string into Go struct field
ExtenderFilterResult.FailedNodes of type map[string]string``); an ``int64`` takes integers
only (no fraction, no exponent); bytes that are not UTF-8 and escaped lone surrogates read as
U+FFFD. Every problem is an :class:`AnswerError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kaudit.config.schema import json_type

T = TypeVar("T")


class AnswerError(ValueError):
    """The answer does not decode into its Go type; the message is Go's."""


class Pairs(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, in order (duplicates kept)."""


class Number(float):
    """A JSON number with a fraction or an exponent, keeping its literal (Go quotes it)."""

    literal: str

    def __new__(cls, literal: str) -> Number:
        number = super().__new__(cls, literal)
        number.literal = literal
        return number


class LongNumber(str):
    """An integer too long for Python to read (over 4,300 digits): its literal."""


def _integer(literal: str) -> int | LongNumber:
    try:
        return int(literal)
    except ValueError:
        return LongNumber(literal)


def _constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's reader would take them, Go's does not.
    where = "in numeric literal" if name.startswith("-") else "looking for beginning of value"
    raise AnswerError(f"invalid character '{name.lstrip('-')[0]}' {where}")


_DECODER = json.JSONDecoder(object_pairs_hook=Pairs, parse_float=Number, parse_int=_integer,
                            parse_constant=_constant)
#: A \uD800-\uDFFF escape: the answer may hold a lone surrogate, which Go reads as U+FFFD.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse(body: bytes) -> Any:
    """The first JSON value in ``body``. As Go, bytes that are not UTF-8 read as U+FFFD (an
    error outside a string, where no such character may stand), and so does an escaped lone
    surrogate."""
    text = body.decode("utf-8", errors="replace").lstrip(" \t\r\n")
    if not text:
        raise AnswerError("EOF")
    try:
        value, _ = _DECODER.raw_decode(text)
    except RecursionError:
        raise AnswerError("exceeded max depth") from None
    except json.JSONDecodeError as exc:
        raise AnswerError(f"invalid JSON in extender answer: {exc.msg} at offset "
                          f"{exc.pos}") from None
    if _SURROGATE_ESCAPE.search(text):
        value = _without_surrogates(value)
    return value


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, LongNumber):
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)
    if isinstance(value, Pairs):
        return Pairs((_without_surrogates(k), _without_surrogates(v)) for k, v in value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    return value


def kind(value: Any) -> str:
    """The JSON kind Go names in a type error (``number``, ``array``, ``object`` ...)."""
    if isinstance(value, Pairs):
        return "object"
    return "number" if isinstance(value, LongNumber) else json_type(value)


def _mismatch(value: Any, where: str, go_type: str) -> AnswerError:
    shown = kind(value)
    if shown == "number" and go_type == "int64":
        # Go quotes the literal only when a number does not fit a number type.
        shown += " " + (value.literal if isinstance(value, Number) else str(value))
    target = f"Go struct field {where}" if "." in where else "Go value"
    return AnswerError(f"json: cannot unmarshal {shown} into {target} of type {go_type}")


def string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _mismatch(value, where, "string")
    return value


def int64(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return value
    raise _mismatch(value, where, "int64")


#: Field readers of Go value types, which ``null`` leaves as they are.
_SCALARS = (string, int64)


def string_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or isinstance(value, Pairs):
        raise _mismatch(value, where, "[]string")
    return ["" if item is None else string(item, where) for item in value]


def string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Pairs):
        raise _mismatch(value, where, "map[string]string")
    return {key: "" if item is None else string(item, where) for key, item in value}


def struct(value: Any, type_name: str, fields: dict[str, Callable[[Any, str], Any]]
           ) -> dict[str, Any]:
    """The fields of a Go struct decoded from ``value`` (only those given). As Go: ``null``
    sets a pointer, map or slice field to nil (None here) and leaves a string or a number as
    it was; an object for a map field already read adds to that map."""
    if not isinstance(value, Pairs):
        raise _mismatch(value, type_name, f"v1.{type_name}")
    by_fold = {name.casefold(): name for name in fields}
    decoded: dict[str, Any] = {}
    for key, item in value:
        name = key if key in fields else by_fold.get(key.casefold())
        if name is None:
            continue
        read = fields[name]
        if item is None:
            if read not in _SCALARS:
                decoded[name] = None
            continue
        new = read(item, f"{type_name}.{name}")
        old = decoded.get(name)
        decoded[name] = {**old, **new} if isinstance(old, dict) and isinstance(new, dict) \
            else new
    return decoded


def _list_of(item: Callable[[Any, str], T], go_type: str) -> Callable[[Any, str], list[T]]:
    def read(value: Any, where: str) -> list[T]:
        if not isinstance(value, list) or isinstance(value, Pairs):
            raise _mismatch(value, where, go_type)
        return [item(entry, where) for entry in value]
    return read


def _node_name(value: Any, where: str) -> str | None:
    """A v1.Node's ``metadata.name`` (a null item decodes to a Node without one)."""
    if value is None:
        return ""
    node = struct(value, "Node", {"metadata": lambda v, w: struct(
        v, "ObjectMeta", {"name": string})})
    name: str = (node.get("metadata") or {}).get("name", "")
    return name


def _node_list(value: Any, where: str) -> list[str]:
    nodes = struct(value, "NodeList", {"items": _list_of(_node_name, "[]v1.Node")})
    return [name or "" for name in nodes.get("items") or []]


@dataclass(frozen=True)
class FilterResult:
    """``ExtenderFilterResult``."""

    nodes: list[str] | None = None
    node_names: list[str] | None = None
    failed: dict[str, str] = field(default_factory=dict)
    failed_unresolvable: dict[str, str] = field(default_factory=dict)
    error: str = ""


def filter_result(value: Any) -> FilterResult:
    if value is None:
        return FilterResult()
    decoded = struct(value, "ExtenderFilterResult", {
        "Nodes": _node_list, "NodeNames": string_list, "FailedNodes": string_map,
        "FailedAndUnresolvableNodes": string_map, "Error": string})
    return FilterResult(decoded.get("Nodes"), decoded.get("NodeNames"),
                        decoded.get("FailedNodes") or {},
                        decoded.get("FailedAndUnresolvableNodes") or {},
                        decoded.get("Error") or "")


_HOST_PRIORITY: dict[str, Callable[[Any, str], Any]] = {"Host": string, "Score": int64}


def host_priorities(value: Any) -> list[tuple[str, int]]:
    """``HostPriorityList``: (host, score) pairs as answered."""
    if value is None:
        return []
    if not isinstance(value, list) or isinstance(value, Pairs):
        raise _mismatch(value, "HostPriorityList", "v1.HostPriorityList")
    out: list[tuple[str, int]] = []
    for entry in value:
        # The usual entry, {"Host": "...", "Score": n}, read at once; any other the Go way.
        if (type(entry) is Pairs and len(entry) == 2 and entry[0][0] == "Host"
                and entry[1][0] == "Score" and type(entry[0][1]) is str
                and type(entry[1][1]) is int and -(2**63) <= entry[1][1] < 2**63):
            out.append((entry[0][1], entry[1][1]))
            continue
        decoded = {} if entry is None else struct(entry, "HostPriority", _HOST_PRIORITY)
        out.append((decoded.get("Host", ""), decoded.get("Score", 0)))
    return out


def binding_error(value: Any) -> str:
    """``ExtenderBindingResult.Error``."""
    if value is None:
        return ""
    error: str = struct(value, "ExtenderBindingResult", {"Error": string}).get("Error", "")
    return error


def meta_victims(value: Any) -> dict[str, tuple[list[str], int] | None]:
    """``ExtenderPreemptionResult.NodeNameToMetaVictims``: per node, the victims' uids and
    PDB violations (None for a null entry, which upstream cannot handle)."""
    if value is None:
        return {}

    def victims(v: Any, where: str) -> dict[str, Any]:
        return struct(v, "MetaVictims", {
            "Pods": _list_of(lambda p, w: "" if p is None else struct(
                p, "MetaPod", {"UID": string}).get("UID", ""), "[]*v1.MetaPod"),
            "NumPDBViolations": int64})

    def by_node(v: Any, where: str) -> dict[str, tuple[list[str], int] | None]:
        if not isinstance(v, Pairs):
            raise _mismatch(v, where, "map[string]*v1.MetaVictims")
        out: dict[str, tuple[list[str], int] | None] = {}
        for node, entry in v:
            if entry is None:
                out[node] = None
                continue
            decoded = victims(entry, where)
            out[node] = (decoded.get("Pods") or [], decoded.get("NumPDBViolations", 0))
        return out

    decoded = struct(value, "ExtenderPreemptionResult", {"NodeNameToMetaVictims": by_node})
    result: dict[str, tuple[list[str], int] | None] = decoded.get("NodeNameToMetaVictims") or {}
    return result


def plain(value: Any) -> Any:
    """``value`` with its objects as dicts, to show: a repeated key keeps its last value at
    its last position (a later key that matches a struct field ignoring case still comes
    later)."""
    if isinstance(value, Number):
        return float(value)
    if isinstance(value, LongNumber):
        return str(value)
    if isinstance(value, Pairs):
        decoded: dict[str, Any] = {}
        for key, item in value:
            decoded.pop(key, None)
            decoded[key] = plain(item)
        return decoded
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value
