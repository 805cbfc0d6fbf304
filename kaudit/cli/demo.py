"""``kaudit demo``: ingest the sample trace, show what it holds, replay it under two
scheduler configurations and point at the ways to explore the result."""

from __future__ import annotations

from typing import Any

import click

from kaudit.cli.options import db_option, echo_json, human_duration, json_option, plural, table
from kaudit.datadirs import sample_config, sample_trace
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.diff import diff_runs
from kaudit.queries.outcomes import RECORDED
from kaudit.queries.overview import trace_overview
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.services.replay import ConfigChoice, replay_stored_trace, resolve_config
from kaudit.store.engine import display_url, resolve_url
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace


def _gib(value: int) -> str:
    return f"{value / 1024**3:.1f}Gi"


def recorded_landings(report: dict[str, Any]) -> dict[str, int]:
    """Of the compared pods the recording scheduled (side A of ``report``, a diff from
    ``recorded``): how many the replay put on the same node, and how the others differ. A pod
    neither side scheduled landed nowhere, so it is in none of these counts."""
    placed = [c for c in report["changes"] if c["a"]["node"] is not None]
    kinds = [c["change"] for c in placed]
    moved = kinds.count("moved")
    flips = kinds.count("tie-flip") + kinds.count("tie-consequence")
    same = report["counts"]["same"]
    return {"placed": same + len(placed), "same": same, "differ": len(placed),
            "moved": moved, "coinFlips": flips, "otherwise": len(placed) - moved - flips}


@click.command()
@db_option
@json_option
def demo(db: str | None, as_json: bool) -> None:
    """Ingest the sample trace shipped with kaudit, show what is in it, and replay it twice:
    with kube-scheduler's defaults and with a bin-packing configuration, ready to diff and to
    open in the dashboard (`kaudit serve`)."""
    engine = open_database(db)
    try:
        result = ingest_trace(engine, [TraceInput(sample_trace())])
        summary = get_trace(engine, result.trace_id)
        overview = trace_overview(engine, result.trace_id)
        default = replay_stored_trace(engine, summary,
                                      resolve_config(summary, ConfigChoice(defaults=True)))
        run, replayed = default.run, default.summary
        bin_packing = replay_stored_trace(
            engine, summary, resolve_config(summary, ConfigChoice(file=sample_config())))
        packed_run, packed = bin_packing.run, bin_packing.summary
        against_recorded = diff_runs(engine, RECORDED, run.name)
    finally:
        engine.dispose()
    recorded = against_recorded["aggregates"]["a"]
    # The recorded pods a scheduler placed are the diff's `scheduled` of `recorded`; pods
    # created with spec.nodeName (static, DaemonSet) were never a scheduler's to place.
    created_on_node = overview.pods_created - recorded["pods"]
    if as_json:
        echo_json({"database": display_url(resolve_url(db)), "trace": summary.as_json(),
                   "newlyIngested": not result.duplicate, **overview.as_json(),
                   "run": run.as_json(), "binPackingRun": packed_run.as_json(),
                   "recordedAgainstDefault": {"compared": against_recorded["compared"],
                                              "counts": against_recorded["counts"],
                                              "landings": recorded_landings(against_recorded),
                                              "recordedScheduled": recorded["scheduled"],
                                              "createdOnNode": created_on_node}})
        return

    click.echo(f"kaudit demo, database {display_url(resolve_url(db))}\n")
    verb = "Found" if result.duplicate else "Ingested"
    click.echo(f"{verb} the sample trace '{summary.name}' (id {summary.id}): {summary.events} "
               f"watch events over {human_duration(summary.span_seconds)}, from "
               f"{format_timestamp(summary.start_us or 0)} to "
               f"{format_timestamp(summary.end_us or 0)}.")
    click.echo("  " + ", ".join(f"{kind} {n}" for kind, n in sorted(
        summary.kind_counts.items(), key=lambda kv: (-kv[1], kv[0]))))

    present = [n for n in overview.nodes if n.removed_us is None]
    click.echo(f"\nNodes: {len(overview.nodes)} seen, {len(present)} at the end of the trace")
    rows = []
    for node in overview.nodes:
        notes = []
        if node.unschedulable:
            notes.append("cordoned")
        notes.extend(f"taint {t}" for t in node.taints
                     if not t.startswith("node.kubernetes.io/unschedulable"))
        if node.removed_us is not None:
            notes.append(f"leaves at +{(node.removed_us - (summary.start_us or 0)) / 1e6:g}s")
        if node.added_us != summary.start_us:
            notes.append(f"joins at +{(node.added_us - (summary.start_us or 0)) / 1e6:g}s")
        extended = ", ".join(f"{k} {v}" for k, v in node.extended.items())
        rows.append((node.name, node.zone, f"{node.cpu_milli}m", _gib(node.memory_bytes),
                     extended, "; ".join(notes)))
    click.echo(table(rows, ["NAME", "ZONE", "CPU", "MEMORY", "EXTENDED", "NOTES"], indent=2))

    per_namespace = ", ".join(f"{ns} {n}" for ns, n in overview.pods_by_namespace.items())
    click.echo(f"\nPods: {overview.pods_created} created in {len(overview.pods_by_namespace)} "
               f"namespaces ({per_namespace})")
    click.echo(f"  {recorded['scheduled']} scheduled in the recorded cluster (`recorded` in "
               f"`kaudit diff`); {created_on_node} more were created on\n  their node "
               f"(spec.nodeName: no scheduler's decision); {overview.pods_deleted} deleted "
               "during the trace")
    others = {k: v for k, v in overview.schedulers.items() if k != "default-scheduler"}
    if others:
        click.echo("  other schedulers: "
                   + ", ".join(f"{k} ({plural(v, 'pod')})" for k, v in others.items()))
    if overview.pods_never_bound:
        click.echo(f"  never scheduled: {', '.join(overview.pods_never_bound)}")

    s = replayed.as_json()
    click.echo(f"\nReplayed it with kube-scheduler's default configuration as run '{run.name}': "
               f"{s['podsScheduled']} pods scheduled by kaudit, {s['podsPendingAtEnd']} pending at "
               f"the end, {s['podsPreempted']} preempted, {s['attempts']} attempts, in "
               f"{s['wallSeconds']:.2f}s.")
    landed = recorded_landings(against_recorded)
    kinds = [f"{landed['moved']} moved (the replay's queue retries in its own order)",
             f"{landed['coinFlips']} coin flips"]
    if landed["otherwise"]:
        kinds.append(f"{landed['otherwise']} otherwise")
    click.echo(f"  The sample is synthetic: its recorded placements are kube-scheduler's default "
               f"decisions, made as the\n  recording went. {landed['same']} of "
               f"{landed['placed']} pods scheduled by the recording land where it put them; "
               f"{landed['differ']} differ:\n  {', '.join(kinds)}. `kaudit diff recorded "
               f"{run.name}` shows each.")
    p = packed.as_json()
    click.echo(f"And with a bin-packing configuration ({sample_config().name}) as run "
               f"'{packed_run.name}': {p['podsScheduled']} scheduled, {p['podsPendingAtEnd']} "
               f"pending at the end, {p['podsPreempted']} preempted, {p['attempts']} attempts.")
    click.echo("\nExplore further:")
    for command, what in (
        (f"kaudit explain {run.name} web/payments-0", "a pod that preempted others"),
        (f"kaudit explain {run.name} web/ssd-cache", "a pod no node accepts, and why"),
        (f"kaudit events {run.name} --kind preempt", "the event log as JSON Lines"),
        (f"kaudit diff {run.name} {packed_run.name}", "what bin packing changed, pod by pod"),
        ("kaudit serve", "all of it in the browser (http://127.0.0.1:5000/)"),
        ("kaudit runs", "every replay, with its summary"),
        (f"kaudit traces {summary.name}", "the trace's sources and event kinds"),
        ("kaudit ingest FILE --name N", "store your own recorded trace"),
    ):
        click.echo(f"  {command:<42} {what}")
