"""``kaudit diff``: what changed between two runs of one trace (or the recorded cluster)."""

from __future__ import annotations

from typing import Any

import click

from kaudit.cli.options import db_option, echo_json, json_option, table
from kaudit.queries.ci_report import release_of, side_name
from kaudit.queries.diff import CHANCE, diff_runs
from kaudit.store.schema import open_database


@click.command()
@click.argument("run_a")
@click.argument("run_b")
@click.option("--limit", type=int, default=20, show_default=True,
              help="Changed pods to list in the text report (--json lists all).")
@db_option
@json_option
def diff(run_a: str, run_b: str, limit: int, db: str | None, as_json: bool) -> None:
    """Compare RUN_A and RUN_B pod by pod; either may be `recorded`, the trace's own
    placements."""
    engine = open_database(db)
    try:
        report = diff_runs(engine, run_a, run_b)
    finally:
        engine.dispose()
    if as_json:
        echo_json(report)
        return
    _print(report, limit)


def _print(report: dict[str, Any], limit: int) -> None:
    counts = report["counts"]
    click.echo(f"{side_name(report, 'a')} → {side_name(report, 'b')}: {report['compared']} "
               "pods compared; "
               f"{counts['same']} unchanged, {counts['unscheduledInBoth']} scheduled "
               f"in neither, {counts['moved']} moved, {counts['tieFlips']} "
               f"tie flips, {counts['tieConsequences']} consequences of tie flips, "
               f"{counts['scheduledOnlyInA']} scheduled only in A, "
               f"{counts['scheduledOnlyInB']} only in B, {counts['preemptedOnlyInA']} "
               f"preempted only in A, {counts['preemptedOnlyInB']} only in B, "
               f"{counts['pendingTimeChanged']} pending longer or shorter, "
               f"{counts['samplingArtifacts']} sampling artifacts")
    rows = [(r["label"], r["aText"], r["bText"], r["deltaText"]) for r in report["rows"]]
    click.echo(table(rows, ["", report["a"], report["b"], "CHANGE"], indent=2))
    if report["sameConfiguration"]:
        click.echo("Both runs used the same configuration: every difference comes from "
                   "tie-breaks (seeds), none from the configuration.")
    elif release_of(report, "a") and release_of(report, "b"):
        click.echo(f"The runs mirrored different Kubernetes releases "
                   f"({release_of(report, 'a')} and {release_of(report, 'b')}): a difference "
                   "may come from the release as well as from the configuration.")
    if report["causes"]:
        click.echo("\nChanged pods by cause:")
        click.echo(table([(c["count"], c["cause"], ", ".join(c["pods"][:3])
                           + (f" and {c['count'] - 3} more" if c["count"] > 3 else ""))
                          for c in report["causes"]], ["PODS", "CAUSE", "FOR EXAMPLE"], indent=2))
    real = [c for c in report["changes"] if c["change"] not in CHANCE]
    if real:
        click.echo("\nChanged pods:")
        for change in real[:limit]:
            click.echo(f"  {change['pod']}: {change['change']} "
                       f"({change['a']['node'] or '-'} → {change['b']['node'] or '-'})")
            if change["reason"]:
                click.echo(f"    {change['reason']}")
            if change.get("releaseCause"):
                click.echo(f"    release: {change['releaseCause']}")
        if len(real) > limit:
            click.echo(f"  ... {len(real) - limit} more (--json lists them all)")
