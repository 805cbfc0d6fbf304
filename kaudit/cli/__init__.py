"""The ``kaudit`` command line: one module per command group, errors without tracebacks.

Every command takes ``--db URL`` (or ``KAUDIT_DB``; default ``kaudit.db`` in the working
directory). Input and usage errors exit with code 2, other failures with 1.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from kaudit import KUBERNETES_VERSION, __version__, versions
from kaudit.errors import Interrupted, KauditError
from kaudit.eventlog.runs import RunRemovedError

#: Each command and where it lives, imported only when it runs (or when help lists it): a
#: command pays at start-up for its own dependencies alone (``kaudit whatif`` never loads
#: SQLAlchemy, Flask or Dask).
COMMANDS: dict[str, str] = {
    "config": "kaudit.cli.config:config",
    "whatif": "kaudit.cli.whatif:whatif",
    "db": "kaudit.cli.db:db",
    "record": "kaudit.cli.record:record",
    "ingest": "kaudit.cli.ingest:ingest",
    "traces": "kaudit.cli.traces:traces",
    "demo": "kaudit.cli.demo:demo",
    "replay": "kaudit.cli.replay:replay",
    "runs": "kaudit.cli.replay:runs",
    "explain": "kaudit.cli.replay:explain",
    "events": "kaudit.cli.replay:events",
    "gpu-report": "kaudit.cli.gpu_report:gpu_report_command",
    "diff": "kaudit.cli.diff:diff",
    "compare": "kaudit.cli.check:compare",
    "check": "kaudit.cli.check:check",
    "audit": "kaudit.cli.audit:audit",
    "export": "kaudit.cli.export:export",
    "sweep": "kaudit.cli.sweep:sweep",
    "serve": "kaudit.cli.serve:serve",
    "versions": "kaudit.cli.versions:versions",
}


class KauditGroup(click.Group):
    """A click group that loads its commands lazily (``COMMANDS``) and turns
    :class:`KauditError` into a one-line message and exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RunRemovedError as exc:  # not an error of the user's: what happened, plainly
            click.echo(f"kaudit: {exc}", err=True)
            sys.exit(exc.exit_code)
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
                      message=f"%(prog)s %(version)s (mirrors kube-scheduler of Kubernetes "
                              f"{', '.join(v.name for v in versions.SUPPORTED)}; "
                              f"{KUBERNETES_VERSION} by default)")
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
      kaudit versions                  the Kubernetes releases kaudit mirrors
      kaudit sweep SPEC.yaml           traces × configurations × seeds, on Dask
      kaudit serve                     the dashboard, in the browser
    """


def main() -> None:
    cli(prog_name="kaudit")
