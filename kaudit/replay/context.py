"""What every collaborator of a replay shares: the cluster state, the clock, the event log and
its timeline, the options and the summary being counted."""

from __future__ import annotations

from dataclasses import dataclass

from kaudit.cluster.state import ClusterState
from kaudit.eventlog.sink import EventSink
from kaudit.eventlog.timeline import NoTimeline, Timeline
from kaudit.replay.clock import EventLoop
from kaudit.replay.options import ReplayOptions, ReplaySummary


@dataclass(frozen=True)
class ReplayContext:
    cluster: ClusterState
    loop: EventLoop
    sink: EventSink
    timeline: Timeline | NoTimeline
    options: ReplayOptions
    summary: ReplaySummary
