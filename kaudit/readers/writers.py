"""Write watch events out as trace files other tools (and kaudit) read.

* ``native``: kaudit's JSON Lines, ``{"ts", "type", "object"}`` (``docs/trace-format.md``).
* ``simulator``: kube-scheduler-simulator's recorder lines, ``{"time", "event", "resource"}``
  (``simulator/recorder/recorder.go``): the kinds its recorder records, a ``Delete`` carrying
  only the object's identity, as the recorder writes it.
* ``simulator-snapshot``: the simulator's export document (``simulator/snapshot/snapshot.go``)
  of the objects alive at a moment, with a ``schedulerConfig``; what its import takes.

A path ending in ``.gz`` is written gzip-compressed.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

from kaudit.model.timestamps import format_rfc3339, format_timestamp
from kaudit.readers.simulator import SNAPSHOT_KEYS

NATIVE = "native"
SIMULATOR = "simulator"
SIMULATOR_SNAPSHOT = "simulator-snapshot"
FORMATS = (NATIVE, SIMULATOR, SIMULATOR_SNAPSHOT)

_RECORD_EVENTS = {"ADDED": "Add", "MODIFIED": "Update", "DELETED": "Delete"}
_SNAPSHOT_KEY_OF = {kind: key for key, (kind, _) in SNAPSHOT_KEYS.items()}
_RELATIVE_LIMIT_US = 10 * 365 * 86_400 * 1_000_000


class Event(Protocol):
    """What the writers need of an event (``kaudit.queries.export.ExportedEvent`` fits)."""

    @property
    def ts_us(self) -> int: ...

    @property
    def type(self) -> str: ...

    @property
    def object(self) -> dict[str, Any]: ...


def open_output(path: Path | None, stdout: IO[bytes], compress: bool | None = None) -> IO[bytes]:
    """``path`` for writing (gzip when it ends in ``.gz``, or as ``compress`` says)."""
    if path is None:
        return stdout
    if compress if compress is not None else path.suffix == ".gz":
        return gzip.open(path, "wb")  # type: ignore[return-value]
    return path.open("wb")


def native_time(ts_us: int) -> Any:
    """RFC 3339 for wall-clock times, seconds for relative ones (as the trace had them)."""
    if abs(ts_us) >= _RELATIVE_LIMIT_US:
        return format_timestamp(ts_us)
    return ts_us // 1_000_000 if ts_us % 1_000_000 == 0 else ts_us / 1_000_000


def rfc3339(ts_us: int) -> str:
    """Go's time.Time text; relative trace times count from the Unix epoch."""
    return format_rfc3339(ts_us)


def write_native(events: Iterable[Event], out: IO[bytes],
                 header: dict[str, Any] | None = None) -> dict[str, int]:
    """Write ``events`` as native JSON Lines; ``header`` (a recording's header object,
    :mod:`kaudit.model.recording`) goes first, as a ``BOOKMARK`` at the first event's time."""
    counts: dict[str, int] = {}
    for event in events:
        if header is not None:
            out.write(orjson.dumps({"ts": native_time(event.ts_us), "type": "BOOKMARK",
                                    "object": header}))
            out.write(b"\n")
            header = None
        out.write(orjson.dumps({"ts": native_time(event.ts_us), "type": event.type,
                                "object": event.object}))
        out.write(b"\n")
        kind = str(event.object.get("kind"))
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _identity(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata") or {}
    kept = {k: metadata[k] for k in ("name", "namespace") if metadata.get(k)}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}


def write_simulator_records(events: Iterable[Event], out: IO[bytes]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in events:
        kind = str(event.object.get("kind"))
        if kind not in _SNAPSHOT_KEY_OF:
            counts.setdefault("(left out)", 0)
            counts["(left out)"] += 1
            continue
        resource = _identity(event.object) if event.type == "DELETED" else event.object
        out.write(orjson.dumps({"time": rfc3339(event.ts_us),
                                "event": _RECORD_EVENTS[event.type], "resource": resource}))
        out.write(b"\n")
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def write_simulator_snapshot(events: Iterable[Event], out: IO[bytes],
                             scheduler_config: dict[str, Any] | None,
                             at_us: int | None = None) -> dict[str, int]:
    """The objects alive at ``at_us`` (default: after the last event) as one export."""
    alive: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event in events:
        if at_us is not None and event.ts_us > at_us:
            break
        kind = str(event.object.get("kind"))
        if kind not in _SNAPSHOT_KEY_OF:
            continue
        metadata = event.object.get("metadata") or {}
        key = (kind, metadata.get("namespace") or "", metadata.get("name") or "")
        if event.type == "DELETED":
            alive.pop(key, None)
        else:
            alive[key] = event.object
    document: dict[str, Any] = {key: [] for key in
                                ("pods", "nodes", "pvs", "pvcs", "storageClasses",
                                 "priorityClasses", "namespaces")}
    for (kind, _, _), obj in alive.items():
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        # DRA lists only when there are DRA objects (the simulator's own export has none).
        document.setdefault(_SNAPSHOT_KEY_OF[kind], []).append(body)
    config = dict(scheduler_config or {})
    config.pop("apiVersion", None)
    config.pop("kind", None)
    document["schedulerConfig"] = config
    out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    out.write(b"\n")
    counts: dict[str, int] = {}
    for kind, _, _ in alive:
        counts[kind] = counts.get(kind, 0) + 1
    return counts
