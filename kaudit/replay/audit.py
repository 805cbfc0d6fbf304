"""The audit: each recorded scheduling decision judged at its moment (``kaudit audit``).

The replay follows the recording exactly (``recorded_only``: every binding, deletion and status
applied as it happened, nothing scheduled by kaudit). Before each trace event, the decisions
whose moment it is (:mod:`kaudit.replay.audit_plan`) are judged: the pending pod as last
recorded, with the nominations recorded for the other pending pods of this scheduler in the
nominator (upstream's ``addNominatedPods`` reads them; the pod's own is skipped), evaluated by
the configured scheduler exhaustively (``schedulePod`` in ``pkg/scheduler/schedule_one.go``,
Kubernetes v1.34, PostFilter included) and classified by :mod:`kaudit.replay.audit_verdict`.
Each judgment is an ``attempt`` record (kaudit's ranking at that moment, so ``explain`` and the
pod page show it) followed by an ``audit`` record (the class, the recorded and kaudit's answers,
the reason, and the trace events just before the moment, a possible cause).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from kaudit.cluster.objects import apply_object, pod_info
from kaudit.eventlog.codec import pack_attempt
from kaudit.eventlog.records import RecordKind
from kaudit.replay.audit_changes import (
    TRACKED_KINDS,
    Change,
    Write,
    counted_on_node,
    lagging_views,
    scheduling_state,
)
from kaudit.replay.audit_plan import BIND, NODE_NAME, PREEMPTION, AuditPlan, RecordedDecision
from kaudit.replay.audit_verdict import AGREEING, CLASSES, Judgment, judge, not_judged
from kaudit.replay.audit_views import (
    assuming,
    keeping_node_order,
    overcommitted,
    rewound,
    seen_early,
    without,
)
from kaudit.replay.context import ReplayContext
from kaudit.scheduler.nominator import Nominator
from kaudit.scheduler.schedule import Scheduler
from kaudit.store.traces import StoredEvent

#: How far before a decision's moment trace events are reported beside a disagreement.
WINDOW_US = 1_000_000
#: At most this many of those events are reported.
WINDOW_EVENTS = 10
#: At most this many lagging views are tried for one decision.
MAX_VIEWS = 64


class DecisionAudit:
    """Judges the plan's decisions as the trace feed reaches their moments."""

    def __init__(self, context: ReplayContext, *, scheduler: Scheduler, nominator: Nominator,
                 plan: AuditPlan) -> None:
        self.cluster = context.cluster
        self.loop = context.loop
        self.sink = context.sink
        self.summary = context.summary
        self.scheduler = scheduler
        self.nominator = nominator
        self.plan = plan
        #: Pending pods as last recorded, by ``namespace/name``.
        self.pending: dict[str, dict[str, Any]] = {}
        #: A pending pod as recorded before its last change of ``status.nominatedNodeName``
        #: (when, the object): what the scheduler's queue may still hold of it.
        self.renominated: dict[str, tuple[int, dict[str, Any]]] = {}
        #: Pods a decision agreed with only by taking them as decided before it: each is then
        #: judged without that decision's pod (one order of decisions serves them all).
        self.decided_before: dict[str, set[str]] = {}
        #: Changes of what the scheduler reads recorded within the plan's window, oldest first.
        self.changes: deque[Change] = deque()
        #: The last recorded object of each node and each pod counted on a node.
        self.accounted: dict[tuple[str, str], dict[str, Any]] = {}
        #: Recent pod and node events (time, description), for disagreements' context.
        self.recent: deque[tuple[int, str]] = deque()
        self.counts = dict.fromkeys(CLASSES, 0)
        self.judged = 0
        self.report: dict[str, Any] = {"decisions": 0, "classes": self.counts,
                                       "latencySeconds": plan.latency_us / 1e6}
        self.summary.audit = self.report

    # ------------------------------------------------------------------ the feed's hook

    def before(self, event: StoredEvent) -> None:
        """Judge the decisions due before ``event``, then note what it changes."""
        for decision in self.plan.due(event.seq):
            self._judge(decision, event)
        self._note(event)

    def _note(self, event: StoredEvent) -> None:
        now = event.ts_us
        if event.kind in ("Pod", "Node"):
            self.recent.append((now, f"{event.type} {event.kind} "
                                     f"{event.namespace + '/' if event.namespace else ''}"
                                     f"{event.name}"))
            while self.recent and self.recent[0][0] < now - WINDOW_US:
                self.recent.popleft()
        if event.kind in TRACKED_KINDS and self.plan.window_us > 0:
            self._remember(event)
        if event.kind != "Pod":
            return
        key = f"{event.namespace}/{event.name}"
        obj = event.object
        node = (obj.get("spec") or {}).get("nodeName")
        uid = (obj.get("metadata") or {}).get("uid") or key
        if event.type == "DELETED" or node:
            self.pending.pop(key, None)
            self.renominated.pop(key, None)
            self.nominator.delete(uid)
            return
        before = self.pending.get(key)
        if before is not None and _nominated(before) != _nominated(obj):
            self.renominated[key] = (now, before)
        self.pending[key] = obj
        nominated = (obj.get("status") or {}).get("nominatedNodeName")
        if not nominated:
            self.nominator.delete(uid)
            return
        info = pod_info(self.cluster, obj)
        if self.scheduler.framework_for(info) is not None:
            self.nominator.add(info, nominated, self.cluster)
        else:
            self.nominator.delete(uid)

    def _remember(self, event: StoredEvent) -> None:
        """Keep the change ``event`` makes to what the scheduler reads (a node, or a pod
        counted on a node), so a lagging view can undo it."""
        key = (event.kind, f"{event.namespace}/{event.name}")
        before = self.accounted.get(key)
        after = None if event.type == "DELETED" else event.object
        if after is not None and event.kind == "Pod" and not counted_on_node(after):
            after = None
        if after is None:
            self.accounted.pop(key, None)
        else:
            self.accounted[key] = after
        if scheduling_state(event.kind, before) != scheduling_state(event.kind, after):
            self.changes.append(Change(event.ts_us, event.kind, key[1], before, after,
                                       event.type))
        while self.changes and self.changes[0].ts_us < event.ts_us - self.plan.window_us:
            self.changes.popleft()

    # ------------------------------------------------------------------ judging

    def _judge(self, decision: RecordedDecision, event: StoredEvent) -> None:
        now = event.ts_us
        obj = self.pending.get(decision.pod)
        if obj is None and decision.first_seen_bound and decision.seq == event.seq:
            # First seen bound: judged from the bound object, as it was before the binding.
            obj = {**event.object, "spec": {key: value for key, value in
                                            (event.object.get("spec") or {}).items()
                                            if key != "nodeName"}}
        judgment, attempt_record = self._evaluate(decision, obj)
        self.judged += 1
        self.counts[judgment["class"]] += 1
        self.report["decisions"] = self.judged
        if attempt_record is not None:
            document, blob, selected = attempt_record
            self.sink.record(now, RecordKind.ATTEMPT, decision.pod, selected, document, blob)
        recorded: dict[str, Any] = {"kind": decision.kind, "node": decision.node,
                                    "tUs": decision.ts_us, "traceSeq": decision.seq}
        if decision.message is not None:
            recorded["message"] = decision.message
        if decision.kind == "preemption":
            recorded["victims"] = decision.victims
        if decision.first_seen_bound:
            recorded["firstSeenBound"] = True
        data: dict[str, Any] = {**judgment, "recorded": recorded,
                                "momentSeq": decision.moment_seq}
        if judgment["class"] not in AGREEING and judgment["class"] != "notJudged":
            data["nearby"] = [text for ts, text in self.recent
                              if ts >= now - WINDOW_US][-WINDOW_EVENTS:]
        self.sink.record(now, RecordKind.AUDIT, decision.pod, decision.node, data)

    def _evaluate(self, decision: RecordedDecision, obj: dict[str, Any] | None
                  ) -> tuple[Judgment, tuple[dict[str, Any], bytes, str | None] | None]:
        if decision.kind == NODE_NAME:
            return not_judged("created with spec.nodeName: no scheduler decided it",
                              cause="spec.nodeName"), None
        if obj is None:
            return not_judged("the recording does not show the pod pending before this "
                              "decision", [f"Pod {decision.pod} (pending)"],
                              cause="pod never seen pending"), None
        info = pod_info(self.cluster, obj)
        framework = self.scheduler.framework_for(info)
        if framework is None:
            return not_judged(f"decided by another scheduler: schedulerName "
                              f"{info.scheduler_name!r} has no profile in this "
                              "configuration", cause=f"scheduler {info.scheduler_name}"), None
        missing = self._missing(decision, obj)
        if missing:
            return not_judged("the recording lacks what this decision needs: "
                              + ", ".join(missing), missing,
                              cause="missing " + ", ".join(sorted({m.split()[0]
                                                                   for m in missing}))), None
        later = sorted(self.decided_before.pop(decision.pod, set()))
        with keeping_node_order(self.cluster), without(self.cluster, later) as removed:
            absent = list(removed)
            started = time.perf_counter()
            attempt = self.scheduler.schedule(self.cluster, info, nominator=self.nominator,
                                              exhaustive=True)
            self.summary.scheduling_seconds += time.perf_counter() - started
            self.summary.attempts += 1
            document, blob = pack_attempt(attempt, framework, self.cluster,
                                          cycle=self.judged + 1, number=1)
            judgment = judge(decision, attempt, self.cluster, self.scheduler,
                             info.nominated_node_name)
            if absent:
                judgment["reason"] += (f" (judged without {', '.join(absent)}: an earlier "
                                       "decision agreed only as decided after this one)")
                judgment["decidedAfter"] = absent
            if judgment["class"] not in AGREEING and self.plan.window_us > 0:
                lagging = (self._lagging_view(decision, info, removed)
                           or self._as_queued(decision))
                if lagging is not None:
                    # The attempt record stays kaudit's ranking in the recorded state (what
                    # explain and the pod page read beside the recorded free amounts); the
                    # judgment says in which view the decision agrees.
                    judgment = lagging
            if judgment.get("cause") in ("not a candidate", "another candidate"):
                reached = self._from_recorded_offset(decision, info, attempt)
                if reached is not None:
                    judgment = reached
        return judgment, (document, blob, attempt.selected)

    def _from_recorded_offset(self, decision: RecordedDecision, info: Any,
                              attempt: Any) -> Judgment | None:
        """A nomination kaudit's dry run did not reach, or ranked below its choice: upstream's
        ``DryRunPreemption`` walks the potential nodes from a random offset until it has
        enough candidates. Judged again from the first offset whose candidates nominate the
        recorded node (:mod:`kaudit.plugins.preemption_offsets`); agreeing there makes the
        decision ``sampled`` (another offset), not a disagreement."""
        details = getattr(attempt.post_filter_result, "details", None)
        if details is None or details.examined_nodes >= details.potential_nodes \
                or details.chosen is None or decision.node is None:
            return None
        again = self.scheduler.schedule(self.cluster, info, nominator=self.nominator,
                                        exhaustive=True, preemption_target=decision.node)
        self.summary.attempts += 1
        found = getattr(again.post_filter_result, "details", None)
        start = getattr(found, "started_at", None)
        judgment = judge(decision, again, self.cluster, self.scheduler, info.nominated_node_name)
        if start is None or judgment["class"] not in AGREEING:
            return None
        parallel = bool(getattr(found, "in_parallel", False))
        workers = " with its workers interleaved" if parallel else ""
        return {**judgment, "class": "sampled", "cause": "preemption's random offset"
                + (" and parallel workers" if parallel else ""),
                "reason": f"from its own random offset kaudit's dry run (examining "
                          f"{details.examined_nodes} of {details.potential_nodes} potential "
                          f"nodes) nominates {details.chosen.node}; from an offset at {start}"
                          f"{workers} it nominates {decision.node} with the recorded victims, "
                          "as upstream's random offset may have started"}

    def _lagging_view(self, decision: RecordedDecision, info: Any,
                      absent: dict[str, Any]) -> Judgment | None:
        """The decision judged in the states the scheduler could have seen instead, when its
        view lagged the recording by up to the window: the last few changes recorded just
        before it (bindings, deletions, node updates) not yet seen, its own bindings and
        nominations recorded just after it already made; or, the recorder's watch lagging,
        node changes recorded just after it but committed before its write already seen. The
        first that agrees, or None."""
        since = decision.ts_us - self.plan.window_us
        # Not the pod's own changes, nor those of pods already taken as decided after it.
        unseen = [c for c in self.changes if c.ts_us >= since and c.key != decision.pod
                  and not (c.kind == "Pod" and c.key in absent)
                  and not (decision.kind == PREEMPTION and self._own_binding(c))]
        # Only this scheduler's own writes: it assumes and nominates only the pods it serves.
        in_flight, queued_before = ([write for write in writes if write[1] in self.pending
                                     and self.scheduler.framework_for(pod_info(
                                         self.cluster, self.pending[write[1]])) is not None]
                                    for writes in (decision.in_flight, decision.queued_before))
        # The queue's order first: the bindings it decides after this one not yet made, those
        # it decides before made (upstream's binding goroutines write them in any order).
        queued = [c for c in unseen if c.is_binding and c.key in decision.queued_after]
        queued.sort(key=lambda change: decision.queued_after.index(change.key))
        views: list[tuple[list[Change], list[Write], list[Change]]] = \
            [(queued, queued_before, [])] if queued or queued_before else []
        early = self._recorded_late(decision)
        views += [(back, ahead, early[:n]) for n in range(1, len(early) + 1)
                  for back, ahead, _ in [*views[:1], ([], [], [])]]
        views += [(back, ahead, []) for back, ahead in lagging_views(unseen, in_flight)]
        for back, ahead, seen in views[:MAX_VIEWS]:
            with keeping_node_order(self.cluster), \
                    rewound(self.cluster, back, self.accounted) as put_back, \
                    seen_early(self.cluster, seen) as shifted, \
                    assuming(self.cluster, self.nominator, self.pending, ahead) as possible:
                if not possible or overcommitted(self.cluster, put_back + shifted):
                    continue  # a pod put back or assumed does not fit beside what is bound
                attempt = self.scheduler.schedule(self.cluster, info, nominator=self.nominator,
                                                  exhaustive=True)
                self.summary.attempts += 1
                judgment = judge(decision, attempt, self.cluster, self.scheduler,
                                 info.nominated_node_name, agreement_only=True)
                if judgment["class"] not in AGREEING:
                    continue
                if decision.kind == BIND and not self._decided_after(decision, info, back,
                                                                     absent):
                    continue
            view = {"notSeen": [change.describe() for change in back],
                    "writesInFlight": [f"{kind} {pod} {node}" for kind, pod, node in ahead],
                    "queueOrder": bool(back or ahead) and back is queued
                    and ahead is queued_before}
            if seen:
                view["seenBeforeRecorded"] = [change.describe() for change in seen]
            parts = ([f"{len(back)} change(s) it had not seen yet"] if back else []) + \
                ([f"{len(ahead)} of its own write(s) recorded just after"] if ahead else []) + \
                ([f"{len(seen)} change(s) recorded just after, committed before its write"]
                 if seen else [])
            judgment["reason"] += (" — in the state the scheduler could have seen "
                                   f"(within {self.plan.window_us / 1000:g} ms of the "
                                   f"recording: {' and '.join(parts)})")
            judgment["laggingView"] = view
            for kind, pod, _node in ahead:
                if kind == BIND:
                    self.decided_before.setdefault(pod, set()).add(decision.pod)
            return judgment
        return None

    def _as_queued(self, decision: RecordedDecision) -> Judgment | None:
        """The decision judged with the pod as recorded before its nomination last changed,
        when that change is recorded within the window before it. A scheduling cycle works on
        the pod object its queue held when it popped the pod; another cycle's preemption
        clears a lower-priority pod's ``nominatedNodeName`` (``ClearNominatedNodeName`` in
        upstream's ``prepareCandidate``), and a pod already popped, or one whose update the
        informer has not delivered yet, is still decided with its old nomination (which
        decides the nominated node's first evaluation and PostFilter's eligibility)."""
        stale = self.renominated.get(decision.pod)
        if stale is None or stale[0] < decision.ts_us - self.plan.window_us:
            return None
        earlier = pod_info(self.cluster, stale[1])
        with keeping_node_order(self.cluster):
            attempt = self.scheduler.schedule(self.cluster, earlier, nominator=self.nominator,
                                              exhaustive=True)
        self.summary.attempts += 1
        judgment = judge(decision, attempt, self.cluster, self.scheduler,
                         earlier.nominated_node_name)
        if judgment["class"] not in AGREEING:
            return None
        was = earlier.nominated_node_name or "none"
        judgment["reason"] += (f" — with the pod as the scheduler's queue still held it "
                               f"(nominatedNodeName {was}, changed "
                               f"{(decision.ts_us - stale[0]) / 1000:g} ms before the "
                               "recording)")
        judgment["laggingView"] = {"podAsQueued": {"nominatedNodeName": was}}
        return judgment

    def _decided_after(self, decision: RecordedDecision, info: Any, back: list[Change],
                       absent: dict[str, Any]) -> bool:
        """Whether each of the scheduler's own bindings ``back`` takes as not yet seen still
        agrees when decided after ``decision`` (in the view, with the decision's pod on its
        recorded node, and each binding checked made before the next is checked): the
        scheduler assumed each pod when it decided it, so the binding recorded first was
        decided later only if it would have been the same beside this one. Called inside the
        view, which gets the bindings back as it ends. In the queue's order when it gives
        one, the pods taken away already as decided after this one made at their place."""
        own: list[Any] = [change for change in back if self._own_binding(change)]
        if not own or decision.node is None:
            return True
        order = decision.queued_after
        own += [absent[key] for key in order if key in absent]
        own.sort(key=lambda c: order.index(c.key) if c.key in order else len(order))
        made = []
        assumed = {**info.obj, "spec": {**(info.obj.get("spec") or {}),
                                        "nodeName": decision.node}}
        apply_object(self.cluster, assumed)
        try:
            for change in own:
                if not isinstance(change, Change):
                    self.cluster.add_pod(change)
                    made.append(change.uid)
                    continue
                bound = change.after or {}
                node = (bound.get("spec") or {}).get("nodeName")
                pending = {**bound, "spec": {key: value for key, value in
                                             (bound.get("spec") or {}).items()
                                             if key != "nodeName"}}
                other = pod_info(self.cluster, pending)
                metadata = bound.get("metadata") or {}
                later = RecordedDecision(BIND, change.key, str(metadata.get("uid") or ""),
                                         decision.seq, change.ts_us, decision.moment_seq,
                                         node=node)
                attempt = self.scheduler.schedule(self.cluster, other,
                                                  nominator=self.nominator, exhaustive=True)
                self.summary.attempts += 1
                if judge(later, attempt, self.cluster, self.scheduler,
                         other.nominated_node_name)["class"] not in AGREEING:
                    return False
                change.redo(self.cluster)
            return True
        finally:
            for uid in made:
                self.cluster.remove_pod(uid)
            apply_object(self.cluster, assumed, deleted=True)

    def _recorded_late(self, decision: RecordedDecision) -> list[Change]:
        """The node changes recorded just after the decision's moment but committed before
        the write that records it (:attr:`RecordedDecision.committed_before`), as changes of
        the cluster as it now is."""
        changes: list[Change] = []
        current: dict[str, dict[str, Any] | None] = {}
        for ts_us, event_type, obj in decision.committed_before:
            key = f"/{(obj.get('metadata') or {}).get('name') or ''}"
            before = current[key] if key in current else self.accounted.get(("Node", key))
            after = None if event_type == "DELETED" else obj
            current[key] = after
            if scheduling_state("Node", before) != scheduling_state("Node", after):
                changes.append(Change(ts_us, "Node", key, before, after, event_type))
        return changes

    def _own_binding(self, change: Change) -> bool:
        """Whether ``change`` binds a pod of this scheduler: it assumed the pod in its cache
        when it decided, so only a decision that took no room (a failure, whose write lags
        its cycle) can have been made before it."""
        return change.is_binding and change.after is not None and \
            self.scheduler.framework_for(pod_info(self.cluster, change.after)) is not None

    def _missing(self, decision: RecordedDecision, obj: dict[str, Any]) -> list[str]:
        """What the decision needs and the recording lacks: the recorded node, the pod's
        PersistentVolumeClaims and named ResourceClaims."""
        missing = []
        node = decision.node
        if node and decision.kind != "unschedulable":
            slot = self.cluster.slot_of.get(node)
            if slot is None or not self.cluster.live[slot]:
                missing.append(f"Node {node}")
        spec = obj.get("spec") or {}
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        for volume in spec.get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and self.cluster.get_object("PersistentVolumeClaim", namespace,
                                                 claim) is None:
                missing.append(f"PersistentVolumeClaim {namespace}/{claim}")
        for claim in spec.get("resourceClaims") or []:
            name = claim.get("resourceClaimName")
            if name and self.cluster.get_object("ResourceClaim", namespace, name) is None:
                missing.append(f"ResourceClaim {namespace}/{name}")
        return missing


def _nominated(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("nominatedNodeName") or "")
