"""The recorded scheduling decisions of a trace, found before the audit replays it.

``kaudit audit`` judges each decision a recorded cluster's scheduler made against the state
just before it, so it must know, while the state is still "before", that a decision is coming.
This module reads the whole trace once and lists the decisions with the trace position at which
each is judged (its *moment*):

* **bind**: a pod's ``spec.nodeName`` set by an update (upstream's binding,
  ``pkg/registry/core/pod/storage/storage.go``); the recorded node;
* **unschedulable**: a pending pod's ``PodScheduled`` condition set to ``False`` with a new
  message (``handleSchedulingFailure`` → ``updatePod`` in
  ``pkg/scheduler/schedule_one.go``, Kubernetes v1.34: the status is written only when the
  condition or the nomination changes), or a ``FailedScheduling`` Event about a pod whose
  status the recording never shows;
* **preemption**: the same update setting a new ``status.nominatedNodeName``; its victims are the
  pods on that node given the ``DisruptionTarget`` condition with reason
  ``PreemptionByScheduler`` (``pkg/scheduler/framework/preemption/preemption.go``) in one burst
  (one preemption deletes its victims together), the burst nearest in time;
* **nodeName**: a pod created with ``spec.nodeName`` after the recording began (no scheduler
  decided it; reported as not judged). Pods bound in the recording's first instant are its
  initial state, not decisions.

The moment rule: kube-scheduler decides, then binds asynchronously, so the last state it could
have seen is *before* the event that records the decision. A decision is judged just before its
recording event, or ``latency_us`` earlier when a latency is given (just after the last event
at or before ``time - latency``), but never before the pod's own previous event; a preemption
is judged before the first of its nomination and its victims' conditions.

The scheduler's view may also lag the recording by a little (``window_us``): a deletion
recorded just before the decision may not have reached its cache yet, and its own writes of
just before (a binding, a nomination) may be recorded just after. The audit tries those states
too before it calls a decision a disagreement (:mod:`kaudit.replay.audit`).

Bindings are written by goroutines running beside the next scheduling cycles, so a burst of
pods is bound in the API in another order than the scheduler decided them. The order it
decided them in is its queue's: activeQ pops by priority, then by the time the pod joined the
queue (``Less`` in ``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``;
``QueuedPodInfo.Timestamp``, set when the pod is added, ``pkg/scheduler/backend/queue/
scheduling_queue.go``): the order its informer delivered the creations, which is the order of
their ``resourceVersion`` (etcd's revision, one sequence for the whole cluster; an audit log
stamps concurrent creations by when they were received, a few milliseconds out of that order),
or of their times when a creation has none. For pods bound at their first attempt (created
pending, never gated) that order is known: each such binding is linked to those of the window
that the order puts on the other side of it (:attr:`RecordedDecision.queued_after`,
:attr:`RecordedDecision.queued_before`). A pod that failed before waits in backoff or among
the unschedulable pods until an event moves it, at a time the recording does not show.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kaudit.store.traces import StoredEvent

BIND, UNSCHEDULABLE, PREEMPTION, NODE_NAME = "bind", "unschedulable", "preemption", "nodeName"
#: How far apart a victim's DisruptionTarget condition and the preemptor's nomination may be
#: to be linked (the scheduler writes both within one preemption, milliseconds apart).
LINK_WINDOW_US = 10_000_000
#: How much earlier than its preemptor's nomination a victim's condition may be recorded:
#: upstream starts the victims' API calls in PostFilter (``prepareCandidateAsync``,
#: ``preemption/preemption.go``) and writes the nomination as that cycle ends; a victim
#: recorded seconds before is an earlier preemption's.
EARLY_LINK_US = 1_000_000
PREEMPTION_REASON = "PreemptionByScheduler"
#: At most this many later writes are linked to a decision (linear memory in a burst).
MAX_IN_FLIGHT = 16
#: Victims of one node whose conditions are less than this apart are one preemption's.
BURST_GAP_US = 500


@dataclass
class RecordedDecision:
    """One decision the recorded scheduler made."""

    kind: str
    pod: str
    uid: str
    #: The trace event that records it, and its time.
    seq: int
    ts_us: int
    #: Judged just before the trace event of this sequence number.
    moment_seq: int
    #: The node bound to (bind), nominated (preemption), or None.
    node: str | None = None
    #: The recorded PodScheduled=False (or FailedScheduling) message, when there is one.
    message: str | None = None
    #: The recorded victims (preemption), as ``namespace/name``.
    victims: list[str] = field(default_factory=list)
    #: The pod was first seen already bound (its pending state is not in the recording).
    first_seen_bound: bool = False
    #: Where the message came from: ``condition`` or ``event``.
    source: str = "condition"
    #: The earliest moment: just after the pod's previous event.
    floor_seq: int = 0
    #: The trace events of the victims' DisruptionTarget conditions.
    victim_seqs: list[int] = field(default_factory=list)
    #: Victims on the same node that another nomination close in time could claim as well
    #: (the recording does not say for whom a pod was preempted), linked here or not.
    shared_victims: list[str] = field(default_factory=list)
    #: Other pods' bindings and nominations recorded within the window after this decision:
    #: (kind, pod, node), writes the scheduler may have made before this decision (a binding
    #: is assumed in its cache, a nomination in its nominator, before the API records them).
    in_flight: list[tuple[str, str, str]] = field(default_factory=list)
    #: Where the pod stood in the scheduler's queue (bind at the first attempt): (-priority,
    #: its creation's resourceVersion or time, that event's sequence number); None otherwise.
    queue_key: tuple[int, int, int] | None = None
    #: Bound at its first attempt: (priority, creation time, seq, resourceVersion or None).
    created: tuple[int, int, int, int | None] | None = None
    #: The recording event's resourceVersion, as a number (None when it has none).
    version: int | None = None
    #: Node events recorded within the window after the moment with a resourceVersion below
    #: :attr:`version` (committed before the decision was written, received late by the
    #: recorder's watch): (time, type, node).
    committed_before: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    #: Pods bound within the window before this binding that the queue's order decides after
    #: it (not yet in the scheduler's cache when it decided this one), in queue order.
    queued_after: list[str] = field(default_factory=list)
    #: Bindings recorded within the window after this one that the queue's order decides
    #: before it (already assumed in the scheduler's cache), as (kind, pod, node).
    queued_before: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class AuditPlan:
    """The decisions in judging order (by moment, then by their recording event)."""

    decisions: list[RecordedDecision]
    latency_us: int
    window_us: int = 0
    _next: int = 0

    def due(self, seq: int) -> list[RecordedDecision]:
        """The decisions judged before the trace event ``seq`` not yet handed out."""
        start = self._next
        while self._next < len(self.decisions) and self.decisions[self._next].moment_seq <= seq:
            self._next += 1
        return self.decisions[start:self._next]

    def between(self, since_us: int | None, until_us: int | None) -> AuditPlan:
        """Only the decisions recorded from ``since_us`` to ``until_us`` (None: open); each
        keeps its links to the decisions outside."""
        return AuditPlan([d for d in self.decisions if (since_us is None or d.ts_us >= since_us)
                          and (until_us is None or d.ts_us <= until_us)],
                         self.latency_us, self.window_us)


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def _failure(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of a PodScheduled=False condition the scheduler wrote."""
    condition = _condition(obj, "PodScheduled")
    if condition is None or condition.get("status") != "False":
        return None
    return str(condition.get("reason") or ""), str(condition.get("message") or "")


def _version(obj: dict[str, Any]) -> int | None:
    """The object's ``resourceVersion`` as a number (etcd's revision), or None."""
    version = (obj.get("metadata") or {}).get("resourceVersion")
    return int(version) if isinstance(version, str) and version.isdigit() else None


def _preempted(obj: dict[str, Any]) -> bool:
    condition = _condition(obj, "DisruptionTarget")
    return (condition is not None and condition.get("status") == "True"
            and condition.get("reason") == PREEMPTION_REASON)


def _event_about_pod(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(pod key, message) of a FailedScheduling Event (core/v1 or events.k8s.io/v1)."""
    if obj.get("reason") != "FailedScheduling":
        return None
    regarding = obj.get("regarding") or obj.get("involvedObject") or {}
    if not isinstance(regarding, dict) or regarding.get("kind") != "Pod":
        return None
    message = obj.get("note") if "note" in obj else obj.get("message")
    return f"{regarding.get('namespace') or ''}/{regarding.get('name')}", str(message or "")


@dataclass
class _PodSeen:
    uid: str
    node: str = ""
    failure: tuple[str, str] | None = None
    nominated: str = ""
    last_seq: int = -1
    preempted: bool = False
    #: When the pod joined the scheduling queue, as (time, sequence number, resourceVersion),
    #: while its first attempt has not failed (None once one has, or when created gated).
    queued: tuple[int, int, int | None] | None = None


class _Planner:
    def __init__(self, window_us: int = 0) -> None:
        self.window_us = window_us
        self.decisions: list[RecordedDecision] = []
        self.pods: dict[str, _PodSeen] = {}
        #: Every event's time and sequence number, in trace order.
        self.times: list[int] = []
        self.seqs: list[int] = []
        self.first_ts: int | None = None
        #: (node, ts, seq, pod key) of each victim's DisruptionTarget condition.
        self.victims: list[tuple[str, int, int, str]] = []
        #: Node events: (sequence number, time, type, object, resourceVersion as a number).
        self.node_events: list[tuple[int, int, str, dict[str, Any], int | None]] = []
        #: FailedScheduling Events by pod, for pods whose status never shows a failure.
        self.events: dict[str, list[RecordedDecision]] = {}
        self.status_failures: set[str] = set()

    def see(self, event: StoredEvent) -> None:
        self.times.append(event.ts_us)
        self.seqs.append(event.seq)
        if self.first_ts is None:
            self.first_ts = event.ts_us
        if event.kind == "Pod":
            self._pod(event)
        elif event.kind == "Node" and self.window_us > 0:
            version = _version(event.object)
            if version is not None:  # only a node change with a version can be placed
                self.node_events.append((event.seq, event.ts_us, event.type, event.object,
                                         version))
        elif event.kind == "Event" and event.type != "DELETED":
            about = _event_about_pod(event.object)
            seen = self.pods.get(about[0]) if about is not None else None
            # A series' later count is written on its refresh, possibly after the binding: an
            # Event about a pod bound by now is no new decision.
            if about is not None and (seen is None or not seen.node):
                key, message = about
                self.events.setdefault(key, []).append(RecordedDecision(
                    UNSCHEDULABLE, key, "", event.seq, event.ts_us, event.seq,
                    message=message, source="event", floor_seq=event.seq))

    def _pod(self, event: StoredEvent) -> None:
        obj, key = event.object, f"{event.namespace}/{event.name}"
        metadata = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        seen = self.pods.get(key)
        if event.type == "DELETED":
            if seen is not None and seen.node and not seen.preempted and _preempted(obj):
                self.victims.append((seen.node, event.ts_us, event.seq, key))
            self.pods.pop(key, None)
            return
        node = str(spec.get("nodeName") or "")
        uid = str(metadata.get("uid") or key)
        if seen is None:
            seen = self.pods[key] = _PodSeen(uid)
            if not node and not spec.get("schedulingGates"):
                seen.queued = (event.ts_us, event.seq, _version(obj))
            if node:
                seen.node = node
                seen.last_seq = event.seq
                if event.ts_us == self.first_ts:
                    return  # the recording's initial state
                kind = NODE_NAME if event.type == "ADDED" else BIND
                self._decide(kind, key, seen, event, node=node,
                             first_seen_bound=kind == BIND)
                return
        if node and not seen.node:
            seen.node = node
            self._decide(BIND, key, seen, event, node=node)
            if seen.queued is not None:
                priority = spec.get("priority")
                self.decisions[-1].created = (priority if isinstance(priority, int) else 0,
                                              *seen.queued)
        elif node:
            if _preempted(obj) and not seen.preempted:
                seen.preempted = True
                self.victims.append((node, event.ts_us, event.seq, key))
        else:
            failure = _failure(obj)
            nominated = str(status.get("nominatedNodeName") or "")
            if nominated and nominated != seen.nominated:
                self.status_failures.add(key)
                self._decide(PREEMPTION, key, seen, event, node=nominated,
                             message=failure[1] if failure else None)
            elif failure is not None and failure != seen.failure \
                    and failure[0] != "SchedulingGated":
                self.status_failures.add(key)
                self._decide(UNSCHEDULABLE, key, seen, event, message=failure[1])
            if failure is not None:
                seen.queued = None
            seen.failure = failure
            seen.nominated = nominated
        seen.last_seq = event.seq

    def _decide(self, kind: str, key: str, seen: _PodSeen, event: StoredEvent,
                **fields: Any) -> None:
        self.decisions.append(RecordedDecision(kind, key, seen.uid, event.seq, event.ts_us,
                                               event.seq, floor_seq=seen.last_seq + 1,
                                               version=_version(event.object), **fields))

    def finish(self, latency_us: int, window_us: int) -> AuditPlan:
        for key, events in self.events.items():
            if key not in self.status_failures:
                self.decisions.extend(events)
        self._link_victims(window_us)
        for decision in self.decisions:
            moment = decision.seq
            if latency_us > 0:
                index = bisect_right(self.times, decision.ts_us - latency_us)
                if index < len(self.seqs):
                    moment = min(moment, self.seqs[index])
            if decision.kind == PREEMPTION:
                moment = min([moment, *decision.victim_seqs])
            decision.moment_seq = min(max(moment, decision.floor_seq), decision.seq)
        self._link_in_flight(window_us)
        self._link_queue_order(window_us)
        self._link_recorded_late(window_us)
        self.decisions.sort(key=lambda d: (d.moment_seq, d.seq))
        return AuditPlan(self.decisions, latency_us, window_us)

    def _link_in_flight(self, window_us: int) -> None:
        if window_us <= 0:
            return
        writes = sorted((d for d in self.decisions if d.kind in (BIND, PREEMPTION) and d.node),
                        key=lambda d: d.seq)
        seqs = [d.seq for d in writes]
        for decision in self.decisions:
            start = bisect_right(seqs, decision.seq)
            for later in writes[start:]:
                if later.ts_us > decision.ts_us + window_us \
                        or len(decision.in_flight) >= MAX_IN_FLIGHT:
                    break
                if later.pod != decision.pod:
                    decision.in_flight.append((later.kind, later.pod, later.node or ""))

    def _link_recorded_late(self, window_us: int) -> None:
        if window_us <= 0:
            return
        seqs = [event[0] for event in self.node_events]
        for decision in self.decisions:
            if decision.version is None:
                continue
            for _seq, ts_us, event_type, obj, version in \
                    self.node_events[bisect_left(seqs, decision.moment_seq):]:
                if ts_us > decision.ts_us + window_us \
                        or len(decision.committed_before) >= MAX_IN_FLIGHT:
                    break
                if version is not None and version < decision.version:
                    decision.committed_before.append((ts_us, event_type, obj))

    def _link_queue_order(self, window_us: int) -> None:
        """Each first-attempt binding's first-attempt neighbours within the window that the
        scheduler's queue order puts on the other side of it: a pod the queue pops later
        (lower priority, or created later at the same one), bound before it in the recording,
        was decided after it if it had joined the queue before that binding was recorded;
        and the other way round."""
        if window_us <= 0:
            return
        binds = sorted((d for d in self.decisions if d.kind == BIND and d.created),
                       key=lambda d: d.seq)
        by_version = all(d.created is not None and d.created[3] is not None for d in binds)
        joined: dict[str, int] = {}
        for decision in binds:
            assert decision.created is not None
            priority, ts_us, seq, version = decision.created
            order = version if by_version and version is not None else ts_us
            decision.queue_key = (-priority, order, seq)
            joined[decision.pod] = ts_us
        times = [d.ts_us for d in binds]
        for index, decision in enumerate(binds):
            key = decision.queue_key
            assert key is not None
            start = bisect_right(times, decision.ts_us - window_us - 1)
            after = []
            for other in binds[start:index]:
                other_key = other.queue_key
                assert other_key is not None
                if other_key > key and joined[decision.pod] <= other.ts_us:
                    after.append((other_key, other.pod))
            decision.queued_after = [pod for _key, pod in sorted(after)]
            for other in binds[index + 1:]:
                if other.ts_us > decision.ts_us + window_us:
                    break
                other_key = other.queue_key
                assert other_key is not None
                if other_key < key and joined[other.pod] <= decision.ts_us:
                    decision.queued_before.append((BIND, other.pod, other.node or ""))

    def _link_victims(self, window_us: int) -> None:
        """Each preemption's victims: the victims of one node are cut into bursts (one
        preemption deletes its victims together, in parallel: conditions less than
        :data:`BURST_GAP_US` apart), and bursts and nominations of that node are paired one
        to one, the closest in time first, within :data:`LINK_WINDOW_US` after the nomination
        or :data:`EARLY_LINK_US` before it; a burst left over joins the nomination nearest to
        it."""
        nominations: dict[str, list[RecordedDecision]] = {}
        for decision in self.decisions:
            if decision.kind == PREEMPTION and decision.node:
                nominations.setdefault(decision.node, []).append(decision)
        bursts: dict[str, list[list[tuple[int, int, str]]]] = {}
        for node, ts, seq, key in sorted(self.victims, key=lambda v: (v[0], v[1], v[2])):
            groups = bursts.setdefault(node, [])
            if groups and ts - groups[-1][-1][0] <= BURST_GAP_US:
                groups[-1].append((ts, seq, key))
            else:
                groups.append([(ts, seq, key)])
        for node, groups in bursts.items():
            pairs = sorted(
                (abs(group[0][0] - decision.ts_us), g, n)
                for g, group in enumerate(groups)
                for n, decision in enumerate(nominations.get(node) or [])
                if -EARLY_LINK_US <= group[0][0] - decision.ts_us <= LINK_WINDOW_US)
            used_groups: set[int] = set()
            used_nominations: set[int] = set()
            # One burst per nomination first; a burst left over (a victim slow to go, with no
            # other nomination to claim it) joins the nomination nearest in time.
            paired = []
            for _distance, g, n in pairs:
                if g not in used_groups and n not in used_nominations:
                    used_groups.add(g)
                    used_nominations.add(n)
                    paired.append((g, n))
            for _distance, g, n in pairs:
                if g not in used_groups:
                    used_groups.add(g)
                    paired.append((g, n))
            for g, n in paired:
                chosen = nominations[node][n]
                for _ts, seq, key in groups[g]:
                    if key not in chosen.victims:
                        chosen.victims.append(key)
                        chosen.victim_seqs.append(seq)
            if window_us > 0:
                for group in groups:
                    for ts, _seq, key in group:
                        claimants = [d for d in nominations.get(node) or []
                                     if abs(ts - d.ts_us) <= window_us]
                        if len(claimants) > 1:
                            for decision in claimants:
                                decision.shared_victims.append(key)


def plan_decisions(events: Iterable[StoredEvent], latency_us: int = 0,
                   window_us: int = 0) -> AuditPlan:
    """The recorded decisions of ``events`` (a whole trace, in replay order); ``window_us``
    links each to the writes recorded that long after it (:attr:`RecordedDecision.in_flight`)."""
    planner = _Planner(window_us)
    for event in events:
        planner.see(event)
    return planner.finish(latency_us, window_us)
