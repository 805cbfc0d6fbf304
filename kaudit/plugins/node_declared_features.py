"""NodeDeclaredFeatures: a pod that needs a node feature goes only to nodes declaring it.

Mirrors ``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go``
(Kubernetes v1.36.3, where the ``NodeDeclaredFeatures`` gate is beta and on, so the plugin is a
default one) with ``k8s.io/component-helpers/nodedeclaredfeatures`` (v0.36.3):

* **PreFilter** infers the features the pod needs (``InferForPodScheduling`` over the
  registry's features): ``RestartAllContainersOnContainerExits`` for a container or init
  container with a ``restartPolicyRules`` action ``RestartAllContainers``, and
  ``UserNamespacesHostNetworkSupport`` for ``hostNetwork`` with ``hostUsers: false``; no
  requirement is Skip (Filter then does not run for the pod).
* **Filter** rejects, UnschedulableAndUnresolvable, a node whose ``status.declaredFeatures``
  (its known names; ``TryMap`` drops the others) lacks one: "node(s) didn't match Pod's
  required features".
* Events: a node added or its declared features changed, and the pod's own update when what
  it needs changed.

In v1.35 the gate is alpha and off; kaudit refuses to turn it on there (its reason and feature
registry differ), see :mod:`kaudit.config.load`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import NOT_FOUND, CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import FilterPlugin, NodeVerdicts, PreFilterPlugin, PreFilterResult
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import as_node, as_pod, pod_uid

REASON = "node(s) didn't match Pod's required features"
STATE_KEY = "PreFilter" + names.NODE_DECLARED_FEATURES
#: ``features.AllFeatures`` (v0.36.3), the names nodes declare.
KNOWN_FEATURES = ("RestartAllContainersOnContainerExits",
                  "InPlacePodLevelResourcesVerticalScaling", "ExtendWebSocketsToKubelet",
                  "InPlacePodVerticalScalingInitContainers", "UserNamespacesHostNetworkSupport")
#: The signer of the pod's required features (``FeaturesSignerName``).
FEATURES_SIGNER = "v1.Pod.Spec.RequiredFeatures()"


def required_features(spec: Mapping[str, Any]) -> frozenset[str]:
    """``InferForPodScheduling``: the features a pod with this spec needs of its node."""
    needed = set()
    containers = [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
    if any(isinstance(rule, Mapping) and rule.get("action") == "RestartAllContainers"
           for container in containers if isinstance(container, Mapping)
           for rule in container.get("restartPolicyRules") or ()):
        needed.add("RestartAllContainersOnContainerExits")
    if spec.get("hostNetwork") and spec.get("hostUsers") is False:
        needed.add("UserNamespacesHostNetworkSupport")
    return frozenset(needed)


def declared_features(node_obj: Mapping[str, Any]) -> frozenset[str]:
    """``TryMap`` of a node's ``status.declaredFeatures``: the names kaudit's registry knows."""
    declared = (node_obj.get("status") or {}).get("declaredFeatures") or ()
    return frozenset(name for name in declared if name in KNOWN_FEATURES)


def _declared_list(node_obj: Any) -> list[Any]:
    return list(((node_obj or {}).get("status") or {}).get("declaredFeatures") or ())


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin):
    name = names.NODE_DECLARED_FEATURES
    signs_pods = True
    reads_only_its_node = True
    added_pods_only_hinder = True

    #: Upstream registers the plugin from v1.35 (alpha there).
    points_since = MappingProxyType({"v1.35": frozenset({"PreFilter", "Filter"})})

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        gates = getattr(handle, "feature_gates", None)
        #: ``New`` builds a plugin that does nothing with the gate off.
        self.enabled = gates is not None and gates.get("NodeDeclaredFeatures", False)

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod``: the pod's required features (it never refuses)."""
        return ((FEATURES_SIGNER, tuple(sorted(required_features(pod.obj.get("spec") or {})))),)

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the node only

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.36 ``EventsToRegister`` (none when disabled)."""
        if not self.enabled:
            return []
        return [register(NODE, ["Add", "UpdateNodeDeclaredFeature"], _after_node_change),
                register(POD, "Update", _after_pod_update)]

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        needed = required_features(pod.obj.get("spec") or {})
        if not self.enabled or not needed:
            return None, Status.of(Code.SKIP)
        state.write(STATE_KEY, needed)
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        needed = state.read(STATE_KEY)
        if not isinstance(needed, frozenset):
            return NodeVerdicts.from_mask(np.ones(len(slots), dtype=bool), Code.ERROR,
                                          f'error reading "{STATE_KEY}" from cycle-state: '
                                          f"{NOT_FOUND}")
        missing = np.asarray([not needed <= declared_features(cluster.node(s).obj)
                              for s in slots.tolist()], dtype=bool)
        return NodeVerdicts.from_mask(missing, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)


def _after_node_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterNodeChange``: a node added, or its declared features changed."""
    original, modified = as_node(old), as_node(new)
    if original is not None and _declared_list(original.obj) == _declared_list(modified.obj):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def _after_pod_update(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodUpdate``: the pod's own update changed what it needs."""
    if pod_uid(new) != pod.uid:
        return QueueingHint.QUEUE_SKIP
    before, after = as_pod(old), as_pod(new)
    if required_features(before.obj.get("spec") or {}) == \
            required_features(after.obj.get("spec") or {}):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE
