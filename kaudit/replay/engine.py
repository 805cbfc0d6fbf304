"""The replay engine: a trace's events, a scheduling queue and the scheduler, on a virtual clock.

Trace events are applied at their timestamps; pending pods whose ``schedulerName`` has a profile
go through the queue and are scheduled by kaudit (zero virtual time per cycle; binding is
immediate unless a bind latency is set); every other pod keeps the trace's placement. For pods
kaudit schedules, the trace's own binding (a later event setting ``spec.nodeName``) is kept as
the *recorded placement*, not applied. Preemption deletes the victims (and, with
``recreate_preempted``, their ReplicaSet, Job or StatefulSet brings a new pending pod back) and
nominates the node for the preemptor, which is retried after its backoff.

:class:`Replay` is a conductor: it makes the ports the scheduler's plugins read
(:mod:`kaudit.framework.ports`), has the scheduler built over them, builds its collaborators
and runs the event loop. Each job is a collaborator of its own: the trace feed
(:mod:`~kaudit.replay.feed`), the API server (:mod:`~kaudit.replay.api`), the informer
(:mod:`~kaudit.replay.apply`), the queue's hooks and timers (:mod:`~kaudit.replay.queueing`),
the scheduling cycle (:mod:`~kaudit.replay.cycle`), preemption's API calls
(:mod:`~kaudit.replay.preemption`), the controllers (:mod:`~kaudit.replay.controllers`) and the
progress guard (:mod:`~kaudit.replay.guard`); the trace's events pass the watch for features the
release turns on and kaudit does not model (:mod:`~kaudit.replay.unmodelled`) on their way to
the feed. A new replay behaviour gets a collaborator.

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

import time
from collections.abc import Callable, Iterable, Sequence

from kaudit import versions
from kaudit.cluster.gpu_frag import FragMeasure, PodShape, typical_pods
from kaudit.cluster.objects import status_options
from kaudit.cluster.state import ClusterState
from kaudit.eventlog.sink import EventSink
from kaudit.eventlog.timeline import NoTimeline, Timeline
from kaudit.framework.ports import HandlePorts
from kaudit.replay.allocation import AllocationTracker, fragmentation
from kaudit.replay.api import ApiServer
from kaudit.replay.apply import Informer
from kaudit.replay.audit import DecisionAudit
from kaudit.replay.audit_plan import AuditPlan
from kaudit.replay.clock import EventLoop, Priority
from kaudit.replay.collector import replay_pace
from kaudit.replay.context import ReplayContext
from kaudit.replay.controllers import Controllers
from kaudit.replay.cycle import SchedulingCycles
from kaudit.replay.feed import TraceFeed
from kaudit.replay.gpu_sharing import GpuSharingTracker
from kaudit.replay.guard import ProgressGuard
from kaudit.replay.options import ReplayOptions, ReplaySummary
from kaudit.replay.preemption import PreemptionCalls, PreemptionsInFlight
from kaudit.replay.queueing import QueueDriver
from kaudit.replay.unmodelled import UnmodelledFeatureWatch
from kaudit.scheduler.build import SchedulerFactory
from kaudit.scheduler.nominator import Nominator
from kaudit.store.traces import StoredEvent


class Replay:
    def __init__(self, build: SchedulerFactory, sink: EventSink, options: ReplayOptions,
                 lifetimes: dict[str, tuple[int | None, int | None]] | None = None,
                 workload: list[PodShape] | None = None,
                 audit: AuditPlan | None = None,
                 sources: Sequence[str | None] = ()) -> None:
        """``build`` makes the scheduler over the replay's ports
        (:func:`kaudit.scheduler.build.scheduler_factory`); with ``audit`` the replay follows
        the recording (``recorded_only``) and judges the plan's decisions. ``sources`` are the
        paths of the trace's inputs, which the run's warnings name."""
        self.sink = sink
        self.options = options
        self.summary = ReplaySummary()
        self.cluster = ClusterState()
        self.loop = EventLoop()
        self.nominator = Nominator()
        self.api = ApiServer(self.cluster, self.loop, sink)
        in_flight = PreemptionsInFlight()
        self.scheduler = scheduler = build(HandlePorts(
            cluster=self.cluster, clock=self.loop, nominator=self.nominator, api=self.api,
            preemption=in_flight, workload=workload))
        self.cluster.status_options = status_options(scheduler.feature_gates)
        self.timeline = Timeline() if sink.keeps_timeline else NoTimeline()
        self.allocation = AllocationTracker()
        self.gpu_sharing = (GpuSharingTracker(FragMeasure(typical_pods(workload)))
                            if options.gpu_report and workload is not None else None)
        self.queueing = QueueDriver(scheduler, self.loop, sink, self.timeline, options)
        self.queue = self.queueing.queue
        context = ReplayContext(self.cluster, self.loop, sink, self.timeline, options,
                                self.summary)
        self.informer = Informer(context, scheduler=scheduler, queueing=self.queueing,
                                 nominator=self.nominator, api=self.api)
        self.controllers = Controllers(context, self.informer, lifetimes)
        self.preemption = PreemptionCalls(
            context, nominator=self.nominator, informer=self.informer,
            controllers=self.controllers, in_flight=in_flight,
            asynchronous=scheduler.feature_gates.enabled("SchedulerAsyncPreemption"),
            skips_terminating_victims=versions.carries(scheduler.feature_gates.version,
                                                       "preemption-skips-terminating-victims"))
        self.guard = ProgressGuard(self.queue, self.cluster)
        self.audit = (None if audit is None else DecisionAudit(
            context, scheduler=scheduler, nominator=self.nominator, plan=audit))
        self.feed = TraceFeed(self.loop, self.informer.apply, self.summary, self.guard.count,
                              before=self.audit.before if self.audit is not None else None)
        self.cycles = SchedulingCycles(
            context, scheduler=scheduler, queueing=self.queueing, nominator=self.nominator,
            informer=self.informer, preemption=self.preemption, controllers=self.controllers,
            guard=self.guard, feed=self.feed, gpu_sharing=self.gpu_sharing)
        self.unmodelled = UnmodelledFeatureWatch(scheduler.feature_gates, self.summary, sources)
        self.loop.at_instant_end(self._end_instant)

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
        self.guard.tick = tick
        began = time.perf_counter()
        self.feed.start(self.unmodelled.watch(events), progress)
        while self.loop:
            if self._settled():
                break  # the trace is over, nothing will change: the waiting pods stay so
            if self.summary.start_us is None:
                self.summary.start_us = self.queueing.start_us = self.loop.peek_time()
            self.loop.run_instant(self._before_step)
        self._finish()
        self.summary.wall_seconds = time.perf_counter() - began
        return self.summary

    def _before_step(self, at_us: int, priority: int) -> None:
        if priority != Priority.TRACE and priority != Priority.SCHEDULE:
            self.guard.spend(at_us)  # the feed counts trace events one by one

    def _end_instant(self) -> None:
        """The scheduler drains activeQ; what the instant changed is sampled."""
        now = self.loop.now_us
        self.guard.count()
        self.cycles.drain()
        if self.informer.placements_changed:
            self.allocation.observe(now, self.cluster)
            self.informer.placements_changed = False
        self.timeline.sample(now, self.allocation.current)
        self.summary.end_us = now

    def _settled(self) -> bool:
        """After the trace (and ``settle_us``), nothing due would change the cluster and no
        pod waiting to be retried has yet to fail against the current state."""
        last = self.feed.last_us
        next_at = self.loop.peek_time()
        return (self.feed.done and last is not None and next_at is not None
                and next_at > last + self.options.settle_us
                and not self.loop.effects_pending
                and not self.queueing.retries_pending(self.cycles.state_version()))

    def _finish(self) -> None:
        """The summary's counts and utilisation; the timeline and the log flushed."""
        summary = self.summary
        pods = self.queue.pods.values()
        waiting = [q.pod for q in pods if q.attempts]
        waiting.extend(self.queueing.given_up.values())
        summary.pods_held_back = sum(1 for q in pods if not q.attempts)
        summary.pods_unschedulable = len(waiting) + summary.pods_held_back
        if summary.end_us is not None:
            self.allocation.observe(summary.end_us, self.cluster)
        summary.utilisation = {**self.allocation.as_json(),
                               "fragmentation": fragmentation(self.cluster, waiting)}
        if self.gpu_sharing is not None:
            summary.gpu_sharing = self.gpu_sharing.as_json()
        self.sink.write_timeline(self.timeline)
        self.sink.flush()
        summary.log_bytes = dict(self.sink.bytes_by_kind)
        summary.log_records = dict(self.sink.count_by_kind)
