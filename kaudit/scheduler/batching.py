"""Opportunistic Batching (KEP-5598; Kubernetes v1.35 on, gate ``OpportunisticBatching``): a
pod like the one just scheduled reuses that cycle's scored nodes instead of scoring again.

Mirrors ``pkg/scheduler/framework/runtime/batch.go`` (``OpportunisticBatch``: ``GetNodeHint``,
``StoreScheduleResults``, ``batchStateCompatible``) and its use in
``pkg/scheduler/schedule_one.go`` (v1.35.4). A profile batches only when it has no extender and
all its PreFilter, Filter, PreScore and Score plugins sign pods
(:mod:`kaudit.framework.signing`); under the default configuration PodTopologySpread's system
default constraints refuse every pod, so batching never applies there.

After a successful cycle the scored nodes but the chosen one stay in their heap
(:class:`~kaudit.scheduler.select_host.ScoreHeap`). The next pod gets the heap's next node as a
hint when: it is the very next scheduling cycle, its signature equals the stored one, the stored
state is younger than 500 ms, the last chosen node still exists and the pod's Filter plugins
now reject it there (the last pod filled it). The hint is then tried like a nominated node; if
it passes, it is the only feasible node and nothing is scored.

Upstream's age limit is wall-clock time; a replay's cycles take virtual time, so kaudit
measures the age on the replay's clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.runtime import Framework, PluginError
from kaudit.model.pod import PodInfo
from kaudit.scheduler.select_host import ScoreHeap

#: ``maxBatchAge``.
MAX_BATCH_AGE_US = 500_000

Signature = tuple[tuple[str, Any], ...]


def sign_pod(framework: Framework, pod: PodInfo) -> Signature | None:
    """``frameworkImpl.SignPod``: the scheduler name and every batchable plugin's fragments
    (a later plugin's fragment replaces an earlier one of the same signer, as upstream's map
    does), or None when the profile does not batch or a plugin refuses the pod."""
    plugins = framework.signing_plugins
    if plugins is None:
        return None
    fragments: dict[str, Any] = {"v1.Pod.Spec.SchedulerName": pod.scheduler_name}
    for plugin in plugins:
        signed = plugin.sign_pod(pod)
        if signed is None:
            return None
        fragments.update(signed)
    return tuple(sorted(fragments.items()))


@dataclass
class _Stored:
    signature: Signature
    nodes: ScoreHeap
    created_us: int


class OpportunisticBatch:
    """One profile's batching state."""

    def __init__(self) -> None:
        self._state: _Stored | None = None
        self._last_cycle = 0
        self._last_chosen = ""
        #: Pods that took their hint (upstream's ``batchedPods``).
        self.batched_pods = 0

    def node_hint(self, framework: Framework, cluster: ClusterState, state: CycleState,
                  pod: PodInfo, cycle: int, now_us: int) -> tuple[str, Signature | None]:
        """``GetNodeHint``: the node to try first ("" for none) and the pod's signature."""
        signature = sign_pod(framework, pod)
        if not self._compatible(framework, cluster, state, pod, signature, cycle, now_us):
            return "", signature
        assert self._state is not None
        return cluster.node(self._state.nodes.pop()).name, signature

    def _compatible(self, framework: Framework, cluster: ClusterState, state: CycleState,
                    pod: PodInfo, signature: Signature | None, cycle: int, now_us: int) -> bool:
        stored = self._state
        if stored is None or len(stored.nodes) == 0:
            return False
        # An unusable state stays (upstream only counts it): the cycle's own results replace
        # it, and a failed cycle leaves a gap in the cycle numbers that no state survives.
        if cycle != self._last_cycle + 1 or signature is None \
                or signature != stored.signature or now_us > stored.created_us \
                + MAX_BATCH_AGE_US:
            return False
        slot = cluster.slot_of.get(self._last_chosen)
        if slot is None or not cluster.live[slot]:
            return False
        try:
            run = framework.run_filter(state, pod, cluster, np.asarray([slot]))
        except PluginError:
            return False  # an Error is not a rejection
        # Still feasible on the last chosen node: its score went stale, no hint.
        return not bool(run.feasible.all())

    def store(self, signature: Signature | None, hinted: str, chosen: str,
              others: ScoreHeap | None, cycle: int, now_us: int) -> None:
        """``StoreScheduleResults`` after a cycle chose ``chosen``; ``others`` are its scored
        nodes but the chosen one (None when it scored none)."""
        self._last_cycle, self._last_chosen = cycle, chosen
        if hinted and hinted == chosen:
            self.batched_pods += 1
            return
        if signature is not None and others is not None and len(others) > 0:
            self._state = _Stored(signature, others, now_us)
        else:
            self._state = None
