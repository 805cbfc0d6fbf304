"""Preemption's API calls as the replay makes them: the nomination, the lower-priority
nominations cleared, the victims deleted and terminating.

PostFilter (DefaultPreemption) decides; this carries the decision out as upstream's
``prepareCandidate`` / ``prepareCandidateAsync`` do (``pkg/scheduler/framework/preemption/
preemption.go``, Kubernetes v1.34.2). With ``SchedulerAsyncPreemption`` the calls run in the
background, each taking the API latency: the clearing patches one after another, then every
victim but the last in parallel (status patch and delete), then the preemptor stops being held
back by PreEnqueue, then the last victim. A deleted victim terminates for the victim
termination time, still counted on its node, before it is gone.

From v1.35 (upstream PRs #134294 and #134730) a victim already terminating gets no API call
(no status patch, no deletion, no ``Preempted`` event); when every victim is, the asynchronous
preemption does nothing at all (no lower nomination is cleared, the preemptor is not held
back); and the preemptor stays held back until its last victim is being deleted
(``lastVictimsPendingPreemption``, ``IsPodRunningPreemption``).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from kaudit.eventlog.records import RecordKind
from kaudit.framework.events import pod_scheduling_properties_change
from kaudit.model.pod import PodInfo, terminating_object
from kaudit.model.timestamps import format_timestamp
from kaudit.replay.apply import Informer
from kaudit.replay.clock import Priority
from kaudit.replay.context import ReplayContext
from kaudit.replay.controllers import Controllers
from kaudit.scheduler.nominator import Nominator
from kaudit.scheduler.queue import QueuedPod


class PreemptionsInFlight:
    """The preemptors whose asynchronous preemption is still issuing API calls (a
    :class:`~kaudit.framework.ports.PreemptionState` port)."""

    def __init__(self) -> None:
        self.uids: set[str] = set()

    def preempting(self, uid: str) -> bool:
        return uid in self.uids


class PreemptionCalls:
    def __init__(self, context: ReplayContext, *, nominator: Nominator, informer: Informer,
                 controllers: Controllers, in_flight: PreemptionsInFlight,
                 asynchronous: bool, skips_terminating_victims: bool = False) -> None:
        self.cluster = context.cluster
        self.loop = context.loop
        self.sink = context.sink
        self.timeline = context.timeline
        self.options = context.options
        self.summary = context.summary
        self.nominator = nominator
        self.informer = informer
        self.controllers = controllers
        self.in_flight = in_flight
        self.asynchronous = asynchronous
        #: v1.35: terminating victims get no API call; the preemptor waits for the last.
        self.skips_terminating_victims = skips_terminating_victims

    def nominate(self, queued: QueuedPod, node: str, details: Any) -> None:
        """PostFilter nominated ``node`` ("" clears): the nomination holds at once (in the
        scheduler's memory and, by the failure's status patch, on the pod); the victims go
        and lower-priority nominations to the node are cleared by API calls."""
        now = self.loop.now_us
        preemptor = queued.pod
        before = self.nominator.node_of(preemptor.uid) or preemptor.nominated_node_name
        self.nominator.delete(preemptor.uid)
        queued.pod = preemptor = replace(preemptor, nominated_node_name=node)
        if before and before != node:
            # The status patch reaches the informer as an update of a pending pod whose
            # nomination changed (``updatePodInSchedulingQueue``): the node it held may now
            # fit pods of equal or lower priority.
            self.informer.nomination_released(replace(preemptor, nominated_node_name=before))
        if not node:
            return
        self.nominator.add(preemptor, node, self.cluster)
        self.sink.record(now, RecordKind.NOMINATE, preemptor.key, node, nomination_ties(details))
        chosen = getattr(details, "chosen", None)
        exposed: frozenset[str] = getattr(details, "tie_exposed", frozenset())
        # An extender may name a victim twice: it is deleted once (the second deletion
        # finds nothing upstream).
        victims = [v for v in {v.uid: v for v in (chosen.victims if chosen is not None
                                                  else ())}.values()
                   if v.uid in self.cluster.pods]
        if self.skips_terminating_victims:
            victims = [v for v in victims if not self.cluster.pods[v.uid].terminating]
        for victim in victims:
            self.sink.record(now, RecordKind.PREEMPT, victim.key, victim.node_name,
                             {"preemptor": preemptor.key,
                              **({"tie": True} if victim.key in exposed else {})})
            self.summary.pods_preempted += 1
        lower = self.nominator.lower_priority(node, preemptor.priority)
        latency = self.options.api_latency_us
        if not self.asynchronous:
            self._clear_lower_nominations(node, lower)
            for victim in victims:
                self._terminate(victim)
            return
        if not victims and self.skips_terminating_victims:
            return  # prepareCandidateAsync returns before its goroutine
        self.in_flight.uids.add(preemptor.uid)
        cleared = now + latency * len(lower)
        if lower:
            self.loop.at(cleared, Priority.API,
                         lambda: self._clear_lower_nominations(node, lower))
        *batch, last = victims or [None]
        released = cleared + 2 * latency if batch else cleared
        for victim in batch:
            self.loop.at(released, Priority.API, functools.partial(self._terminate, victim))
        if self.skips_terminating_victims and last is not None:
            # Held back until the last victim is being deleted: released as it terminates.
            def release_then_terminate(victim: PodInfo = last) -> None:
                self.in_flight.uids.discard(preemptor.uid)
                self._terminate(victim)
            self.loop.at(released + 2 * latency, Priority.API, release_then_terminate)
            return
        self.loop.at(released, Priority.API,
                     lambda: self.in_flight.uids.discard(preemptor.uid))
        if last is not None:
            self.loop.at(released + 2 * latency, Priority.API,
                         lambda: self._terminate(last))

    def clear_nominated_node(self, queued: QueuedPod) -> None:
        """``clearNominatedNode``: the failure's status patch clears the pod's nomination."""
        if queued.pod.nominated_node_name or self.nominator.node_of(queued.pod.uid):
            self.nominate(queued, "", None)

    def _clear_lower_nominations(self, node: str, uids: list[str]) -> None:
        """``ClearNominatedNodeName`` for lower-priority pods nominated to ``node``: each
        loses its nomination (an update of a pending pod whose nomination changed)."""
        for uid in uids:
            other = self.nominator.delete_from(node, uid)
            if other is None:
                continue
            queued = self.informer.queue.pods.get(uid)
            if queued is not None:
                queued.pod = replace(queued.pod, nominated_node_name="")
            self.informer.nomination_released(other)

    def _terminate(self, victim: PodInfo) -> None:
        """A victim's deletion was accepted: it terminates (deletionTimestamp and the
        DisruptionTarget condition set; its controller may already replace it), still counted
        on its node, and is gone after the victim termination time."""
        now = self.loop.now_us
        current = self.cluster.pods.get(victim.uid)
        if current is None:
            return
        self.controllers.victim_deleted(victim)
        if self.options.victim_termination_us <= 0:
            self.informer.delete_pod(victim.uid, victim, "preempted")
            return
        terminating = replace(current, terminating=True,
                              obj=terminating_object(current.obj, format_timestamp(now)))
        self.cluster.remove_pod(victim.uid)
        self.cluster.add_pod(terminating)
        self.sink.record(now, RecordKind.TERMINATE, victim.key, victim.node_name,
                         {"reason": "preempted"})
        for cluster_event in pod_scheduling_properties_change(terminating, current):
            self.informer.move(cluster_event, current, terminating)
        self.loop.at(now + self.options.victim_termination_us, Priority.COMPLETION,
                     lambda: self.informer.delete_pod(victim.uid, victim, "preempted"))


def nomination_ties(details: Any) -> dict[str, Any] | None:
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
