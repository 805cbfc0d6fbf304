"""Event timestamps: RFC 3339 strings or numbers of seconds, as integer microseconds."""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime, timedelta

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Seconds of 9999-12-31T23:59:59Z: a timestamp beyond it (either way) is not a time.
MAX_SECONDS = 253_402_300_799


def _in_range(seconds: float, value: object) -> None:
    if abs(seconds) <= MAX_SECONDS:
        return
    hint = ""
    if abs(seconds) <= MAX_SECONDS * 1_000_000:
        hint = " (milliseconds or microseconds? ts is in seconds)"
    raise ValueError(f"timestamp {value!r} is out of range: more than 8,000 years from "
                     f"1970{hint}")


def parse_timestamp(value: object) -> int:
    """Microseconds for an RFC 3339 string or a number of seconds; raises ``ValueError``.

    Fractions finer than a microsecond are truncated, as Kubernetes' ``MicroTime`` does.
    """
    if isinstance(value, bool):
        raise ValueError(f"timestamp must be an RFC 3339 string or seconds, not {value!r}")
    if isinstance(value, int):
        _in_range(value, value)
        return value * 1_000_000
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"timestamp must be finite, not {value!r}")
        _in_range(value, value)
        return round(value * 1_000_000)
    if isinstance(value, str):
        match = _RFC3339.fullmatch(value)
        if match is None:
            raise ValueError(f"timestamp {value!r} is not RFC 3339 "
                             "(e.g. 2026-01-02T03:04:05.123Z) nor a number of seconds")
        year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
        fraction = match.group(7) or ""
        try:
            moment = datetime(year, month, day, hour, minute, min(second, 59), tzinfo=UTC)
        except ValueError as exc:
            raise ValueError(f"timestamp {value!r}: {exc}") from None
        if match.group(9):
            if int(match.group(10)) > 23 or int(match.group(11)) > 59:
                raise ValueError(f"timestamp {value!r}: time-zone offset "
                                 f"{match.group(9)}{match.group(10)}:{match.group(11)} is "
                                 "beyond ±23:59")
            offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
            moment -= offset if match.group(9) == "+" else -offset
        delta = moment - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000
        micros += int((fraction + "000000")[:6])
        if second == 60:  # a leap second, as Go's time.Parse accepts
            micros += 1_000_000
        return micros
    raise ValueError(f"timestamp must be an RFC 3339 string or seconds, "
                     f"not {type(value).__name__}")


def format_timestamp(ts_us: int) -> str:
    """RFC 3339 text (UTC) for epoch microseconds; small values read as relative seconds."""
    if abs(ts_us) < 10 * 365 * 86_400 * 1_000_000:  # within ten years of zero: relative time
        return f"{ts_us / 1_000_000:g}s"
    return format_rfc3339(ts_us)


def format_rfc3339(ts_us: int) -> str:
    """RFC 3339 text (UTC) for microseconds since the Unix epoch, whatever their size."""
    moment = _EPOCH + timedelta(microseconds=ts_us)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + "Z"


@functools.lru_cache(maxsize=65536)
def _cached_start_time(value: str) -> int | None:
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


def start_time_us(value: str | None) -> int | None:
    """A pod's ``status.startTime`` in microseconds; None when absent or not a time (the
    scheduler then treats the pod as starting now)."""
    return _cached_start_time(value) if value else None
