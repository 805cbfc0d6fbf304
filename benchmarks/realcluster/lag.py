"""How far the real scheduler's decisions precede their recording, measured from its own log.

kube-scheduler at ``-v=3`` logs each scheduling cycle as it starts (``"Attempting to schedule
pod"``, ``pkg/scheduler/schedule_one.go``) with a microsecond klog timestamp. For each
decision the audit finds in a trace (its binding, its ``PodScheduled=False`` write, its
nomination), the lag is the time from the start of the pod's last cycle before it to the
trace event that records it: the cycle, the asynchronous binding or status write, the API
server, the watch. The lags' high percentiles are the window ``kaudit audit --window`` needs
on this control plane.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kaudit.replay.audit_plan import plan_decisions
from kaudit.store.traces import StoredEvent

_ATTEMPT = re.compile(r'^I(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})\s+\d+ [^\]]+\] '
                      r'"Attempting to schedule pod" pod="([^"]+)"')


def cycle_starts(log: Path, year: int) -> dict[str, list[int]]:
    """Each pod's cycle start times (µs since the epoch), in order, from the log."""
    starts: dict[str, list[int]] = defaultdict(list)
    with open(log, errors="replace") as lines:
        for line in lines:
            match = _ATTEMPT.match(line)
            if match is None:
                continue
            month, day, hour, minute, second, micro = (int(g) for g in match.groups()[:6])
            # klog writes the local time of the scheduler's machine (this one).
            moment = datetime(year, month, day, hour, minute, second, micro).astimezone()
            starts[match.group(7)].append(int(moment.timestamp() * 1_000_000))
    for times in starts.values():
        times.sort()
    return dict(starts)


def _percentile(values: list[float], share: float) -> float:
    index = min(len(values) - 1, max(0, round(share * (len(values) - 1))))
    return values[index]


def decision_lags(events: Iterable[StoredEvent], log: Path) -> dict[str, Any]:
    """The lag of every decision of ``events`` (a whole trace) behind its cycle's start:
    count, the decisions without a logged cycle, and percentiles in milliseconds."""
    events = list(events)
    year = datetime.fromtimestamp(events[0].ts_us / 1e6, tz=UTC).year if events else 1970
    starts = cycle_starts(log, year)
    lags: list[float] = []
    unmatched = 0
    for decision in plan_decisions(events).decisions:
        times = starts.get(decision.pod, [])
        at = bisect.bisect_right(times, decision.ts_us)
        if at == 0:
            unmatched += 1
            continue
        lags.append((decision.ts_us - times[at - 1]) / 1000)
    lags.sort()
    figures: dict[str, Any] = {"decisions": len(lags), "withoutCycle": unmatched}
    if lags:
        figures.update({f"p{round(share * 100)}Ms": round(_percentile(lags, share), 1)
                        for share in (0.5, 0.9, 0.99)})
        figures["maxMs"] = round(lags[-1], 1)
    return figures
