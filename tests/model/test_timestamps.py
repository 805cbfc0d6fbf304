"""Event timestamps: RFC 3339 and numbers of seconds."""

from __future__ import annotations

import pytest

from kaudit.model.timestamps import format_timestamp, parse_timestamp


@pytest.mark.parametrize(("value", "micros"), [
    ("1970-01-01T00:00:00Z", 0),
    ("2026-01-02T03:04:05.123Z", 1767323045123000),
    ("2026-01-02T03:04:05.123456789Z", 1767323045123456),
    ("2026-01-02T04:04:05+01:00", 1767323045000000),
    ("2026-01-02t03:04:05z", 1767323045000000),
    (12, 12_000_000),
    (1.5, 1_500_000),
    (0.000001, 1),
])
def test_parse(value: object, micros: int) -> None:
    assert parse_timestamp(value) == micros


@pytest.mark.parametrize("value", ["yesterday", "2026-01-02", "2026-13-02T00:00:00Z",
                                   "2026-01-02T03:04:05", "12", True, None, float("nan"), []])
def test_invalid(value: object) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(value)


def test_format() -> None:
    assert format_timestamp(1767323045123000) == "2026-01-02T03:04:05.123Z"
    assert format_timestamp(1_500_000) == "1.5s"
