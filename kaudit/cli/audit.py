"""``kaudit audit``: judge each decision a recorded cluster's scheduler made.

Exit codes: 0 when every ``--fail-on`` condition holds back, 1 when one fails, 2 on a usage or
input error. The audit is stored as a run, so ``kaudit explain RUN POD``, ``kaudit events`` and
the dashboard's audit page show it; ``kaudit audit --run RUN`` prints a stored audit again.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import click

from kaudit.cli.check import publish_to_github, stored_or_ingested_trace
from kaudit.cli.options import (
    SEED,
    db_option,
    echo_run_warnings,
    interactive,
    kubernetes_version_option,
    stderr_stream,
)
from kaudit.cli.replay import echo_resolved_config, terminate_as_interrupt
from kaudit.cli.whatif import feature_gates_option, plugin_option
from kaudit.errors import InputError
from kaudit.queries.audit import (
    FORMATS,
    METRICS,
    as_markdown,
    audit_report,
    evaluate,
    parse_condition,
)
from kaudit.queries.instants import resolve_instant
from kaudit.queries.runs import get_run
from kaudit.queries.timeline import Span
from kaudit.services.audit import audit_stored_trace
from kaudit.services.replay import ConfigChoice, resolve_config
from kaudit.store.schema import open_database


@click.command()
@click.argument("trace", required=False)
@click.option("--config", "config_path", metavar="FILE",
              type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="The KubeSchedulerConfiguration the recorded scheduler is thought to run "
                   "[default: the one stored with the trace, else kube-scheduler's defaults].")
@click.option("--defaults", "use_defaults", is_flag=True,
              help="Judge with kube-scheduler's default configuration even when the trace "
                   "carries one.")
@feature_gates_option
@plugin_option
@kubernetes_version_option(extra="The recorded decisions are judged by that release's "
                                "kube-scheduler.")
@click.option("--latency", type=float, default=0.0, show_default=True, metavar="SECONDS",
              help="Judge each decision this long before the event that records it (the "
                   "time kube-scheduler took from its decision to the recorded binding or "
                   "status).")
@click.option("--window", type=float, default=0.01, show_default=True, metavar="SECONDS",
              help="How far the scheduler's view may lag the recording: a decision that "
                   "disagrees is judged again with the deletions recorded this long before it "
                   "not yet seen, and its own bindings and nominations recorded this long "
                   "after already made; 0 judges the recorded state alone.")
@click.option("--since", metavar="TIME",
              help="Judge only the decisions recorded from this time: seconds from the "
                   "trace's start, or RFC 3339 (the cluster still follows the whole "
                   "recording).")
@click.option("--until", metavar="TIME",
              help="Judge only the decisions recorded up to this time (as --since).")
@click.option("--name", help="Name of the audit run [default: TRACE-N].")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the random choices kaudit's evaluation makes (ties).")
@click.option("--run", "stored_run", metavar="RUN",
              help="Report a stored audit run instead of auditing a trace.")
@click.option("--format", "output_format", type=click.Choice(sorted(FORMATS)),
              default="text", show_default=True, help="Report format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="CONDITION",
              help="Exit 1 when CONDITION holds, e.g. 'disagree>0.5%' (of judged decisions) "
                   "or 'infeasible>0' (decisions); repeatable. Metrics: "
                   + ", ".join(METRICS) + ".")
@db_option
def audit(trace: str | None, config_path: Path | None, use_defaults: bool,
          feature_gates: str | None, plugins: tuple[str, ...], kubernetes_version: str | None,
          latency: float, window: float, since: str | None, until: str | None,
          name: str | None, seed: int, stored_run: str | None,
          output_format: str, as_json: bool, fail_on: tuple[str, ...], db: str | None) -> None:
    """Audit the decisions the scheduler of a recorded TRACE made (stored name or file).

    The cluster follows the recording exactly; at each recorded scheduling decision (a
    binding, a PodScheduled=False status, a preemption's nomination) of a pod this
    configuration serves, kaudit evaluates the pod against the cluster just before it and
    classifies the decision: agrees, tie, sampled, scored lower, infeasible, unschedulable
    (same or different message), preemption (same or different), or not judged.

    \b
      kaudit audit recorded.jsonl --config scheduler.yaml --fail-on 'disagree>0.5%'
      kaudit explain TRACE-1 NAMESPACE/POD     # kaudit's ranking at that moment
    """
    if as_json:
        output_format = "json"
    conditions = [parse_condition(text) for text in fail_on]
    if (trace is None) == (stored_run is None):
        raise click.UsageError("give a TRACE to audit, or --run RUN to report a stored audit")
    if stored_run is not None:
        given = [flag for flag, on in (("--config", config_path is not None),
                                        ("--defaults", use_defaults),
                                        ("--feature-gates", feature_gates is not None),
                                        ("--plugin", bool(plugins)),
                                        ("--kubernetes-version", kubernetes_version is not None),
                                        ("--latency", latency != 0.0),
                                        ("--window", window != 0.01),
                                        ("--since", since is not None),
                                        ("--until", until is not None),
                                        ("--name", name is not None), ("--seed", seed != 0))
                 if on]
        if given:
            raise click.UsageError(f"--run reports a stored audit as it was made; "
                                   f"{', '.join(given)} only apply when auditing a TRACE")
    for flag, value in (("--latency", latency), ("--window", window)):
        if not 0 <= value <= 3600:
            raise InputError(f"{flag} must be between 0 and 3600 seconds, not {value}")
    if use_defaults and config_path is not None:
        raise click.UsageError("--defaults and --config exclude each other")
    engine = open_database(db)
    try:
        if stored_run is not None:
            report = audit_report(engine, stored_run)
        else:
            assert trace is not None
            summary = stored_or_ingested_trace(engine, trace)
            span = Span(summary.start_us or 0, summary.end_us or 0)
            since_us = resolve_instant(since, span, "--since", "trace")
            until_us = resolve_instant(until, span, "--until", "trace")
            if since_us is not None and until_us is not None and since_us > until_us:
                raise InputError("--since must not be after --until")
            resolved = resolve_config(summary, ConfigChoice(
                file=config_path, defaults=use_defaults, feature_gates=feature_gates,
                plugins=plugins, kubernetes_version=kubernetes_version))
            echo_resolved_config(resolved, notices=output_format == "text")
            bar: AbstractContextManager[Any] = (
                click.progressbar(length=summary.events, label="auditing",
                                  file=stderr_stream())
                if interactive() and output_format == "text" else nullcontext())
            with bar as progress, terminate_as_interrupt() as check_stop:
                report = audit_stored_trace(
                    engine, summary, resolved, latency_us=round(latency * 1_000_000),
                    window_us=round(window * 1_000_000), since_us=since_us,
                    until_us=until_us, name=name, seed=seed,
                    progress=progress.update if progress is not None else None,
                    check_stop=check_stop)
            echo_run_warnings(get_run(engine, str(report["run"])).warnings)
        verdicts = evaluate(report, conditions)
    finally:
        engine.dispose()
    click.echo(FORMATS[output_format](report, verdicts), nl=output_format == "text")
    failed = [v for v in verdicts if v.failed]
    publish_to_github(as_markdown(report, verdicts),
                      [(v.condition.text, v.message) for v in failed])
    if report["status"] != "complete":
        # A gate never passes on a partial report.
        raise InputError(f"audit run {report['run']!r} is {report['status']}: its report holds "
                         "only the decisions judged before it stopped; audit the trace again")
    if failed:
        raise SystemExit(1)
