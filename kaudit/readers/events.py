"""The items readers produce: a validated watch event, or a rejected line and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")

#: Kinds the replay engine uses; any other kind is kept and counted but not used.
REPLAY_KINDS = frozenset({
    "Node", "Pod", "PriorityClass", "Namespace", "PodDisruptionBudget", "PersistentVolume",
    "PersistentVolumeClaim", "StorageClass", "CSINode", "Service", "ReplicationController",
    "ReplicaSet", "StatefulSet",
})


@dataclass(slots=True)
class WatchEvent:
    """One watch event with its time (microseconds) and where it came from."""

    ts_us: int
    type: str
    kind: str
    namespace: str
    name: str
    uid: str | None
    object: dict[str, Any]
    line: int


@dataclass(slots=True)
class Rejected:
    """A line (or item) that could not be used, with the reason."""

    line: int | None
    reason: str
    text: str | None = None
