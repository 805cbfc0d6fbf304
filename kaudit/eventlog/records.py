"""The kinds of record in a run's event log, and the record tuple the sinks write.

Each record is ``(seq, ts_us, kind, pod, node, data, blob)``; ``data`` is sorted-key JSON and
``blob`` the packed part of an attempt (:mod:`kaudit.eventlog.codec`). What ``data`` holds for
each kind is listed in :mod:`kaudit.eventlog.sink`.
"""

from __future__ import annotations

from enum import StrEnum


class RecordKind(StrEnum):
    NODE = "node"
    WATCH = "watch"
    QUEUE = "queue"
    ATTEMPT = "attempt"
    BIND = "bind"
    BIND_FAIL = "bindfail"
    RECORDED = "recorded"
    NOMINATE = "nominate"
    PREEMPT = "preempt"
    TERMINATE = "terminate"
    DELETE = "delete"
    CREATE = "create"
    EXTENDER = "extender"
    CLAIM = "claim"
    AUDIT = "audit"


Record = tuple[int, int, str, str | None, str | None, str, bytes | None]
