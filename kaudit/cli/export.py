"""``kaudit export``: write a replayed run back out as a trace, pods bound where kaudit put them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from kaudit import __version__
from kaudit.cli.options import db_option, echo_json, json_option
from kaudit.errors import InputError
from kaudit.eventlog.runs import RunStatus
from kaudit.model.recording import header_object
from kaudit.queries.export import exported_events, run_source
from kaudit.queries.instants import resolve_instant
from kaudit.queries.timeline import run_span
from kaudit.readers.writers import (
    FORMATS,
    NATIVE,
    SIMULATOR,
    open_output,
    write_native,
    write_simulator_records,
    write_simulator_snapshot,
)
from kaudit.store.schema import open_database


@click.command()
@click.argument("run")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=NATIVE, show_default=True,
              help="native: kaudit's JSON Lines (ingest it again, or compare runs); simulator: "
                   "kube-scheduler-simulator recorder lines; simulator-snapshot: the "
                   "simulator's import document of the cluster at --at (default: the end).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="File to write (.gz compresses) [default: standard output].")
@click.option("--at", "at", metavar="TIME",
              help="simulator-snapshot: the moment, in seconds from the run's start or "
                   "RFC 3339.")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
@db_option
@json_option
def export(run: str, fmt: str, output: Path | None, at: str | None, force: bool,
           db: str | None, as_json: bool) -> None:
    """Write RUN as a trace of the cluster it simulated: the trace's events, with each pod
    kaudit scheduled bound to kaudit's node at kaudit's bind time, kaudit's preemptions as
    deletions, and the pods it recreated. A native trace opens with a header naming the
    Kubernetes release the run was replayed as, so that replaying or auditing it mirrors the
    same release.

    \b
      kaudit export RUN -o replayed.jsonl && kaudit ingest replayed.jsonl
      kaudit export RUN --format simulator-snapshot -o snapshot.json
    """
    if output is not None and output.exists() and not force:
        raise InputError(f"{output}: exists (use --force to overwrite)")
    if as_json and output is None:
        raise click.UsageError("--json reports on the export: give the trace an --output file")
    if at is not None and fmt != "simulator-snapshot":
        raise click.UsageError("--at applies to --format simulator-snapshot")
    engine = open_database(db)
    began = time.perf_counter()
    try:
        source = run_source(engine, run)
        if source.status != RunStatus.COMPLETE:
            raise InputError(f"run {source.name!r} is {source.status}: only a complete run "
                             "can be exported")
        at_us = resolve_instant(at, run_span(engine, source.run_id), "--at")
        events = exported_events(engine, source)
        partial = output.with_name(output.name + ".partial") if output is not None else None
        out = open_output(partial, sys.stdout.buffer,
                          compress=output is not None and output.suffix == ".gz")
        try:
            if fmt == NATIVE:
                header = None if source.kubernetes_version is None else header_object(
                    source.kubernetes_version, f"kaudit/{__version__}")
                counts = write_native(events, out, header)
            elif fmt == SIMULATOR:
                counts = write_simulator_records(events, out)
            else:
                counts = write_simulator_snapshot(events, out, source.config, at_us)
        except BaseException:
            if partial is not None:
                out.close()
                partial.unlink(missing_ok=True)
            raise
        if partial is not None and output is not None:
            out.close()
            partial.replace(output)  # never a half-written trace under the wanted name
        else:
            out.flush()
    finally:
        engine.dispose()
    elapsed = time.perf_counter() - began
    written = sum(n for kind, n in counts.items() if not kind.startswith("("))
    if as_json:
        echo_json({"run": source.name, "format": fmt, "output": str(output),
                   "objects" if fmt == "simulator-snapshot" else "events": written,
                   "kinds": counts, "seconds": round(elapsed, 3)})
    elif output is not None:
        what = "objects" if fmt == "simulator-snapshot" else "events"
        click.echo(f"exported run '{source.name}' to {output}: {written:,} {what} "
                   f"({', '.join(f'{k} {n:,}' for k, n in sorted(counts.items()))}) "
                   f"in {elapsed:.2f}s", err=True)
