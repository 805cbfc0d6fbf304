"""Per pod row, what preemption's dry run reads of every assigned pod, as arrays.

The cluster state gives every pod it accounts a row (``ClusterState.pod_row``); a removed pod's
row stays, marked. Beside the rows' slots, namespaces and labels, a cluster state keeps these
columns for ``kaudit/plugins/preemption_columns.py``: whether the row's pod is still assigned,
its priority, its start time (``NO_START_TIME`` without one), its ``PodInfo.base_row`` (and
whether it has one) and the pod itself, released when it leaves. Only the state a replay or
``whatif`` schedules against keeps them: forks share nothing here and keep none.
"""

from __future__ import annotations

import numpy as np

from kaudit.model.pod import PodInfo
from kaudit.model.timestamps import start_time_us

#: ``start`` of a pod without a start time (the scheduler counts it as starting now).
NO_START_TIME = np.iinfo(np.int64).min


class VictimColumns:
    def __init__(self, capacity: int) -> None:
        self.live = np.zeros(capacity, dtype=bool)
        self.priority = np.zeros(capacity, dtype=np.int64)
        self.start = np.zeros(capacity, dtype=np.int64)
        self.base = np.zeros((capacity, 5), dtype=np.int64)
        self.plain = np.zeros(capacity, dtype=bool)
        self.pods: list[PodInfo | None] = []

    def enter(self, row: int, pod: PodInfo) -> None:
        """Fill row ``row`` (the next one) with ``pod``."""
        if row >= len(self.live):
            extra = len(self.live)
            self.live = np.concatenate([self.live, np.zeros(extra, bool)])
            self.priority = np.concatenate([self.priority, np.zeros(extra, np.int64)])
            self.start = np.concatenate([self.start, np.zeros(extra, np.int64)])
            self.base = np.vstack([self.base, np.zeros((extra, 5), np.int64)])
            self.plain = np.concatenate([self.plain, np.zeros(extra, bool)])
        assert row == len(self.pods), "rows are filled in order"
        self.pods.append(pod)
        self.live[row] = True
        self.priority[row] = pod.priority
        started = start_time_us(pod.start_time)
        self.start[row] = NO_START_TIME if started is None else started
        if pod.base_row is None:
            self.base[row] = 0
            self.plain[row] = False
        else:
            self.base[row] = pod.base_row
            self.plain[row] = True

    def leave(self, row: int) -> None:
        self.live[row] = False
        self.pods[row] = None
