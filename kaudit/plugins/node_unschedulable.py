"""NodeUnschedulable: cordoned nodes take only pods tolerating the unschedulable taint.

Mirrors ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go`` (v1.34).
"""

from __future__ import annotations

from kaudit.framework.plugin import FilterPlugin, NodeVerdicts
from kaudit.framework.status import Code
from kaudit.model.pod import Taint, tolerated
from kaudit.plugins import names

REASON = "node(s) were unschedulable"
UNKNOWN_CONDITION = "node(s) had unknown conditions"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable(FilterPlugin):
    name = names.NODE_UNSCHEDULABLE

    def filter(self, state, pod, cluster, slots):  # type: ignore[no-untyped-def]
        if tolerated(UNSCHEDULABLE_TAINT, pod.tolerations):
            return NodeVerdicts.passing(len(slots))
        return NodeVerdicts.from_mask(cluster.unschedulable[slots],
                                      Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)
