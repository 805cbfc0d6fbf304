"""Go ``time.Duration`` text, as ``metav1.Duration`` fields carry it in configuration.

Mirrors ``time.ParseDuration`` and ``Duration.String`` from Go's ``time/format.go``:
``"1m30s"``, ``"500ms"``, ``"0"``; values are nanoseconds.
"""

from __future__ import annotations

import re

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
          "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_PART = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]+)")
_MAX = 2**63 - 1


def parse_duration(text: str) -> int:
    """Nanoseconds in a Go duration string, or :class:`ValueError` with Go's message."""
    original, s = text, text
    sign = 1
    if s[:1] in "+-" and s:
        sign, s = (-1 if s[0] == "-" else 1), s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f'time: invalid duration "{original}"')
    total = 0
    pos = 0
    while pos < len(s):
        match = _PART.match(s, pos)
        if match is None or (not match.group(1) and not match.group(2)):
            raise ValueError(f'time: invalid duration "{original}"')
        whole, frac, unit = match.groups()
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{original}"')
        scale = _UNITS[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
        pos = match.end()
    if total > _MAX:
        raise ValueError(f'time: invalid duration "{original}"')
    return sign * total


def _fraction(value: int, digits: int) -> tuple[str, int]:
    """Go's fmtFrac: the fractional digits of ``value`` / 10**digits, trailing zeros off."""
    whole, frac = divmod(value, 10**digits)
    text = str(frac).rjust(digits, "0").rstrip("0")
    return ("." + text if text else ""), whole


def format_duration(ns: int) -> str:
    """Go's ``Duration.String``: ``"0s"``, ``"1.5s"``, ``"1m30s"``, ``"1h0m0s"``."""
    if ns == 0:
        return "0s"
    sign, u = ("-" if ns < 0 else ""), abs(ns)
    if u < 1_000_000_000:
        for digits, unit in ((0, "ns"), (3, "µs"), (6, "ms")):
            if u < 10 ** (digits + 3):
                frac, whole = _fraction(u, digits) if digits else ("", u)
                return f"{sign}{whole}{frac}{unit}"
    frac, seconds = _fraction(u, 9)
    text = f"{seconds % 60}{frac}s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text
