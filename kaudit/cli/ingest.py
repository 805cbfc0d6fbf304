"""``kaudit ingest``: store trace files in the event log."""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click

from kaudit.cli.options import db_option, echo_json, human_duration, interactive, json_option
from kaudit.errors import InputError
from kaudit.ingest import EVENTS, SNAPSHOT, IngestResult, TraceInput, ingest_trace
from kaudit.queries.traces import get_trace
from kaudit.readers.timestamps import format_timestamp, parse_timestamp
from kaudit.store.schema import open_database


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


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--snapshot", "snapshots", multiple=True, metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False),
              help="A Kubernetes List (kubectl get nodes,pods -A -o json; JSON or YAML) giving "
                   "the cluster state at the trace's start. Repeatable.")
@click.option("--name", help="Name of the new trace [default: the last file's name].")
@click.option("--start", metavar="TIME",
              help="Time of snapshot objects and of events without `ts` (kubectl watch "
                   "output): RFC 3339 or seconds [default: the first event's time, else 0].")
@click.option("--step", metavar="SECONDS", default="0", show_default=True,
              help="Seconds between successive events without `ts` (arrival order).")
@click.option("--sort", is_flag=True,
              help="Order events by time instead of failing when time goes backwards.")
@click.option("--skip-invalid", is_flag=True,
              help="Store the valid lines and record each invalid one with its reason, "
                   "instead of storing nothing.")
@db_option
@json_option
def ingest(files: tuple[Path, ...], snapshots: tuple[Path, ...], name: str | None,
           start: str | None, step: str, sort: bool, skip_invalid: bool, db: str | None,
           as_json: bool) -> None:
    """Ingest trace FILES (JSON Lines watch events, gzip accepted) as one trace.

    Native lines are {"ts": TIME, "type": "ADDED|MODIFIED|DELETED", "object": {...}};
    `kubectl get ... --watch --output-watch-events -o json` output is accepted too.
    On any invalid line nothing is stored and the error names FILE:LINE (exit code 2).
    """
    if not files and not snapshots:
        raise click.UsageError("give at least one trace FILE or --snapshot FILE")
    start_us = _seconds_or_time(start, "--start")
    try:
        step_us = round(float(step) * 1_000_000)
    except ValueError:
        raise InputError(f"--step: {step!r} is not a number of seconds") from None
    inputs = [TraceInput(p, SNAPSHOT) for p in snapshots] + [TraceInput(p, EVENTS) for p in files]
    engine = open_database(db)
    total = sum(p.stat().st_size for p in (*snapshots, *files) if p.is_file())
    began = time.perf_counter()
    bar = (click.progressbar(length=total, label="ingesting", file=click.get_text_stream("stderr"))
           if interactive() and not as_json else nullcontext())
    try:
        with bar as progress:
            result = ingest_trace(engine, inputs, name=name, start_us=start_us, step_us=step_us,
                                  sort=sort, skip_invalid=skip_invalid,
                                  progress=progress.update if progress is not None else None)
        elapsed = time.perf_counter() - began
        summary = get_trace(engine, result.trace_id)
    finally:
        engine.dispose()
    if as_json:
        echo_json({"trace": summary.as_json(), "duplicate": result.duplicate,
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
    if result.rejected:
        click.echo(f"  rejected lines: {result.rejected} (`kaudit traces {result.name}` lists "
                   "them)")
