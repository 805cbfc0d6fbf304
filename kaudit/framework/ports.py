"""The typed ports of a plugin's :class:`~kaudit.framework.plugin.Handle`: what a plugin may
ask of the scheduler that runs it beyond the cycle's arguments.

Upstream types them on ``framework.Handle`` (``pkg/scheduler/framework/interface.go``,
Kubernetes v1.34): ``SharedInformerFactory`` and the listers (here the cluster state),
``PodNominator`` (``NominatedPodsForNode``), ``ClientSet`` (the API writes a plugin makes,
such as DynamicResources' claim updates), ``Parallelizer``; the clock and the set of pods whose
asynchronous preemption is still running are the scheduler's own (``IsPodRunningPreemption``
of ``pkg/scheduler/framework/preemption/preemption.go``).

A replay makes one :class:`HandlePorts` and hands it to ``build_scheduler``
(:mod:`kaudit.scheduler.build`), the one place that puts it on every plugin's handle. Outside a
replay (a what-if, a test) a port may be absent: each plugin says what it does then.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kaudit.model.pod import PodInfo

if TYPE_CHECKING:
    from kaudit.cluster.gpu_frag import PodShape
    from kaudit.cluster.nominated import NominatedLoad
    from kaudit.cluster.state import ClusterState


class Clock(Protocol):
    """The scheduler's (virtual) now, in microseconds."""

    @property
    def now_us(self) -> int: ...


class NominatedPods(Protocol):
    """``PodNominator``: the pods nominated to a node (preemptors not bound yet)."""

    def __call__(self, node: str) -> list[PodInfo]: ...

    def nodes(self) -> Collection[str]:
        """The nodes that have nominated pods."""
        ...

    @property
    def load(self) -> NominatedLoad:
        """The same pods summed per node, for a cycle's nominated-pods pass."""
        ...


class ApiWriter(Protocol):
    """A plugin's API write: the object as the API server would store it."""

    def update(self, obj: dict[str, Any]) -> None: ...


class PreemptionState(Protocol):
    """``IsPodRunningPreemption``: whether a preemptor's asynchronous preemption is still
    issuing its API calls."""

    def preempting(self, uid: str) -> bool: ...


@dataclass(frozen=True)
class HandlePorts:
    """Every port of a handle; None where the scheduler runs without one."""

    cluster: ClusterState | None = None
    clock: Clock | None = None
    nominator: NominatedPods | None = None
    api: ApiWriter | None = None
    preemption: PreemptionState | None = None
    #: The shape of every pod of the trace, for plugins that need the workload up front
    #: (the FGD paper's typical pods).
    workload: Sequence[PodShape] | None = None


#: The ports a plugin class may declare in ``Plugin.ports_needed`` beyond those every replay
#: fills (today: the workload, which costs a pass over the trace).
OPTIONAL_PORTS = frozenset({"workload"})
