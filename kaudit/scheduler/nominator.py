"""The nominator: pods nominated to a node by preemption and not bound yet.

Mirrors ``pkg/scheduler/backend/queue/nominator.go`` (Kubernetes v1.34): ``nominatedPods``
(node name → pods) and ``nominatedPodToNode`` (pod → node), ``AddNominatedPod`` (a pod's
earlier nomination replaced), ``DeleteNominatedPodIfExists`` and ``NominatedPodsForNode``.
Beside the maps it keeps the same pods summed per node (:class:`NominatedLoad`), so a cycle's
nominated-pods filter pass can read them column-wise, and a version that changes with every
nomination made or cleared (part of what a scheduling cycle reads).
"""

from __future__ import annotations

from collections.abc import Collection

from kaudit.cluster.nominated import NominatedLoad
from kaudit.cluster.state import ClusterState
from kaudit.model.pod import PodInfo


class Nominator:
    """Nominated pods by node (a :class:`~kaudit.framework.ports.NominatedPods` port)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        self._load = NominatedLoad()
        #: Bumped whenever a nomination is made or cleared.
        self.version = 0

    def __call__(self, node: str) -> list[PodInfo]:
        """``NominatedPodsForNode``."""
        return list(self._by_node.get(node, {}).values())

    def nodes(self) -> Collection[str]:
        return self._by_node.keys()  # a node leaves the map with its last nomination

    @property
    def load(self) -> NominatedLoad:
        return self._load

    def node_of(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def add(self, pod: PodInfo, node: str, cluster: ClusterState) -> None:
        """``AddNominatedPod``: ``pod`` (with ``nominatedNodeName`` set) is nominated to
        ``node``, replacing any nomination it had."""
        self.delete(pod.uid)
        self._by_node.setdefault(node, {})[pod.uid] = pod
        self._load.add(pod, node, cluster)
        self._node_of[pod.uid] = node
        self.version += 1

    def delete(self, uid: str) -> PodInfo | None:
        """``DeleteNominatedPodIfExists``: the pod's nomination, if it has one, is gone."""
        node = self._node_of.get(uid)
        return self.delete_from(node, uid) if node is not None else None

    def delete_from(self, node: str, uid: str) -> PodInfo | None:
        """Drop ``uid``'s nomination to ``node`` (and the node's entry once it has none)."""
        pods = self._by_node.get(node)
        pod = pods.pop(uid, None) if pods is not None else None
        if pod is not None:
            self.version += 1
            self._node_of.pop(uid, None)
            self._load.remove(uid)
            if not pods:
                del self._by_node[node]
        return pod

    def lower_priority(self, node: str, priority: int) -> list[str]:
        """The pods nominated to ``node`` with a priority below ``priority``."""
        return [uid for uid, pod in self._by_node.get(node, {}).items()
                if pod.priority < priority]
