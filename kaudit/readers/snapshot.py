"""Read cluster snapshots: a Kubernetes List (``kubectl get nodes,pods -A -o json``), JSON or YAML.

Every item becomes an ``ADDED`` event at the trace's start; its ``line`` is the item's 1-based
position in the snapshot. A single object, several YAML documents, or a kube-scheduler-simulator
export (:mod:`kaudit.readers.simulator`) are accepted too. Errors name the file and the item
(``items[3].spec...``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

from kaudit.errors import TraceError
from kaudit.input_limits import (
    TOO_DEEP,
    ValueLimitError,
    load_json,
    load_yaml_documents,
)
from kaudit.readers import simulator
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.files import read_all
from kaudit.readers.validate import ObjectError, type_name, validate_object

LIST = "list"


WATCH_EVENT_HINT = ("this looks like a pretty-printed watch event; watch events are read "
                    "as JSON Lines, one compact event per line, as `jq -c .` writes them")


def _looks_like_watch_event(doc: Any) -> bool:
    return isinstance(doc, dict) and "kind" not in doc and "type" in doc and "object" in doc


def _documents(path: Path, content: bytes) -> list[Any]:
    text = content.lstrip()
    if text[:1] in (b"{", b"["):
        try:
            return [load_json(content)]
        except ValueLimitError as exc:
            raise TraceError(str(path), None, str(exc)) from None
        except orjson.JSONDecodeError as exc:
            hint = ""
            if exc.msg.startswith("unexpected content after document"):
                try:
                    first = orjson.loads(content[:exc.pos])
                except orjson.JSONDecodeError:
                    first = None
                hint = f" ({WATCH_EVENT_HINT})" if _looks_like_watch_event(first) else ""
            raise TraceError(str(path), exc.lineno, f"invalid JSON: {exc.msg}{hint}") from None
    try:
        return load_yaml_documents(content)
    except ValueLimitError as exc:
        raise TraceError(str(path), None, str(exc)) from None
    except RecursionError:
        raise TraceError(str(path), None, f"invalid YAML: {TOO_DEEP}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise TraceError(str(path), line, f"invalid YAML: {problem}") from None


def _items(path: Path, documents: list[Any]) -> Iterator[tuple[str, Any]]:
    """(field path, object) for every object in the documents."""
    for number, doc in enumerate(documents):
        prefix = f"documents[{number}]." if len(documents) > 1 else ""
        if _looks_like_watch_event(doc):
            raise TraceError(str(path), None, f"{prefix or 'document'}.kind: missing "
                                              f"({WATCH_EVENT_HINT})")
        is_list = isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List")
        if isinstance(doc, dict) and (isinstance(doc.get("items"), list) or
                                      (is_list and "items" in doc)):
            items = doc["items"]
            if items is None:
                continue
            if not isinstance(items, list):
                raise TraceError(str(path), None, f"{prefix}items: a {doc['kind']}'s items "
                                                  f"must be a list, not {type_name(items)}")
            for index, item in enumerate(items):
                yield f"{prefix}items[{index}]", item
        elif isinstance(doc, list):
            for index, item in enumerate(doc):
                yield f"{prefix}[{index}]", item
        elif isinstance(doc, dict):
            yield prefix.rstrip(".") or "document", doc
        else:
            raise TraceError(str(path), None, f"{prefix or 'document'}: expected a Kubernetes "
                                              "List or object")


def read_snapshot(path: Path, ts_us: int,
                  stats: StreamStats | None = None) -> Iterator[WatchEvent | Rejected]:
    """Yield an ``ADDED`` event at ``ts_us`` for every object of the snapshot at ``path``.

    A kube-scheduler-simulator export is read too; its ``schedulerConfig`` lands in
    ``stats.scheduler_config``.
    """
    stats = stats if stats is not None else StreamStats()
    documents = _documents(path, read_all(path))
    if len(documents) == 1 and simulator.is_snapshot(documents[0]):
        stats.scheduler_config = simulator.scheduler_config(documents[0], path)
        yield from simulator.read_snapshot_export(path, documents[0], ts_us, stats)
        return
    stats.format = LIST
    for position, (where, item) in enumerate(_items(path, documents), start=1):
        try:
            kind, namespace, name, uid = validate_object(item, "ADDED")
        except ObjectError as exc:
            reason = str(exc).replace("object", where, 1)
            yield Rejected(None, reason, orjson.dumps(item)[:1000].decode(errors="replace"))
            continue
        yield WatchEvent(ts_us, "ADDED", kind, namespace, name, uid, item, position)
        stats.lines = position


def load_objects(path: Path) -> list[dict[str, Any]]:
    """Every object of a List, object or multi-document file, validated; the first invalid
    item raises :class:`TraceError` naming the file and the field."""
    objects = []
    for element in read_snapshot(path, 0):
        if isinstance(element, Rejected):
            raise TraceError(str(path), None, element.reason)
        objects.append(element.object)
    return objects
