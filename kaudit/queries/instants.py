"""One model of time for every time argument: CLI options, API parameters and pages.

A bare number is seconds since the run's first record (the trace's start), as the dashboard's
scrubber counts; anything else is an RFC 3339 time, or ``<seconds>s`` on the clock of a trace
recorded in relative seconds (how kaudit prints such times). Either way the instant must fall within
the run: a moment outside it is refused with the run's span in the message, never answered
with an empty result.
"""

from __future__ import annotations

import math
import re

from kaudit.errors import InputError
from kaudit.model.timestamps import format_timestamp, parse_timestamp
from kaudit.queries.timeline import Span

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# How kaudit prints the times of a trace recorded with relative seconds (``format_timestamp``).
_TRACE_CLOCK = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)s")
_NON_FINITE = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}


def describe_span(span: Span) -> str:
    return (f"{format_timestamp(span.start_us)} to {format_timestamp(span.end_us)}, "
            f"that is 0 to {span.seconds:g} s")


def resolve_instant(value: str | float | None, span: Span, name: str,
                    what: str = "run") -> int | None:
    """The instant (microseconds) ``value`` names in the ``what`` (run or trace) of ``span``;
    None for None."""
    if value is None or value == "":
        return None
    if isinstance(value, float | int) or _NUMBER.fullmatch(value.strip()) \
            or value.strip().lower() in _NON_FINITE:
        seconds = float(value)
        if not math.isfinite(seconds):
            raise InputError(f"{name}: {value!r} is not a finite number of seconds")
        if not 0 <= seconds <= span.seconds:
            raise InputError(f"{name}: {value} s is outside the {what} "
                             f"({describe_span(span)}); a number counts seconds from the "
                             f"{what}'s start")
        return span.at(seconds)
    clock = _TRACE_CLOCK.fullmatch(value.strip())
    try:
        instant = (round(float(clock.group(1)) * 1_000_000) if clock
                   else parse_timestamp(value.strip()))
    except ValueError:
        raise InputError(f"{name}: {value[:40]!r} is not a number of seconds from the {what}'s "
                         "start nor an RFC 3339 time (e.g. 2026-01-02T03:04:05Z)") from None
    if not span.start_us <= instant <= span.end_us:
        raise InputError(f"{name}: {value} is outside the {what} ({describe_span(span)})")
    return instant


def resolve_seconds(value: str | float | None, span: Span, name: str) -> float | None:
    """Like :func:`resolve_instant`, as seconds since the run's start."""
    instant = resolve_instant(value, span, name)
    return span.t(instant)
