"""SchedulingGates: a pod with ``spec.schedulingGates`` is not scheduled until they are gone.

Mirrors ``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go`` (v1.34).
"""

from __future__ import annotations

from kaudit.framework.plugin import PreEnqueuePlugin
from kaudit.framework.status import Code, Status
from kaudit.plugins import names


class SchedulingGates(PreEnqueuePlugin):
    name = names.SCHEDULING_GATES

    def pre_enqueue(self, pod):  # type: ignore[no-untyped-def]
        if not pod.scheduling_gates:
            return Status.success()
        return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                         f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")
