"""Resource amounts and ratios as people read them: cores, GiB, percent.

Every view (CLI text, JSON ``…Text`` fields, the dashboard) formats through these, so a figure
reads the same wherever it appears. Raw numbers stay in the JSON beside the text (millicores,
bytes, ratios from 0 to 1).
"""

from __future__ import annotations

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


def amount(resource: str, value: int | float) -> str:
    """One resource's amount in the unit people use for it."""
    if resource == "cpu":
        return cores(value)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return memory(value)
    return _trim(float(value), 2)


def percent(ratio: float | None, digits: int = 1) -> str:
    """A ratio (0–1) as ``66.7%``; ``–`` when unknown."""
    return "–" if ratio is None else f"{ratio * 100:.{digits}f}%"


def seconds(value: float | None) -> str:
    """Seconds since the run's start as ``241 s`` / ``12.5 s``."""
    return "–" if value is None else f"{_trim(value, 2)} s"


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
