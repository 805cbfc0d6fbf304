"""Replay a stored trace into a new run of the event log (``kaudit replay``).

The run row is written first (status ``running``); events are written in batches as the
replay goes; at the end the run is marked ``complete`` with its summary, or ``failed`` with the
error, so a run that broke midway never looks complete. Meanwhile a thread keeps the run's
heartbeat fresh (:mod:`kaudit.replay.heartbeat`); a run removed under the replay stops it with
:class:`~kaudit.eventlog.runs.RunRemovedError`. Every write is a :func:`transaction`, which a
stop request waits for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine, insert, select, update

from kaudit import __version__
from kaudit.config import SchedulerConfiguration
from kaudit.errors import InputError, Interrupted, UnreplayableEventError
from kaudit.eventlog.runs import RunRemovedError, RunStatus, this_owner
from kaudit.eventlog.sink import EventSink, NullSink, SqlSink
from kaudit.framework.plugin import Plugin
from kaudit.replay.audit_expectations import without_expectations
from kaudit.replay.audit_plan import plan_decisions
from kaudit.replay.engine import Replay
from kaudit.replay.heartbeat import RunHeartbeat
from kaudit.replay.options import ReplayOptions, ReplaySummary
from kaudit.replay.workload import recorded_lifetimes, workload_shapes
from kaudit.scheduler.build import ports_needed, scheduler_factory
from kaudit.scheduler.extender.answers import RecordedAnswers
from kaudit.store.models import Run, Trace
from kaudit.store.traces import TraceSummary, iter_events
from kaudit.store.writes import transaction


def _unique_run_name(engine: Engine, wanted: str | None, trace: TraceSummary) -> str:
    with engine.connect() as connection:
        taken = set(connection.scalars(select(Run.name)))
    if wanted is not None:
        if not wanted.strip() or "/" in wanted or len(wanted) > 200:
            raise InputError(f"run name {wanted!r}: use 1 to 200 characters without '/' "
                             "(run names appear in the dashboard's URLs)")
        if wanted in taken or wanted == "recorded":
            raise InputError(f"a run named {wanted!r} already exists; choose another --name")
        return wanted
    counter = 1
    while f"{trace.name}-{counter}" in taken:
        counter += 1
    return f"{trace.name}-{counter}"


def options_for(config: SchedulerConfiguration, **overrides: Any) -> ReplayOptions:
    return ReplayOptions(
        initial_backoff_us=config.pod_initial_backoff_seconds * 1_000_000,
        max_backoff_us=config.pod_max_backoff_seconds * 1_000_000,
        max_in_unschedulable_us=config.pod_max_in_unschedulable_pods_duration_seconds
        * 1_000_000,
        **overrides)


def _located(exc: BaseException, trace: TraceSummary) -> BaseException:
    """An event the replay could not use, named by the trace's file rather than its index."""
    if not isinstance(exc, UnreplayableEventError) or exc.path is not None:
        return exc
    paths = [entry.get("path") for entry in trace.sources]
    path = paths[exc.source] if 0 <= exc.source < len(paths) else None
    return UnreplayableEventError(exc.source, exc.line, exc.reason, path)


def _failure(exc: BaseException) -> str:
    if isinstance(exc, UnreplayableEventError):
        return str(exc)  # already FILE:LINE: reason
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    if isinstance(exc, Interrupted):
        return f"terminated ({exc})"
    return f"{type(exc).__name__}: {exc}"


def _stop_check(heartbeat: RunHeartbeat, run_name: str,
                check_stop: Callable[[], None] | None) -> Callable[[], None]:
    """What the replay calls between steps: a stop request, or the run removed under it."""

    def check() -> None:
        if check_stop is not None:
            check_stop()
        if heartbeat.removed:
            raise RunRemovedError(run_name)

    return check


def _finish(engine: Engine, run_id: int, run_name: str, **values: Any) -> None:
    """Write the run's final status; the run removed meanwhile is reported, not ignored."""
    with transaction(engine) as connection:
        updated = connection.execute(update(Run).where(Run.id == run_id).values(
            finished_at=datetime.now(UTC), **values)).rowcount
    if updated == 0:
        raise RunRemovedError(run_name)


def replay_trace(engine: Engine, trace: TraceSummary, config: SchedulerConfiguration,
                 registry: dict[str, type[Plugin]], *, name: str | None = None,
                 seed: int = 0, lifetime: str = "recorded", recreate_preempted: bool = True,
                 bind_latency_us: int = 0, api_latency_us: int | None = None,
                 one_try: bool = False, gpu_report: bool = False, tie_break: str = "random",
                 victim_termination_us: int | None = None, cycle_duration_us: int | None = None,
                 sink: EventSink | None = None,
                 labels: dict[str, Any] | None = None,
                 extender_answers: RecordedAnswers | None = None,
                 audit_latency_us: int | None = None, audit_window_us: int = 0,
                 audit_between: tuple[int | None, int | None] = (None, None),
                 progress: Callable[[int], None] | None = None,
                 check_stop: Callable[[], None] | None = None) -> tuple[int, ReplaySummary]:
    """Replay ``trace``; returns the run id and its summary. ``check_stop`` is called between
    steps of the replay and raises to stop it (a signal received meanwhile). ``labels`` are
    stored with the run's options (a sweep's cell names itself there). ``extender_answers``
    answers the extenders' calls instead of the extenders. With ``audit_latency_us`` the run
    is an audit (``kaudit audit``): the recording is followed and each recorded decision
    judged at its moment, that long before its recording event, also in the states the
    scheduler could have seen when its view lagged the recording by up to
    ``audit_window_us``; only those recorded within ``audit_between`` (since, until; None
    is open) are judged."""
    run_name = _unique_run_name(engine, name, trace)
    timing = {key: value for key, value in (("api_latency_us", api_latency_us),
                                             ("victim_termination_us", victim_termination_us),
                                             ("cycle_duration_us", cycle_duration_us))
              if value is not None}
    options = options_for(config, seed=seed, lifetime=lifetime,
                          recreate_preempted=recreate_preempted,
                          bind_latency_us=bind_latency_us, one_try=one_try,
                          gpu_report=gpu_report, tie_break=tie_break,
                          recorded_only=audit_latency_us is not None, **timing)
    with transaction(engine) as connection:
        run_id = connection.execute(insert(Run).values(
            name=run_name, trace_id=trace.id, status=RunStatus.RUNNING, seed=seed,
            lifetime=lifetime,
            config=orjson.dumps(config.to_dict()).decode(), config_source=config.source,
            options=orjson.dumps({**asdict(options),
                                  "featureGates": dict(config.feature_gates),
                                  "kubernetesVersion": config.feature_gates.version.name,
                                  **({"labels": labels} if labels else {}),
                                  **({"audit": {"latencyUs": audit_latency_us,
                                                "windowUs": audit_window_us,
                                                "sinceUs": audit_between[0],
                                                "untilUs": audit_between[1]}}
                                     if audit_latency_us is not None else {}),
                                  **({"extenderAnswers": extender_answers.source}
                                     if extender_answers is not None else {})}).decode(),
            created_at=datetime.now(UTC),
            kaudit_version=__version__,
            kubernetes_version=config.feature_gates.version.name,
            owner_host=this_owner()[0], owner_pid=this_owner()[1],
            heartbeat_at=datetime.now(UTC),
        ).returning(Run.id)).scalar_one()
    heartbeat = RunHeartbeat(engine, run_id)
    heartbeat.start()
    try:
        build = scheduler_factory(
            config, registry, seed=seed, tie_break=tie_break,
            extender_transport=extender_answers.transport if extender_answers else None)
        lifetimes = (recorded_lifetimes(iter_events(engine, trace.id))
                     if lifetime == "relative" else None)
        wanted = gpu_report or "workload" in ports_needed(config, registry)
        workload = workload_shapes(iter_events(engine, trace.id)) if wanted else None
        plan = (plan_decisions(iter_events(engine, trace.id), audit_latency_us,
                               audit_window_us).between(*audit_between)
                if audit_latency_us is not None else None)
        if plan is not None and config.feature_gates.get("NominatedNodeNameForExpectation",
                                                          False):
            plan = without_expectations(plan)
        replay = Replay(build, sink or SqlSink(engine, run_id, name=run_name), options,
                        lifetimes, workload, plan,
                        sources=[entry.get("path") for entry in trace.sources])
        summary = replay.run(iter_events(engine, trace.id), progress,
                             tick=_stop_check(heartbeat, run_name, check_stop))
        if extender_answers is not None:
            summary.extender_answers = extender_answers.missing_summary()
    except RunRemovedError:
        heartbeat.stop()
        raise
    except BaseException as exc:
        heartbeat.stop()
        raised = _located(exc, trace)
        _finish(engine, run_id, run_name, status=RunStatus.FAILED, error=_failure(raised))
        if raised is exc:
            raise
        raise raised from exc
    heartbeat.stop()
    _finish(engine, run_id, run_name, status=RunStatus.COMPLETE,
            summary=orjson.dumps(summary.as_json()).decode())
    if sink is None:
        store_recorded_utilisation(engine, trace, config, registry)
    return run_id, summary


def store_recorded_utilisation(engine: Engine, trace: TraceSummary,
                               config: SchedulerConfiguration,
                               registry: dict[str, type[Plugin]]) -> None:
    """Compute, once per trace, the allocation of the recorded cluster (the trace replayed
    with its own placements, nothing scheduled) for the ``recorded`` pseudo-run."""
    with engine.connect() as connection:
        stored = connection.execute(select(Trace.recorded_utilisation)
                                    .where(Trace.id == trace.id)).scalar_one_or_none()
    if stored is not None:
        return
    replay = Replay(scheduler_factory(config, registry), NullSink(),
                    options_for(config, recorded_only=True))
    summary = replay.run(iter_events(engine, trace.id)).as_json()
    utilisation = {key: summary[key] for key in ("allocation", "imbalance", "fragmentation")}
    with transaction(engine) as connection:
        connection.execute(update(Trace).where(Trace.id == trace.id)
                           .values(recorded_utilisation=orjson.dumps(utilisation).decode()))
