"""Auditing a stored trace: its recorded decisions judged by kaudit's scheduler, stored as a run.

``kaudit audit`` and the tests call this one function: the configuration is resolved by the one
rule of :mod:`kaudit.services.replay` (``--config``, else the trace's stored configuration,
else kube-scheduler's defaults), the trace is replayed following its recording
(:mod:`kaudit.replay.audit`), and the stored run's report is read back through
:mod:`kaudit.queries.audit`, so what the command prints is what the dashboard shows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from kaudit.queries.audit import audit_report
from kaudit.services.replay import ResolvedConfig, replay_stored_trace
from kaudit.store.traces import TraceSummary

#: How far the scheduler's view may lag the recording, by default (``--window``).
WINDOW_US = 10_000


def audit_stored_trace(engine: Engine, trace: TraceSummary, resolved: ResolvedConfig, *,
                       latency_us: int = 0, window_us: int = WINDOW_US,
                       since_us: int | None = None, until_us: int | None = None,
                       **options: Any) -> dict[str, Any]:
    """Audit ``trace`` under ``resolved``, judging the decisions recorded from ``since_us``
    to ``until_us`` (None: the trace's start, its end); ``options`` are
    :func:`kaudit.replay.run.replay_trace`'s (name, seed, progress, check_stop, labels).
    Returns the run's audit report."""
    result = replay_stored_trace(engine, trace, resolved, audit_latency_us=latency_us,
                                 audit_window_us=window_us,
                                 audit_between=(since_us, until_us), **options)
    return audit_report(engine, result.run.name)
