"""``kaudit traces``: list stored traces, or show one in detail."""

from __future__ import annotations

import click

from kaudit.cli.options import (
    ListingGroup,
    db_option,
    dropped_table,
    echo_json,
    human_duration,
    json_option,
    remove_and_report,
    remove_option,
    table,
)
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.traces import list_traces, rejected_lines, remove_traces
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace


def _kinds(counts: dict[str, int], limit: int = 4) -> str:
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{kind} {n}" for kind, n in ordered[:limit])
    return text + (f", +{len(ordered) - limit} kinds" if len(ordered) > limit else "")


@click.group(cls=ListingGroup, invoke_without_command=True)
@db_option
@json_option
@click.pass_context
def traces(ctx: click.Context, db: str | None, as_json: bool) -> None:
    """List stored traces with their event counts per kind, time span and the Kubernetes
    release they were recorded from (when their source says it).

    `kaudit traces TRACE` (a name or id) shows that trace in detail, including rejected
    lines; `kaudit traces rm TRACE...` removes traces with their runs.
    """
    if ctx.invoked_subcommand is not None:
        return
    trace: str | None = ctx.meta.get("listing_argument")
    engine = open_database(db)
    try:
        if trace is None:
            summaries = list_traces(engine)
            if as_json:
                echo_json([s.as_json() for s in summaries])
            elif not summaries:
                click.echo("no traces yet: `kaudit ingest FILE` stores one, `kaudit demo` "
                           "stores the sample")
            else:
                click.echo(table(
                    [(s.id, s.name, s.events, human_duration(s.span_seconds),
                      s.rejected or "", s.kubernetes_version or "", _kinds(s.kind_counts))
                     for s in summaries],
                    ["ID", "NAME", "EVENTS", "SPAN", "REJECTED", "RECORDED FROM", "KINDS"]))
            return
        summary = get_trace(engine, trace)
        rejected = rejected_lines(engine, summary.id)
    finally:
        engine.dispose()
    if as_json:
        echo_json({**summary.as_json(), "rejectedLines": rejected})
        return
    click.echo(f"trace '{summary.name}' (id {summary.id}), ingested {summary.created_at}")
    if summary.start_us is not None and summary.end_us is not None:
        click.echo(f"  time: {format_timestamp(summary.start_us)} to "
                   f"{format_timestamp(summary.end_us)} ({human_duration(summary.span_seconds)})")
    click.echo(f"  events: {summary.events}")
    if summary.kubernetes_version is not None:
        click.echo(f"  recorded from: Kubernetes {summary.kubernetes_version} (replays mirror "
                   "that release when kaudit does; `kaudit versions` lists them)")
    click.echo(table([(k, n, "" if k not in summary.unused_kinds else "kept, not replayed")
                      for k, n in sorted(summary.kind_counts.items())],
                     ["KIND", "EVENTS", ""], indent=2))
    click.echo("  sources:")
    for source in summary.sources:
        dropped = sum(count for count, _ in (source.get("dropped") or {}).values())
        click.echo(f"    {source['path']} ({source['role']}, {source['format'] or 'empty'}): "
                   f"{source['events']} events, {source['rejected']} rejected"
                   + (f", {dropped:,} left out" if dropped else ""))
    if any(source.get("dropped") for source in summary.sources):
        click.echo("  left out (valid records with nothing to replay):")
        click.echo(dropped_table(summary.sources))
    if summary.has_scheduler_config:
        click.echo("  scheduler configuration: stored with the trace (replay uses it unless "
                   "--config is given)")
    if rejected:
        click.echo(f"  rejected lines ({len(rejected)}):")
        for item in rejected:
            where = f"{item['source']}:{item['line']}" if item["line"] else item["source"]
            click.echo(f"    {where}: {item['reason']}")


@traces.command("rm")
@click.argument("names", nargs=-1, required=True, metavar="TRACE...")
@remove_option("traces whose runs are")
@db_option
@json_option
def remove(names: tuple[str, ...], force: bool, db: str | None, as_json: bool) -> None:
    """Remove TRACEs, their runs and every row of theirs, in one transaction."""
    remove_and_report(remove_traces, names, force, db, as_json, "trace(s) and their runs:")
