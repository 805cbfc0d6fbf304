"""The replay's informer: trace events and the replay's own writes reach the cache and queue.

A watch event updates the cluster state (``addNodeToCache``, ``addPodToCache`` and their update
and delete twins in ``pkg/scheduler/eventhandlers.go``, Kubernetes v1.34) and reaches the
scheduling queue as cluster events (``MoveAllToActiveOrBackoffQueue``) or as a pending pod
added, updated or deleted. Pods kaudit schedules keep the trace's own binding as their
*recorded placement* instead of applying it; likewise the status a trace gives the
ResourceClaims of those pods (see :mod:`kaudit.replay.claims`). The replay's own writes (the
API server's watch, bindings, deletions, pods its controllers create) come through here too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kaudit import versions
from kaudit.cluster.objects import apply_object, pod_info
from kaudit.cluster.state import object_key
from kaudit.eventlog.records import RecordKind
from kaudit.framework.events import (
    ASSIGNED_POD,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    EVENT_NODE_DELETE,
    NODE,
    RESOURCE_SLICE,
    ActionType,
    ClusterEvent,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from kaudit.model import dra
from kaudit.model.kinds import STORED_KINDS
from kaudit.model.pod import FINISHED_PHASES, PodInfo
from kaudit.replay.api import ApiServer
from kaudit.replay.claims import claims_record
from kaudit.replay.context import ReplayContext
from kaudit.replay.queueing import QueueDriver
from kaudit.scheduler.nominator import Nominator
from kaudit.scheduler.queue import QueuedPod
from kaudit.scheduler.schedule import Scheduler
from kaudit.store.traces import StoredEvent


class Informer:
    """Watch events (the trace's and the replay's own) applied to the cluster, the queue and
    the event log."""

    def __init__(self, context: ReplayContext, *, scheduler: Scheduler, queueing: QueueDriver,
                 nominator: Nominator, api: ApiServer) -> None:
        self.cluster = context.cluster
        self.loop = context.loop
        self.sink = context.sink
        self.timeline = context.timeline
        self.options = context.options
        self.summary = context.summary
        self.scheduler = scheduler
        self.queueing = queueing
        self.queue = queueing.queue
        self.nominator = nominator
        self.api = api
        self.claims = api.claims
        #: Pods kaudit schedules (their trace bindings are only recorded placements).
        self.kaudit_pods: set[str] = set()
        #: Each such pod's recorded placement.
        self.recorded: dict[str, str] = {}
        #: Node slots already named in the event log.
        self.known_slots = 0
        #: A node or an assigned pod changed since the flag was last cleared.
        self.placements_changed = False
        api.watch(self.move)

    # ------------------------------------------------------------------ delivering events

    def move(self, event: ClusterEvent, old: Any, new: Any,
             pre_check: Callable[[QueuedPod], bool] | None = None) -> None:
        """``MoveAllToActiveOrBackoffQueue``: the event reaches the pods waiting in
        unschedulablePods, through their rejecting plugins' queueing hints."""
        if event.resource in (NODE, ASSIGNED_POD):
            self.placements_changed = True
        self.queue.move_for_event(self.loop.now_us, event, old, new, pre_check)

    def nomination_released(self, pod: PodInfo) -> None:
        """A pod that was nominated left the queue (bound, deleted) or lost its nomination:
        the space it held may fit pods of equal or lower priority (``AssignedPodDelete`` with
        upstream's priority pre-check)."""
        if pod.nominated_node_name:
            priority = pod.priority

            def not_higher(queued: QueuedPod) -> bool:
                return queued.pod.priority <= priority

            self.move(EVENT_ASSIGNED_POD_DELETE, pod, None, not_higher)

    def serves(self, pod: PodInfo) -> bool:
        """Whether kaudit schedules ``pod`` (its ``schedulerName`` has a profile)."""
        return not self.options.recorded_only and self.scheduler.framework_for(pod) is not None

    def pod_created(self, pod: PodInfo) -> None:
        """A pending pod the replay's controllers created: kaudit schedules it."""
        self.kaudit_pods.add(pod.uid)
        self.queue.add(self.loop.now_us, pod)

    def delete_pod(self, uid: str, pod: PodInfo, reason: str) -> None:
        """A pod deleted or finished (``deletePodFromSchedulingQueue`` for a pending pod,
        ``deletePodFromCache`` for a placed one); its claims are released."""
        now = self.loop.now_us
        self.nominator.delete(uid)
        queued = self.queue.delete(now, uid)
        if self.queueing.given_up.pop(uid, None) is not None:
            self.summary.pods_deleted_pending += 1
        if queued is not None:
            self.nomination_released(queued.pod)
            self.summary.pods_deleted_pending += 1
        bound = self.cluster.remove_pod(uid)
        if bound is not None:
            self.timeline.release(now, uid)
            self.sink.record(now, RecordKind.DELETE, bound.key, bound.node_name,
                             {"reason": reason})
            self.move(EVENT_ASSIGNED_POD_DELETE, bound, None)
        self.claims.release(uid)

    def log_new_slots(self) -> None:
        while self.known_slots < len(self.cluster.nodes):
            node = self.cluster.nodes[self.known_slots]
            name = node.name if node is not None else next(
                n for n, s in self.cluster.slot_of.items() if s == self.known_slots)
            self.sink.record(self.loop.now_us, RecordKind.NODE, None, name,
                             {"slot": self.known_slots})
            self.known_slots += 1

    def gpu_record(self, uid: str) -> dict[str, Any]:
        """The GPU devices the pod holds, for its ``bind`` record (nothing for other pods)."""
        held = self.cluster.gpus.assigned.get(uid)
        if held is None:
            return {}
        return {"gpus": {"devices": list(held.devices), "milli": held.milli}}

    def claims_record(self, pod: PodInfo) -> dict[str, Any]:
        """The devices the pod's ResourceClaims hold, for its ``bind`` record."""
        if not (pod.obj.get("spec") or {}).get("resourceClaims"):
            return {}
        return claims_record(self.cluster, pod.obj)

    # ------------------------------------------------------------------ trace events

    def apply(self, event: StoredEvent) -> None:
        now = self.loop.now_us
        key = f"{event.namespace}/{event.name}" if event.namespace else event.name
        self.sink.record(now, RecordKind.WATCH, key if event.kind == "Pod" else None,
                         event.name if event.kind == "Node" else None,
                         {"traceSeq": event.seq, "type": event.type, "resource": event.kind})
        deleted = event.type == "DELETED"
        if event.kind == "Pod":
            self._apply_pod(event.object, deleted)
        elif event.kind == "Node":
            self._apply_node(event, deleted)
        elif event.kind in STORED_KINDS:
            obj = event.object
            if event.kind in dra.DRA_KINDS:
                obj = dra.normalize(obj)
                if event.kind == "ResourceClaim" and not deleted:
                    kept = self.claims.from_trace(obj, self.kaudit_pods, event.type)
                    if kept is None:
                        return  # an update of a claim the replay's controller deleted
                    if kept is not obj:
                        self.api.record_claim(kept, event.type)
                    obj = kept
                elif event.kind == "ResourceClaim" and object_key(obj) in self.claims.deleted:
                    return  # deleted already
            old = self.cluster.objects[event.kind].get(object_key(obj))
            apply_object(self.cluster, obj, deleted)
            action = ActionType.DELETE if deleted else (
                ActionType.UPDATE if old is not None else ActionType.ADD)
            self.move(ClusterEvent(event.kind, action), old if old is not None else None,
                       None if deleted else self.cluster.objects[event.kind].get(
                           object_key(obj), obj))
            if event.kind == "DeviceTaintRule" and self._taints_slices(old, obj):
                # The scheduler's slice tracker reports the slices it re-patched as updated.
                self.move(ClusterEvent(RESOURCE_SLICE, ActionType.UPDATE), None, None)
            if event.kind == "ResourceClaimTemplate" and not deleted:
                self._generate_waiting_claims()

    def _taints_slices(self, *rules: dict[str, Any] | None) -> bool:
        """Whether DeviceTaintRules are in force (v1.37 on) and one of ``rules`` selects a
        device of the cluster's slices."""
        gates = self.scheduler.feature_gates
        if not (gates.get("DRADeviceTaintRules", False) and gates.get("DRADeviceTaints", False)
                and versions.carries(gates.version,
                                     "dra-taint-rules-select-nothing-without-selector")):
            return False
        for piece in self.cluster.objects["ResourceSlice"].values():
            spec = piece.get("spec") or {}
            pool = str((spec.get("pool") or {}).get("name") or "")
            for rule in rules:
                if rule is not None and any(
                        dra.taint_rule_selects(rule, str(spec.get("driver") or ""), pool,
                                               str(device.get("name") or ""))
                        for device in spec.get("devices") or []):
                    return True
        return False

    def _apply_node(self, event: StoredEvent, deleted: bool) -> None:
        """``addNodeToCache`` / ``updateNodeInCache`` / ``deleteNodeFromCache``."""
        now = self.loop.now_us
        slot = self.cluster.slot_of.get(event.name)
        old = self.cluster.node(slot) if slot is not None and self.cluster.live[slot] else None
        if deleted:
            if old is not None:
                self.move(EVENT_NODE_DELETE, old, None)  # upstream: queue first, then cache
            apply_object(self.cluster, event.object, deleted)
            self.timeline.node_removed(now, event.name)
            return
        apply_object(self.cluster, event.object, deleted)
        self.log_new_slots()
        slot = self.cluster.slot_of[event.name]
        new = self.cluster.node(slot)
        self.timeline.node(now, slot, new)
        if old is None:
            self.move(EVENT_NODE_ADD, None, new)
        else:
            for cluster_event in node_scheduling_properties_change(
                    new, old, self.scheduler.feature_gates.get("NodeDeclaredFeatures", False)):
                self.move(cluster_event, old, new)

    def _apply_pod(self, obj: dict[str, Any], deleted: bool) -> None:
        now = self.loop.now_us
        pod = pod_info(self.cluster, obj)
        uid = pod.uid
        relative = self.options.lifetime == "relative" and uid in self.kaudit_pods
        if deleted:
            if not (relative and uid in self.cluster.pods):
                self.delete_pod(uid, pod, "trace")
            return
        phase = (obj.get("status") or {}).get("phase")
        if phase in FINISHED_PHASES:
            if not (relative and uid in self.cluster.pods):
                self.delete_pod(uid, pod, "completed")
            return
        if uid in self.kaudit_pods:
            # kaudit schedules this pod: the trace's binding is only its recorded placement,
            # other updates (labels, gates lifted) reach the queue while it is pending.
            if pod.node_name:
                if self.recorded.get(uid) != pod.node_name:
                    self.recorded[uid] = pod.node_name
                    self.sink.record(now, RecordKind.RECORDED, pod.key, pod.node_name)
                self._started(uid, pod.start_time)
            elif uid in self.queue.pods:
                old = self.queue.pods[uid].pod
                kept = self.claims.keep_generated(obj, old.obj)
                if kept is not obj:
                    pod = pod_info(self.cluster, kept)
                new = self._keep_nomination(pod)
                self.queue.update(now, old, new, pod_scheduling_properties_change(new, old))
            return
        placed_before = self.cluster.pods.get(uid)
        if placed_before is not None or pod.node_name:
            # The trace placed it (created bound, or bound by another scheduler), or updated a
            # pod already placed (``addPodToCache`` / ``updatePodInCache``).
            apply_object(self.cluster, obj)
            self.log_new_slots()
            placed = self.cluster.pods.get(uid)
            if placed_before is None:
                self.sink.record(now, RecordKind.BIND, pod.key, pod.node_name,
                                 {"by": "trace", **self.gpu_record(uid),
                                  **(self.claims_record(placed) if placed else {})})
                if placed is not None:
                    self.timeline.place(now, placed, "trace")
                self.move(EVENT_ASSIGNED_POD_ADD, None, placed)
            elif placed is not None:
                for cluster_event in pod_scheduling_properties_change(placed, placed_before):
                    self.move(cluster_event, placed_before, placed)
            return
        if not self.serves(pod):
            return  # another scheduler's pod (or no scheduling): wait for the trace's binding
        self.kaudit_pods.add(uid)
        with_claims = self.claims.generate(obj)
        if with_claims is not obj:
            pod = pod_info(self.cluster, with_claims)
        if pod.nominated_node_name:
            pod = replace(pod, nominated_node_name="")
        self.queue.add(now, pod)

    def _started(self, uid: str, start_time: str | None) -> None:
        """The kubelet started a pod kaudit placed: the trace's ``status.startTime`` is
        taken onto the pod where kaudit put it (until then it has none, and upstream's
        preemption reads it as starting now). Upstream's cache takes the kubelet's status
        update as an update of the pod (``updatePodInCache``: removed, added again)."""
        placed = self.cluster.pods.get(uid)
        if not start_time or placed is None or placed.start_time or placed.terminating:
            return
        status = {**(placed.obj.get("status") or {}), "startTime": start_time}
        started = replace(placed, start_time=start_time, obj={**placed.obj, "status": status})
        self.cluster.remove_pod(uid)
        self.cluster.add_pod(started)
        for cluster_event in pod_scheduling_properties_change(started, placed):
            self.move(cluster_event, placed, started)

    def _generate_waiting_claims(self) -> None:
        """A template arrived: the controller now makes the claims of the pods that waited for
        it (their update reaches the queue as ``UpdatePodGeneratedResourceClaim``)."""
        now = self.loop.now_us
        for queued in list(self.queue.pods.values()):
            old = queued.pod
            obj = self.claims.generate(old.obj)
            if obj is old.obj:
                continue
            new = self._keep_nomination(pod_info(self.cluster, obj))
            self.queue.update(now, old, new, pod_scheduling_properties_change(new, old))

    def _keep_nomination(self, pod: PodInfo) -> PodInfo:
        """The updated pod with kaudit's own nomination: a ``nominatedNodeName`` in the trace
        is the recorded cluster's preemption decision, not this replay's."""
        queued = self.queue.pods.get(pod.uid)
        nominated = queued.pod.nominated_node_name if queued is not None else ""
        return pod if pod.nominated_node_name == nominated else replace(
            pod, nominated_node_name=nominated)
