"""NodePorts: a requested host port must be free on the node.

Mirrors ``pkg/scheduler/framework/plugins/nodeports/node_ports.go`` and
``framework.HostPortInfo.CheckConflict`` (Kubernetes v1.34): same protocol and port conflict
when either side binds ``0.0.0.0`` or both bind the same IP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import HostPort, PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import as_pod

REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


def conflicts(used: list[HostPort], wanted: HostPort) -> bool:
    for port in used:
        if port.port != wanted.port or port.protocol != wanted.protocol:
            continue
        if wanted.ip == ANY_IP or port.ip == ANY_IP or port.ip == wanted.ip:
            return True
    return False


class NodePorts(PreFilterPlugin, FilterPlugin):
    name = names.NODE_PORTS
    signs_pods = True
    reads_only_its_node = True
    added_pods_only_hinder = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.HOST_PORTS, signing.host_ports(pod)),)

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return bool(pod.host_ports)  # the node's pods' ports, for a pod that wants some

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(POD, "Delete", _after_pod_deleted), register(NODE, "Add")]

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        if not pod.host_ports:
            return None, Status.of(Code.SKIP)
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        if not pod.host_ports:
            return NodeVerdicts.passing(len(slots))
        busy = np.fromiter(
            (bool(cluster.ports_on[s]) and any(conflicts(cluster.ports_on[s], w)
                                                for w in pod.host_ports)
             for s in slots.tolist()), bool, count=len(slots))
        return NodeVerdicts.from_mask(busy, Code.UNSCHEDULABLE, REASON)


def _after_pod_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: an assigned (or nominated) pod that held a host
    port this pod wants went away."""
    deleted = as_pod(old)
    if not deleted.node_name and not deleted.nominated_node_name:
        return QueueingHint.QUEUE_SKIP
    used = list(deleted.host_ports)
    if not used or not any(conflicts(used, wanted) for wanted in pod.host_ports):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE
