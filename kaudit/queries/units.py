"""Resource amounts, ratios and durations as people read them.

Every view (CLI text, JSON ``…Text`` fields, the dashboard) formats through these, so a figure
reads the same wherever it appears. Raw numbers stay in the JSON beside the text (millicores,
bytes, ratios from 0 to 1). Where a decision is explained (a node lacking a resource, what a
pod requests), amounts are exact, in Kubernetes' canonical quantity form (:func:`quantity`:
``500m`` against ``400m``, ``2Gi``), so rounding never makes a rejection read as a fit; the
rounded forms (:func:`cores`, :func:`memory`) are for aggregates. A span of time is always
:func:`duration`; a moment since the run's start is :func:`seconds`, and with its timestamp
(where the trace has wall-clock times) :func:`moment`.
"""

from __future__ import annotations

from collections.abc import Iterable

from kaudit.model.timestamps import format_timestamp
from kaudit.quantity import BINARY_SI, DECIMAL_SI, Quantity, canonical_string

GIB = 2**30
MIB = 2**20


def _trim(value: float, digits: int) -> str:
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def cores(milli: int | float) -> str:
    """``2 cores``, ``1.4 cores``, ``0.25 cores``, ``1 core`` (millicores in)."""
    value = milli / 1000
    text = _trim(value, 2 if abs(value) < 10 else 1)
    return f"{text} core" if text == "1" else f"{text} cores"


def memory(amount: int | float) -> str:
    """Bytes as ``15 GiB``/``1.5 GiB``, below 1 GiB as ``200 MiB``."""
    if abs(amount) >= GIB:
        return f"{_trim(amount / GIB, 2 if abs(amount) < 10 * GIB else 1)} GiB"
    if abs(amount) >= MIB or amount == 0:
        return f"{_trim(amount / MIB, 1)} MiB"
    return f"{int(amount)} B"


def _is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def quantity(resource: str, value: int) -> str:
    """One resource's exact amount as Kubernetes writes it: millicores in, ``500m`` or ``2``
    out for ``cpu``; bytes in, ``2Gi``, ``1536Mi`` or ``1G`` out for memory and storage
    (binary suffixes when the amount is a whole number of KiB); counts as they are."""
    if resource == "cpu":
        return canonical_string(Quantity.from_scaled(int(value), -3, DECIMAL_SI))
    if _is_bytes(resource):
        fmt = BINARY_SI if int(value) % 1024 == 0 else DECIMAL_SI
        return canonical_string(Quantity.from_scaled(int(value), 0, fmt))
    return str(int(value))


def quantity_range(resource: str, values: Iterable[int]) -> str:
    """``60m–470m``, or one exact amount when all are equal."""
    ordered = sorted(values)
    low, high = quantity(resource, ordered[0]), quantity(resource, ordered[-1])
    return low if low == high else f"{low}–{high}"


def amount(resource: str, value: int | float) -> str:
    """One resource's amount in the unit people use for it."""
    if resource == "cpu":
        return cores(value)
    if _is_bytes(resource):
        return memory(value)
    return _trim(float(value), 2)


def percent(ratio: float | None, digits: int = 1) -> str:
    """A ratio (0–1) as ``66.7%``; ``–`` when unknown."""
    return "–" if ratio is None else f"{ratio * 100:.{digits}f}%"


def seconds(value: float | None) -> str:
    """Seconds since the run's start as ``241 s`` / ``12.5 s``."""
    return "–" if value is None else f"{_trim(value, 2)} s"


def moment(t: float | None, ts_us: int | None) -> str:
    """A moment of the run: ``t = 241 s`` (seconds since the run's start), followed by its
    timestamp only when the trace has wall-clock times (``t = 241 s
    (2026-01-05T09:04:01Z)``); a trace of relative times has none to add."""
    if t is None or ts_us is None:
        return "–"
    stamp = format_timestamp(ts_us)
    return f"t = {seconds(t)}" + (f" ({stamp})" if stamp.endswith("Z") else "")


def duration(value: float) -> str:
    """A span of time as ``9m40s``, ``2h05m``, ``45s``, ``0.3s``."""
    if value < 60:
        return f"{_trim(value, 1)}s"
    whole = round(value)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"
