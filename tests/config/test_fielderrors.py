"""How a field error prints its bad value, against ``field.Error.ErrorBody`` of
``k8s.io/apimachinery/pkg/util/validation/field/errors.go`` (v0.34.2).

Every expected line below is what Go prints for the same value (``field.Invalid(
field.NewPath("a"), value, "d").Error()``): a ``string`` with ``%q``, ints, floats and bools
with ``%v``, and everything else (nil, slices, maps, structs, a named string type such as
``v1.ResourceName``) with ``json.Marshal``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kaudit.config.fielderrors import (
    GoNamedString,
    GoStruct,
    duplicate,
    invalid,
    not_supported,
    render_value,
    required,
)

#: A Go string holding the byte 0xff, as Python reads it with ``surrogateescape``.
BYTE_FF = b"\xff".decode("utf-8", "surrogateescape")


@pytest.mark.parametrize(("value", "shown"), [
    # string: %q (strconv.Quote)
    ("x<y\x01é\u2028", '"x<y\\x01é\\u2028"'),
    (BYTE_FF, '"\\xff"'),
    ("", '""'),
    # a named string type: json.Marshal, with HTML escaping
    (GoNamedString("x<y"), '"x\\u003cy"'),
    # ints, bools, floats: %v
    (3, "3"),
    (True, "true"),
    (1e6, "1e+06"),
    (123456.0, "123456"),
    (1.0, "1"),
    (0.1, "0.1"),
    (1e-5, "1e-05"),
    (-2.5e-7, "-2.5e-07"),
    # nil, slices, maps, structs: json.Marshal, compact
    (None, "null"),
    (["a<", "b"], '["a\\u003c","b"]'),
    ([], "[]"),
    ({"b": 1.0, "a": [1]}, '{"a":[1],"b":1}'),
    ([1e6, 1e21, 1.5, 1e-7], "[1000000,1e+21,1.5,1e-7]"),
    ([BYTE_FF + "\b\f\n\x7f"], '["\\ufffd\\b\\f\\n\x7f"]'),
    (GoStruct(Utilization=0, Score=10), '{"Utilization":0,"Score":10}'),
])
def test_a_bad_value_prints_as_error_body_does(value: Any, shown: str) -> None:
    assert render_value(value) == shown
    assert invalid("a", value, "d").message() == f"a: Invalid value: {shown}: d"


def test_values_left_out_and_supported_values_quoted() -> None:
    assert required("a", "d").message() == "a: Required value: d"
    assert duplicate("a", "x").message() == 'a: Duplicate value: "x"'
    # NotSupported quotes each supported value with strconv.Quote
    assert not_supported("a", "x", ['a"b', "c\x01"]).message() == (
        'a: Unsupported value: "x": supported values: "a\\"b", "c\\x01"')
