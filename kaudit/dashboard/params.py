"""Query-string parameters, checked: a bad value is an :class:`InputError` (400) naming the
parameter and what is wrong."""

from __future__ import annotations

from flask import request

from kaudit.dashboard.database import get_engine
from kaudit.errors import InputError
from kaudit.eventlog.runs import RunStatus
from kaudit.queries.instants import resolve_seconds
from kaudit.queries.runs import RunSummary, get_run
from kaudit.queries.timeline import Span, run_span


def text(name: str, *, required: bool = False, max_length: int = 400) -> str | None:
    value = request.args.get(name)
    if value is None or value == "":
        if required:
            raise InputError(f"{name}: required")
        return None
    if len(value) > max_length:
        raise InputError(f"{name}: longer than {max_length} characters")
    return value


def integer(name: str, default: int, *, low: int = 0, high: int = 1_000_000_000) -> int:
    value = request.args.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise InputError(f"{name}: {value[:40]!r} is not an integer") from None
    if not low <= number <= high:
        raise InputError(f"{name}: must be between {low} and {high}")
    return number


def moment(name: str, span: Span, default: float | None = None) -> float | None:
    """Seconds since the run's start for the time parameter ``name``: a number of seconds or an
    RFC 3339 time, refused (400) outside the run, as every CLI time option
    (:mod:`kaudit.queries.instants`)."""
    value = request.args.get(name)
    if value is None or value == "":
        return default
    if len(value) > 64:
        raise InputError(f"{name}: longer than 64 characters")
    return resolve_seconds(value, span, name)


def run_with_span(ref: str) -> tuple[RunSummary, Span]:
    """The run named ``ref`` (404 when unknown) and its time span."""
    engine = get_engine()
    run = get_run(engine, ref)
    return run, run_span(engine, run.id)


def is_final(run: RunSummary) -> bool:
    """A complete (or failed) run no longer changes: its answers can be cached. An abandoned
    run is not final: a replay on another host whose heartbeat was late may still write."""
    return run.status in (RunStatus.COMPLETE, RunStatus.FAILED)
