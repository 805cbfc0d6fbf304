"""How a field error prints its bad value, as ``field.Error.ErrorBody`` does.

Mirrors ``k8s.io/apimachinery/pkg/util/validation/field/errors.go`` (``ErrorBody``,
apimachinery v0.34.2): a Go ``string`` with ``%q`` (:func:`~kaudit.gostrings.go_quote`),
an int, float or bool with ``%v``, anything else (nil, slices, maps, structs, a named string
type such as ``v1.ResourceName``) as ``encoding/json`` marshals it. It sits below ``config``
and ``model`` so that both the configuration's field errors and the label-selector errors
(``labels.NewRequirement``, :mod:`kaudit.k8s.labels`) print values this one way.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from kaudit.gostrings import go_quote


class GoNamedString(str):
    """A value of a named Go string type (``v1.ResourceName``, ``v1.TaintEffect`` ...).

    ``ErrorBody``'s ``case string`` is for the type ``string`` only, so such a value takes
    the default branch and prints as ``json.Marshal`` writes it: double-quoted with JSON's
    escapes (``<`` as ``\\u003c``), not ``%q`` and not bare, although the type is a
    ``fmt.Stringer`` (the Stringer is only the fallback when marshalling fails)."""


class GoStruct(dict[str, Any]):
    """A Go struct value: its fields by their Go names (``Enabled``, ``Weight``; an internal
    configuration type has no JSON tags) in declaration order, which is the order
    ``json.Marshal`` writes them in. A plain ``dict`` is a Go map, whose keys it sorts."""


#: The escapes ``encoding/json`` writes by name (Go 1.22 and later also ``\b`` and ``\f``).
_JSON_NAMED = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t"}
#: Escaped as ``\\u00XX`` by ``json.Marshal``'s HTML escaping, and the two JavaScript line
#: separators it always escapes.
_JSON_HTML = frozenset("<>&\u2028\u2029")


def _json_string(text: str) -> str:
    """``encoding/json``'s string encoding (``appendString`` with HTML escaping): a byte
    that is not valid UTF-8 becomes ``\\ufffd``; in a ``str`` such a byte is a lone
    surrogate (``surrogateescape`` carries one byte; any other surrogate is the three bytes
    of its UTF-8 form, each invalid on its own)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _JSON_NAMED:
            out.append(_JSON_NAMED[ch])
        elif code < 0x20 or ch in _JSON_HTML:
            out.append(f"\\u{code:04x}")
        elif 0xDC80 <= code < 0xDD00:
            out.append("\\ufffd")
        elif 0xD800 <= code < 0xE000:
            out.append("\\ufffd" * 3)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _digits(value: float) -> tuple[str, int, str]:
    """The shortest decimal digits that read back as ``value`` (Go's ``strconv`` and
    Python's ``repr`` agree on them), the decimal point's position and the sign."""
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    return text, len(text) + exponent, "-" if sign else ""


def _go_exponent(digits: str, point: int, sign: str) -> str:
    """``strconv.FormatFloat(f, 'e', -1, 64)``: ``d.ddde±XX``, at least two exponent digits."""
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exponent = point - 1 if digits != "0" else 0
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _go_fixed(digits: str, point: int, sign: str) -> str:
    """``strconv.FormatFloat(f, 'f', -1, 64)``."""
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_float_v(value: float) -> str:
    """Go's ``%v`` of a ``float64``: ``%g`` with the shortest digits, in exponent form when
    the exponent is below -4 or at least 6 (``1e+06``, ``100000``, ``1e-05``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    digits, point, sign = _digits(value)
    if digits == "0":
        return sign + "0"
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        return _go_exponent(digits, point, sign)
    return _go_fixed(digits, point, sign)


def _json_float(value: float) -> str:
    """``encoding/json``'s ``float64`` encoding: fixed notation from 1e-6 up to (not
    including) 1e21, exponent form outside with ``e-07`` shortened to ``e-7``."""
    digits, point, sign = _digits(value)
    if digits != "0" and not 1e-6 <= abs(value) < 1e21:
        text = _go_exponent(digits, point, sign)
        return re.sub(r"e-0(\d)$", r"e-\1", text)
    return _go_fixed(digits, point, sign) if digits != "0" else sign + "0"


def go_json(value: Any) -> str:
    """``json.Marshal`` of the Go value ``value`` stands for: ``null``, ``true``, numbers,
    strings with JSON's escapes, lists as ``[a,b]``, maps as ``{"k":v}`` with their keys
    sorted and a :class:`GoStruct` with its fields in order, all without spaces. Anything
    else prints as its ``str``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):  # json.Marshal fails; %v is the fallback
            return go_float_v(value)
        return _json_float(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return "[" + ",".join(go_json(item) for item in items) + "]"
    if isinstance(value, dict):
        pairs = [(str(k), v) for k, v in value.items()]
        if not isinstance(value, GoStruct):
            pairs.sort(key=lambda pair: pair[0])
        return "{" + ",".join(f"{_json_string(k)}:{go_json(v)}" for k, v in pairs) + "}"
    return str(value)


def render_value(value: Any) -> str:
    """A bad value as ``field.Error.ErrorBody`` prints it: a ``string`` with ``%q``, an
    int, float or bool with ``%v``, anything else (nil, lists, maps, a named string type)
    as ``json.Marshal`` writes it."""
    if isinstance(value, str) and not isinstance(value, GoNamedString):
        return go_quote(value)
    if isinstance(value, float):
        return go_float_v(value)
    return go_json(value)
