"""``kaudit sweep SPEC.yaml``, ``kaudit sweep report SWEEP`` and ``kaudit sweep list``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kaudit.cli.options import (
    db_option,
    echo_json,
    human_duration,
    json_option,
    remove_option,
    table,
)
from kaudit.cli.replay import terminate_as_interrupt
from kaudit.queries.sweeps import BY_KEY, FORMATS, list_sweeps, remove_sweeps, sweep_report
from kaudit.store.schema import open_database
from kaudit.sweep.run import SweepProgress, run_sweep
from kaudit.sweep.spec import read_spec


class SweepGroup(click.Group):
    """``kaudit sweep SPEC.yaml [OPTIONS]`` (options before or after SPEC) is ``kaudit sweep
    run SPEC.yaml [OPTIONS]``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        words = [a for a in args if not a.startswith("-")]
        if words and words[0] not in self.commands and not {"-h", "--help"} & set(args):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=SweepGroup, invoke_without_command=False)
def sweep() -> None:
    """Replay traces × scheduler configurations × seeds, on Dask, into one database.

    \b
      kaudit sweep SPEC.yaml                  run the sweep's unfinished cells (here, one
                                              Dask worker per core)
      kaudit sweep SPEC.yaml --scheduler tcp://HOST:8786 --db postgresql://...
                                              on an existing Dask cluster
      kaudit sweep report SWEEP               mean, sd and 95 % interval over seeds, and
                                              each configuration against the baseline
      kaudit sweep list                       the sweeps in the database
      kaudit sweep rm SWEEP                   remove a sweep and its runs
    Each cell is an ordinary run (kaudit explain, diff and the dashboard work on it).
    """


class ProgressLine:
    """Cells done, running and failed, with an ETA: one line redrawn on a terminal, a line
    per change otherwise."""

    def __init__(self, live: bool) -> None:
        self.live = live
        self.last = ""

    def __call__(self, tally: SweepProgress) -> None:
        todo = tally.total - tally.skipped
        eta = "" if tally.eta_seconds is None else f", ETA {human_duration(tally.eta_seconds)}"
        line = (f"sweep {tally.sweep}: {tally.complete + tally.failed}/{todo} cells done "
                f"({tally.failed} failed), {tally.running} running, {tally.pending} waiting"
                f"{eta} [{tally.workers} worker(s)]")
        if line == self.last:
            return
        self.last = line
        if self.live:
            click.echo(f"\r\033[K{line}", nl=False, err=True)
        else:
            click.echo(line, err=True)

    def close(self) -> None:
        if self.live and self.last:
            click.echo("", err=True)


@sweep.command("run")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--scheduler", metavar="ADDRESS",
              help="An existing Dask scheduler, e.g. tcp://10.0.0.5:8786, whose workers have "
                   "kaudit installed and reach --db [default: a local Dask cluster].")
@click.option("--workers", type=int, metavar="N",
              help="Worker processes of the local cluster [default: one per core].")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
@db_option
@json_option
def run(spec_path: Path, scheduler: str | None, workers: int | None, quiet: bool,
        db: str | None, as_json: bool) -> None:
    """Run the sweep SPEC: every cell not finished yet (finished cells are skipped, failed or
    interrupted ones retried). Exits 1 when a cell failed."""
    spec = read_spec(spec_path)
    engine = open_database(db)
    line = ProgressLine(sys.stderr.isatty())
    try:
        with terminate_as_interrupt() as check_stop:
            tally = run_sweep(
                engine, db, spec, scheduler=scheduler, workers=workers,
                progress=None if quiet else line,
                planning=None if quiet else (
                    lambda what: click.echo(f"preparing {what}", err=True)),
                check_stop=check_stop)
    finally:
        line.close()
        engine.dispose()
    if as_json:
        echo_json(tally.as_json())
    else:
        _print_tally(tally)
    sys.exit(1 if tally.failed else 0)


def _print_tally(tally: SweepProgress) -> None:
    if tally.skipped == tally.total:
        click.echo(f"sweep {tally.sweep}: all {tally.total} cells were already complete; "
                   "nothing to do")
    else:
        click.echo(f"sweep {tally.sweep}: {tally.complete} cell(s) replayed, {tally.failed} "
                   f"failed, {tally.skipped} already complete, in "
                   f"{human_duration(tally.seconds)} on {tally.where}")
    for failure in tally.failures:
        click.echo(f"  failed: {failure['cell']} ({failure['run']}): {failure['error']}")
    click.echo(f"  report: kaudit sweep report {tally.sweep}")


@sweep.command("report")
@click.argument("name", metavar="SWEEP")
@click.option("--baseline", metavar="CONFIG",
              help="Compare against this configuration [default: the spec's baseline].")
@click.option("--metric", "metrics", multiple=True, metavar="KEY",
              help="Only these metrics (repeatable): " + ", ".join(BY_KEY) + ".")
@click.option("--format", "output_format", type=click.Choice(sorted(FORMATS)),
              default="text", show_default=True)
@db_option
@json_option
def report(name: str, baseline: str | None, metrics: tuple[str, ...], output_format: str,
           db: str | None, as_json: bool) -> None:
    """Each metric per configuration and trace over seeds (mean, sd, 95 % interval), and
    each configuration against the baseline, paired by seed."""
    engine = open_database(db)
    try:
        found = sweep_report(engine, name, baseline=baseline, metrics=list(metrics) or None)
    finally:
        engine.dispose()
    click.echo(FORMATS["json" if as_json else output_format](found), nl=False)


@sweep.command("list")
@db_option
@json_option
def list_command(db: str | None, as_json: bool) -> None:
    """The sweeps in the database, with their cells' states."""
    engine = open_database(db)
    try:
        found = list_sweeps(engine)
    finally:
        engine.dispose()
    if as_json:
        echo_json(found)
        return
    if not found:
        click.echo("no sweeps yet: `kaudit sweep SPEC.yaml` runs one")
        return
    rows: list[tuple[Any, ...]] = [
        (s["name"], s["cells"], s["complete"], s["failed"], s["running"], s["abandoned"],
         s["pending"], len(s["configs"]), len(s["traces"]), len(s["seeds"])) for s in found]
    click.echo(table(rows, ["SWEEP", "CELLS", "COMPLETE", "FAILED", "RUNNING", "ABANDONED",
                            "PENDING", "CONFIGS", "TRACES", "SEEDS"]))


@sweep.command("rm")
@click.argument("names", nargs=-1, required=True, metavar="SWEEP...")
@click.option("--keep-runs", is_flag=True, help="Keep the cells' runs as ordinary runs.")
@remove_option("sweeps with cells")
@db_option
@json_option
def remove(names: tuple[str, ...], keep_runs: bool, force: bool, db: str | None,
           as_json: bool) -> None:
    """Remove SWEEPs and their cells' runs (every row of them), in one transaction."""
    engine = open_database(db)
    try:
        removed = remove_sweeps(engine, list(names), force, keep_runs)
    finally:
        engine.dispose()
    if as_json:
        echo_json({"removed": removed})
    else:
        click.echo(f"removed sweep(s) {', '.join(removed)}"
                   + (" (their runs kept)" if keep_runs else " and their runs"))
