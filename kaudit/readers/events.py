"""The items readers produce: a validated watch event, or a rejected line and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")



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


@dataclass
class StreamStats:
    """What a reader saw in one input file: its format, lines, and what it left out and why.

    ``dropped`` is for records that are valid but carry nothing replayable (a read request in
    an audit log, a patch logged without its body); invalid records are :class:`Rejected`.
    """

    format: str | None = None
    lines: int = 0
    bookmarks: int = 0
    #: reason -> [count, first line (or None)]
    dropped: dict[str, list[Any]] = field(default_factory=dict)
    #: A KubeSchedulerConfiguration the file carries (a simulator snapshot's schedulerConfig).
    scheduler_config: dict[str, Any] | None = None
    #: The Kubernetes release the file says it was recorded from (a ``kaudit record``
    #: header's, an audit log's kube-scheduler user agent's), as it says it.
    kubernetes_version: str | None = None
    #: Format-specific facts worth reporting (the Alibaba trace's GPU load, say).
    details: dict[str, Any] = field(default_factory=dict)

    def drop(self, reason: str, line: int | None) -> None:
        entry = self.dropped.get(reason)
        if entry is None:
            self.dropped[reason] = [1, line]
        else:
            entry[0] += 1

    @property
    def dropped_count(self) -> int:
        return sum(count for count, _ in self.dropped.values())
