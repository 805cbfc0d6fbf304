"""NodeName: the pod's ``spec.nodeName``, if set, must be the node.

Mirrors ``pkg/scheduler/framework/plugins/nodename/node_name.go`` (Kubernetes v1.34). From
v1.37 it has a PreFilter too: a pod with ``spec.nodeName`` set is evaluated on that node only
(the others are left out by the PreFilterResult).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, ClusterEventWithHint, register
from kaudit.framework.plugin import FilterPlugin, NodeVerdicts, PreFilterPlugin, PreFilterResult
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names

REASON = "node(s) didn't match the requested node name"


class NodeName(PreFilterPlugin, FilterPlugin):
    name = names.NODE_NAME
    #: Upstream's NodeName has a PreFilter from v1.37.
    points_since = MappingProxyType({"v1.37": frozenset({"PreFilter"})})
    signs_pods = True
    reads_only_its_node = True
    added_pods_only_hinder = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.NODE_NAME, pod.node_name),)

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the node and the sums only

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(NODE, "Add")]

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        """v1.37: only the node of ``spec.nodeName``, when set."""
        if pod.node_name:
            return PreFilterResult(frozenset({pod.node_name})), Status.success()
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        if not pod.node_name:
            return NodeVerdicts.passing(len(slots))
        wanted = cluster.slot_of.get(pod.node_name, -1)
        return NodeVerdicts.from_mask(np.asarray(slots) != wanted,
                                      Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)

