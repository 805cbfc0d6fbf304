"""The scheduling cycle as the replay drives it: activeQ drained, each pod scheduled, logged,
requeued on failure or bound.

Mirrors ``scheduleOne`` and its failure handler in ``pkg/scheduler/schedule_one.go``
(Kubernetes v1.34, and v1.35's changes where the run's release has them: a failure always
clears the nomination, and a binding moves no pod, ``pkg/scheduler/eventhandlers.go``): a pod
popped from activeQ goes through the scheduler
(:mod:`kaudit.scheduler.schedule`); its attempt is written to the event log; a failure goes
back to the queue with its rejecting plugins (``handleSchedulingFailure``), with the
nomination PostFilter made or cleared; a success is assumed and bound
(:mod:`kaudit.scheduler.binding`), at once or after the bind latency.
"""

from __future__ import annotations

import time
from typing import Any

from kaudit import versions
from kaudit.cluster.objects import apply_object
from kaudit.errors import UnreplayableEventError
from kaudit.eventlog.codec import pack_attempt
from kaudit.eventlog.records import RecordKind
from kaudit.framework.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    pod_scheduling_properties_change,
)
from kaudit.framework.runtime import Framework
from kaudit.model.pod import PodInfo
from kaudit.model.topology_labels import with_topology_labels
from kaudit.replay.apply import Informer
from kaudit.replay.clock import Priority
from kaudit.replay.context import ReplayContext
from kaudit.replay.controllers import Controllers
from kaudit.replay.feed import DATA_ERRORS, TraceFeed
from kaudit.replay.gpu_sharing import GpuSharingTracker
from kaudit.replay.guard import ProgressGuard
from kaudit.replay.preemption import PreemptionCalls
from kaudit.replay.queueing import QueueDriver
from kaudit.scheduler.binding import bind, finish_binding
from kaudit.scheduler.nominator import Nominator
from kaudit.scheduler.queue import QueuedPod
from kaudit.scheduler.schedule import Attempt, Scheduler


def _cycle_over() -> None:
    """A scheduling cycle ends: nothing to do but let the loop drain again."""


class SchedulingCycles:
    def __init__(self, context: ReplayContext, *, scheduler: Scheduler, queueing: QueueDriver,
                 nominator: Nominator, informer: Informer, preemption: PreemptionCalls,
                 controllers: Controllers, guard: ProgressGuard, feed: TraceFeed,
                 gpu_sharing: GpuSharingTracker | None) -> None:
        self.cluster = context.cluster
        self.loop = context.loop
        self.sink = context.sink
        self.timeline = context.timeline
        self.options = context.options
        self.summary = context.summary
        #: With a cycle duration: when the cycle running now ends.
        self._busy_until = 0
        self.scheduler = scheduler
        self.queueing = queueing
        self.queue = queueing.queue
        self.nominator = nominator
        self.informer = informer
        self.preemption = preemption
        self.controllers = controllers
        self.guard = guard
        self.feed = feed
        self.gpu_sharing = gpu_sharing
        release = scheduler.feature_gates.version
        #: v1.35: a FitError without PostFilter plugins clears the nomination too.
        self._failure_clears_nomination = versions.carries(release,
                                                           "failure-clears-nomination")
        #: v1.35: the informer's binding of a nominated pod moves no other pod.
        self._binding_moves_pods = not versions.carries(release, "binding-moves-no-pods")
        #: v1.35: the API server copies the node's topology labels onto a pod it binds.
        self._topology_labels = scheduler.feature_gates.get("PodTopologyLabelsAdmission",
                                                            False)

    def state_version(self) -> tuple[int, int]:
        """Changes whenever anything a scheduling cycle reads changes."""
        return self.cluster.generation, self.nominator.version

    def drain(self) -> None:
        """Pop and schedule pods until activeQ is empty; with a cycle duration, one pod, and
        the next when its cycle is over."""
        now = self.loop.now_us
        if now < self._busy_until:
            return  # a cycle is still running: the loop drains again when it ends
        duration = self.options.cycle_duration_us
        while True:
            queued = self.queue.pop(now)
            if queued is None:
                return
            self._schedule(queued)
            if duration > 0:
                self._busy_until = now + duration
                self.loop.at(self._busy_until, Priority.TIMER, _cycle_over)
                return

    def _schedule(self, queued: QueuedPod) -> None:
        now = self.loop.now_us
        pod = queued.pod
        framework = self.scheduler.framework_for(pod)
        assert framework is not None
        self.guard.spend(now)
        started = time.perf_counter()
        seen = self.state_version()
        try:
            attempt = self.scheduler.schedule(self.cluster, pod, attempt=queued.attempts,
                                              nominator=self.nominator, cycle=queued.cycle,
                                              now_us=now)
        except DATA_ERRORS as exc:
            source, line = self.feed.origin.get(pod.key, (0, 0))
            raise UnreplayableEventError(
                source, line, f"cannot schedule pod {pod.key} (last changed by this line): "
                f"{type(exc).__name__}: {exc}") from exc
        self.summary.scheduling_seconds += time.perf_counter() - started
        self.summary.attempts += 1
        if attempt.extender_calls:
            self.summary.count_extender_calls(attempt.extender_calls)
        document, blob = pack_attempt(attempt, framework, self.cluster, queued.cycle,
                                      queued.attempts)
        self.sink.record(now, RecordKind.ATTEMPT, pod.key, attempt.selected, document, blob)
        sharing = self.gpu_sharing if queued.attempts <= 1 else None  # a pod's first try
        if sharing is not None:
            sharing.tried(pod)
        if attempt.selected is not None:
            self._bind(queued, attempt.selected, attempt.state)
        elif self.options.one_try:
            self.queueing.give_up(queued)
        else:
            self._requeue_failed(queued, attempt, seen)
        if sharing is not None:
            sharing.sample(self.cluster)

    def _requeue_failed(self, queued: QueuedPod, attempt: Attempt, seen: tuple[int, int]
                        ) -> None:
        """``handleSchedulingFailure``."""
        now = self.loop.now_us
        result = attempt.post_filter_result
        if attempt.error is None:
            self.queue.requeue(now, queued, attempt.diagnosis.unschedulable_plugins,
                               attempt.diagnosis.pending_plugins)
        else:
            self.queue.requeue(now, queued, ())
        # The state this attempt saw, not the one its preemption left behind.
        queued.failed_at = seen
        self.queueing.arm_unschedulable_flush(queued)
        if result is not None and result.nominated_node_name is not None:
            self.preemption.nominate(queued, result.nominated_node_name, result.details)
        elif (attempt.error is not None or attempt.num_all_nodes == 0
              or (self._failure_clears_nomination and attempt.post_filter is None)):
            # Not a FitError (an error, no nodes at all), or from v1.35 a FitError no
            # PostFilter plugin saw: upstream's cycle answers clearNominatedNode.
            self.preemption.clear_nominated_node(queued)

    def _bind(self, queued: QueuedPod, node: str, state: Any) -> None:
        now = self.loop.now_us
        pod = queued.pod
        framework = self.scheduler.framework_for(pod)
        assert framework is not None
        calls = self.scheduler.extender_calls
        calls.clear()
        binding = bind(framework, self.cluster, state, pod, node, self.scheduler.extenders)
        extender_record = self._extender_record(calls, binding.binder)
        placed = binding.placed
        if binding.failure is not None:
            status = binding.failure
            self.sink.record(now, RecordKind.BIND_FAIL, pod.key, node,
                             {**status.as_json(), **extender_record})
            rejected = status.rejected and status.plugin
            # ``handleBindingCycleError``: forgetting the assumed pod is an AssignedPodDelete
            # (after the pod's own requeue when a plugin rejected it, so that it is not moved
            # by it), and the failure clears the pod's nomination.
            if not rejected:
                self.informer.move(EVENT_ASSIGNED_POD_DELETE, placed, None)
            self.queue.requeue(now, queued, {status.plugin} if rejected else ())
            self.queueing.arm_unschedulable_flush(queued)
            if rejected:
                self.informer.move(EVENT_ASSIGNED_POD_DELETE, placed, None,
                                   lambda other: other.pod.uid != pod.uid)
            self.preemption.clear_nominated_node(queued)
            return
        self.timeline.place(now, placed, "kaudit")
        self.nominator.delete(pod.uid)
        self.queue.done(now, queued)
        self.summary.pods_scheduled += 1
        delay = self.options.cycle_duration_us + self.options.bind_latency_us
        if delay > 0:
            # Assumed now (its resources are taken); bound when its scheduling cycle is over
            # and the binding's API call would complete.
            self.loop.at(now + delay, Priority.BIND,
                         lambda: self._finish_binding(framework, state, placed, pod,
                                                      extender_record))
        else:
            self._finish_binding(framework, state, placed, pod, extender_record)

    def _copy_topology_labels(self, placed: PodInfo) -> None:
        """``PodTopologyLabels`` admission: the bound pod carries its node's zone and region
        labels; the informer sees that as an update of an assigned pod."""
        slot = self.cluster.slot_of.get(placed.node_name)
        labelled = (None if slot is None else
                    with_topology_labels(placed.obj, self.cluster.node(slot).labels))
        if labelled is None:
            return
        before = self.cluster.pods.get(placed.uid)
        apply_object(self.cluster, labelled)
        after = self.cluster.pods.get(placed.uid)
        if before is not None and after is not None:
            for cluster_event in pod_scheduling_properties_change(after, before):
                self.informer.move(cluster_event, before, after)

    def _extender_record(self, calls: list[Any], binder: str | None) -> dict[str, Any]:
        """What the bind record says of extenders: the calls made and who bound the pod."""
        record: dict[str, Any] = {}
        if calls:
            record["extenders"] = [call.as_json() for call in calls]
            self.summary.count_extender_calls(calls)
            calls.clear()
        if binder is not None:
            record["binder"] = binder
        return record

    def _finish_binding(self, framework: Framework, state: Any, placed: PodInfo,
                        pending: PodInfo, extender_record: dict[str, Any]) -> None:
        now = self.loop.now_us
        node = placed.node_name
        if not finish_binding(framework, self.cluster, state, placed):
            if "extenders" in extender_record:
                # Deleted while binding: the bind call was made all the same, and recorded
                # answers must find it.
                self.sink.record(now, RecordKind.EXTENDER, placed.key, node,
                                 {**extender_record, "reason": "deleted while binding"})
            return
        self.sink.record(now, RecordKind.BIND, placed.key, node,
                         {"by": "kaudit", **self.informer.gpu_record(placed.uid),
                          **self.informer.claims_record(placed), **extender_record})
        # The informer sees the binding: the assigned pod appears (``addPodToCache``) and the
        # pending pod leaves the queue, in v1.34 releasing any nomination it had (its handler
        # saw the pending pod deleted); from v1.35 that is all.
        self.informer.move(EVENT_ASSIGNED_POD_ADD, None, placed)
        if self._binding_moves_pods:
            self.informer.nomination_released(pending)
        if self._topology_labels:
            self._copy_topology_labels(placed)
        self.controllers.bound(placed)
