"""SchedulingGates: a pod with ``spec.schedulingGates`` is not scheduled until they are gone.

Mirrors ``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go`` (v1.34): the
PreEnqueue check, and the queueing hint that lets the pod in when its own update removes the
last gate.
"""

from __future__ import annotations

from typing import Any

from kaudit.framework.events import POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import PreEnqueuePlugin
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import pod_uid, typed


class SchedulingGates(PreEnqueuePlugin):
    name = names.SCHEDULING_GATES

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.scheduling_gates:
            return Status.success()
        return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                         f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [register(POD, "UpdatePodSchedulingGatesEliminated", _after_gates_eliminated)]


def _after_gates_eliminated(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterUpdatePodSchedulingGatesEliminated``: the pod's own update."""
    typed("Pod", old)
    typed("Pod", new)
    return QueueingHint.QUEUE if pod_uid(new) == pod.uid else QueueingHint.QUEUE_SKIP
