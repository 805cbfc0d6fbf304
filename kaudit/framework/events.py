"""Cluster events and queueing hints: how a plugin says which changes may make a pod it
rejected schedulable.

Mirrors ``staging/src/k8s.io/kube-scheduler/framework/events.go`` and the event helpers of
``pkg/scheduler/framework/types.go`` (Kubernetes v1.34): ``ActionType`` bit flags, the event
resources (with the internal ``AssignedPod`` and ``UnschedulablePod`` that a registered ``Pod``
matches), ``MatchClusterEvents``, ``QueueingHint`` and ``ClusterEventWithHint``. A plugin
declares its events with ``events_to_register()``; a plugin that declares none is interested in
every event (upstream's ``UnrollWildCardResource``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any


class ActionType(IntFlag):
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATION = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    UPDATE_POD_OTHER = 1 << 12
    #: v1.36 (upstream inserts it after UpdateNodeAnnotation; only the names are compared).
    UPDATE_NODE_DECLARED_FEATURE = 1 << 13
    UPDATE = ((1 << 14) - 1) & ~3
    ALL = (1 << 14) - 1


#: Upstream's names of the action types (``ActionType.String``).
ACTION_NAMES: dict[ActionType, str] = {
    ActionType.ADD: "Add", ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE_POD_OTHER: "UpdatePodOther",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE: "Update", ActionType.ALL: "All",
}
ACTIONS_BY_NAME = {name: action for action, name in ACTION_NAMES.items()}

WILDCARD = "*"
POD = "Pod"
ASSIGNED_POD = "AssignedPod"
UNSCHEDULABLE_POD = "UnschedulablePod"
NODE = "Node"
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
STORAGE_CLASS = "StorageClass"
VOLUME_ATTACHMENT = "VolumeAttachment"
RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_SLICE = "ResourceSlice"
DEVICE_CLASS = "DeviceClass"


class QueueingHint(IntEnum):
    """``QueueSkip``: the event cannot make the pod schedulable; ``Queue``: it may."""

    QUEUE_SKIP = 0
    QUEUE = 1


@dataclass(frozen=True)
class ClusterEvent:
    resource: str
    action: ActionType
    #: Upstream's label (``NodeAdd``, ``AssignedPodDelete``, ``NodeTaintChange``, ...).
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or f"{self.resource}{action_label(self.action)}"

    @property
    def wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.ALL


def action_label(action: ActionType) -> str:
    name = ACTION_NAMES.get(action)
    if name is not None:
        return name
    return "|".join(ACTION_NAMES[a] for a in ActionType if a in action and a in ACTION_NAMES
                    and a not in (ActionType.UPDATE, ActionType.ALL))


def parse_action(names: str | list[str]) -> ActionType:
    """``"Add"`` or ``["Add", "UpdateNodeLabel"]`` as flags."""
    action = ActionType(0)
    for name in [names] if isinstance(names, str) else names:
        action |= ACTIONS_BY_NAME[name]
    return action


def _resources_match(registered: str, incoming: str) -> bool:
    return (registered in (WILDCARD, incoming)
            or (registered == POD and incoming in (ASSIGNED_POD, UNSCHEDULABLE_POD)))


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """``MatchClusterEvents``: ``incoming`` is the same as ``registered`` or more specific (an
    incoming ``UpdateNodeLabel`` matches a registered ``Update``, not the other way round). An
    incoming wildcard event matches only a registered wildcard."""
    return registered.wildcard or (
        _resources_match(registered.resource, incoming.resource)
        and bool(registered.action & incoming.action)
        and int(incoming.action) <= int(registered.action))


#: ``fn(pod, old, new)`` for the pod waiting in the queue and the changed object's old and new
#: states (None when added or deleted). Objects are kaudit's models where it has them (PodInfo,
#: NodeInfo) and the API object's dict otherwise.
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    #: None: every matching event may make the pod schedulable.
    hint: QueueingHintFn | None = None


def register(resource: str, actions: str | list[str], hint: QueueingHintFn | None = None
             ) -> ClusterEventWithHint:
    """A registration in upstream's words: ``register("Node", ["Add", "UpdateNodeLabel"])``."""
    return ClusterEventWithHint(ClusterEvent(resource, parse_action(actions)), hint)


# Events the scheduler itself raises (``framework.EventXxx`` in upstream's types).
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")
EVENT_NODE_ADD = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
EVENT_NODE_DELETE = ClusterEvent(NODE, ActionType.DELETE, "NodeDelete")
EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULABLE_POD, ActionType.ADD, "UnscheduledPodAdd")
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(UNSCHEDULABLE_POD, ActionType.DELETE,
                                            "UnscheduledPodDelete")


# --------------------------------------------------------------------------- derived events


def pod_scheduling_properties_change(new: Any, old: Any) -> list[ClusterEvent]:
    """``PodSchedulingPropertiesChange``: the events an update of a pod (kaudit's PodInfo)
    stands for, on ``AssignedPod`` or ``UnschedulablePod``; a generic Update when none."""
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULABLE_POD
    actions: list[ActionType] = []
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if any(name not in new.requests or amount > new.requests[name]
           for name, amount in old.requests.items()):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if _claim_statuses(new.obj) != _claim_statuses(old.obj):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    return [ClusterEvent(resource, action) for action in actions or [ActionType.UPDATE]]


def _claim_statuses(obj: Any) -> Any:
    status = obj.get("status") or {}
    return status.get("resourceClaimStatuses"), status.get("extendedResourceClaimStatus")


def node_scheduling_properties_change(new: Any, old: Any, declared_features: bool = False
                                      ) -> list[ClusterEvent]:
    """``NodeSchedulingPropertiesChange``: the events an update of a node (kaudit's NodeInfo)
    stands for, in upstream's order; none when nothing the scheduler reads changed. With
    ``declared_features`` (the ``NodeDeclaredFeatures`` gate) a change of
    ``status.declaredFeatures`` is one too."""
    actions: list[tuple[ActionType, str]] = []
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        actions.append((ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"))
    if new.allocatable != old.allocatable:
        actions.append((ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"))
    if new.labels != old.labels:
        actions.append((ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"))
    if new.taints != old.taints:
        actions.append((ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"))
    if _conditions(new.obj) != _conditions(old.obj):
        actions.append((ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"))
    if _annotations(new.obj) != _annotations(old.obj):
        actions.append((ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange"))
    if declared_features and _declared(new.obj) != _declared(old.obj):
        actions.append((ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeDeclaredFeatureChange"))
    return [ClusterEvent(NODE, action, label) for action, label in actions]


def _conditions(obj: Any) -> dict[str, str]:
    return {c.get("type"): c.get("status")
            for c in (obj.get("status") or {}).get("conditions") or []}


def _declared(obj: Any) -> Any:
    return (obj.get("status") or {}).get("declaredFeatures") or []


def _annotations(obj: Any) -> Any:
    return (obj.get("metadata") or {}).get("annotations") or {}
