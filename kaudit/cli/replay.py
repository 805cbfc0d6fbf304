"""``kaudit replay``, ``kaudit runs``, ``kaudit explain`` and ``kaudit events``."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import click
import orjson

from kaudit.cli.explain_text import print_story
from kaudit.cli.options import (
    SEED,
    ListingGroup,
    db_option,
    echo_config_warnings,
    echo_json,
    echo_run_warnings,
    human_duration,
    interactive,
    json_option,
    kubernetes_version_option,
    remove_and_report,
    remove_option,
    stderr_stream,
    table,
)
from kaudit.cli.whatif import feature_gates_option, plugin_option
from kaudit.errors import InputError, Interrupted
from kaudit.queries.baseline import write_summary
from kaudit.queries.eventlog import check_kind
from kaudit.queries.explain import explain_pod
from kaudit.queries.extender_calls import recorded_extender_calls
from kaudit.queries.instants import resolve_instant
from kaudit.queries.runs import RunSummary, get_run, iter_run_events, list_runs, remove_runs
from kaudit.queries.summary_rows import run_counts
from kaudit.queries.timeline import run_span
from kaudit.scheduler.extender.answers import RecordedAnswers
from kaudit.scheduler.schedule import TIE_BREAKS
from kaudit.services.replay import (
    ConfigChoice,
    ResolvedConfig,
    replay_stored_trace,
    resolve_config,
)
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.store.writes import stop_now


def echo_resolved_config(resolved: ResolvedConfig, notices: bool = True) -> None:
    """On stderr: which configuration the replay uses when the user did not name it (the
    trace's stored one), and what loading it noticed but accepted."""
    if notices:
        for notice in resolved.notices:
            click.echo(notice, err=True)
    echo_config_warnings(resolved.config)


#: How long a stop request waits for the replay's next safe point before it stops the process
#: wherever it is (outside a database write): one scheduling attempt can run for minutes.
STOP_GRACE_SECONDS = 5.0


def _stop_exception(name: str) -> BaseException:
    return KeyboardInterrupt() if name == "SIGINT" else Interrupted(name)


@contextmanager
def terminate_as_interrupt(
        grace_seconds: float = STOP_GRACE_SECONDS) -> Iterator[Callable[[], None]]:
    """SIGTERM and Ctrl-C stop the replay and mark the run failed, not left running.

    The signal records the request; the replay acts on it at its next safe point (the check
    this yields, which the replay calls between steps). When no safe point comes within
    ``grace_seconds`` (a long scheduling attempt), or on a second signal, the stop is raised
    wherever the replay is, except inside a database write (:mod:`kaudit.store.writes`), which
    it lets finish first: an exception there could leave an SQLite write lock behind and block
    the failed status."""
    requested: list[str] = []
    honoured: list[bool] = []

    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def at_once(name: str) -> None:
        honoured.append(True)
        disarm()
        stop_now(_stop_exception(name))

    def request(signum: int, frame: Any) -> None:
        name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
        if requested:
            at_once(name)
            return
        requested.append(name)
        signal.setitimer(signal.ITIMER_REAL, grace_seconds)

    def overdue(signum: int, frame: Any) -> None:
        if requested and not honoured:
            at_once(requested[0])

    def check() -> None:
        if not requested:
            return
        honoured.append(True)
        disarm()
        raise _stop_exception(requested[0])

    handlers = {signal.SIGTERM: request, signal.SIGINT: request, signal.SIGALRM: overdue}
    try:
        previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    except ValueError:  # not the main thread (an embedding application): leave it be
        yield lambda: None
        return
    try:
        yield check
        check()  # a request that came after the replay's last check
    finally:
        disarm()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@click.command()
@click.argument("trace")
@click.option("--config", "config_path", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A KubeSchedulerConfiguration [default: the one stored with the trace, "
                   "else kube-scheduler's defaults].")
@click.option("--defaults", "use_defaults", is_flag=True,
              help="Use kube-scheduler's defaults even when the trace carries a "
                   "configuration (a simulator export's).")
@feature_gates_option
@plugin_option
@kubernetes_version_option()
@click.option("--name", help="Name of the run [default: TRACE-N].")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of tie-breaks and preemption offsets: same seed, same run.")
@click.option("--lifetime", type=click.Choice(["recorded", "relative"]), default="recorded",
              show_default=True,
              help="recorded: pods are deleted when the trace deletes them; relative: each "
                   "pod keeps its recorded run time from the moment kaudit binds it.")
@click.option("--recreate-preempted/--no-recreate-preempted", default=True, show_default=True,
              help="A preempted pod owned by a ReplicaSet, Job or StatefulSet comes back as "
                   "a new pending pod, as its controller would create one.")
@click.option("--bind-latency", type=float, default=0.0, show_default=True, metavar="SECONDS",
              help="Virtual time a binding takes; the pod's resources are held (assumed) "
                   "meanwhile.")
@click.option("--api-latency", type=float, default=0.02, show_default=True, metavar="SECONDS",
              help="Virtual time one API call of the scheduler takes (preemption's status "
                   "patches and deletions, issued in the background as upstream's "
                   "asynchronous preemption does).")
@click.option("--victim-termination", type=float, default=1.0, show_default=True,
              metavar="SECONDS",
              help="How long a preempted pod takes to terminate once deleted; the scheduler "
                   "counts it on its node until it is gone.")
@click.option("--cycle-duration", type=float, default=0.0, show_default=True,
              metavar="SECONDS",
              help="Virtual time one scheduling cycle takes: the next pod is tried when it "
                   "ends, after the API calls, trace events and timers due meanwhile (0: "
                   "every pod in activeQ is tried at one instant).")
@click.option("--one-try", is_flag=True,
              help="Try each pod once: a pod that fails stays pending and is never retried "
                   "(the FGD paper's protocol, with --gpu-report).")
@click.option("--gpu-report", is_flag=True,
              help="Sample GPU allocation and fragmentation against arrived workload after "
                   "every pod tried, as the FGD paper reports them (`kaudit gpu-report RUN`).")
@click.option("--tie-break", type=click.Choice(TIE_BREAKS), default="random", show_default=True,
              help="Among nodes tied at the highest score: random (kube-scheduler), name (the "
                   "lowest name) or shuffled-name (the first in an order of names drawn with "
                   "--seed; the FGD paper's simulator).")
@click.option("--summary-out", type=click.Path(path_type=Path, dir_okay=False),
              metavar="FILE", help="Also write a self-contained summary of the run (per-pod "
                                   "placements and aggregates), a baseline for `kaudit check`.")
@click.option("--extender-answers", metavar="RUN",
              help="Answer the scheduler extenders' calls with what they answered the same "
                   "questions in RUN, instead of calling them (a deterministic replay without "
                   "the extender services); a question RUN never asked fails as a call would, "
                   "and is counted and reported.")
@db_option
@json_option
def replay(trace: str, config_path: Path | None, use_defaults: bool,
           feature_gates: str | None,
           plugins: tuple[str, ...], kubernetes_version: str | None, name: str | None,
           seed: int, lifetime: str,
           recreate_preempted: bool, bind_latency: float, api_latency: float,
           victim_termination: float, cycle_duration: float, one_try: bool,
           gpu_report: bool, tie_break: str,
           summary_out: Path | None, extender_answers: str | None,
           db: str | None, as_json: bool) -> None:
    """Replay a stored TRACE through the scheduler and log every decision.

    The scheduler's configuration is --config, else the one stored with the trace (from a
    kube-scheduler-simulator export), else kube-scheduler's defaults; the scheduler is that of
    the Kubernetes release --kubernetes-version names, else the one the trace was recorded
    from when kaudit mirrors it (`kaudit versions` lists them).
    """
    for flag, value in (("--bind-latency", bind_latency), ("--api-latency", api_latency),
                        ("--victim-termination", victim_termination),
                        ("--cycle-duration", cycle_duration)):
        if not 0 <= value <= 3600:
            raise InputError(f"{flag} must be between 0 and 3600 seconds, not {value}")
    if use_defaults and config_path is not None:
        raise click.UsageError("--defaults and --config exclude each other")
    choice = ConfigChoice(file=config_path, defaults=use_defaults,
                          feature_gates=feature_gates, plugins=plugins,
                          kubernetes_version=kubernetes_version)
    engine = open_database(db)
    try:
        summary_trace = get_trace(engine, trace)
        resolved = resolve_config(summary_trace, choice)
        echo_resolved_config(resolved, notices=not as_json)
        config = resolved.config
        answers = None
        if extender_answers is not None:
            if not config.extenders:
                raise InputError(f"--extender-answers {extender_answers}: the scheduler "
                                 f"configuration ({config.source or 'defaults'}) has no "
                                 "extenders to answer for")
            source, calls = recorded_extender_calls(engine, extender_answers)
            if not calls:
                raise InputError(f"--extender-answers {extender_answers}: run '{source}' "
                                 "recorded no extender calls")
            answers = RecordedAnswers(calls, f"run '{source}'")
        bar: AbstractContextManager[Any] = (
            click.progressbar(length=summary_trace.events, label="replaying",
                              file=stderr_stream())
            if interactive() and not as_json else nullcontext())
        with bar as progress, terminate_as_interrupt() as check_stop:
            result = replay_stored_trace(
                engine, summary_trace, resolved, name=name, seed=seed,
                lifetime=lifetime, recreate_preempted=recreate_preempted,
                bind_latency_us=round(bind_latency * 1_000_000),
                api_latency_us=round(api_latency * 1_000_000),
                victim_termination_us=round(victim_termination * 1_000_000),
                cycle_duration_us=round(cycle_duration * 1_000_000),
                one_try=one_try, gpu_report=gpu_report, tie_break=tie_break,
                extender_answers=answers,
                progress=progress.update if progress is not None else None,
                check_stop=check_stop)
        run, summary = result.run, result.summary
        echo_run_warnings(summary.warnings)
        if summary_out is not None:
            write_summary(engine, run.name, summary_out)
    finally:
        engine.dispose()
    if as_json:
        echo_json(run.as_json())
        return
    s = summary.as_json()
    held_back = s.get("podsHeldBack") or 0
    click.echo(f"run '{run.name}' of trace '{summary_trace.name}' (Kubernetes "
               f"{run.kubernetes_version}): {s['podsScheduled']} pods "
               f"scheduled, {s['podsPendingAtEnd']} pending at the end ("
               + (f"{held_back} of them held back by PreEnqueue, never tried; "
                  if held_back else "")
               + f"never scheduled: {s['podsNeverScheduled']}, counting those deleted while "
               f"pending), {s['podsPreempted']} preempted, {s['attempts']} attempts")
    click.echo(f"  virtual time {human_duration(s['virtualSpanSeconds'])} replayed in "
               f"{s['wallSeconds']:.2f}s ({s['podsPerSecond'] or 0:,.0f} pods/s)")
    allocation = s.get("allocation") or {}
    if allocation:
        click.echo("  allocation (mean / peak): " + ", ".join(
            f"{name} {100 * share['mean']:.1f}% / {100 * share['peak']:.1f}%"
            for name, share in allocation.items()))
    sharing = s.get("gpuSharing")
    if sharing:
        unallocated = (sharing.get("curves") or {}).get("unallocated") or [None] * 131
        at = ", ".join(f"{'-' if unallocated[p] is None else f'{unallocated[p]:.2f}%'} at {p}%"
                       for p in (100, 130))
        click.echo(f"  GPU: {sharing['gpus']:,} GPUs, unallocated {at} arrived workload "
                   f"(kaudit gpu-report {run.name})")
    extender_calls: dict[str, int] = s.get("extenderCalls") or {}
    if extender_calls:
        click.echo("  extender calls: " + ", ".join(f"{n:,} {step}" for step, n in
                                                     extender_calls.items())
                   + f" ({s['extenderErrors']:,} failed)")
    recorded = s.get("extenderAnswers")
    if recorded and recorded["missing"]:
        click.echo(f"  warning: {recorded['missing']:,} extender call(s) had no recorded "
                   f"answer in {recorded['source']} and failed: " + ", ".join(
                       f"{n:,} × {call}" for call, n in recorded["missingByCall"].items()),
                   err=True)
    click.echo(f"  explore: kaudit explain {run.name} POD | kaudit events {run.name}")


@click.group(cls=ListingGroup, invoke_without_command=True)
@db_option
@json_option
@click.pass_context
def runs(ctx: click.Context, db: str | None, as_json: bool) -> None:
    """List replay runs with their summaries and Kubernetes release (`kaudit runs RUN` shows
    one, `kaudit runs rm RUN...` removes runs, `kaudit runs summary RUN FILE` writes one as a
    `kaudit check` baseline).

    A run whose replay stopped without finishing it (killed, its machine lost) shows as
    abandoned.
    """
    if ctx.invoked_subcommand is not None:
        return
    shown: str | None = ctx.meta.get("listing_argument")
    engine = open_database(db)
    try:
        if shown is not None:
            _show_run(get_run(engine, shown), as_json)
            return
        found = list_runs(engine)
    finally:
        engine.dispose()
    if as_json:
        echo_json([r.as_json() for r in found])
        return
    if not found:
        click.echo("no runs yet: `kaudit replay TRACE` makes one")
        return
    rows = []
    for r in found:
        counts = run_counts(r.summary)
        rows.append((r.id, r.name, r.trace, r.status, r.seed, r.kubernetes_version or "?",
                     *(counts[k] for k in ("scheduled", "pendingAtEnd", "neverScheduled",
                                           "preempted", "attempts")),
                     Path(r.config_source).name if r.config_source else "(defaults)"))
    click.echo(table(rows, ["ID", "NAME", "TRACE", "STATUS", "SEED", "KUBERNETES",
                            "SCHEDULED", "PENDING AT END", "NEVER SCHEDULED", "PREEMPTED",
                            "ATTEMPTS", "CONFIG"]))


def _show_run(run: RunSummary, as_json: bool) -> None:
    """One run in detail: its trace, release, configuration, status and counts."""
    if as_json:
        echo_json(run.as_json())
        return
    click.echo(f"run '{run.name}' (id {run.id}) of trace '{run.trace}', created "
               f"{run.created_at}: {run.status}")
    click.echo(f"  Kubernetes: {run.kubernetes_version or 'unknown'}")
    click.echo(f"  configuration: {run.config_source or 'kube-scheduler defaults'}")
    click.echo(f"  seed {run.seed}, lifetime {run.lifetime}")
    counts = run_counts(run.summary)
    click.echo("  " + ", ".join(f"{label} {'-' if counts[key] is None else counts[key]}"
                                for key, label in (
        ("scheduled", "scheduled"), ("pendingAtEnd", "pending at the end"),
        ("neverScheduled", "never scheduled"), ("preempted", "preempted"),
        ("attempts", "attempts"))))
    if run.error:
        click.echo(f"  error: {run.error}")
    for warning in run.warnings:
        click.echo(f"  warning: {warning}")


@runs.command("rm")
@click.argument("names", nargs=-1, required=True, metavar="RUN...")
@remove_option("runs")
@db_option
@json_option
def remove(names: tuple[str, ...], force: bool, db: str | None, as_json: bool) -> None:
    """Remove RUNs and every row of theirs (event log, timeline), in one transaction."""
    remove_and_report(remove_runs, names, force, db, as_json, "run(s)")


@runs.command("summary")
@click.argument("run")
@click.argument("path", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False))
@db_option
def summary_command(run: str, path: Path, db: str | None) -> None:
    """Write RUN's self-contained summary to FILE, a baseline for `kaudit check` (the same
    file as `kaudit replay --summary-out`; any run, a sweep's cell runs included)."""
    engine = open_database(db)
    try:
        found = get_run(engine, run)
        write_summary(engine, found.name, path)
    finally:
        engine.dispose()
    click.echo(f"summary of run '{found.name}' written to {path}")


@click.command()
@click.argument("run")
@click.argument("pod")
@click.option("--attempt", "attempt_number", type=int, metavar="N",
              help="Show attempt N (numbered from 1, as explain lists them) in full instead "
                   "of the decisive one.")
@click.option("--all-nodes", is_flag=True,
              help="List every rejected node instead of grouping them by cause.")
@db_option
@json_option
def explain(run: str, pod: str, attempt_number: int | None, all_nodes: bool, db: str | None,
            as_json: bool) -> None:
    """Why POD (NAMESPACE/NAME, or NAME when unique) is where it is in RUN: the verdict, the
    decisive attempt with its inputs and per-node causes, then the whole story."""
    engine = open_database(db)
    try:
        story = explain_pod(engine, run, pod, shown_attempt=attempt_number)
    finally:
        engine.dispose()
    if attempt_number is not None and not 1 <= attempt_number <= len(story["attempts"]):
        count = len(story["attempts"])
        raise InputError(f"--attempt: attempts are numbered from 1; {story['pod']} has "
                         f"{count} attempt(s) in run {story['run']}"
                         + (f" (1 to {count})" if count else ""))
    if as_json:
        echo_json(story)
        return
    print_story(story, attempt_number, all_nodes)


@click.command()
@click.argument("run")
@click.option("--pod", help="Only this pod (NAMESPACE/NAME).")
@click.option("--node", help="Only this node.")
@click.option("--kind", help="Only this kind of record (attempt, queue, bind, preempt, ...).")
@click.option("--since", metavar="TIME",
              help="From this time: seconds from the run's start, or RFC 3339.")
@click.option("--until", metavar="TIME",
              help="Up to this time: seconds from the run's start, or RFC 3339.")
@db_option
def events(run: str, pod: str | None, node: str | None, kind: str | None, since: str | None,
           until: str | None, db: str | None) -> None:
    """Stream RUN's event log as JSON Lines."""
    check_kind(kind, "--kind")
    engine = open_database(db)
    try:
        found = get_run(engine, run)
        span = run_span(engine, found.id)
        since_us = resolve_instant(since, span, "--since")
        until_us = resolve_instant(until, span, "--until")
        if since_us is not None and until_us is not None and since_us > until_us:
            raise InputError("--since must not be after --until")
        out = sys.stdout
        for record in iter_run_events(engine, found.id, pod=pod, node=node, kind=kind,
                                      since_us=since_us, until_us=until_us):
            out.write(orjson.dumps(record).decode() + "\n")
    finally:
        engine.dispose()
