"""Read kube-scheduler-simulator's files: its recorder's JSON Lines and its snapshot export.

*Records* (``sched-recorder --path FILE``, ``simulator/recorder/recorder.go``) are lines of
``{"time": RFC 3339, "event": "Add" | "Update" | "Delete", "resource": {...}}``: ``time`` is
when the recorder saw the change; a ``Delete`` carries only the object's identity.

A *snapshot* (``GET /api/v1/export``, ``simulator/snapshot/snapshot.go``) is one JSON or YAML
document ``{"pods": [...], "nodes": [...], "pvs", "pvcs", "storageClasses",
"priorityClasses", "namespaces", "schedulerConfig"}`` (kaudit also reads ``deviceClasses``,
``resourceSlices``, ``resourceClaimTemplates`` and ``resourceClaims``, which the simulator does
not export). Its objects have no ``kind`` (they are
typed lists): it comes from the key. Objects become ``ADDED`` events at the trace's start, in
the order the simulator's importer applies them; ``schedulerConfig`` (a
``KubeSchedulerConfiguration`` without ``apiVersion``/``kind``) is returned so that it can be
stored with the trace and used by replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from kaudit.errors import TraceError
from kaudit.input_limits import ValueLimitError, load_json
from kaudit.model.timestamps import parse_timestamp
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.files import SNIPPET, iter_lines, snippet
from kaudit.readers.validate import ObjectError, validate_object

SIMULATOR_RECORDS = "simulator-records"
SIMULATOR_SNAPSHOT = "simulator-snapshot"

RECORD_EVENTS = {"Add": "ADDED", "Update": "MODIFIED", "Delete": "DELETED"}

#: Snapshot keys in the order the simulator's importer creates them, with kind and apiVersion.
SNAPSHOT_KEYS: dict[str, tuple[str, str]] = {
    "namespaces": ("Namespace", "v1"),
    "priorityClasses": ("PriorityClass", "scheduling.k8s.io/v1"),
    "storageClasses": ("StorageClass", "storage.k8s.io/v1"),
    "pvcs": ("PersistentVolumeClaim", "v1"),
    "nodes": ("Node", "v1"),
    "pvs": ("PersistentVolume", "v1"),
    # Not in the simulator's export (it has no DRA objects); read so that a snapshot can
    # carry a DRA cluster under the names of its other typed lists.
    "deviceClasses": ("DeviceClass", "resource.k8s.io/v1"),
    "resourceSlices": ("ResourceSlice", "resource.k8s.io/v1"),
    "resourceClaimTemplates": ("ResourceClaimTemplate", "resource.k8s.io/v1"),
    "resourceClaims": ("ResourceClaim", "resource.k8s.io/v1"),
    "pods": ("Pod", "v1"),
}
CONFIG_KEY = "schedulerConfig"
CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"
CONFIG_KIND = "KubeSchedulerConfiguration"



def is_record(doc: Any) -> bool:
    return isinstance(doc, dict) and "event" in doc and "resource" in doc


def is_snapshot(doc: Any) -> bool:
    """A simulator export: an object with snapshot keys and no ``kind`` of its own."""
    return (isinstance(doc, dict) and "kind" not in doc
            and any(key in doc for key in (*SNAPSHOT_KEYS, CONFIG_KEY)))


def read_records(path: Path, stats: StreamStats,
                 progress: Callable[[int], None] | None = None
                 ) -> Iterator[WatchEvent | Rejected]:
    """The events of a recorder file, or a :class:`Rejected` per bad line."""
    stats.format = SIMULATOR_RECORDS
    uids: dict[tuple[str, str, str], str] = {}
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
            yield Rejected(number, f"invalid JSON: {exc}", snippet(line))
            continue
        if not is_record(doc):
            yield Rejected(number, 'not a simulator record: expected {"time", "event", '
                                   '"resource"}', snippet(line))
            continue
        event_type = RECORD_EVENTS.get(doc["event"]) if isinstance(doc["event"], str) else None
        if event_type is None:
            yield Rejected(number, f"event: {doc['event']!r} is not one of Add, Update, Delete",
                           snippet(line))
            continue
        if "time" not in doc:
            yield Rejected(number, "time: missing", snippet(line))
            continue
        try:
            ts_us = parse_timestamp(doc["time"])
        except ValueError as exc:
            yield Rejected(number, f"time: {exc}", snippet(line))
            continue
        try:
            kind, namespace, name, uid = validate_object(doc["resource"], event_type)
        except ObjectError as exc:
            yield Rejected(number, str(exc).replace("object", "resource", 1), snippet(line))
            continue
        resource = doc["resource"]
        key = (kind, namespace, name)
        if event_type == "DELETED":
            # The recorder writes only the name of a deleted object: give it the uid it had,
            # or replay would not find it.
            known = uids.pop(key, None)
            if uid is None and known is not None:
                uid = known
                resource = {**resource, "metadata": {**resource["metadata"], "uid": uid}}
        elif uid is not None:
            uids[key] = uid
        yield WatchEvent(ts_us, event_type, kind, namespace, name, uid, resource, number)


def scheduler_config(doc: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """The snapshot's ``schedulerConfig`` as a complete KubeSchedulerConfiguration, or None."""
    config = doc.get(CONFIG_KEY)
    if config is None or config == {}:
        return None
    if not isinstance(config, dict):
        raise TraceError(str(path), None, f"{CONFIG_KEY}: must be an object")
    return {"apiVersion": CONFIG_API_VERSION, "kind": CONFIG_KIND,
            **{k: v for k, v in config.items() if k not in ("apiVersion", "kind")}}


def read_snapshot_export(path: Path, doc: dict[str, Any], ts_us: int,
                         stats: StreamStats) -> Iterator[WatchEvent | Rejected]:
    """An ``ADDED`` event at ``ts_us`` for every object of the export ``doc``."""
    stats.format = SIMULATOR_SNAPSHOT
    for key in doc:
        if key not in SNAPSHOT_KEYS and key != CONFIG_KEY:
            stats.drop(f"key {key!r}: not part of a simulator snapshot", None)
    position = 0
    for key, (kind, api_version) in SNAPSHOT_KEYS.items():
        items = doc.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise TraceError(str(path), None, f"{key}: must be a list of {kind} objects")
        for index, item in enumerate(items):
            position += 1
            where = f"{key}[{index}]"
            if isinstance(item, dict):
                item = {"apiVersion": api_version, **item, "kind": kind}
            try:
                _, namespace, name, uid = validate_object(item, "ADDED")
            except ObjectError as exc:
                yield Rejected(None, str(exc).replace("object", where, 1),
                               orjson.dumps(item)[:SNIPPET].decode(errors="replace"))
                continue
            yield WatchEvent(ts_us, "ADDED", kind, namespace, name, uid, item, position)
        stats.lines = position
