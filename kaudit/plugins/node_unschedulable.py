"""NodeUnschedulable: cordoned nodes take only pods tolerating the unschedulable taint.

Mirrors ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go`` (v1.34).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import FilterPlugin, NodeVerdicts, PreFilterPlugin, PreFilterResult
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo, Taint, tolerated
from kaudit.plugins import names
from kaudit.plugins.hint_objects import as_node, as_pod, pod_uid

REASON = "node(s) were unschedulable"
UNKNOWN_CONDITION = "node(s) had unknown conditions"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable(PreFilterPlugin, FilterPlugin):
    name = names.NODE_UNSCHEDULABLE
    #: Upstream's plugin has a PreFilter from v1.37 (a no-op unless a deferred resize skips
    #: the pod, which needs an alpha gate kaudit refuses).
    points_since = MappingProxyType({"v1.37": frozenset({"PreFilter"})})
    signs_pods = True
    reads_only_its_node = True
    added_pods_only_hinder = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.TOLERATIONS, signing.tolerations(pod)),)

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the node and the sums only

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(NODE, ["Add", "UpdateNodeTaint"], _after_node_change),
                register(POD, "UpdatePodToleration", _after_toleration_change)]

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        """v1.37's PreFilter: nothing to precompute."""
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        if tolerated(UNSCHEDULABLE_TAINT, pod.tolerations):
            return NodeVerdicts.passing(len(slots))
        return NodeVerdicts.from_mask(cluster.unschedulable[slots],
                                      Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)


def _after_node_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterNodeChange``: a schedulable node was added, or a node was
    uncordoned."""
    original, modified = as_node(old), as_node(new)
    if not modified.unschedulable and (original is None or original.unschedulable):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_toleration_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodTolerationChange``: the pod itself now tolerates the
    unschedulable taint."""
    as_pod(old)
    modified = as_pod(new)
    if pod_uid(modified) != pod.uid:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if tolerated(UNSCHEDULABLE_TAINT, modified.tolerations) \
        else QueueingHint.QUEUE_SKIP
