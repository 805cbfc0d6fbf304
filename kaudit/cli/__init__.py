"""The ``kaudit`` command line: one module per command group, errors without tracebacks.

Every command takes ``--db URL`` (or ``KAUDIT_DB``; default ``kaudit.db`` in the working
directory). Input and usage errors exit with code 2, other failures with 1.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.errors import Interrupted, KauditError


class KauditGroup(click.Group):
    """A click group that turns :class:`KauditError` into a one-line message and exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KauditError as exc:
            click.echo(f"kaudit: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("kaudit: interrupted", err=True)
            sys.exit(130)
        except Interrupted as exc:
            click.echo(f"kaudit: terminated ({exc})", err=True)
            sys.exit(143)


@click.group(cls=KauditGroup, context_settings={"help_option_names": ["-h", "--help"],
                                                "max_content_width": 100})
@click.version_option(__version__, prog_name="kaudit",
                      message=f"%(prog)s %(version)s (mirrors Kubernetes {KUBERNETES_VERSION} "
                              "kube-scheduler)")
def cli() -> None:
    """kaudit: replay Kubernetes cluster traces through a faithful kube-scheduler and explain
    every scheduling decision.

    \b
    Start with `kaudit demo`, or:
      kaudit record trace.jsonl        record a live cluster (list + watch)
      kaudit ingest trace.jsonl        store a trace (watch, audit log, simulator, Alibaba)
      kaudit traces                    list stored traces
      kaudit whatif --cluster S --pod P   where would this pod go, and why
      kaudit config show               the effective scheduler configuration
      kaudit sweep SPEC.yaml           traces × configurations × seeds, on Dask
      kaudit serve                     the dashboard, in the browser
    """


def _register() -> None:
    from kaudit.cli import (
        check,
        config,
        db,
        demo,
        diff,
        export,
        gpu_report,
        ingest,
        record,
        replay,
        serve,
        sweep,
        traces,
        whatif,
    )

    for command in (config.config, whatif.whatif, db.db, record.record, ingest.ingest,
                    traces.traces, demo.demo, replay.replay, replay.runs, replay.explain,
                    replay.events, gpu_report.gpu_report_command, diff.diff, check.compare,
                    check.check, export.export,
                    sweep.sweep, serve.serve):
        cli.add_command(command)

_register()


def main() -> None:
    cli(prog_name="kaudit")
