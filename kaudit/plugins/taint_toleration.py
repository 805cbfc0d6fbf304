"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; PreferNoSchedule taints
lower the score.

Mirrors ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`` (Kubernetes
v1.34, with the ``node(s) had untolerated taint(s)`` reason of later v1.34 patch releases).
Nodes are evaluated per distinct taint list, so thousands of nodes cost a handful of checks.
"""

from __future__ import annotations

from types import MappingProxyType
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
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo, Taint, Toleration, tolerated
from kaudit.model.taints import untolerated_taint
from kaudit.plugins import names
from kaudit.plugins.helper import default_normalize
from kaudit.plugins.hint_objects import as_node, pod_uid, typed

REASON = "node(s) had untolerated taint(s)"
_STATE_KEY = "PreScore" + names.TAINT_TOLERATION


def count_intolerable_prefer(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> int:
    return sum(1 for taint in taints
               if taint.effect == "PreferNoSchedule" and not tolerated(taint, tolerations))


class TaintToleration(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = names.TAINT_TOLERATION
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
        groups = cluster.taint_group[slots]
        failing = np.fromiter(
            (untolerated_taint(taints, pod.tolerations) is not None
             for taints in cluster.taint_sets), bool, count=len(cluster.taint_sets))
        return NodeVerdicts.from_mask(failing[groups], Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                      REASON)

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        prefer = tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        state.write(_STATE_KEY, prefer)
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        prefer = state.read(_STATE_KEY)
        if prefer is None:
            prefer = tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        counts = np.fromiter((count_intolerable_prefer(taints, prefer)
                              for taints in cluster.taint_sets), np.int64,
                             count=len(cluster.taint_sets))
        scores: np.ndarray = counts[cluster.taint_group[slots]]
        return scores

    normalizes_rows = True

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        return default_normalize(scores, reverse=True)


def _after_node_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterNodeChange``: the node has no untolerated NoSchedule/NoExecute
    taint any more (or is new and has none)."""
    original, modified = as_node(old), as_node(new)
    was = original is None or untolerated_taint(original.taints, pod.tolerations) is not None
    now = untolerated_taint(modified.taints, pod.tolerations) is not None
    return QueueingHint.QUEUE if was and not now else QueueingHint.QUEUE_SKIP


def _after_toleration_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodTolerationChange``: the pod's own tolerations changed."""
    typed("Pod", old)
    typed("Pod", new)
    return QueueingHint.QUEUE if pod_uid(new) == pod.uid else QueueingHint.QUEUE_SKIP
