"""The field types of an ``audit.k8s.io/v1`` Event, checked as the API's decoder checks them.

Mirrors the Event of ``k8s.io/apiserver/pkg/apis/audit/v1/types.go`` (Kubernetes v1.34): a
field given with the wrong JSON type is refused (Go's ``encoding/json`` would fail to decode
the event), ``responseStatus.code`` must be an ``int32``, the timestamps are
``metav1.MicroTime`` (RFC 3339 strings) and ``level`` one of the four audit levels. ``null``
stands for an absent field, as it does for Go. Objects (``requestObject``,
``responseObject``) are checked by the reader that uses them.
"""

from __future__ import annotations

from typing import Any

from kaudit.model.timestamps import parse_timestamp
from kaudit.readers.validate import INT32, type_name

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
_STRING_FIELDS = ("auditID", "stage", "verb", "requestURI", "userAgent")
#: ``timestamp`` is not a v1 field; kaudit reads it as older logs' time, so checks it too.
TIME_FIELDS = ("stageTimestamp", "timestamp", "requestReceivedTimestamp")
_OBJECT_REFERENCE_FIELDS = ("resource", "namespace", "name", "uid", "apiGroup", "apiVersion",
                            "resourceVersion", "subresource")
_STATUS_STRING_FIELDS = ("status", "message", "reason")


class EventFieldError(ValueError):
    """A field of an audit event has the wrong type; the message starts with its path."""


def check_event_fields(doc: dict[str, Any]) -> None:
    """Refuse an event whose fields do not have the types of the v1 Event
    (:class:`EventFieldError` naming the first such field)."""
    for name in _STRING_FIELDS:
        _string(doc.get(name), name)
    level = doc.get("level")
    if level is not None and level not in LEVELS:
        raise EventFieldError(f"level: must be one of {', '.join(LEVELS)}, not {level!r}"
                              if isinstance(level, str) else
                              f"level: must be a string, not {type_name(level)}")
    for name in TIME_FIELDS:
        time_problem = timestamp_problem(doc.get(name))
        if time_problem is not None:
            raise EventFieldError(f"{name}: {time_problem}")
    for name in ("user", "impersonatedUser"):
        _user_info(doc.get(name), name)
    _string_list(doc.get("sourceIPs"), "sourceIPs")
    _string_map(doc.get("annotations"), "annotations")
    ref = doc.get("objectRef")
    if ref is not None:
        _object(ref, "objectRef")
        for name in _OBJECT_REFERENCE_FIELDS:
            _string(ref.get(name), f"objectRef.{name}")
    status = doc.get("responseStatus")
    if status is not None:
        _object(status, "responseStatus")
        _int32(status.get("code"), "responseStatus.code")
        for name in _STATUS_STRING_FIELDS:
            _string(status.get(name), f"responseStatus.{name}")
    for name in ("requestObject", "responseObject"):
        value = doc.get(name)
        if value is not None and not isinstance(value, dict | list):
            raise EventFieldError(f"{name}: must be an object, not {type_name(value)}")


def timestamp_problem(value: Any) -> str | None:
    """Why ``value`` is not a ``metav1.MicroTime``, or None (also for an absent one)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return ("must be an RFC 3339 string (e.g. 2026-01-02T03:04:05.123456Z), "
                f"not {type_name(value)}")
    try:
        parse_timestamp(value)
    except ValueError as exc:
        return str(exc)
    return None


def _object(value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise EventFieldError(f"{path}: must be an object, not {type_name(value)}")


def _string(value: Any, path: str) -> None:
    if value is not None and not isinstance(value, str):
        raise EventFieldError(f"{path}: must be a string")


def _int32(value: Any, path: str) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise EventFieldError(f"{path}: must be an integer, not {_shown(value)}")
    if not INT32[0] <= value <= INT32[1]:
        raise EventFieldError(f"{path}: must be an int32, not {value}")


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str | float) and len(repr(value)) <= 24 \
        else type_name(value)


def _string_list(value: Any, path: str) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise EventFieldError(f"{path}: must be a list of strings, not {type_name(value)}")
    for index, item in enumerate(value):
        _string(item, f"{path}[{index}]")


def _string_map(value: Any, path: str) -> None:
    if value is None:
        return
    _object(value, path)
    for key, item in value.items():
        _string(item, f"{path}.{key}")


def _user_info(value: Any, path: str) -> None:
    """``authentication/v1.UserInfo``: username, uid, groups and extra."""
    if value is None:
        return
    _object(value, path)
    _string(value.get("username"), f"{path}.username")
    _string(value.get("uid"), f"{path}.uid")
    _string_list(value.get("groups"), f"{path}.groups")
    extra = value.get("extra")
    if extra is not None:
        _object(extra, f"{path}.extra")
        for key, items in extra.items():
            _string_list(items, f"{path}.extra.{key}")
