"""The replay engine: a trace's events, a scheduling queue and the scheduler, on a virtual clock.

Trace events are applied at their timestamps; pending pods whose ``schedulerName`` has a profile
go through the queue and are scheduled by kaudit (zero virtual time per cycle; binding is
immediate unless a bind latency is set); every other pod keeps the trace's placement. For pods
kaudit schedules, the trace's own binding (a later event setting ``spec.nodeName``) is kept as
the *recorded placement*, not applied. Preemption deletes the victims at once (and, with
``recreate_preempted``, their ReplicaSet, Job or StatefulSet brings a new pending pod back) and
nominates the node for the preemptor, which is retried after its backoff.

Same-instant order (see :mod:`kaudit.replay.clock`): trace events first, then bindings, timers
and completions, then the scheduler drains activeQ. After the trace's last event (plus
``settle_us``) the replay goes on while the cluster will still change (bindings, API calls
such as preemption's deletions, and completions are due) or a retry could change something: a
pod waiting in activeQ or backoffQ that has not yet failed against the current cluster state
and nominations. Upstream retries such pods after every backoff for ever (a pod with no
rejecting plugin, as with no nodes at all, always goes to backoffQ); since a scheduling cycle
is a function of that state, those retries would only repeat the same failure, so the replay
ends and reports the pods left waiting as unschedulable.
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from kaudit.cluster.gpu_frag import FragMeasure, PodShape, pod_shape, typical_pods
from kaudit.cluster.nominated import NominatedLoad
from kaudit.cluster.objects import apply_object, pod_info
from kaudit.cluster.state import ClusterState, object_key
from kaudit.errors import ReplayStalledError, UnreplayableEventError
from kaudit.eventlog.codec import pack_attempt
from kaudit.eventlog.records import RecordKind
from kaudit.eventlog.sink import EventSink
from kaudit.eventlog.timeline import NoTimeline, Timeline
from kaudit.fgd.workload import WORKLOAD_KEY
from kaudit.framework.events import (
    ASSIGNED_POD,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    NODE,
    ActionType,
    ClusterEvent,
    pod_scheduling_properties_change,
)
from kaudit.model.pod import FINISHED_PHASES, PodInfo, parse_pod, terminating_object
from kaudit.model.timestamps import format_timestamp
from kaudit.replay.allocation import AllocationTracker, fragmentation
from kaudit.replay.apply import DATA_ERRORS, TraceApplication
from kaudit.replay.claims import ClaimController
from kaudit.replay.clock import EventLoop, Priority
from kaudit.replay.collector import replay_pace
from kaudit.replay.gpu_sharing import GpuSharingTracker
from kaudit.scheduler.binding import bind, finish_binding
from kaudit.scheduler.queue import ACTIVE, BACKOFF, QueuedPod, SchedulingQueue, hint_table
from kaudit.scheduler.schedule import Scheduler
from kaudit.store.traces import StoredEvent
from kaudit.tracegen.builders import stable_uid

SECOND = 1_000_000
UNSCHEDULABLE_FLUSH_US = 30 * SECOND
# The progress guard's budget of timer steps and scheduling attempts at one virtual instant.
INSTANT_WORK_BASE = 100_000
INSTANT_WORK_PER_POD = 100
RECREATED_OWNERS = ("ReplicaSet", "Job", "StatefulSet")


@dataclass
class ReplayOptions:
    seed: int = 0
    lifetime: str = "recorded"  # or "relative"
    recreate_preempted: bool = True
    bind_latency_us: int = 0
    #: How long one API call takes (preemption's status patches and deletions); with
    #: ``SchedulerAsyncPreemption`` the victims go in the background meanwhile.
    api_latency_us: int = 20_000
    #: How long a victim takes to terminate once its deletion is accepted (the kubelet
    #: stopping its containers); the scheduler counts it on its node until then.
    victim_termination_us: int = 1_000_000
    initial_backoff_us: int = 1 * SECOND
    max_backoff_us: int = 10 * SECOND
    max_in_unschedulable_us: int = 300 * SECOND
    #: How long after the trace's last event queue timers keep running (retries, flushes).
    settle_us: int = 0
    #: Schedule nothing: every pod keeps the trace's placement (the ``recorded`` pseudo-run).
    recorded_only: bool = False
    #: Try each pod once: one that fails is given up, not queued again (the FGD paper's
    #: protocol; it stays pending and counts as pending at the end).
    one_try: bool = False
    #: Sample GPU allocation and fragmentation against arrived workload after every pod tried
    #: (:mod:`kaudit.replay.gpu_sharing`); needs the trace's pods as the workload.
    gpu_report: bool = False
    #: How the scheduler breaks ties at the highest score (``kaudit.scheduler.schedule``).
    tie_break: str = "random"


@dataclass
class ReplaySummary:
    pods_scheduled: int = 0
    #: Pods never bound that are still waiting when the trace ends, tried or not (pending at
    #: end; kaudit.queries.summary_rows names it).
    pods_unschedulable: int = 0
    #: Of those, the pods never tried: held back by PreEnqueue (scheduling gates, a missing
    #: ResourceClaim) until the end.
    pods_held_back: int = 0
    #: Pods never bound that the trace deleted while they waited, tried or not.
    pods_deleted_pending: int = 0
    pods_preempted: int = 0
    pods_recreated: int = 0
    attempts: int = 0
    trace_events: int = 0
    start_us: int | None = None
    end_us: int | None = None
    wall_seconds: float = 0.0
    scheduling_seconds: float = 0.0
    log_bytes: dict[str, int] = field(default_factory=dict)
    log_records: dict[str, int] = field(default_factory=dict)
    utilisation: dict[str, Any] = field(default_factory=dict)
    gpu_sharing: dict[str, Any] | None = None
    #: Extender calls by step, and how many of them failed.
    extender_calls: dict[str, int] = field(default_factory=dict)
    extender_errors: int = 0
    #: With recorded answers: how many questions had none (see ``RecordedAnswers``).
    extender_answers: dict[str, Any] | None = None

    def count_extender_calls(self, calls: Iterable[Any]) -> None:
        for call in calls:
            self.extender_calls[call.step] = self.extender_calls.get(call.step, 0) + 1
            self.extender_errors += call.error is not None

    def as_json(self) -> dict[str, Any]:
        attempts_bytes = self.log_bytes.get("attempt", 0)
        return {
            "podsScheduled": self.pods_scheduled,
            # podsUnschedulable is podsPendingAtEnd under the name runs stored before both
            # metrics were named; readers take podsPendingAtEnd first.
            "podsUnschedulable": self.pods_unschedulable,
            "podsPendingAtEnd": self.pods_unschedulable,
            "podsNeverScheduled": self.pods_unschedulable + self.pods_deleted_pending,
            "podsHeldBack": self.pods_held_back,
            "podsPreempted": self.pods_preempted, "podsRecreated": self.pods_recreated,
            "attempts": self.attempts, "traceEvents": self.trace_events,
            "virtualSpanSeconds": ((self.end_us - self.start_us) / 1e6
                                   if self.start_us is not None and self.end_us is not None
                                   else 0.0),
            "wallSeconds": round(self.wall_seconds, 3),
            "podsPerSecond": (round(self.pods_scheduled / self.wall_seconds, 1)
                              if self.wall_seconds else None),
            "bytesPerAttempt": (round(attempts_bytes / self.attempts) if self.attempts else None),
            "logRecords": self.log_records,
            **self.utilisation,
            **({"gpuSharing": self.gpu_sharing} if self.gpu_sharing is not None else {}),
            **({"extenderCalls": self.extender_calls, "extenderErrors": self.extender_errors}
               if self.extender_calls else {}),
            **({"extenderAnswers": self.extender_answers}
               if self.extender_answers is not None else {}),
        }


@dataclass(frozen=True)
class _Nominator:
    """Nominated pods by node, for the nominated-pods filter pass."""

    by_node: dict[str, dict[str, PodInfo]]
    #: The same pods summed per node, for a cycle's nominated-pods pass.
    load: NominatedLoad

    def __call__(self, node: str) -> list[PodInfo]:
        return list(self.by_node.get(node, {}).values())

    def nodes(self) -> Collection[str]:
        return self.by_node.keys()  # a node leaves the map with its last nomination


class Replay(TraceApplication):
    def __init__(self, scheduler: Scheduler, sink: EventSink, options: ReplayOptions,
                 lifetimes: dict[str, tuple[int | None, int | None]] | None = None,
                 workload: list[PodShape] | None = None) -> None:
        self.scheduler = scheduler
        self.sink = sink
        self.options = options
        self.cluster = ClusterState()
        self.loop = EventLoop()
        self.summary = ReplaySummary()
        self._origin: dict[str, tuple[int, int]] = {}  # pod key -> its last event's place
        self._instant_us: int | None = None
        self._instant_work = 0
        self._work = 0
        self._tick: Callable[[], None] | None = None
        first = next(iter(scheduler.frameworks.values()))
        sort = first.queue_sort
        gates = scheduler.feature_gates
        self.async_preemption = gates.enabled("SchedulerAsyncPreemption")
        self.hint_tables = {name: hint_table(framework.instances.values(),
                                             extenders=bool(scheduler.extenders))
                            for name, framework in scheduler.frameworks.items()}
        self.queue = SchedulingQueue(
            sort_key=(lambda q: sort.key(q)) if sort is not None and hasattr(sort, "key")
            else (lambda q: (-q.pod.priority, q.timestamp)),
            initial_backoff_us=options.initial_backoff_us,
            max_backoff_us=options.max_backoff_us,
            max_in_unschedulable_us=options.max_in_unschedulable_us,
            transition=self._transition,
            hints=lambda pod: self.hint_tables.get(pod.scheduler_name),
            pre_enqueue=self._gate,
            pop_from_backoff=gates.enabled("SchedulerPopFromBackoffQ"),
            on_backoff=self._arm_backoff_flush)
        #: Preemptors whose asynchronous preemption is still issuing API calls.
        self.preempting: set[str] = set()
        self._backoff_flushes: set[int] = set()
        self.nominated: dict[str, dict[str, PodInfo]] = {}
        self.nominated_load = NominatedLoad()
        #: The node each nominated pod is nominated to.
        self.nominated_at: dict[str, str] = {}
        #: Bumped whenever a nomination is made or cleared.
        self.nomination_version = 0
        self.kaudit_pods: set[str] = set()
        #: The PreEnqueue plugin holding each gated pod back, and its message.
        self._gated_by: dict[str, tuple[str, str]] = {}
        self.recorded: dict[str, str] = {}
        self.unschedulable_once: set[str] = set()
        #: Pods tried once and given up (``one_try``), still pending.
        self.given_up: dict[str, PodInfo] = {}
        self.lifetimes = lifetimes or {}
        self.known_slots = 0
        self.start_us: int | None = None
        self.allocation = AllocationTracker()
        self.timeline = Timeline() if sink.keeps_timeline else NoTimeline()
        self._placements_changed = False
        self.claims = ClaimController(self.cluster, self._api_write)
        for framework in scheduler.frameworks.values():
            for plugin in framework.instances.values():
                if plugin.handle is not None:
                    plugin.handle.cluster = self.cluster
                    plugin.handle.api_update = self._api_update
                    plugin.handle.nominator = self.nominated_for
                    plugin.handle.now_us = self._now
                    plugin.handle.preempting = self.preempting.__contains__
                    if workload is not None:
                        plugin.handle.extra[WORKLOAD_KEY] = workload
        self.gpu_sharing = (GpuSharingTracker(FragMeasure(typical_pods(workload)))
                            if options.gpu_report and workload is not None else None)

    def _now(self) -> int:
        return self.loop.now_us

    def _api_update(self, obj: dict[str, Any]) -> None:
        """A plugin's API write (DynamicResources' claim updates): applied at once, its watch
        event delivered to the queue."""
        if obj.get("kind") == "ResourceClaim":
            self.claims.written(obj)
        self._api_write(obj, False)

    def _api_write(self, obj: dict[str, Any], deleted: bool) -> None:
        kind = str(obj.get("kind") or "")
        old = self.cluster.objects[kind].get(object_key(obj))
        apply_object(self.cluster, obj, deleted)
        action = ActionType.DELETE if deleted else (
            ActionType.UPDATE if old is not None else ActionType.ADD)
        self._record_claim(obj, "DELETED" if deleted else (
            "MODIFIED" if old is not None else "ADDED"))
        self._move(ClusterEvent(kind, action), old, None if deleted else obj)

    # ------------------------------------------------------------------ logging helpers

    def _transition(self, now: int, pod: PodInfo, source: str, target: str, event: str
                    ) -> None:
        data: dict[str, Any] = {"from": source, "to": target, "event": event}
        gate = self._gated_by.get(pod.uid) if target == "gated" else None
        if gate is not None and gate[0] != "SchedulingGates":
            # Which PreEnqueue holds the pod back, and why (scheduling gates are in the spec).
            data["gate"], data["reason"] = gate
        self.sink.record(now, RecordKind.QUEUE, pod.key, None, data)
        self.timeline.queue(now, pod, source, target)

    def _log_new_slots(self) -> None:
        while self.known_slots < len(self.cluster.nodes):
            node = self.cluster.nodes[self.known_slots]
            name = node.name if node is not None else next(
                n for n, s in self.cluster.slot_of.items() if s == self.known_slots)
            self.sink.record(self.loop.now_us, RecordKind.NODE, None, name,
                             {"slot": self.known_slots})
            self.known_slots += 1

    @property
    def nominated_for(self) -> _Nominator:
        return _Nominator(self.nominated, self.nominated_load)

    # ------------------------------------------------------------------ the run

    def run(self, events: Iterable[StoredEvent],
            progress: Callable[[int], None] | None = None,
            tick: Callable[[], None] | None = None) -> ReplaySummary:
        """Replay ``events``; ``tick`` is called every few hundred units of work (an event
        applied, a timer, a scheduling attempt): a heartbeat, and where a stop request may
        raise, between writes."""
        with replay_pace():
            return self._run(events, progress, tick)

    def _run(self, events: Iterable[StoredEvent], progress: Callable[[int], None] | None,
             tick: Callable[[], None] | None) -> ReplaySummary:
        self._tick = tick
        began = time.perf_counter()
        iterator = iter(events)
        pending = next(iterator, None)
        last_trace_us: int | None = None
        steps = 0
        while pending is not None or self.loop:
            steps += 1
            self._count_work()
            next_trace = pending.ts_us if pending is not None else None
            next_timer = self.loop.peek_time()
            now = min(t for t in (next_trace, next_timer) if t is not None)
            if pending is None and last_trace_us is not None and \
                    now > last_trace_us + self.options.settle_us and \
                    not self.loop.effects_pending and not self._retries_pending():
                break  # the trace is over, nothing will change: the waiting pods stay so
            if self.start_us is None:
                self.start_us = now
                self.summary.start_us = now
            self.loop.now_us = max(self.loop.now_us, now)
            self._enter_instant(now)
            while pending is not None and pending.ts_us == now:
                self._count_work()
                self._apply_guarded(pending)
                last_trace_us = now
                self.summary.trace_events += 1
                if progress is not None:
                    progress(1)
                pending = next(iterator, None)
            while self.loop and self.loop.peek_time() == now:
                self._spend_instant()
                self.loop.step()
            self._drain()
            if self._placements_changed:
                self.allocation.observe(now, self.cluster)
                self._placements_changed = False
            self.timeline.sample(now, self.allocation.current)
            self.summary.end_us = self.loop.now_us
        waiting = [q.pod for q in self.queue.pods.values() if q.attempts]
        waiting.extend(self.given_up.values())
        self.summary.pods_held_back = sum(1 for q in self.queue.pods.values() if not q.attempts)
        self.summary.pods_unschedulable = len(waiting) + self.summary.pods_held_back
        if self.summary.end_us is not None:
            self.allocation.observe(self.summary.end_us, self.cluster)
        self.summary.utilisation = {**self.allocation.as_json(),
                                    "fragmentation": fragmentation(self.cluster, waiting)}
        if self.gpu_sharing is not None:
            self.summary.gpu_sharing = self.gpu_sharing.as_json()
        self.sink.write_timeline(self.timeline)
        self.sink.flush()
        self.summary.wall_seconds = time.perf_counter() - began
        self.summary.log_bytes = dict(self.sink.bytes_by_kind)
        self.summary.log_records = dict(self.sink.count_by_kind)
        return self.summary

    def _enter_instant(self, now: int) -> None:
        """Give the virtual instant ``now`` its budget of work (timer steps and scheduling
        attempts). Every pod's retry waits for a backoff of at least a second, so a healthy
        replay does a bounded amount of work per pod at one instant; the budget is generous
        and only a cycle that never lets the clock advance can exhaust it."""
        if now != self._instant_us:
            self._instant_us = now
            self._instant_work = 0

    def _count_work(self) -> None:
        self._work += 1
        if self._tick is not None and self._work % 256 == 0:
            self._tick()

    def _spend_instant(self) -> None:
        self._count_work()
        self._instant_work += 1
        if self._instant_work <= INSTANT_WORK_BASE:
            return
        pods = len(self.queue.pods) + len(self.cluster.pods)
        if self._instant_work <= INSTANT_WORK_BASE + INSTANT_WORK_PER_POD * pods:
            return
        waiting = sorted(self.queue.pods.values(), key=lambda q: -q.attempts)[:3]
        names = ", ".join(f"{q.pod.key} ({q.attempts} attempts)" for q in waiting)
        raise ReplayStalledError(
            f"the replay made no progress in virtual time: {self._instant_work - 1} steps "
            f"and scheduling attempts at {format_timestamp(self.loop.now_us)} without the "
            f"clock advancing (the queues only cycle; most tried: {names or 'none'}). "
            "This is a kaudit bug: please report it with the trace.")

    def _state_version(self) -> tuple[int, int]:
        """Changes whenever anything a scheduling cycle reads changes."""
        return self.cluster.generation, self.nomination_version

    def _retries_pending(self) -> bool:
        """Pods in activeQ or backoffQ that may fare differently when tried again (a preemptor
        waiting for its backoff, say). Pods in unschedulablePods would only be retried by
        their periodic flush, and pods that already failed against the current state would
        fail again: neither keeps a finished trace going."""
        version = self._state_version()
        return any(q.where in (ACTIVE, BACKOFF) and q.failed_at != version
                   for q in self.queue.pods.values())

    def _move(self, event: ClusterEvent, old: Any, new: Any,
              pre_check: Callable[[QueuedPod], bool] | None = None) -> None:
        """``MoveAllToActiveOrBackoffQueue``: the event reaches the pods waiting in
        unschedulablePods, through their rejecting plugins' queueing hints."""
        if event.resource in (NODE, ASSIGNED_POD):
            self._placements_changed = True
        self.queue.move_for_event(self.loop.now_us, event, old, new, pre_check)

    def _nomination_released(self, pod: PodInfo) -> None:
        """A pod that was nominated left the queue (bound, deleted) or lost its nomination:
        the space it held may fit pods of equal or lower priority (``AssignedPodDelete`` with
        upstream's priority pre-check)."""
        if pod.nominated_node_name:
            priority = pod.priority

            def not_higher(queued: QueuedPod) -> bool:
                return queued.pod.priority <= priority

            self._move(EVENT_ASSIGNED_POD_DELETE, pod, None, not_higher)

    def _gate(self, pod: PodInfo) -> str | None:
        framework = self.scheduler.framework_for(pod)
        if framework is None:
            return None
        status = framework.run_pre_enqueue(pod)
        if status.ok:
            self._gated_by.pop(pod.uid, None)
            return None
        self._gated_by[pod.uid] = (status.plugin or "PreEnqueue", status.message)
        return status.plugin or "PreEnqueue"

    def _delete_pod(self, uid: str, pod: PodInfo, reason: str) -> None:
        now = self.loop.now_us
        self._clear_nomination(uid)
        queued = self.queue.delete(now, uid)
        if self.given_up.pop(uid, None) is not None:
            self.summary.pods_deleted_pending += 1
        if queued is not None:
            self._nomination_released(queued.pod)  # ``deletePodFromSchedulingQueue``
            self.summary.pods_deleted_pending += 1
        bound = self.cluster.remove_pod(uid)
        if bound is not None:
            self.timeline.release(now, uid)
            self.sink.record(now, RecordKind.DELETE, bound.key, bound.node_name, {"reason": reason})
            self._move(EVENT_ASSIGNED_POD_DELETE, bound, None)  # ``deletePodFromCache``
        self.claims.release(uid)

    def _clear_nomination(self, uid: str) -> None:
        node = self.nominated_at.pop(uid, None)
        if node is not None:
            self._unnominate(node, uid)

    def _unnominate(self, node: str, uid: str) -> PodInfo | None:
        """Drop ``uid``'s nomination to ``node`` (and the node's entry once it has none)."""
        pods = self.nominated.get(node)
        other = pods.pop(uid, None) if pods is not None else None
        if other is not None:
            self.nomination_version += 1
            self.nominated_at.pop(uid, None)
            self.nominated_load.remove(uid)
            if not pods:
                del self.nominated[node]
        return other

    # ------------------------------------------------------------------ scheduling

    def _drain(self) -> None:
        while True:
            queued = self.queue.pop(self.loop.now_us)
            if queued is None:
                return
            self._schedule(queued)

    def _schedule(self, queued: QueuedPod) -> None:
        now = self.loop.now_us
        pod = queued.pod
        framework = self.scheduler.framework_for(pod)
        assert framework is not None
        self._spend_instant()
        started = time.perf_counter()
        seen = self._state_version()
        try:
            attempt = self.scheduler.schedule(self.cluster, pod, attempt=queued.attempts,
                                              nominator=self.nominated_for)
        except DATA_ERRORS as exc:
            source, line = self._origin.get(pod.key, (0, 0))
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
            self.queue.give_up(now, queued)
            self.given_up[pod.uid] = pod
        else:
            self._requeue_failed(queued, attempt, seen)
        if sharing is not None:
            sharing.sample(self.cluster)

    def _requeue_failed(self, queued: QueuedPod, attempt: Any, seen: tuple[int, int]) -> None:
        now = self.loop.now_us
        result = attempt.post_filter_result
        if attempt.error is None:
            self.queue.requeue(now, queued, attempt.diagnosis.unschedulable_plugins,
                               attempt.diagnosis.pending_plugins)
        else:
            self.queue.requeue(now, queued, ())
        # The state this attempt saw, not the one its preemption left behind.
        queued.failed_at = seen
        self._arm_unschedulable_flush(queued)
        if result is not None and result.nominated_node_name is not None:
            self._nominate(queued, result.nominated_node_name, result.details)
        elif attempt.error is not None or attempt.num_all_nodes == 0:
            # Not a FitError (an error, no nodes at all): upstream's cycle answers
            # clearNominatedNode.
            self._clear_nominated_node(queued)

    def _clear_nominated_node(self, queued: QueuedPod) -> None:
        """``clearNominatedNode``: the failure's status patch clears the pod's nomination."""
        if queued.pod.nominated_node_name or queued.pod.uid in self.nominated_at:
            self._nominate(queued, "", None)

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
                self._move(EVENT_ASSIGNED_POD_DELETE, placed, None)
            self.queue.requeue(now, queued, {status.plugin} if rejected else ())
            self._arm_unschedulable_flush(queued)
            if rejected:
                self._move(EVENT_ASSIGNED_POD_DELETE, placed, None,
                           lambda other: other.pod.uid != pod.uid)
            self._clear_nominated_node(queued)
            return
        self.timeline.place(now, placed, "kaudit")
        self._clear_nomination(pod.uid)
        self.queue.done(now, queued)
        self.summary.pods_scheduled += 1
        if self.options.bind_latency_us > 0:
            # Assumed now (its resources are taken); bound when the API call would complete.
            self.loop.at(now + self.options.bind_latency_us, Priority.BIND,
                         lambda: self._finish_binding(framework, state, placed, pod,
                                                      extender_record))
        else:
            self._finish_binding(framework, state, placed, pod, extender_record)

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

    def _finish_binding(self, framework: Any, state: Any, placed: PodInfo,
                        pending: PodInfo, extender_record: dict[str, Any] | None = None
                        ) -> None:
        now = self.loop.now_us
        node = placed.node_name
        if not finish_binding(framework, self.cluster, state, placed):
            if extender_record and "extenders" in extender_record:
                # Deleted while binding: the bind call was made all the same, and recorded
                # answers must find it.
                self.sink.record(now, RecordKind.EXTENDER, placed.key, node,
                                 {**extender_record, "reason": "deleted while binding"})
            return
        self.sink.record(now, RecordKind.BIND, placed.key, node,
                         {"by": "kaudit", **self._gpu_record(placed.uid),
                          **self._claims_record(placed),
                          **(extender_record or {})})
        # The informer sees the binding: the assigned pod appears (``addPodToCache``) and the
        # pending pod leaves the queue, releasing any nomination it had.
        self._move(EVENT_ASSIGNED_POD_ADD, None, placed)
        self._nomination_released(pending)
        if self.options.lifetime == "relative":
            recorded_bind, recorded_delete = self.lifetimes.get(placed.uid, (None, None))
            if recorded_bind is not None and recorded_delete is not None:
                runtime = max(recorded_delete - recorded_bind, 0)
                self.loop.at(now + runtime, Priority.COMPLETION,
                             functools.partial(self._delete_pod, placed.uid, placed, "lifetime"))

    def _nominate(self, queued: QueuedPod, node: str, details: Any) -> None:
        """PostFilter nominated ``node``: the nomination holds at once (in the scheduler's
        memory and, by the failure's status patch, on the pod); the victims go and
        lower-priority nominations to the node are cleared by API calls. With
        ``SchedulerAsyncPreemption`` those calls run in the background, each taking the API
        latency, as upstream's ``prepareCandidateAsync`` issues them (v1.34.2): the clearing
        patches one after another, then every victim but the last in parallel (status patch
        and delete), then the preemptor stops being held back by PreEnqueue, then the last
        victim. A deleted victim terminates for the victim termination time, still counted on
        its node, before it is gone."""
        now = self.loop.now_us
        preemptor = queued.pod
        self._clear_nomination(preemptor.uid)
        queued.pod = preemptor = replace(preemptor, nominated_node_name=node)
        if not node:
            return
        self.nominated.setdefault(node, {})[preemptor.uid] = preemptor
        self.nominated_load.add(preemptor, node, self.cluster)
        self.nominated_at[preemptor.uid] = node
        self.nomination_version += 1
        self.sink.record(now, RecordKind.NOMINATE, preemptor.key, node, _nomination_ties(details))
        chosen = getattr(details, "chosen", None)
        exposed: frozenset[str] = getattr(details, "tie_exposed", frozenset())
        # An extender may name a victim twice: it is deleted once (the second deletion
        # finds nothing upstream).
        victims = [v for v in {v.uid: v for v in (chosen.victims if chosen is not None
                                                  else ())}.values()
                   if v.uid in self.cluster.pods]
        for victim in victims:
            self.sink.record(now, RecordKind.PREEMPT, victim.key, victim.node_name,
                             {"preemptor": preemptor.key,
                              **({"tie": True} if victim.key in exposed else {})})
            self.summary.pods_preempted += 1
        lower = [uid for uid, other in self.nominated.get(node, {}).items()
                 if other.priority < preemptor.priority]
        latency = self.options.api_latency_us
        if not self.async_preemption:
            self._clear_lower_nominations(node, lower)
            for victim in victims:
                self._terminate(victim)
            return
        self.preempting.add(preemptor.uid)
        cleared = now + latency * len(lower)
        if lower:
            self.loop.at(cleared, Priority.API,
                         lambda: self._clear_lower_nominations(node, lower))
        *batch, last = victims or [None]
        released = cleared + 2 * latency if batch else cleared
        for victim in batch:
            self.loop.at(released, Priority.API, functools.partial(self._terminate, victim))
        self.loop.at(released, Priority.API,
                     lambda: self.preempting.discard(preemptor.uid))
        if last is not None:
            self.loop.at(released + 2 * latency, Priority.API,
                         lambda: self._terminate(last))

    def _clear_lower_nominations(self, node: str, uids: list[str]) -> None:
        """``ClearNominatedNodeName`` for lower-priority pods nominated to ``node``: each
        loses its nomination (an update of a pending pod whose nomination changed)."""
        for uid in uids:
            other = self._unnominate(node, uid)
            if other is None:
                continue
            queued = self.queue.pods.get(uid)
            if queued is not None:
                queued.pod = replace(queued.pod, nominated_node_name="")
            self._nomination_released(other)

    def _terminate(self, victim: PodInfo) -> None:
        """A victim's deletion was accepted: it terminates (deletionTimestamp and the
        DisruptionTarget condition set; its controller may already replace it), still counted
        on its node, and is gone after the victim termination time."""
        now = self.loop.now_us
        current = self.cluster.pods.get(victim.uid)
        if current is None:
            return
        if self.options.recreate_preempted and victim.owner is not None and \
                victim.owner[0] in RECREATED_OWNERS:
            self._recreate(victim)
        if self.options.victim_termination_us <= 0:
            self._delete_pod(victim.uid, victim, "preempted")
            return
        terminating = replace(current, terminating=True,
                              obj=terminating_object(current.obj, format_timestamp(now)))
        self.cluster.remove_pod(victim.uid)
        self.cluster.add_pod(terminating)
        self.sink.record(now, RecordKind.TERMINATE, victim.key, victim.node_name,
                         {"reason": "preempted"})
        for cluster_event in pod_scheduling_properties_change(terminating, current):
            self._move(cluster_event, current, terminating)
        self.loop.at(now + self.options.victim_termination_us, Priority.COMPLETION,
                     lambda: self._delete_pod(victim.uid, victim, "preempted"))

    def _recreate(self, victim: PodInfo) -> None:
        now = self.loop.now_us
        obj = copy.deepcopy(victim.obj)
        metadata = obj.setdefault("metadata", {})
        kind = victim.owner[0] if victim.owner else ""
        if kind != "StatefulSet":
            stem = victim.name.rsplit("-", 1)[0] if "-" in victim.name else victim.name
            metadata["name"] = f"{stem}-r{self.summary.pods_recreated + 1}"
        metadata["uid"] = stable_uid("recreated", victim.uid, str(now))
        metadata.pop("deletionTimestamp", None)
        obj.setdefault("spec", {}).pop("nodeName", None)
        obj["status"] = {"phase": "Pending"}
        obj = self.claims.generate(obj)  # the new pod's template claims, as for any pod
        pod = pod_info(self.cluster, obj)
        self.summary.pods_recreated += 1
        self.kaudit_pods.add(pod.uid)
        self.sink.record(now, RecordKind.CREATE, pod.key, None, {"replaces": victim.key})
        self.queue.add(now, pod)

    def _arm_backoff_flush(self, free_at: int) -> None:
        """The once-a-second backoff flush that first finds the pod's backoff over."""
        if free_at not in self._backoff_flushes:
            self._backoff_flushes.add(free_at)
            self.loop.at(free_at, Priority.TIMER, lambda: self._flush_backoff(free_at))

    def _flush_backoff(self, tick: int) -> None:
        self._backoff_flushes.discard(tick)
        self.queue.flush_backoff(self.loop.now_us)

    def _arm_unschedulable_flush(self, queued: QueuedPod) -> None:
        """The 30-second flush of unschedulablePods that first finds the pod waited longer
        than ``podMaxInUnschedulablePodsDuration`` (it runs every 30 s from the start)."""
        start = self.start_us or 0
        due = queued.timestamp + self.options.max_in_unschedulable_us + 1
        tick = start + -(-(due - start) // UNSCHEDULABLE_FLUSH_US) * UNSCHEDULABLE_FLUSH_US
        self.loop.at(tick, Priority.TIMER,
                     lambda: self.queue.flush_unschedulable(self.loop.now_us))


def _nomination_ties(details: Any) -> dict[str, Any] | None:
    """What a nomination owes to chance, for ``kaudit diff``: the other candidate nodes tied
    after all of upstream's criteria, and whether the dry run stopped before examining every
    potential node (then the candidates depended on its random start offset)."""
    tied = [c.node for c in getattr(details, "tied", ())]
    partial = getattr(details, "examined_nodes", 0) < getattr(details, "potential_nodes", 0)
    facts: dict[str, Any] = {}
    if len(tied) > 1:
        facts["tiedNodes"] = tied
    if partial:
        facts["partialDryRun"] = True
    exposed: frozenset[str] = getattr(details, "tie_exposed", frozenset())
    if exposed:
        facts["tiedVictims"] = sorted(exposed)
    return facts or None


def recorded_lifetimes(events: Iterator[StoredEvent]) -> dict[str, tuple[int | None, int | None]]:
    """Per pod uid: the trace's bind time and deletion (or completion) time."""
    lifetimes: dict[str, tuple[int | None, int | None]] = {}
    for event in events:
        if event.kind != "Pod":
            continue
        uid = (event.object.get("metadata") or {}).get("uid") or f"{event.namespace}/{event.name}"
        bound, gone = lifetimes.get(uid, (None, None))
        if bound is None and (event.object.get("spec") or {}).get("nodeName"):
            bound = event.ts_us
        phase = (event.object.get("status") or {}).get("phase")
        if gone is None and (event.type == "DELETED" or phase in FINISHED_PHASES):
            gone = event.ts_us
        lifetimes[uid] = (bound, gone)
    return lifetimes


def workload_shapes(events: Iterator[StoredEvent]) -> list[PodShape]:
    """The shape (CPU, GPU-milli, GPU count, models) of every pod of the trace, once each:
    the workload whose typical pods FGD and the fragmentation measure expect."""
    shapes: list[PodShape] = []
    seen: set[str] = set()
    for event in events:
        if event.kind != "Pod" or event.type == "DELETED":
            continue
        uid = (event.object.get("metadata") or {}).get("uid") or f"{event.namespace}/{event.name}"
        if uid in seen:
            continue
        seen.add(uid)
        try:
            pod = parse_pod(event.object, priority=0)
        except DATA_ERRORS:
            continue  # ingest accepted it; the replay reports what is wrong with it
        shapes.append(pod_shape(pod.non_zero_cpu, pod.gpu))
    return shapes
