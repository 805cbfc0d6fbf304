"""``kaudit ingest``: store trace files in the event log."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from kaudit.cli.options import (
    db_option,
    dropped_table,
    echo_json,
    human_duration,
    interactive,
    json_option,
    stderr_stream,
)
from kaudit.errors import InputError
from kaudit.input_limits import MAX_INT, MIN_INT, number_option
from kaudit.model.timestamps import MAX_SECONDS, format_timestamp, parse_timestamp
from kaudit.readers.alibaba import AlibabaOptions
from kaudit.readers.formats import ALIBABA, AUTO, FAMILIES
from kaudit.readers.ingest import EVENTS, SNAPSHOT, IngestResult, TraceInput, ingest_trace
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace


def _seconds_or_time(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        number: Any = float(value) if any(c in value for c in ".eE") else int(value)
    except ValueError:
        number = value
    try:
        return parse_timestamp(number)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


@dataclass(frozen=True)
class IngestRequest:
    """What ``kaudit ingest``'s arguments ask for, to be ingested into any database (``kaudit
    check`` ingests into a temporary one with the same arguments)."""

    inputs: list[TraceInput]
    start_us: int | None
    step_us: int
    sort: bool
    skip_invalid: bool
    alibaba: AlibabaOptions | None
    scheduler_config: bool

    @property
    def total_bytes(self) -> int:
        return sum(i.path.stat().st_size for i in self.inputs if i.path.is_file())

    def ingest(self, engine: Any, name: str | None = None,
               progress: Callable[[int], Any] | None = None) -> IngestResult:
        return ingest_trace(engine, self.inputs, name=name, start_us=self.start_us,
                            step_us=self.step_us, sort=self.sort,
                            skip_invalid=self.skip_invalid, progress=progress,
                            alibaba=self.alibaba, scheduler_config=self.scheduler_config)


_INPUT_KEYS = ("files", "fmt", "snapshots", "start", "step", "sort", "skip_invalid",
               "no_config", "shuffle", "alibaba_seed", "gpu_load", "no_deletions",
               "gpu_sharing")


def _request(files: tuple[Path, ...], fmt: str, snapshots: tuple[Path, ...], start: str | None,
             step: str | None, sort: bool, skip_invalid: bool, no_config: bool, shuffle: bool,
             alibaba_seed: int, gpu_load: float | None, no_deletions: bool,
             gpu_sharing: str) -> IngestRequest:
    if not files and not snapshots:
        raise click.UsageError("give at least one trace FILE or --snapshot FILE")
    start_us = _seconds_or_time(start, "--start")
    try:
        step_us = round(number_option(step, "--step", 0, MAX_SECONDS) * 1_000_000
                        ) if step is not None else 0
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if gpu_load is not None and not 0 < gpu_load <= 100:
        raise InputError(f"--gpu-load: {gpu_load} must be a ratio above 0 and at most 100")
    alibaba = None
    shaping = (shuffle, alibaba_seed != 42, gpu_load is not None, no_deletions,
               gpu_sharing != "whole")
    if any(shaping) or fmt == ALIBABA or step is not None:
        alibaba = AlibabaOptions(shuffle=shuffle, seed=alibaba_seed, gpu_load=gpu_load,
                                 deletions=not no_deletions, gpu_sharing=gpu_sharing,
                                 **({"step_us": step_us} if step is not None else {}))
    inputs = ([TraceInput(p, SNAPSHOT) for p in snapshots]
              + [TraceInput(p, EVENTS, fmt) for p in files])
    return IngestRequest(inputs, start_us, step_us, sort, skip_invalid, alibaba, not no_config)


def trace_input_options(format_flag: str = "--format", seed_flag: str = "--seed",
                        optional: bool = False
                        ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``kaudit ingest``'s inputs (FILES, --snapshot, --start, the Alibaba protocol, ...) for
    any command; the command receives them as one ``request`` (:class:`IngestRequest`).
    ``format_flag`` and ``seed_flag`` rename the two options where the command has its own
    ``--format`` or ``--seed``. With ``optional`` a command given no FILES and no --snapshot
    receives ``request=None``."""
    options = [
        click.argument("files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False)),
        click.option(format_flag, "fmt", type=click.Choice(FAMILIES), default=AUTO,
                     show_default=True,
                     help="How to read FILES: watch (kaudit's JSON Lines, kubectl watch "
                          "output), audit (Kubernetes audit logs), simulator "
                          "(kube-scheduler-simulator records or export), alibaba (the openb "
                          "node and pod CSVs); auto looks at each file's first line."),
        click.option("--snapshot", "snapshots", multiple=True, metavar="FILE",
                     type=click.Path(path_type=Path, dir_okay=False),
                     help="A Kubernetes List (kubectl get nodes,pods -A -o json; JSON or "
                          "YAML) giving the cluster state at the trace's start. Repeatable."),
        click.option("--start", metavar="TIME",
                     help="Time of snapshot objects and of events without `ts` (kubectl "
                          "watch output): RFC 3339 or seconds [default: the first event's "
                          "time, else 0]."),
        click.option("--step", metavar="SECONDS",
                     help="Seconds between successive events without `ts` (arrival order), "
                          "or between shuffled Alibaba pods [default: 0; 0.01 for Alibaba "
                          "pods]."),
        click.option("--sort", is_flag=True,
                     help="Order events by time instead of failing when time goes "
                          "backwards."),
        click.option("--skip-invalid", is_flag=True,
                     help="Store the valid lines and record each invalid one with its "
                          "reason, instead of storing nothing."),
        click.option("--no-config", "no_config", is_flag=True,
                     help="Ignore a scheduler configuration the input carries (a simulator "
                          "export's schedulerConfig); replay then needs --config or uses "
                          "defaults."),
        click.option("--shuffle", is_flag=True,
                     help="Alibaba trace: pods arrive in a seeded random order, --step apart "
                          "(default 0.01 s), instead of at their creation times (the FGD "
                          "paper's protocol)."),
        click.option(seed_flag, "alibaba_seed", type=click.IntRange(MIN_INT, MAX_INT), default=42,
                     show_default=True,
                     help="Alibaba trace: seed of --shuffle and --gpu-load sampling."),
        click.option("--gpu-load", type=float, metavar="RATIO",
                     help="Alibaba trace: add random copies of pods (or leave pods out) until "
                          "their GPU requests reach RATIO × the cluster's GPUs, e.g. 1.3."),
        click.option("--no-deletions", is_flag=True,
                     help="Alibaba trace: pods are never deleted (the paper's protocol)."),
        click.option("--gpu-sharing", type=click.Choice(["whole", "milli"]), default="whole",
                     show_default=True,
                     help="Alibaba trace: whole: a GPU-sharing pod asks one nvidia.com/gpu, "
                          "as stock Kubernetes; milli: it asks its share as "
                          "alibabacloud.com/gpu-milli."),
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def with_request(*args: Any, **kwargs: Any) -> Any:
            values = {key: kwargs.pop(key) for key in _INPUT_KEYS}
            if optional and not values["files"] and not values["snapshots"]:
                return command(*args, request=None, **kwargs)
            return command(*args, request=_request(**values), **kwargs)

        for option in reversed(options):
            with_request = option(with_request)
        return with_request
    return decorate


@click.command()
@trace_input_options()
@click.option("--name", help="Name of the new trace [default: the last file's name].")
@db_option
@json_option
def ingest(request: IngestRequest, name: str | None, db: str | None, as_json: bool) -> None:
    """Ingest trace FILES (gzip accepted) as one trace.

    \b
    Formats (told from each file's first line, or --format):
      watch      {"ts": TIME, "type": "ADDED|MODIFIED|DELETED", "object": {...}} lines, or
                 `kubectl get ... --watch --output-watch-events -o json` output
      audit      Kubernetes audit logs (audit.k8s.io/v1 Events, JSON Lines); rotated files
                 and several API servers' logs are merged by time
      simulator  kube-scheduler-simulator recorder lines, or its export (its
                 schedulerConfig is stored for replay)
      alibaba    NODES.csv PODS.csv of Alibaba cluster-trace-gpu-v2023
    A Kubernetes List or simulator export among FILES is the state at the trace's start.
    On any invalid line nothing is stored and the error names FILE:LINE (exit code 2).
    """
    engine = open_database(db)
    began = time.perf_counter()
    bar: AbstractContextManager[Any] = (
        click.progressbar(length=request.total_bytes, label="ingesting", file=stderr_stream())
        if interactive() and not as_json else nullcontext())
    try:
        with bar as progress:
            result = request.ingest(engine, name,
                                    progress.update if progress is not None else None)
        elapsed = time.perf_counter() - began
        summary = get_trace(engine, result.trace_id)
    finally:
        engine.dispose()
    if as_json:
        echo_json({"trace": summary.as_json(), "duplicate": result.duplicate,
                   "dropped": result.dropped,
                   "schedulerConfig": result.scheduler_config is not None,
                   "seconds": round(elapsed, 3),
                   "eventsPerSecond": None if result.duplicate else
                   round(result.events / elapsed) if elapsed > 0 else None})
        return
    _report(result, elapsed)


def _report(result: IngestResult, elapsed: float) -> None:
    if result.duplicate:
        click.echo(f"identical content was already ingested as trace '{result.name}' "
                   f"(id {result.trace_id}); nothing stored")
        return
    rate = result.events / elapsed if elapsed > 0 else 0
    click.echo(f"ingested trace '{result.name}' (id {result.trace_id}): {result.events} events "
               f"from {len(result.sources)} file(s) in {elapsed:.2f}s ({rate:,.0f} events/s)")
    if result.kind_counts:
        click.echo("  " + ", ".join(f"{kind} {count}" for kind, count in
                                    sorted(result.kind_counts.items(), key=lambda kv: -kv[1])))
    if result.start_us is not None and result.end_us is not None:
        span = (result.end_us - result.start_us) / 1e6
        click.echo(f"  time: {format_timestamp(result.start_us)} to "
                   f"{format_timestamp(result.end_us)} ({human_duration(span)})")
    for source in result.sources:
        summary = (source.get("details") or {}).get("summary")
        if summary:
            click.echo(f"  {source['path']}: {summary}")
    if result.rejected:
        click.echo(f"  rejected lines: {result.rejected} (`kaudit traces {result.name}` lists "
                   "them)")
    if result.dropped:
        click.echo(f"  left out: {result.dropped:,} records that carry nothing to replay")
        click.echo(dropped_table(result.sources, limit=8))
    if result.scheduler_config is not None:
        click.echo("  scheduler configuration stored with the trace: `kaudit replay "
                   f"{result.name}` uses it unless --config is given")
    if result.kubernetes_version is not None:
        click.echo(f"  recorded from Kubernetes {result.kubernetes_version}: replays mirror "
                   "that release when kaudit does (--kubernetes-version to choose)")
