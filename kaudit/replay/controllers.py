"""The controllers a replay plays beside the scheduler: owners that replace preempted pods, and
pods that run for their recorded time.

* **Owners.** A ReplicaSet, Job or StatefulSet whose pod is preempted creates a new pending
  pod (``pkg/controller/replicaset``, ``job``, ``statefulset``): same spec, no node, a new uid;
  a ReplicaSet's or Job's pod gets a new name, a StatefulSet's keeps its own.
* **Lifetimes.** With ``--lifetime relative`` a pod kaudit binds runs for as long as it ran in
  the recording (its recorded binding to its recorded deletion or completion), then goes.
"""

from __future__ import annotations

import copy
import functools

from kaudit.cluster.objects import pod_info
from kaudit.eventlog.records import RecordKind
from kaudit.model.pod import PodInfo
from kaudit.replay.apply import Informer
from kaudit.replay.clock import Priority
from kaudit.replay.context import ReplayContext
from kaudit.tracegen.builders import stable_uid

RECREATED_OWNERS = ("ReplicaSet", "Job", "StatefulSet")


class Controllers:
    def __init__(self, context: ReplayContext, informer: Informer,
                 lifetimes: dict[str, tuple[int | None, int | None]] | None) -> None:
        self.cluster = context.cluster
        self.loop = context.loop
        self.sink = context.sink
        self.timeline = context.timeline
        self.options = context.options
        self.summary = context.summary
        self.informer = informer
        self.lifetimes = lifetimes or {}

    def victim_deleted(self, victim: PodInfo) -> None:
        """A preemption victim's deletion was accepted: its owner replaces it. A pod of a
        scheduler kaudit does not serve is not replaced: where that scheduler would put its
        replacement is in no trace."""
        if self.options.recreate_preempted and victim.owner is not None and \
                victim.owner[0] in RECREATED_OWNERS and self.informer.serves(victim):
            self._recreate(victim)

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
        obj = self.informer.claims.generate(obj)  # the new pod's template claims, as any pod's
        pod = pod_info(self.cluster, obj)
        self.summary.pods_recreated += 1
        self.sink.record(now, RecordKind.CREATE, pod.key, None, {"replaces": victim.key})
        self.informer.pod_created(pod)

    def bound(self, placed: PodInfo) -> None:
        """A pod kaudit scheduled is bound: with relative lifetimes, it ends after the time it
        ran in the recording."""
        if self.options.lifetime != "relative":
            return
        recorded_bind, recorded_delete = self.lifetimes.get(placed.uid, (None, None))
        if recorded_bind is not None and recorded_delete is not None:
            runtime = max(recorded_delete - recorded_bind, 0)
            self.loop.at(self.loop.now_us + runtime, Priority.COMPLETION,
                         functools.partial(self.informer.delete_pod, placed.uid, placed,
                                           "lifetime"))
