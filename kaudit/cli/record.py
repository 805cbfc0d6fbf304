"""``kaudit record``: record a live cluster's objects and their changes as a native trace."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from kaudit.cli.options import echo_json, human_duration, interactive, json_option
from kaudit.model.kinds import KINDS, parse_kinds
from kaudit.record.recorder import Recorder, RecordSummary
from kaudit.record.writer import TraceWriter


class _StatusLine:
    """A one-line progress display on stderr (a terminal), cleared before other output."""

    def __init__(self) -> None:
        self.shown = False

    def update(self, summary: RecordSummary) -> None:
        phase = "watching" if summary.watching else "listing"
        text = (f"recording: {summary.events:,} events, {phase}, "
                f"{human_duration(summary.seconds)} (Ctrl-C to stop)")
        width = shutil.get_terminal_size().columns - 1
        click.echo("\r\x1b[K" + text[:width], err=True, nl=False)
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            click.echo("\r\x1b[K", err=True, nl=False)
            self.shown = False

    def warn(self, message: str) -> None:
        self.clear()
        _warn(message)


def _warn(message: str) -> None:
    click.echo(f"kaudit: warning: {message}", err=True)


@click.command()
@click.argument("output", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--kubeconfig", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False),
              help="Kubeconfig file [default: $KUBECONFIG, else ~/.kube/config, else the "
                   "in-cluster service account].")
@click.option("--context", metavar="NAME", help="Kubeconfig context [default: the current one].")
@click.option("--kinds", metavar="LIST",
              help="Comma-separated resources to record [default: all of "
                   f"{', '.join(spec.resource for spec in KINDS)}].")
@click.option("--namespace", metavar="NS",
              help="Record the namespaced kinds of this namespace only (cluster-scoped kinds, "
                   "nodes included, are still recorded whole).")
@click.option("--duration", metavar="SECONDS", type=click.FloatRange(min=0), default=0,
              help="Stop after this many seconds [default: 0, until Ctrl-C].")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@json_option
def record(output: Path, kubeconfig: Path | None, context: str | None, kinds: str | None,
           namespace: str | None, duration: float, force: bool, as_json: bool) -> None:
    """Record a live cluster as a kaudit trace in OUTPUT (JSON Lines; gzip if it ends in .gz).

    Lists and watches the kinds replay uses, as the scheduler's own informers do: the objects
    that exist at the start come first, as ADDED events, then every change as it arrives,
    stamped with the time it was received. Ctrl-C, SIGTERM or --duration stop cleanly and
    leave a complete file; then store it with `kaudit ingest OUTPUT`.

    Needs list and watch permission on the recorded resources (see docs/recording.md).
    """
    try:
        specs = parse_kinds(kinds)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--kinds'") from None
    from kaudit.record.client import KubeClient, load_configuration

    configuration = load_configuration(kubeconfig, context)
    writer = TraceWriter(output, force=force)
    status = _StatusLine() if interactive() and not as_json else None
    try:
        client = KubeClient(configuration, connections=len(specs) + 2)
        try:
            recorder = Recorder(client, specs, namespace=namespace)
            summary = recorder.run(writer, duration or None,
                                   on_status=status.update if status else None,
                                   on_warning=status.warn if status else _warn,
                                   handle_signals=True)
        finally:
            client.close()
            if status is not None:
                status.clear()
    except BaseException:
        if writer.events:
            writer.close()
        else:
            writer.discard()  # nothing recorded: leave no empty file behind
        raise
    writer.close()
    if as_json:
        echo_json({"output": str(output), **summary.as_json()})
        return
    _report(output, summary)


def _report(output: Path, summary: RecordSummary) -> None:
    click.echo(f"recorded {summary.events:,} events in {human_duration(summary.seconds)} "
               f"to {output}")
    counts = sorted(((kind, n) for kind, n in summary.kinds.items() if n), key=lambda kv: -kv[1])
    if counts:
        click.echo("  " + ", ".join(f"{kind} {count:,}" for kind, count in counts))
    click.echo(f"  bookmarks {summary.bookmarks:,}, relists {summary.relists:,}, "
               f"warnings {len(summary.warnings)}")
    for resource, reason in summary.skipped.items():
        click.echo(f"  not recorded: {resource} ({reason})")
    if summary.kubernetes_version is not None:
        click.echo(f"  API server: Kubernetes {summary.kubernetes_version} (in the trace's "
                   "header: replays mirror that release when kaudit does)")
    click.echo(f"next: kaudit ingest {output}")
