"""``kaudit gpu-report``: GPU allocation and fragmentation of runs against arrived workload."""

from __future__ import annotations

from pathlib import Path

import click

from kaudit.cli.options import db_option, echo_json, json_option
from kaudit.queries.gpu_sharing import KEY_PERCENTS, curves_csv, gpu_report
from kaudit.store.schema import open_database


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


@click.command("gpu-report")
@click.argument("runs", nargs=-1, required=True)
@click.option("--csv", "csv_path", type=click.Path(path_type=Path, dir_okay=False),
              metavar="FILE", help="Also write every curve (one row per run and arrived "
                                   "percent) to FILE.")
@db_option
@json_option
def gpu_report_command(runs: tuple[str, ...], csv_path: Path | None, db: str | None,
                       as_json: bool) -> None:
    """GPU allocation and fragmentation of RUNS against arrived workload (the FGD paper's
    figures), for runs replayed with --gpu-report.

    Prints, per run, the unallocated GPU share, the fragmentation amount (fragmented GPU-milli
    over all GPUs) and the fragmentation rate (fragmented over idle GPU-milli) at 50 to 130 %
    of arrived workload.
    """
    engine = open_database(db)
    try:
        report = gpu_report(engine, list(runs))
    finally:
        engine.dispose()
    if csv_path is not None:
        csv_path.write_text(curves_csv(report))
    if as_json:
        echo_json(report)
        return
    header = "".join(f"{p:>8}" for p in KEY_PERCENTS)
    for metric, title in (("unallocated", "unallocated GPU %"),
                          ("fragAmount", "fragmentation amount, % of GPUs"),
                          ("fragRate", "fragmentation rate, % of idle GPU")):
        click.echo(f"{title} at arrived workload %")
        click.echo(f"  {'run':<24} {'policy':<20}{header}")
        for run in report["runs"]:
            values = "".join(f"{_cell(run['at'][str(p)][metric]):>8}" for p in KEY_PERCENTS)
            click.echo(f"  {run['run']:<24} {run['policy'][:20]:<20}{values}")
        click.echo()
    for run in report["runs"]:
        if run["empty"]:
            click.echo(f"{run['run']}: empty columns: {run['empty']}")
    first = report["runs"][0]
    click.echo(f"{first['gpus']:,} GPUs; {first['typicalPods']} typical pod shapes; "
               f"{first['samples']:,} samples (one per pod tried)")
    if csv_path is not None:
        click.echo(f"curves written to {csv_path}")
