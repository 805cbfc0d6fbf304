"""Quantity parsing against the cases of upstream's ``quantity_test.go``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kaudit.errors import QuantityError
from kaudit.quantity import Quantity, canonical_string, parse_quantity

CASES = json.loads((Path(__file__).parent / "data" / "quantity_cases.json").read_text())


def _exact_nanos(unscaled: str, scale: int) -> int:
    value = int(unscaled)
    return value * 10 ** (scale + 9) if scale >= -9 else value // 10 ** (-scale - 9)


@pytest.mark.parametrize("case", CASES["parse"], ids=lambda c: c["input"])
def test_parse_table(case: dict) -> None:
    expected = _exact_nanos(case["unscaled"], case["scale"])
    for prefix, sign in (("", 1), ("+", 1), ("-", -1)):
        text = prefix + case["input"]
        if prefix and text[1:2] in ("+", "-"):
            continue
        quantity = parse_quantity(text)
        assert quantity.nanos == sign * expected, text
        assert quantity.format == case["format"], text


@pytest.mark.parametrize("case", CASES["invalid"], ids=lambda c: repr(c["input"]))
def test_invalid(case: dict) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(case["input"])


@pytest.mark.parametrize("case", CASES["canonical"], ids=lambda c: c["input"])
def test_canonical_string(case: dict) -> None:
    assert str(parse_quantity(case["input"])) == case["expect"]


@pytest.mark.parametrize("case", CASES["format_from_value"],
                         ids=lambda c: f"{c['unscaled']}e{c['scale']}-{c['format']}")
def test_string_of_value(case: dict) -> None:
    quantity = Quantity.from_scaled(int(case["unscaled"]), case["scale"], case["format"])
    assert canonical_string(quantity) == case["expect"]
    if "negated_expect" in case:
        negated = Quantity.from_scaled(-int(case["unscaled"]), case["scale"], case["format"])
        assert canonical_string(negated) == case["negated_expect"]


@pytest.mark.parametrize("case", CASES["milli_value"], ids=lambda c: c["input"])
def test_milli_value(case: dict) -> None:
    assert parse_quantity(case["input"]).milli_value() == int(case["milli"])


@pytest.mark.parametrize("case", CASES["value"], ids=lambda c: c["input"])
def test_value(case: dict) -> None:
    assert parse_quantity(case["input"]).value() == int(case["value"])


def _scaled_id(case: dict) -> str:
    source = case.get("input") or "{unscaled}e{scale}".format(**case["quantity"])
    return f"{source}@{case['scale']}"


@pytest.mark.parametrize("case", CASES["scaled_value"], ids=_scaled_id)
def test_scaled_value(case: dict) -> None:
    if "input" in case:
        quantity = parse_quantity(case["input"])
    else:
        built = case["quantity"]
        quantity = Quantity.from_scaled(int(built["unscaled"]), built["scale"], built["format"])
    assert quantity.scaled_value(case["scale"]) == int(case["result"])


@pytest.mark.parametrize(("text", "milli", "value"), [
    ("100m", 100, 1), ("1.5", 1500, 2), ("0.1m", 1, 1), ("1Gi", 1073741824000, 1073741824),
    ("-1500m", -1500, -2), ("1e-10", 1, 1),
])
def test_rounding_away_from_zero(text: str, milli: int, value: int) -> None:
    quantity = parse_quantity(text)
    assert (quantity.milli_value(), quantity.value()) == (milli, value)


# Within the suffix tables: v1.34 prints exponents beyond them (1e21) without a suffix.
@given(st.integers(min_value=-(10**6), max_value=10**6),
       st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3", "e-3"]))
def test_canonical_round_trip(number: int, suffix: str) -> None:
    quantity = parse_quantity(f"{number}{suffix}")
    assert parse_quantity(canonical_string(quantity)).nanos == quantity.nanos
