"""The binding cycle: assume the pod on its node, then Reserve, Permit, PreBind and Bind.

Mirrors ``assume``, ``bindingCycle`` and ``handleBindingCycleError`` of
``pkg/scheduler/schedule_one.go`` (Kubernetes v1.34): the pod is assumed in the cache (its
resources are taken at once), each step runs in order, and the first that fails runs Unreserve
and forgets the pod, so the cache is as before. PostBind runs once the binding is done, which
the replay may delay by an API latency (:func:`finish_binding`). An extender with a bind verb
that is interested in the pod binds it instead of the bind plugins (``extendersBinding``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.extender import Extender
from kaudit.framework.runtime import Framework
from kaudit.framework.status import Status
from kaudit.model.pod import PodInfo
from kaudit.scheduler.extender.cycle import bind_with_extenders


@dataclass(frozen=True)
class Binding:
    """What the binding cycle did: the pod as bound (``spec.nodeName`` set) and, when a step
    failed, that step's status (the pod was then unreserved and forgotten)."""

    placed: PodInfo
    failure: Status | None = None
    #: The extender that bound the pod (or failed to), when one did instead of the plugins.
    binder: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def bound_object(obj: dict[str, Any], node: str) -> dict[str, Any]:
    """The pod's object as the binding leaves it: ``spec.nodeName`` set (copied, not changed
    in place)."""
    return {**obj, "spec": {**(obj.get("spec") or {}), "nodeName": node}}


def bind(framework: Framework, cluster: ClusterState, state: CycleState, pod: PodInfo,
         node: str, extenders: Sequence[Extender] = ()) -> Binding:
    """Assume ``pod`` on ``node`` and run the binding cycle up to Bind."""
    placed = replace(pod, node_name=node, nominated_node_name="",
                     obj=bound_object(pod.obj, node))
    cluster.add_pod(placed)  # assume
    binder: str | None = None

    def run_bind(state: CycleState, placed: PodInfo, node: str) -> Status:
        nonlocal binder
        # Upstream sends the pod as assumed (its name, namespace and uid are what count).
        by_extender = bind_with_extenders(extenders, placed, node) if extenders else None
        if by_extender is None:
            return framework.run_bind(state, placed, node)
        binder, status = by_extender
        return status

    for step in (framework.run_reserve, framework.run_permit, framework.run_pre_bind,
                 run_bind):
        status = step(state, placed, node)
        if not status.ok:
            framework.run_unreserve(state, placed, node)
            cluster.remove_pod(placed.uid)  # forget
            return Binding(placed, status, binder)
    return Binding(placed, binder=binder)


def finish_binding(framework: Framework, cluster: ClusterState, state: CycleState,
                   placed: PodInfo) -> bool:
    """PostBind, unless the pod was deleted while it was being bound; whether it ran."""
    if placed.uid not in cluster.pods:
        return False
    framework.run_post_bind(state, placed, placed.node_name)
    return True
