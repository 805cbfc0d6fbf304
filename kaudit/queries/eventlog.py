"""A run's event log, a page at a time, filtered by kind, pod, node, plugin and time.

``pod`` is a ``NAMESPACE/NAME`` key, or a pattern with ``*`` wildcards (``web/*``); ``plugin``
keeps the attempts in which that plugin rejected at least one node (the attempt's
``rejectedBy``, indexed in ``run_rejections``); ``since`` and ``until`` are seconds
since the run's start. The total is counted with the same filters, so pages can be numbered.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from sqlalchemy import Engine, Select, func, select

from kaudit.errors import InputError
from kaudit.eventlog.records import RecordKind
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.record_text import log_line
from kaudit.queries.timeline import Span
from kaudit.store.models import RunEvent, RunRejection

KINDS = tuple(kind.value for kind in RecordKind)
MAX_LIMIT = 500
_PLUGIN_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,100}$")


@dataclass(frozen=True)
class EventFilter:
    kind: str | None = None
    pod: str | None = None
    node: str | None = None
    plugin: str | None = None
    since: float | None = None
    until: float | None = None

    def validate(self) -> EventFilter:
        check_kind(self.kind, "kind")
        if self.plugin is not None and not _PLUGIN_NAME.match(self.plugin):
            raise InputError(f"plugin: {self.plugin!r} is not a plugin name")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise InputError("since must not be after until")
        return self


def check_kind(kind: str | None, name: str) -> None:
    """Refuse a record kind the log does not have, naming the closest one."""
    if kind is None or kind in KINDS:
        return
    close = difflib.get_close_matches(kind, KINDS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise InputError(f"{name}: unknown record kind {kind!r}; {hint}one of {', '.join(KINDS)}")


def _like(pattern: str) -> str:
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


SelectT = TypeVar("SelectT", bound=Select[*tuple[Any, ...]])

def _filtered(query: SelectT, run_id: int, span: Span,
              where: EventFilter) -> SelectT:
    query = query.where(RunEvent.run_id == run_id)
    if where.kind is not None:
        query = query.where(RunEvent.kind == where.kind)
    if where.pod is not None:
        query = (query.where(RunEvent.pod.like(_like(where.pod), escape="\\"))
                 if "*" in where.pod else query.where(RunEvent.pod == where.pod))
    if where.node is not None:
        query = query.where(RunEvent.node == where.node)
    if where.plugin is not None:
        query = query.where(RunEvent.kind == "attempt", RunEvent.seq.in_(
            select(RunRejection.seq).where(RunRejection.run_id == run_id,
                                           RunRejection.plugin == where.plugin)))
    if where.since is not None:
        query = query.where(RunEvent.ts_us >= span.at(where.since))
    if where.until is not None:
        query = query.where(RunEvent.ts_us <= span.at(where.until))
    return query


def events_page(engine: Engine, run_id: int, span: Span, where: EventFilter, *,
                offset: int = 0, limit: int = 100) -> dict[str, Any]:
    if offset < 0:
        raise InputError("offset must not be negative")
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be between 1 and {MAX_LIMIT}")
    where = where.validate()
    rows_query = _filtered(select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.pod,
                                  RunEvent.node, RunEvent.data), run_id, span, where)
    with engine.connect() as connection:
        if where == EventFilter():
            # The whole log: seq numbers a run's records 0, 1, 2, ... so a page is a range of
            # seq, read from the key, however deep (OFFSET would walk every skipped row).
            last = connection.scalar(select(RunEvent.seq).where(RunEvent.run_id == run_id)
                                     .order_by(RunEvent.seq.desc()).limit(1))
            total = 0 if last is None else last + 1
            rows = connection.execute(rows_query.where(RunEvent.seq >= offset)
                                      .order_by(RunEvent.seq).limit(limit)).all()
        else:
            total = connection.scalar(_filtered(select(func.count()).select_from(RunEvent),
                                                run_id, span, where)) or 0
            rows = connection.execute(rows_query.order_by(RunEvent.seq).offset(offset)
                                      .limit(limit)).all()
    items = []
    for seq, ts_us, kind, pod, node, data in rows:
        document = orjson.loads(data)
        text = log_line(kind, node, document)
        if kind == "attempt":
            # The per-node tables live in the blob; the list shows the attempt's verdict.
            document = {k: document[k] for k in ("result", "message", "evaluatedNodes",
                                                 "feasibleNodes", "rejectedBy", "cycle")
                        if k in document}
        items.append({"seq": seq, "t": span.t(ts_us), "time": format_timestamp(ts_us),
                      "kind": kind, "pod": pod, "node": node, "text": text,
                      "data": document})
    return {"total": total, "offset": offset, "limit": limit, "items": items}
