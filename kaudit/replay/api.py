"""The replay's API server: writes made by plugins and by the replay's controllers.

A write is applied to the cluster state at once and its watch event is delivered to the
watchers (the replay's informer, which brings it to the scheduling queue), as an API server's
watch would. ResourceClaims written are kept in the event log as ``claim`` records, and the
resourceclaim controller (:class:`~kaudit.replay.claims.ClaimController`) follows the claims
the scheduler writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kaudit.cluster.objects import apply_object
from kaudit.cluster.state import ClusterState, object_key
from kaudit.eventlog.records import RecordKind
from kaudit.eventlog.sink import EventSink
from kaudit.framework.events import ActionType, ClusterEvent
from kaudit.replay.claims import ClaimController
from kaudit.replay.clock import EventLoop

JSON = dict[str, Any]
#: A watcher is told of each write: the cluster event, the old object and the new one.
Watcher = Callable[[ClusterEvent, Any, Any], None]


class ApiServer:
    """An :class:`~kaudit.framework.ports.ApiWriter` for plugins, and the controllers' door."""

    def __init__(self, cluster: ClusterState, loop: EventLoop, sink: EventSink) -> None:
        self.cluster = cluster
        self.loop = loop
        self.sink = sink
        self.claims = ClaimController(cluster, self.write)
        self._watchers: list[Watcher] = []

    def watch(self, watcher: Watcher) -> None:
        self._watchers.append(watcher)

    def update(self, obj: JSON) -> None:
        """A plugin's API write (DynamicResources' claim updates)."""
        if obj.get("kind") == "ResourceClaim":
            self.claims.written(obj)
        self.write(obj, False)

    def write(self, obj: JSON, deleted: bool) -> None:
        kind = str(obj.get("kind") or "")
        old = self.cluster.objects[kind].get(object_key(obj))
        apply_object(self.cluster, obj, deleted)
        action = ActionType.DELETE if deleted else (
            ActionType.UPDATE if old is not None else ActionType.ADD)
        self.record_claim(obj, "DELETED" if deleted else (
            "MODIFIED" if old is not None else "ADDED"))
        for watcher in self._watchers:
            watcher(ClusterEvent(kind, action), old, None if deleted else obj)

    def record_claim(self, claim: JSON, event_type: str) -> None:
        """A ``claim`` record: the claim as kaudit wrote or kept it, with the pod it is
        reserved for or owned by (the first), for ``kaudit export`` and the event log."""
        meta = claim.get("metadata") or {}
        pods = [ref.get("name") for ref in (claim.get("status") or {}).get("reservedFor") or []]
        pods += [ref.get("name") for ref in meta.get("ownerReferences") or []
                 if ref.get("kind") == "Pod"]
        pod = f"{meta.get('namespace')}/{pods[0]}" if pods and meta.get("namespace") else None
        self.sink.record(self.loop.now_us, RecordKind.CLAIM, pod, None,
                         {"type": event_type, "object": claim})
