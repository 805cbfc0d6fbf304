"""Options and output helpers shared by the commands."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import click
import orjson

from kaudit.config import SchedulerConfiguration
from kaudit.input_limits import MAX_INT, MIN_INT
from kaudit.queries import units
from kaudit.services.versions import FLAG, explicit_version, fallback_release, version_help

if TYPE_CHECKING:
    from sqlalchemy import Engine

db_option = click.option(
    "--db", "db", metavar="URL", envvar="KAUDIT_DB", show_envvar=True,
    help="Event-log database: an SQLite path or URL, or postgresql://user@host/dbname "
         "[default: kaudit.db in the working directory].",
)

json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print machine-readable JSON instead of text.")

#: What ``--kubernetes-version`` defaults to where a trace is replayed.
TRACE_RELEASE_DEFAULT = ("the release the trace was recorded from when kaudit mirrors its "
                         "minor, else " + fallback_release().name)


def _kubernetes_versions(ctx: click.Context, param: click.Parameter,
                         value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
    """Each release named checked now (a clear error naming the flag), as its full name."""
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(explicit_version(name).name for name in value)
    return explicit_version(value).name


def kubernetes_version_option(default: str = TRACE_RELEASE_DEFAULT, *, multiple: bool = False,
                              extra: str = "") -> Callable[[Any], Any]:
    """``--kubernetes-version V``: the release whose kube-scheduler a command mirrors, checked
    by :func:`kaudit.services.versions.explicit_version` (``1.34``, ``v1.34.2``...)."""
    return click.option(FLAG, "kubernetes_version" if not multiple else "kubernetes_versions",
                        metavar="V", multiple=multiple, callback=_kubernetes_versions,
                        help=version_help(default) + (f" {extra}" if extra else ""))


#: A seed option: an int64, as it is stored (a larger one is a usage error, not a
#: traceback when the run is written).
SEED = click.IntRange(MIN_INT, MAX_INT)


def echo_json(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], indent: int = 0) -> str:
    """A plain text table with left-aligned columns, every line indented by ``indent``."""
    cells = [[str(h) for h in headers]] + [[("" if c is None else str(c)) for c in row]
                                            for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [" " * indent + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in cells]
    return "\n".join(lines)


def interactive() -> bool:
    """True when progress bars make sense: stderr is a terminal."""
    return sys.stderr.isatty()


def human_duration(seconds: float) -> str:
    """A span of time as every door writes it (:func:`kaudit.queries.units.duration`)."""
    return units.duration(seconds)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def dropped_table(sources: Sequence[dict[str, Any]], limit: int | None = None,
                  indent: int = 4) -> str:
    """What readers left out of a trace, most frequent first: count, reason, first place."""
    rows = []
    for source in sources:
        for reason, (count, line) in (source.get("dropped") or {}).items():
            where = f"{source['path']}:{line}" if line else source["path"]
            rows.append((count, reason, where))
    rows.sort(key=lambda row: -row[0])
    shown = rows if limit is None else rows[:limit]
    lines = [" " * indent + f"{count:>9,}  {reason} (first at {where})"
             for count, reason, where in shown]
    if len(shown) < len(rows):
        lines.append(" " * indent + f"{'':>9}  … {len(rows) - len(shown)} more reasons "
                     "(`kaudit traces NAME` lists them)")
    return "\n".join(lines)


class ListingGroup(click.Group):
    """A command that lists things (``kaudit traces [NAME]``) and also has subcommands
    (``kaudit traces rm NAME``): a first argument that names no subcommand is the listing's
    own argument."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            ctx.meta["listing_argument"] = args[0]
            args = args[1:]
        return super().parse_args(ctx, args)


def remove_option(kind: str) -> Any:
    return click.option("--force", is_flag=True,
                        help=f"Remove {kind} still being replayed by a live process too.")


def remove_and_report(remover: Callable[[Engine, list[str], bool], list[str]],
                      names: tuple[str, ...], force: bool, db: str | None, as_json: bool,
                      what: str) -> None:
    """Run ``remover`` (one transaction) on the database and report what it removed."""
    from kaudit.store.schema import open_database  # not at import: whatif needs no database

    engine = open_database(db)
    try:
        removed = remover(engine, list(names), force)
    finally:
        engine.dispose()
    if as_json:
        echo_json({"removed": removed})
    else:
        click.echo(f"removed {what} {', '.join(removed)}")


def stderr_stream() -> TextIO:
    """Click's stderr text stream, for progress bars (click's own typing calls it ``object``)."""
    stream: TextIO = click.get_text_stream("stderr")  # type: ignore[operator]
    return stream


def echo_config_warnings(config: SchedulerConfiguration) -> None:
    """What loading the configuration noticed but accepted, on stderr."""
    echo_run_warnings(config.warnings)


def echo_run_warnings(warnings: Iterable[str]) -> None:
    """Warnings on stderr, so that ``--json`` output stays JSON: what a replay warned of (a
    feature its release turns on and kaudit does not model, met in the trace), or what loading
    a configuration noticed but accepted."""
    for warning in warnings:
        click.echo(f"kaudit: warning: {warning}", err=True)

