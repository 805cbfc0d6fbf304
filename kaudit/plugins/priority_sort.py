"""PrioritySort: the activeQ order — higher priority first, then the earlier queue timestamp.

Mirrors ``pkg/scheduler/framework/plugins/queuesort/priority_sort.go`` (Kubernetes v1.34).
"""

from __future__ import annotations

from typing import Any

from kaudit.framework.plugin import QueueSortPlugin
from kaudit.plugins import names


class PrioritySort(QueueSortPlugin):
    name = names.PRIORITY_SORT

    def less(self, a: Any, b: Any) -> bool:
        """``a`` and ``b`` carry ``pod.priority`` and a queue ``timestamp``."""
        higher: bool
        if a.pod.priority != b.pod.priority:
            higher = a.pod.priority > b.pod.priority
        else:
            higher = a.timestamp < b.timestamp
        return higher

    @staticmethod
    def key(queued: Any) -> tuple[int, float]:
        """A sort key with the same order as :meth:`less`."""
        return (-queued.pod.priority, queued.timestamp)
