"""The scheduling queue: activeQ, backoffQ and unschedulablePods, as upstream's PriorityQueue.

Mirrors ``pkg/scheduler/backend/queue/{scheduling_queue.go,active_queue.go,backoff_queue.go}``
of Kubernetes v1.34.2 with its default gates: ``SchedulerQueueingHints`` (GA),
``SchedulerPopFromBackoffQ`` (beta, on).

* activeQ is ordered by the QueueSort plugin (PrioritySort: priority, then the time the pod
  was last added to the queue). Popping clears the pod's rejecting plugins.
* backoffQ is two heaps: pods some plugin rejected, ordered by backoff expiry then as activeQ,
  and pods that failed with an error (no rejecting plugin), by expiry. When activeQ is empty the
  scheduler pops the head of the first heap even if its backoff has not ended; error pods wait.
* Backoff is ``initial * 2^(n-1)`` capped at ``max``, where n counts the attempts that were
  rejected (or, after an error, the consecutive errors), measured from the last failure and
  truncated to a whole second; the pod leaves backoff at the first whole second after that,
  when the once-a-second flush runs. unschedulablePods is flushed every 30 s for pods waiting
  longer than ``podMaxInUnschedulablePodsDuration``.
* Cluster events that arrive while pods are in flight (popped, not yet requeued or done) are
  recorded; after a failed attempt a pod with rejecting plugins goes to unschedulablePods
  unless one of those events is worth requeueing it for, and one without (an error, or no
  nodes at all) goes to backoffQ. (In a replay a scheduling cycle takes no virtual time, so no
  event arrives in flight.)
* A cluster event moves an unschedulable pod only when a queueing hint of one of the plugins
  that rejected it answers Queue for that event (``isPodWorthRequeuing``): to backoffQ while it
  is still backing off, else to activeQ; a Pending plugin's Queue moves it to activeQ at once.
  A pod's own update is judged the same way, through the update's derived events.
* PreEnqueue plugins run when a pod would enter activeQ (and backoffQ): a pod they reject waits
  in unschedulablePods, gated, until an event its gating plugin registered is worth requeueing.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kaudit.framework.events import (
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    match_cluster_events,
    register,
)
from kaudit.framework.extender import EXTENDER_NAME
from kaudit.framework.plugin import extension_points
from kaudit.model.pod import PodInfo

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in-flight"
NONE = "none"
SECOND = 1_000_000

Transition = Callable[[int, PodInfo, str, str, str], None]


class Strategy(IntEnum):
    """``queueingStrategy``."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


@dataclass
class QueuedPod:
    pod: PodInfo
    timestamp: int
    attempts: int = 0
    #: Attempts that some plugin rejected; consecutive attempts that failed with an error.
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    #: Cached end of the current backoff (reset at each failure).
    backoff_expiration: int | None = None
    initial_attempt_us: int | None = None
    unschedulable_plugins: frozenset[str] = frozenset()
    pending_plugins: frozenset[str] = frozenset()
    gating_plugin: str = ""
    gating_events: tuple[ClusterEvent, ...] = ()
    cycle: int = 0
    where: str = NONE
    version: int = field(default=0)
    #: The replay's state version when the pod last failed: a retry at the same version
    #: would fail again (see ``Replay._retries_pending``).
    failed_at: object = None

    @property
    def gated(self) -> bool:
        return bool(self.gating_plugin)

    @property
    def rejectors(self) -> frozenset[str]:
        return self.unschedulable_plugins | self.pending_plugins


#: A profile's queueing hints: (registered event, plugin, hint function or None), in order.
HintTable = list[tuple[ClusterEvent, str, Any]]


#: Only plugins at these extension points can reject a pod, so only they register events
#: (upstream's ``fillEnqueueExtensions``).
_REJECTING_POINTS = frozenset({"PreEnqueue", "PreFilter", "Filter", "Reserve", "Permit"})


def hint_table(plugins: Iterable[Any], extenders: bool = False) -> HintTable:
    """``buildQueueingHintMap`` for a profile's plugin instances; with ``extenders``, first
    ``Extender`` on every event, as upstream's framework registers for them (extenders
    declare no events, so a pod they rejected is moved by any)."""
    table: HintTable = []
    if extenders:
        table.extend((ClusterEvent(resource, ActionType.ALL), EXTENDER_NAME, None)
                     for resource in _WILDCARD_RESOURCES)
    for plugin in plugins:
        points = extension_points(type(plugin))
        if points and not points & _REJECTING_POINTS:
            continue
        registrations: list[ClusterEventWithHint] | None = plugin.events_to_register()
        if registrations is None:
            registrations = [register(resource, "All") for resource in _WILDCARD_RESOURCES]
        node_add = node_taint = False
        for registration in registrations:
            event = registration.event
            table.append((event, plugin.name, registration.hint))
            if event.resource == "Node":
                node_add |= bool(event.action & ActionType.ADD)
                node_taint |= bool(event.action & ActionType.UPDATE_NODE_TAINT)
        if node_add and not node_taint:
            # Upstream adds Node/UpdateNodeTaint for plugins that registered Node/Add, as a node
            # may lose the taint that kept the pod off it between the event and the attempt.
            table.append((ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT), plugin.name, None))
    return table


#: ``UnrollWildCardResource``: what a plugin without EventsToRegister listens to.
_WILDCARD_RESOURCES = ("Pod", "Node", "PersistentVolume", "PersistentVolumeClaim", "CSINode",
                       "CSIDriver", "CSIStorageCapacity", "StorageClass", "ResourceClaim",
                       "DeviceClass")


def _floor_second(t: int) -> int:
    return t - t % SECOND


class SchedulingQueue:
    def __init__(self, sort_key: Callable[[QueuedPod], Any], *,
                 initial_backoff_us: int, max_backoff_us: int,
                 max_in_unschedulable_us: int, transition: Transition,
                 hints: Callable[[PodInfo], HintTable | None] = lambda pod: None,
                 pre_enqueue: Callable[[PodInfo], str | None] = lambda pod: None,
                 pop_from_backoff: bool = True,
                 on_backoff: Callable[[int], None] = lambda free_at: None,
                 of_interest: Callable[[ClusterEvent], bool] = lambda event: True) -> None:
        """``hints`` gives a pod's profile's hint table: it may depend on the pod's scheduler
        name only (the queue asks once per name when an event meets many pods)."""
        self.sort_key = sort_key
        self.initial_backoff_us = initial_backoff_us
        self.max_backoff_us = max_backoff_us
        self.max_in_unschedulable_us = max_in_unschedulable_us
        self.transition = transition
        self.hints = hints
        self.pre_enqueue = pre_enqueue
        self.pop_from_backoff = pop_from_backoff
        self.on_backoff = on_backoff
        self.of_interest = of_interest
        self.pods: dict[str, QueuedPod] = {}
        #: unschedulablePods (gated pods included), so cluster events touch only them.
        self.unschedulable: dict[str, QueuedPod] = {}
        self._active: list[tuple[Any, int, str, int]] = []
        #: backoffQ: pods some plugin rejected, and pods that failed with an error.
        self._backoff: list[tuple[int, Any, int, str, int]] = []
        self._error_backoff: list[tuple[int, int, str, int]] = []
        self._seq = itertools.count()
        #: Per hint table and incoming event: the (plugin, hint) registrations that match.
        #: Per event, per hint table (by id: the tables live as long as the queue), the
        #: (plugin, hint) pairs registered for the event.
        self._matching_cache: dict[ClusterEvent, dict[int, list[tuple[str, Any]]]] = {}
        self.scheduling_cycle = 0
        #: Pods popped from backoffQ before their backoff ended (activeQ was empty).
        self.popped_from_backoff = 0
        #: ``inFlightPods`` / ``inFlightEvents``: each popped pod's marker in the event list
        #: (its absolute position), and the events recorded while any pod was in flight; a
        #: marker whose pod is done is struck out (None), as upstream unlinks it.
        self.in_flight: dict[str, int] = {}
        self._in_flight_log: list[tuple[str, Any, Any, Any] | None] = []
        self._events_base = 0

    # ------------------------------------------------------------------ backoff

    def backoff_duration(self, count: int) -> int:
        """``calculateBackoffDuration``: 1 s, 2 s, 4 s, 8 s, 10 s, ... with the defaults."""
        if count <= 0:
            return 0
        duration = self.initial_backoff_us
        for _ in range(count - 1):
            duration *= 2
            if duration > self.max_backoff_us:
                return self.max_backoff_us
        return min(duration, self.max_backoff_us)

    def backoff_time(self, queued: QueuedPod) -> int | None:
        """``getBackoffTime``: None for a pod that never failed."""
        count = queued.consecutive_errors or queued.unschedulable_count
        if count == 0:
            return None
        if queued.backoff_expiration is None:
            expiry = queued.timestamp + self.backoff_duration(count)
            queued.backoff_expiration = (_floor_second(expiry) if self.pop_from_backoff
                                         else expiry)
        return queued.backoff_expiration

    def backing_off(self, queued: QueuedPod, now: int) -> bool:
        expiry = self.backoff_time(queued)
        if expiry is None:
            return False
        return expiry >= (_floor_second(now) if self.pop_from_backoff else now)

    def free_at(self, queued: QueuedPod) -> int:
        """The first instant the pod is no longer backing off."""
        expiry = self.backoff_time(queued)
        if expiry is None:
            return 0
        return expiry + SECOND if self.pop_from_backoff else expiry + 1

    # ------------------------------------------------------------------ placement

    def _set(self, now: int, queued: QueuedPod, where: str, event: str) -> None:
        previous = queued.where
        queued.where = where
        queued.version += 1
        if previous != where:
            self.transition(now, queued.pod, previous, where, event)

    def _leave_unschedulable(self, queued: QueuedPod) -> None:
        self.unschedulable.pop(queued.pod.uid, None)

    def _to_unschedulable(self, now: int, queued: QueuedPod, event: str) -> None:
        self.unschedulable[queued.pod.uid] = queued
        self._set(now, queued, GATED if queued.gated else UNSCHEDULABLE, event)

    def _run_pre_enqueue(self, queued: QueuedPod) -> None:
        """``runPreEnqueuePlugins``: a rejecting plugin gates the pod and becomes a rejector."""
        plugin = self.pre_enqueue(queued.pod)
        if plugin:
            queued.unschedulable_plugins = queued.unschedulable_plugins | {plugin}
            queued.gating_plugin = plugin
            table = self.hints(queued.pod) or []
            queued.gating_events = tuple(event for event, name, _ in table if name == plugin)
        else:
            queued.gating_plugin = ""

    def _move_to_active(self, now: int, queued: QueuedPod, event: str,
                        from_backoff: bool = False) -> bool:
        """``moveToActiveQ``: PreEnqueue (skipped for a pod leaving backoffQ), then activeQ."""
        if not (self.pop_from_backoff and from_backoff):
            self._run_pre_enqueue(queued)
        if queued.gated:
            self._to_unschedulable(now, queued, event)
            return False
        if queued.initial_attempt_us is None:
            queued.initial_attempt_us = now
        self._leave_unschedulable(queued)
        self._set(now, queued, ACTIVE, event)
        heapq.heappush(self._active, (self.sort_key(queued), next(self._seq), queued.pod.uid,
                                      queued.version))
        return True

    def _move_to_backoff(self, now: int, queued: QueuedPod, event: str) -> bool:
        """``moveToBackoffQ``: PreEnqueue, then the heap its rejectors decide."""
        if self.pop_from_backoff:
            self._run_pre_enqueue(queued)
            if queued.gated:
                self._to_unschedulable(now, queued, event)
                return False
        self._leave_unschedulable(queued)
        self._set(now, queued, BACKOFF, event)
        expiry = self.backoff_time(queued) or 0
        entry_seq = next(self._seq)
        if queued.rejectors:
            heapq.heappush(self._backoff, (expiry, self.sort_key(queued), entry_seq,
                                           queued.pod.uid, queued.version))
        else:
            heapq.heappush(self._error_backoff, (expiry, entry_seq, queued.pod.uid,
                                                 queued.version))
        self.on_backoff(self.free_at(queued))
        return True

    def _requeue(self, now: int, queued: QueuedPod, strategy: Strategy, event: str) -> str:
        """``requeuePodWithQueueingStrategy``; the queue the pod ends in."""
        if strategy == Strategy.SKIP:
            self._to_unschedulable(now, queued, event)
            return queued.where
        if strategy == Strategy.AFTER_BACKOFF and self.backing_off(queued, now):
            return BACKOFF if self._move_to_backoff(now, queued, event) else queued.where
        return ACTIVE if self._move_to_active(now, queued, event) else queued.where

    # ------------------------------------------------------------------ hints

    def _matching(self, table: Any, event: ClusterEvent,
                  by_table: dict[int, list[tuple[str, Any]]] | None = None
                  ) -> list[tuple[str, Any]]:
        """The (plugin, hint) pairs of ``table`` registered for ``event``; ``by_table`` is
        the event's cache when the caller looked it up already (one lookup per event)."""
        if by_table is None:
            by_table = self._matching_cache.setdefault(event, {})
        found = by_table.get(id(table))
        if found is None:
            found = [(plugin, fn) for registered, plugin, fn in table
                     if match_cluster_events(registered, event)]
            by_table[id(table)] = found
        return found

    def worth_requeuing(self, queued: QueuedPod, event: ClusterEvent, old: Any, new: Any,
                        by_table: dict[int, list[tuple[str, Any]]] | None = None
                        ) -> Strategy:
        """``isPodWorthRequeuing``."""
        rejectors = queued.rejectors
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if event.wildcard:
            if new is not None and (not isinstance(new, PodInfo) or new.uid != queued.pod.uid):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        table = self.hints(queued.pod)
        if table is None:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin, fn in self._matching(table, event, by_table):
            if plugin not in rejectors:
                continue
            if fn is not None:
                try:
                    hint = fn(queued.pod, old, new)
                except Exception:  # upstream: an error counts as Queue
                    hint = QueueingHint.QUEUE
                if hint == QueueingHint.QUEUE_SKIP:
                    continue
            if plugin in queued.pending_plugins:
                return Strategy.IMMEDIATELY
            if not queued.pending_plugins:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
        return strategy

    # ------------------------------------------------------------------ the API

    def add(self, now: int, pod: PodInfo, event: str = "PodAdd") -> None:
        """A new pending pod (``Add``): activeQ, or gated when a PreEnqueue plugin says so."""
        queued = QueuedPod(pod, now)
        self.pods[pod.uid] = queued
        self._move_to_active(now, queued, event)

    def update(self, now: int, old: PodInfo | None, pod: PodInfo,
               events: Iterable[ClusterEvent] = ()) -> None:
        """A pending pod changed (``Update``): refresh it; a pod in unschedulablePods moves when
        a rejecting plugin's hint says one of the update's events may help."""
        queued = self.pods.get(pod.uid)
        if queued is None:
            return
        events = list(events)
        if queued.where == IN_FLIGHT:
            for event in events:  # judged when the pod comes back
                self._record_in_flight(event, old, pod, only=pod.uid)
            return
        queued.pod = pod
        if queued.where == ACTIVE:
            queued.version += 1
            heapq.heappush(self._active, (self.sort_key(queued), next(self._seq), pod.uid,
                                          queued.version))
            return
        if queued.where == BACKOFF:
            queued.version += 1
            self._requeue_backoff_entry(queued)
            return
        if pod.uid not in self.unschedulable:
            return
        for event in events:
            strategy = self.worth_requeuing(queued, event, old, pod)
            where = self._requeue(now, queued, strategy, event.name)
            if where in (ACTIVE, BACKOFF):
                break

    def _requeue_backoff_entry(self, queued: QueuedPod) -> None:
        expiry = self.backoff_time(queued) or 0
        if queued.rejectors:
            heapq.heappush(self._backoff, (expiry, self.sort_key(queued), next(self._seq),
                                           queued.pod.uid, queued.version))
        else:
            heapq.heappush(self._error_backoff, (expiry, next(self._seq), queued.pod.uid,
                                                 queued.version))

    def delete(self, now: int, uid: str, event: str = "PodDelete") -> QueuedPod | None:
        self._done(uid)
        queued = self.pods.pop(uid, None)
        self.unschedulable.pop(uid, None)
        if queued is not None and queued.where != NONE:
            self._set(now, queued, NONE, event)
        return queued

    def activate(self, now: int, uid: str, event: str = "ForceActivate") -> bool:
        """``Activate``: a pod in unschedulablePods or backoffQ goes to activeQ."""
        queued = self.pods.get(uid)
        if queued is not None and queued.where == IN_FLIGHT:
            self._record_in_flight(EVENT_FORCE_ACTIVATE, None, queued.pod, only=uid)
            return False
        if queued is None or queued.where not in (UNSCHEDULABLE, GATED, BACKOFF):
            return False
        return self._move_to_active(now, queued, event, from_backoff=queued.where == BACKOFF)

    def pop(self, now: int) -> QueuedPod | None:
        """The next pod to schedule: activeQ's head, else (``SchedulerPopFromBackoffQ``) the
        head of the rejected pods' backoff heap, backoff or not."""
        queued = self._pop_valid(self._active, ACTIVE, 2)
        event = "Pop"
        if queued is None and self.pop_from_backoff:
            queued = self._pop_valid(self._backoff, BACKOFF, 3)
            event = "PopFromBackoffQ"
            if queued is not None:
                self.popped_from_backoff += 1
        if queued is None:
            return None
        self.scheduling_cycle += 1
        queued.cycle = self.scheduling_cycle
        queued.attempts += 1
        if queued.initial_attempt_us is None:
            queued.initial_attempt_us = now
        queued.unschedulable_plugins = frozenset()
        queued.pending_plugins = frozenset()
        queued.gating_plugin = ""
        queued.gating_events = ()
        self._set(now, queued, IN_FLIGHT, event)
        self.in_flight[queued.pod.uid] = self._events_base + len(self._in_flight_log)
        self._in_flight_log.append(("pod", queued.pod.uid, None, None))
        return queued

    @property
    def in_flight_events(self) -> list[tuple[str, Any, Any, Any]]:
        """The in-flight list: pod markers and events, oldest first."""
        return [entry for entry in self._in_flight_log if entry is not None]

    def _record_in_flight(self, event: ClusterEvent, old: Any, new: Any,
                          only: str | None = None) -> None:
        """Keep an event for the pods in flight (``only``: if that pod is one of them)."""
        if self.in_flight and (only is None or only in self.in_flight):
            self._in_flight_log.append(("event", event, old, new))

    def _done(self, uid: str) -> None:
        """``Done``: the pod is no longer in flight; events older than every pod still in
        flight are dropped."""
        position = self.in_flight.pop(uid, None)
        if position is None:
            return
        self._in_flight_log[position - self._events_base] = None
        log = self._in_flight_log
        drop = 0
        while drop < len(log) and ((entry := log[drop]) is None or entry[0] == "event"):
            drop += 1
        if drop:
            del log[:drop]
            self._events_base += drop

    def _events_since_pop(self, uid: str) -> list[tuple[ClusterEvent, Any, Any]]:
        start = self.in_flight.get(uid)
        if start is None:
            return []
        return [(entry[1], entry[2], entry[3])
                for entry in self._in_flight_log[start - self._events_base + 1:]
                if entry is not None and entry[0] == "event"]

    def _pop_valid(self, heap: list[Any], where: str, uid_index: int) -> QueuedPod | None:
        while heap:
            entry = heapq.heappop(heap)
            uid, version = entry[uid_index], entry[uid_index + 1]
            queued = self.pods.get(uid)
            if queued is not None and queued.version == version and queued.where == where:
                return queued
        return None

    def has_active(self) -> bool:
        return any(self.pods.get(uid) is not None and self.pods[uid].version == version
                   for _, _, uid, version in self._active)

    def done(self, now: int, queued: QueuedPod) -> None:
        """The pod was scheduled: it leaves the queue."""
        self.pods.pop(queued.pod.uid, None)
        self._done(queued.pod.uid)
        self._set(now, queued, NONE, "Scheduled")

    def give_up(self, now: int, queued: QueuedPod) -> None:
        """The pod failed its one try and is not queued again (a replay that tries each pod
        once, as the FGD paper's simulator does): it leaves the queue, still pending."""
        self.pods.pop(queued.pod.uid, None)
        self._done(queued.pod.uid)
        self._set(now, queued, NONE, "GivenUp")

    def requeue(self, now: int, queued: QueuedPod, unschedulable: Iterable[str],
                pending: Iterable[str] = ()) -> None:
        """``AddUnschedulableIfNotPresent`` after a failed attempt: a pod some plugin rejected
        waits in unschedulablePods; one that failed with no rejecting plugin backs off."""
        if queued.pod.uid not in self.pods:
            return
        queued.unschedulable_plugins = frozenset(unschedulable)
        queued.pending_plugins = frozenset(pending)
        self.add_unschedulable_if_not_present(now, queued)

    def add_unschedulable_if_not_present(self, now: int, queued: QueuedPod) -> None:
        """``AddUnschedulableIfNotPresent`` with the rejecting plugins already on ``queued``
        (which may be a fresh record of a pod, as upstream's tests pass)."""
        current = self.pods.get(queued.pod.uid)
        if current is not None and current.where in (ACTIVE, BACKOFF, UNSCHEDULABLE, GATED):
            raise ValueError(f"pod {queued.pod.key} is already queued")
        if current is not None and current is not queued:
            queued.version = current.version + 1
            queued.where = current.where
        self.pods[queued.pod.uid] = queued
        if queued.rejectors:
            queued.unschedulable_count += 1
            queued.consecutive_errors = 0
        else:
            queued.consecutive_errors += 1
        queued.timestamp = now
        queued.backoff_expiration = None
        strategy = self._in_flight_strategy(queued)
        self._requeue(now, queued, strategy, "ScheduleAttemptFailure")
        self._done(queued.pod.uid)

    def _in_flight_strategy(self, queued: QueuedPod) -> Strategy:
        """``determineSchedulingHintForInFlightPod``: backoff for a pod no plugin rejected,
        else the best strategy any event received while it was in flight earns it."""
        if not queued.rejectors:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for event, old, new in self._events_since_pop(queued.pod.uid):
            found = self.worth_requeuing(queued, event, old, new)
            if found == Strategy.IMMEDIATELY:
                return found
            if found == Strategy.AFTER_BACKOFF:
                strategy = found
                if not queued.pending_plugins:
                    return strategy
        return strategy

    def move_for_event(self, now: int, event: ClusterEvent, old: Any = None, new: Any = None,
                       pre_check: Callable[[QueuedPod], bool] | None = None) -> None:
        """``MoveAllToActiveOrBackoffQueue`` for a cluster event (only one some plugin
        registered: ``isEventOfInterest``)."""
        if not event.wildcard and not self.of_interest(event):
            return
        self._record_in_flight(event, old, new)
        by_table = self._matching_cache.setdefault(event, {})
        # Per event, by object identity (the tables and gating lists are shared by the pods
        # of a profile and plugin): whether a gating list registered the event, and which
        # plugins' hints it reaches. A pod none of whose rejectors is among them skips it.
        gating_hit: dict[int, bool] = {}
        hinted: dict[int, frozenset[str]] = {}
        tables: dict[str, HintTable | None] = {}
        wildcard = event.wildcard
        for queued in list(self.unschedulable.values()):
            if pre_check is not None and not pre_check(queued):
                continue
            if queued.gating_plugin:
                gating = queued.gating_events
                hit = gating_hit.get(id(gating))
                if hit is None:
                    hit = gating_hit[id(gating)] = any(
                        match_cluster_events(registered, event) for registered in gating)
                if not hit:
                    continue
            if not wildcard and (queued.unschedulable_plugins or queued.pending_plugins):
                name = queued.pod.scheduler_name
                if name in tables:
                    table = tables[name]
                else:
                    table = tables[name] = self.hints(queued.pod)
                if table is not None:
                    plugins = hinted.get(id(table))
                    if plugins is None:
                        plugins = hinted[id(table)] = frozenset(
                            plugin for plugin, _ in self._matching(table, event, by_table))
                    if plugins.isdisjoint(queued.unschedulable_plugins) and \
                            plugins.isdisjoint(queued.pending_plugins):
                        continue  # what worth_requeuing answers: no rejector hears it
            strategy = self.worth_requeuing(queued, event, old, new, by_table)
            if strategy == Strategy.SKIP:
                continue
            self._leave_unschedulable(queued)
            self._requeue(now, queued, strategy, event.name)

    def flush_backoff(self, now: int) -> None:
        """``flushBackoffQCompleted``: pods whose backoff ended go to activeQ."""
        heaps: tuple[tuple[list[Any], int], ...] = ((self._backoff, 3), (self._error_backoff, 2))
        for heap, uid_index in heaps:
            while heap:
                entry = heap[0]
                uid, version = entry[uid_index], entry[uid_index + 1]
                queued = self.pods.get(uid)
                if queued is None or queued.version != version or queued.where != BACKOFF:
                    heapq.heappop(heap)
                    continue
                if self.backing_off(queued, now):
                    break
                heapq.heappop(heap)
                self._move_to_active(now, queued, "BackoffComplete", from_backoff=True)

    def flush_unschedulable(self, now: int) -> None:
        """``flushUnschedulablePodsLeftover``: pods waiting longer than the maximum."""
        waiting = [q for q in self.unschedulable.values()
                   if now - q.timestamp > self.max_in_unschedulable_us]
        for queued in waiting:
            if queued.gated:
                continue  # the timeout is a wildcard event: no gating plugin registers it
            self._leave_unschedulable(queued)
            self._requeue(now, queued, Strategy.AFTER_BACKOFF,
                          EVENT_UNSCHEDULABLE_TIMEOUT.name)

    def counts(self) -> dict[str, int]:
        counts = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
        for queued in self.pods.values():
            if queued.where in counts:
                counts[queued.where] += 1
        return counts
