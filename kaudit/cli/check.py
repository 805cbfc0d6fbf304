"""``kaudit compare`` and ``kaudit check``: replay configurations and fail CI on regressions.

Exit codes: 0 when every ``--fail-on`` condition holds back, 1 on a regression, 2 on a usage or
input error. With ``GITHUB_STEP_SUMMARY`` set a Markdown report is appended there, and with
``GITHUB_ACTIONS=true`` each failed condition becomes an error annotation.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
import orjson

from kaudit.cli.ingest import IngestRequest, trace_input_options
from kaudit.cli.options import (
    SEED,
    db_option,
    echo_config_warnings,
    echo_run_warnings,
    kubernetes_version_option,
    table,
)
from kaudit.cli.replay import echo_resolved_config
from kaudit.cli.sweep import ProgressLine
from kaudit.cli.whatif import feature_gates_option, plugin_option
from kaudit.errors import InputError
from kaudit.queries.baseline import ACCEPTED, load_summary, write_summary
from kaudit.queries.ci_report import FORMATS, as_markdown
from kaudit.queries.conditions import METRICS, Verdict, evaluate_all, parse_condition
from kaudit.queries.diff import diff_outcomes
from kaudit.queries.outcomes import run_outcomes
from kaudit.queries.summary_rows import DIFF_METRICS, format_value
from kaudit.queries.sweep_checks import as_junit as sweep_junit
from kaudit.queries.sweep_checks import evaluate_sweep, parse_sweep_condition
from kaudit.queries.sweeps import FORMATS as SWEEP_FORMATS
from kaudit.queries.sweeps import sweep_report
from kaudit.queries.traces import trace_content_hash
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.services.replay import (
    FROM_TRACE,
    ConfigChoice,
    ResolvedConfig,
    replay_stored_trace,
    resolve_config,
    stored_config_notice,
)
from kaudit.store.schema import open_database
from kaudit.store.traces import TraceSummary, get_trace
from kaudit.sweep.run import run_sweep
from kaudit.sweep.spec import read_spec

fail_on_option = click.option(
    "--fail-on", "fail_on", multiple=True, metavar="CONDITION",
    help="Exit 1 when CONDITION holds, e.g. pending_at_end>0, changed>5%, p95_pending>+10s, "
         "preempted>baseline (repeatable). Metrics: " + ", ".join(METRICS) + ".")
def format_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--format`` and its short form ``--json`` (the same as ``--format json``)."""
    @functools.wraps(command)
    def run(*args: Any, as_json: bool = False, **kwargs: Any) -> Any:
        if as_json:
            kwargs["output_format"] = "json"
        return command(*args, **kwargs)
    run = click.option("--json", "as_json", is_flag=True,
                       help="Same as --format json.")(run)
    return click.option("--format", "output_format", type=click.Choice(sorted(FORMATS)),
                        default="text", show_default=True, help="Report format.")(run)


def stored_or_ingested_trace(engine: Any, reference: str) -> TraceSummary:
    """A stored trace by name, or a trace file to ingest (once)."""
    path = Path(reference)
    if path.is_file():
        result = ingest_trace(engine, [TraceInput(path)])
        return get_trace(engine, result.trace_id)
    return get_trace(engine, reference)


def publish_to_github(markdown: str, failed: list[tuple[str, str]]) -> None:
    """On GitHub Actions: the report appended to the step summary, and each failed condition
    (its text and message) an error annotation."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(markdown)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for condition, message in failed:
            sys.stdout.write(f"::error title=kaudit {condition}::{message}\n")


def _publish(report: dict[str, Any], verdicts: list[Verdict], output_format: str) -> int:
    click.echo(FORMATS[output_format](report, verdicts), nl=output_format == "text")
    failed = [v for v in verdicts if v.failed]
    publish_to_github(as_markdown(report, verdicts),
                      [(v.condition.text, v.message) for v in failed])
    return 1 if failed else 0


#: ``kaudit compare --config`` words that name a configuration which is not a file.
DEFAULTS_WORD, TRACE_WORD = "default", "trace"


def _compare_choice(value: str | None, feature_gates: str | None, plugins: tuple[str, ...],
                    kubernetes_version: str | None) -> ConfigChoice:
    """``default`` (kube-scheduler's defaults), ``trace`` (the one stored with the trace), a
    configuration file, or None (the trace's stored one, else the defaults, as `kaudit replay`
    chooses), as ``kubernetes_version`` (None: the trace's release, by the one rule)."""
    if value is None or value == TRACE_WORD:
        return ConfigChoice(feature_gates=feature_gates, plugins=plugins,
                            kubernetes_version=kubernetes_version)
    if value == DEFAULTS_WORD:
        return ConfigChoice(defaults=True, feature_gates=feature_gates, plugins=plugins,
                            kubernetes_version=kubernetes_version)
    path = Path(value)
    if not path.is_file():
        raise InputError(f"--config {value!r}: no such file (or `{DEFAULTS_WORD}` for "
                         f"kube-scheduler's defaults, `{TRACE_WORD}` for the configuration "
                         "stored with the trace)")
    return ConfigChoice(file=path, feature_gates=feature_gates, plugins=plugins,
                        kubernetes_version=kubernetes_version)


def _resolve_for_compare(summary: TraceSummary, value: str | None, choice: ConfigChoice
                         ) -> ResolvedConfig:
    resolved = resolve_config(summary, choice)
    if value == TRACE_WORD and resolved.origin != FROM_TRACE:
        raise InputError(f"--config {TRACE_WORD}: trace {summary.name!r} carries no scheduler "
                         "configuration")
    return resolved


def compare_sides(configs: tuple[str, ...], releases: tuple[str, ...]
                  ) -> list[tuple[str | None, str | None]]:
    """The sides of ``kaudit compare``, the baseline first, as (configuration, release): each
    ``--config`` as one release (the one ``--kubernetes-version`` names, else the trace's);
    or, with two releases or more, the one configuration (``--config``, else the trace's
    stored one, else the defaults) as each release."""
    if len(releases) >= 2:
        if len(configs) > 1:
            raise click.UsageError("several --kubernetes-version compare releases under one "
                                   "configuration: give at most one --config (or one "
                                   "--kubernetes-version with several --config)")
        twice = sorted({r for r in releases if releases.count(r) > 1})
        if twice:
            raise click.UsageError(f"--kubernetes-version {twice[0]} is given twice: each "
                                   "side of the comparison is one release")
        value = configs[0] if configs else None
        return [(value, release) for release in releases]
    if len(configs) < 2:
        raise click.UsageError("give at least two --config (a file, `default` or `trace`), or "
                               "two --kubernetes-version to compare releases")
    release = releases[0] if releases else None
    return [(value, release) for value in configs]


@click.command()
@click.argument("trace")
@click.option("--config", "configs", multiple=True, metavar="FILE",
              help="A KubeSchedulerConfiguration file, `default` (kube-scheduler's defaults) "
                   "or `trace` (the one stored with the trace). Repeatable: the first is the "
                   "baseline. With two --kubernetes-version, at most one [default: the one "
                   "stored with the trace, else kube-scheduler's defaults].")
@feature_gates_option
@plugin_option
@kubernetes_version_option(multiple=True, extra=(
    "Repeatable: given twice or more, the sides are the releases, each replaying the same "
    "configuration, the first the baseline."))
@click.option("--seed", type=SEED, default=0, show_default=True)
@fail_on_option
@format_option
@db_option
def compare(trace: str, configs: tuple[str, ...], feature_gates: str | None,
            plugins: tuple[str, ...], kubernetes_versions: tuple[str, ...], seed: int,
            fail_on: tuple[str, ...], output_format: str, db: str | None) -> None:
    """Replay TRACE (a stored trace or a trace file) under each --config and diff them
    against the first; or, with two --kubernetes-version or more, replay one configuration
    as each release and diff them against the first.

    \b
      kaudit compare monday --config a.yaml --config b.yaml
      kaudit compare monday --kubernetes-version 1.34 --kubernetes-version 1.35
    """
    compared = compare_sides(configs, kubernetes_versions)
    conditions = [parse_condition(c) for c in fail_on]
    choices = [_compare_choice(value, feature_gates, plugins, release)
               for value, release in compared]
    engine = open_database(db)
    try:
        summary = stored_or_ingested_trace(engine, trace)
        runs: list[str] = []
        labels: list[str] = []
        notices: list[str] = []
        for (value, _), choice in zip(compared, choices, strict=True):
            resolved = _resolve_for_compare(summary, value, choice)
            notices += [n for n in resolved.notices
                        if n != stored_config_notice(summary) and n not in notices]
            echo_config_warnings(resolved.config)
            result = replay_stored_trace(engine, summary, resolved, seed=seed)
            echo_run_warnings(result.summary.warnings)
            runs.append(result.run.name)
            labels.append(f"{resolved.label}, Kubernetes {resolved.kubernetes_version.name}")
        baseline = run_outcomes(engine, runs[0])
        reports = [diff_outcomes(engine, baseline, run_outcomes(engine, other))
                   for other in runs[1:]]
    finally:
        engine.dispose()
    for notice in notices:
        click.echo(notice, err=True)
    for report, label in zip(reports, labels[1:], strict=True):
        # Which side is which configuration and release, in every format.
        report["sides"] = {"a": {"run": runs[0], "config": labels[0]},
                           "b": {"run": report["b"], "config": label}}
    if output_format == "text":
        click.echo("\n".join(f"{run}: {label}" + (" (the baseline)" if i == 0 else "")
                             for i, (run, label) in enumerate(zip(runs, labels, strict=True))))
    if len(reports) > 1 and output_format == "text":
        sides = [reports[0]["aggregates"]["a"], *(r["aggregates"]["b"] for r in reports)]
        rows = [(metric.label, *(format_value(metric.unit, metric.read(side))
                                 for side in sides)) for metric in DIFF_METRICS]
        rows.append(("moved", "", *(str(r["counts"]["moved"]) for r in reports)))
        click.echo(table(rows, ["", *(f"{run} ({label})" for run, label in
                                      zip(runs, labels, strict=True))]))
        click.echo(f"(baseline {runs[0]}; each run is diffed against it below)\n")
    status = 0
    for report in reports:
        verdicts = evaluate_all(conditions, report)
        status = max(status, _publish(report, verdicts, output_format))
    sys.exit(status)


@click.command()
@trace_input_options(format_flag="--trace-format", seed_flag="--trace-seed", optional=True)
@click.option("--config", "config_path", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The configuration to check [default: the one stored with the trace (a "
                   "simulator export's), else kube-scheduler's defaults, as `kaudit replay`].")
@click.option("--defaults", "use_defaults", is_flag=True,
              help="Check kube-scheduler's defaults even when the trace carries a "
                   "configuration.")
@click.option("--baseline", "baseline_path", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A run summary: written by `kaudit replay ... --summary-out FILE`, "
                   "`kaudit check ... --baseline-out FILE` or `kaudit runs summary RUN FILE` "
                   "(a sweep's cell is a run). A sweep report is not a baseline: check a "
                   "sweep with --sweep.")
@click.option("--baseline-out", "baseline_out", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the checked run's summary to FILE, in the format --baseline "
                   "reads (the next baseline once the change is accepted).")
@click.option("--sweep", "sweep_path", metavar="SPEC",
              type=click.Path(path_type=Path, dir_okay=False),
              help="Check a sweep instead (`kaudit sweep` SPEC): each configuration against "
                   "the spec's baseline over seeds; a condition fails only beyond noise.")
@click.option("--scheduler", metavar="ADDRESS",
              help="With --sweep: an existing Dask scheduler [default: a local cluster].")
@click.option("--db", "db", metavar="URL",
              help="With --sweep: the database to keep the sweep in (finished cells are "
                   "reused) [default: a temporary one].")
@feature_gates_option
@plugin_option
@kubernetes_version_option(extra="A baseline replayed as another release is compared all "
                                 "the same, and the report names both releases.")
@click.option("--seed", type=SEED, help="Seed of the checked replay [default: the baseline's].")
@fail_on_option
@format_option
def check(request: IngestRequest | None, config_path: Path | None, use_defaults: bool,
          baseline_path: Path | None, baseline_out: Path | None, sweep_path: Path | None,
          scheduler: str | None, db: str | None, feature_gates: str | None,
          plugins: tuple[str, ...], kubernetes_version: str | None, seed: int | None,
          fail_on: tuple[str, ...], output_format: str) -> None:
    """Replay the trace in FILES under --config and compare with a committed baseline summary;
    or, with --sweep SPEC, run a sweep and check each configuration against its baseline.

    FILES and --snapshot are read as `kaudit ingest` reads them (several files, audit logs,
    simulator records, a List snapshot of the start; --trace-format and --trace-seed are
    ingest's --format and --seed). Needs no database: the replay happens in a temporary one.
    The trace is replayed with the baseline's seed and replay options (lifetime, latencies,
    --one-try, tie-break), so the two runs differ by their configuration only.

    A condition that cannot be evaluated (a metric either side lacks) is an input error
    (exit 2), never a pass.

    \b
    With --sweep, conditions are checked beyond noise over the sweep's seeds:
      p95_pending>baseline   the 95 % interval of (candidate − baseline) is above 0
      p95_pending>+10s       that interval is above 10 s
      pending_at_end>5       the interval of the candidate's mean is above 5
    """
    if sweep_path is not None:
        if (request is not None or baseline_path is not None or config_path is not None
                or use_defaults or baseline_out is not None or kubernetes_version is not None):
            raise click.UsageError("--sweep takes the traces and configurations from its "
                                   "spec: give no FILES, --baseline, --baseline-out, --config, "
                                   "--defaults or --kubernetes-version (a spec names releases "
                                   "with kubernetesVersion)")
        sys.exit(check_sweep(sweep_path, fail_on, output_format, db, scheduler))
    if scheduler is not None or db is not None:
        raise click.UsageError("--scheduler and --db apply to --sweep")
    if request is None:
        raise click.UsageError("give at least one trace FILE or --snapshot FILE (or --sweep "
                               "SPEC)")
    if baseline_path is None:
        raise click.UsageError(f"--baseline FILE is required ({ACCEPTED}), or check a "
                               "--sweep SPEC")
    if use_defaults and config_path is not None:
        raise click.UsageError("--defaults and --config exclude each other")
    conditions = [parse_condition(c) for c in fail_on]
    baseline = load_summary(baseline_path)
    choice = ConfigChoice(file=config_path, defaults=use_defaults,
                          feature_gates=feature_gates, plugins=plugins,
                          kubernetes_version=kubernetes_version)
    with tempfile.TemporaryDirectory(prefix="kaudit-check-") as tmp:
        engine = open_database(f"sqlite:///{Path(tmp) / 'check.db'}")
        try:
            summary = get_trace(engine, request.ingest(engine).trace_id)
            content_hash = trace_content_hash(engine, summary.id)
            expected = (baseline.document.get("trace") or {}).get("contentHash")
            if expected and expected != content_hash:
                raise InputError(f"{baseline_path}: the baseline was made from another trace "
                                 f"(trace {baseline.document['trace'].get('name')!r}); "
                                 "regenerate it")
            resolved = resolve_config(summary, choice)
            echo_resolved_config(resolved)
            release = resolved.kubernetes_version.name
            if baseline.outcomes.kubernetes_version not in (None, release):
                click.echo(f"the baseline was replayed as Kubernetes "
                           f"{baseline.outcomes.kubernetes_version}, the candidate as "
                           f"{release}", err=True)
            # The baseline's seed and replay options (lifetime, latencies, one try, ...):
            # the two runs differ by their configuration only.
            candidate = replay_stored_trace(
                engine, summary, resolved, name="candidate",
                seed=seed if seed is not None else baseline.seed or 0,
                **baseline.replay_options)
            echo_run_warnings(candidate.summary.warnings)
            report = diff_outcomes(engine, baseline.outcomes,
                                   run_outcomes(engine, "candidate"),
                                   aggregates_a=baseline.aggregates)
            report["baselineSource"] = str(baseline_path)
            if baseline_out is not None:
                write_summary(engine, "candidate", baseline_out)
        finally:
            engine.dispose()
    verdicts = evaluate_all(conditions, report)
    sys.exit(_publish(report, verdicts, output_format))


def check_sweep(spec_path: Path, fail_on: tuple[str, ...], output_format: str,
                db: str | None, scheduler: str | None) -> int:
    """Run the sweep (its unfinished cells) and check the conditions; the exit status."""
    conditions = [parse_sweep_condition(c) for c in fail_on]
    spec = read_spec(spec_path)
    with tempfile.TemporaryDirectory(prefix="kaudit-check-") as tmp:
        url = db or f"sqlite:///{Path(tmp) / 'sweep.db'}"
        engine = open_database(url)
        try:
            line = ProgressLine(sys.stderr.isatty())
            try:
                tally = run_sweep(engine, url, spec, scheduler=scheduler,
                                  progress=line if line.live else None)
            finally:
                line.close()
            report = sweep_report(engine, spec.name)
        finally:
            engine.dispose()
    verdicts = [v for c in conditions for v in evaluate_sweep(c, report)]
    if output_format == "json":
        click.echo(orjson.dumps({"report": report, "verdicts": [asdict(v) for v in verdicts]},
                                option=orjson.OPT_INDENT_2).decode())
    elif output_format == "junit":
        click.echo(sweep_junit(report, verdicts), nl=False)
    else:
        text = SWEEP_FORMATS["markdown" if output_format == "markdown" else "text"](report)
        lines = [f"- {v.message}" if output_format == "markdown" else v.message
                 for v in verdicts]
        click.echo(text + ("\n" + "\n".join(lines) + "\n" if lines else ""), nl=False)
    failed = [v for v in verdicts if v.failed]
    publish_to_github(SWEEP_FORMATS["markdown"](report) + "\n"
                      + "".join(f"- {v.message}\n" for v in verdicts),
                      [(v.condition, v.message) for v in failed])
    if tally.failed:
        click.echo(f"kaudit: {tally.failed} cell(s) of the sweep failed: "
                   f"`kaudit sweep report {spec.name}` lists them", err=True)
        return 1
    return 1 if failed else 0
