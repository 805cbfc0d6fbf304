"""Go duration text (``time.ParseDuration`` / ``Duration.String``) for metav1.Duration args."""

from __future__ import annotations

import pytest

from kaudit.config.duration import format_duration, parse_duration


@pytest.mark.parametrize(("text", "ns", "canonical"), [
    ("0", 0, "0s"),
    ("10s", 10_000_000_000, "10s"),
    ("90s", 90_000_000_000, "1m30s"),
    ("1h", 3_600_000_000_000, "1h0m0s"),
    ("1.5s", 1_500_000_000, "1.5s"),
    ("500ms", 500_000_000, "500ms"),
    ("2us", 2_000, "2µs"),
    ("-1m", -60_000_000_000, "-1m0s"),
    ("1h2m3.25s", 3_723_250_000_000, "1h2m3.25s"),
])
def test_parse_and_format(text: str, ns: int, canonical: str) -> None:
    assert parse_duration(text) == ns
    assert format_duration(ns) == canonical


@pytest.mark.parametrize("text", ["", "5", "s", "1x", "1.s.", "--1s"])
def test_invalid_durations(text: str) -> None:
    with pytest.raises(ValueError, match="time: "):
        parse_duration(text)
