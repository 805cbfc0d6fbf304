"""Read JSON Lines watch streams: kaudit's native format and ``kubectl --output-watch-events``.

Native lines are ``{"ts": ..., "type": ..., "object": {...}}`` (see ``docs/trace-format.md``).
``kubectl get ... --watch --output-watch-events -o json`` writes the same events without
``ts``; a file's first event decides which of the two it is, and untimed events are placed at
``start + i * step`` in arrival order. ``BOOKMARK`` events are skipped; ``ERROR`` events and
every malformed line are reported as :class:`~kaudit.readers.events.Rejected` with the reason.
A ``BOOKMARK`` whose object is a recording's header (:mod:`kaudit.model.recording`, which
``kaudit record`` writes first) names the Kubernetes release the trace was recorded from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from kaudit.input_limits import ValueLimitError, load_json
from kaudit.model.recording import header_release, is_header
from kaudit.model.timestamps import MAX_SECONDS, parse_timestamp
from kaudit.readers.events import EVENT_TYPES, Rejected, StreamStats, WatchEvent
from kaudit.readers.files import iter_lines, snippet
from kaudit.readers.validate import ObjectError, validate_object

NATIVE = "native"
KUBECTL_WATCH = "kubectl-watch"



@dataclass
class UntimedClock:
    """Times for events without ``ts``: ``start_us``, then ``step_us`` apart, across files."""

    start_us: int
    step_us: int
    count: int = 0

    def next(self) -> int:
        ts = self.start_us + self.count * self.step_us
        self.count += 1
        return ts



def _shape_hint(doc: object) -> str:
    if not isinstance(doc, dict):
        return "not a watch event: expected {\"ts\", \"type\", \"object\"}"
    if doc.get("kind") == "List" or isinstance(doc.get("items"), list):
        return "a Kubernetes List, not a watch event: pass it with --snapshot"
    if "kind" in doc and "metadata" in doc:
        return ("a bare object, not a watch event: record with "
                "`kubectl get ... --watch --output-watch-events -o json`, or pass a List "
                "with --snapshot")
    return "not a watch event: expected {\"ts\", \"type\", \"object\"}"


def read_watch_stream(path: Path, clock: UntimedClock, stats: StreamStats,
                      progress: Callable[[int], None] | None = None
                      ) -> Iterator[WatchEvent | Rejected]:
    """Yield the events of one JSON Lines file, or a :class:`Rejected` per bad line."""
    for number, line in iter_lines(path, progress):
        stats.lines = number
        if not line.strip():
            continue
        try:
            doc = load_json(line)
        except ValueLimitError as exc:
            yield Rejected(number, str(exc), snippet(line))
            continue
        except orjson.JSONDecodeError as exc:
            stripped = line.strip()
            if number == 1 and stripped in (b"{", b"["):
                reason = ("not JSON Lines: the file looks like indented JSON; use --snapshot "
                          "for a List, or record with --output-watch-events")
            else:
                reason = f"invalid JSON: {exc}"
            yield Rejected(number, reason, snippet(line))
            continue
        if not isinstance(doc, dict) or "type" not in doc or "object" not in doc:
            yield Rejected(number, _shape_hint(doc), snippet(line))
            continue
        event_type = doc["type"]
        if event_type == "BOOKMARK":
            if not is_header(doc["object"]):
                stats.bookmarks += 1
            elif stats.kubernetes_version is None:
                stats.kubernetes_version = header_release(doc["object"])
            continue
        if event_type == "ERROR":
            status = doc["object"] if isinstance(doc["object"], dict) else {}
            yield Rejected(number, f"watch ERROR event: {status.get('code', '?')} "
                                   f"{status.get('reason', '')}: {status.get('message', '')}",
                           snippet(line))
            continue
        if event_type not in EVENT_TYPES:
            yield Rejected(number, f"type: {event_type!r} is not one of ADDED, MODIFIED, "
                                   "DELETED (or BOOKMARK, ERROR)", snippet(line))
            continue

        has_ts = "ts" in doc
        if stats.format is None:
            stats.format = NATIVE if has_ts else KUBECTL_WATCH
        if stats.format == NATIVE:
            if not has_ts:
                yield Rejected(number, "ts: missing (earlier events of this file have one)",
                               snippet(line))
                continue
            try:
                ts_us = parse_timestamp(doc["ts"])
            except ValueError as exc:
                yield Rejected(number, f"ts: {exc}", snippet(line))
                continue
        elif has_ts:
            yield Rejected(number, "ts: unexpected (earlier events of this file have none)",
                           snippet(line))
            continue
        else:
            ts_us = clock.next()
            if abs(ts_us) > MAX_SECONDS * 1_000_000:
                yield Rejected(number, "ts: --start plus this event's position times --step "
                                       "is beyond the year 9999", snippet(line))
                continue

        try:
            kind, namespace, name, uid = validate_object(doc["object"], event_type)
        except ObjectError as exc:
            yield Rejected(number, str(exc), snippet(line))
            continue
        yield WatchEvent(ts_us, event_type, kind, namespace, name, uid, doc["object"], number)
