"""Plugin interfaces, one base class per extension point (``framework/interface.go``, v1.34).

A plugin is a class with a ``name`` that inherits the bases of the extension points it
implements. Filter and Score work on many nodes at once: they receive the candidate nodes as an
array of *slots* of the :class:`~kaudit.cluster.state.ClusterState` and answer with one
verdict or one score per slot. Plugins that think one node at a time can inherit
:class:`NodeFilterPlugin` / :class:`NodeScorePlugin` instead and implement ``filter_node`` /
``score_node``; kaudit loops for them.

Writing an out-of-tree plugin::

    from kaudit.framework.plugin import NodeFilterPlugin
    from kaudit.framework.status import Code, Status

    class NoFridays(NodeFilterPlugin):
        name = "NoFridays"

        def __init__(self, args, handle):
            self.label = (args or {}).get("label", "example.com/no-fridays")

        def filter_node(self, state, pod, node):
            if node.labels.get(self.label) == "true":
                return Status.of(Code.UNSCHEDULABLE, "node(s) rest on Fridays")
            return Status.success()

Register it with ``--plugin mypackage.plugins:NoFridays`` or an entry point in the
``kaudit.plugins`` group, then enable it in a ``KubeSchedulerConfiguration`` profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import ClusterEventWithHint
from kaudit.framework.extender import Extender
from kaudit.framework.ports import HandlePorts
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo

if TYPE_CHECKING:
    from kaudit.cluster.state import ClusterState
    from kaudit.config import ArgsSpec, FeatureGates
    from kaudit.framework.runtime import Framework

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@dataclass
class Handle:
    """What the framework gives plugin factories (``framework.Handle``, trimmed)."""

    feature_gates: FeatureGates
    scheduler_name: str = "default-scheduler"
    #: Score plugin weights of the profile, for plugins that need them.
    weights: Mapping[str, int] = field(default_factory=dict)
    #: The profile's framework (set when it is built), for plugins that run other plugins.
    framework: Framework | None = None
    #: The scheduler's extenders in call order (``Handle.Extenders``), for preemption.
    extenders: tuple[Extender, ...] = ()
    #: The cluster state, clock, nominator, API writer, preemption state and workload of the
    #: scheduler that runs the plugin (:mod:`kaudit.framework.ports`).
    ports: HandlePorts = field(default_factory=HandlePorts)
    #: How many workers upstream's parallel steps use (``parallelism`` of the configuration).
    parallelism: int = 16
    #: Per-handle memos of plugins (computed once per profile).
    extra: dict[str, Any] = field(default_factory=dict)


class Plugin:
    """A plugin declares its own facts on its class: its ``name``; the extension points it
    implements, by inheriting their base classes; the cluster events that may make a pod it
    rejected schedulable (:meth:`events_to_register`); its typed arguments (``args_spec``: the
    v1 kind, schema, defaulting and validation) or, for simple out-of-tree plugins, plain
    ``default_args``; the extension points a feature gate must enable (``gated_points``:
    gate → points) and those it has only from a release on (``points_since``); and the
    optional handle ports it reads (``ports_needed``)."""

    name: ClassVar[str] = ""
    args_spec: ClassVar[ArgsSpec | None] = None
    default_args: ClassVar[Mapping[str, Any] | None] = None
    gated_points: ClassVar[Mapping[str, frozenset[str]]] = MappingProxyType({})
    #: Extension points the plugin has only from an upstream minor release on (``"v1.35"``
    #: → points): at older releases it does not implement them at all.
    points_since: ClassVar[Mapping[str, frozenset[str]]] = MappingProxyType({})
    #: Optional ports of the handle the plugin reads (``ports.OPTIONAL_PORTS``), such as
    #: ``"workload"``: the shape of every pod of the trace, which the FGD paper's score needs
    #: to know its typical pods. A replay fills them only when a plugin asks.
    ports_needed: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, args: Mapping[str, Any] | None = None,
                 handle: Handle | None = None) -> None:
        self.args = dict(args or {})
        self.handle = handle

    def attempt_notes(self, state: CycleState, selected: str | None) -> dict[str, Any] | None:
        """What the plugin wants kept in the attempt's event-log record, for explanations
        (``selected``: the node chosen, None when the pod did not fit); None keeps nothing."""
        return None

    #: Whether the plugin signs pods for Opportunistic Batching (upstream's ``SignPlugin``,
    #: v1.35 on): a profile batches only when all its PreFilter, Filter, PreScore and Score
    #: plugins do (:mod:`kaudit.framework.signing`).
    signs_pods: ClassVar[bool] = False

    def sign_pod(self, pod: PodInfo) -> tuple[tuple[str, Any], ...] | None:
        """``SignPod``: this plugin's fragments of ``pod``'s signature, or None where it
        refuses to sign the pod (then no pod like it is batched)."""
        return ()

    def events_to_register(self) -> list[ClusterEventWithHint] | None:
        """``EnqueueExtensions.EventsToRegister``: the cluster events that may make a pod this
        plugin rejected schedulable, each with an optional queueing hint. None (the default)
        means the plugin does not say, so every event may (upstream's wildcard); an empty
        list means only an update of the pod itself may."""
        return None


# --------------------------------------------------------------------------- verdicts

@dataclass
class NodeVerdicts:
    """A filter plugin's answer for each candidate slot: a code and a reasons-table index."""

    codes: np.ndarray
    reason_ids: np.ndarray
    reasons: list[tuple[str, ...]]

    @classmethod
    def passing(cls, count: int) -> NodeVerdicts:
        return cls(np.zeros(count, np.int8), np.zeros(count, np.int32), [()])

    @classmethod
    def from_mask(cls, failed: np.ndarray, code: Code, *reasons: str) -> NodeVerdicts:
        """Nodes where ``failed`` is true get ``code`` with ``reasons``; the rest pass."""
        failed = np.asarray(failed, dtype=bool)
        return cls(np.where(failed, np.int8(code), np.int8(0)).astype(np.int8),
                   failed.astype(np.int32), [(), tuple(reasons)])

    @classmethod
    def from_statuses(cls, statuses: list[Status]) -> NodeVerdicts:
        table: dict[tuple[str, ...], int] = {(): 0}
        codes = np.empty(len(statuses), np.int8)
        ids = np.empty(len(statuses), np.int32)
        for i, status in enumerate(statuses):
            codes[i] = status.code
            ids[i] = table.setdefault(status.reasons if status.code else (), len(table))
        return cls(codes, ids, list(table))

    def status(self, i: int, plugin: str = "") -> Status:
        return Status(Code(int(self.codes[i])), self.reasons[int(self.reason_ids[i])], plugin)


# --------------------------------------------------------------------------- extension points

@dataclass(frozen=True)
class PreFilterResult:
    """Node names the pod may go to (``framework.PreFilterResult``); None means all."""

    node_names: frozenset[str] | None = None

    @property
    def all_nodes(self) -> bool:
        return self.node_names is None


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def less(self, a: Any, b: Any) -> bool:
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        raise NotImplementedError


class PreFilterExtensions:
    """Keeps a PreFilter's precomputed state right when pods are added or removed
    (nominated pods, preemption victims)."""

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, slot: int,
                cluster: ClusterState) -> Status:
        raise NotImplementedError

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, slot: int,
                   cluster: ClusterState) -> Status:
        raise NotImplementedError


class FilterPlugin(Plugin):
    #: True when a node's verdict depends only on the cycle state and that node: its object,
    #: its pods and what they hold (upstream's ``Filter(state, pod, nodeInfo)`` contract,
    #: with no reads of other nodes). Preemption's dry run and the nominated-pods pass then
    #: judge many nodes in one forked state instead of forking the cluster once per node.
    reads_only_its_node: ClassVar[bool] = False
    #: True when pods added to a node can turn its pass into a failure but never a failure
    #: into a pass (they only use up what the node offers: resources, ports, volumes,
    #: devices). When every filter of a cycle declares this and ``reads_only_its_node``, a
    #: node's verdict with its nominated pods added is its verdict (upstream's second pass,
    #: without them, can only agree), so the nominated-pods pass is one filter run.
    added_pods_only_hinder: ClassVar[bool] = False

    def reads_node_pods(self, pod: PodInfo) -> bool:
        """Whether judging ``pod`` reads the pods on a node (their objects, host ports or
        devices) beyond the node's summed requests and pod count. Preemption's dry run moves
        only those sums when no filter of the cycle reads the pods; True unless a plugin
        knows better."""
        return True

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        raise NotImplementedError


@dataclass
class NodeView:
    """One node as a per-node plugin sees it."""

    slot: int
    name: str
    labels: Mapping[str, str]
    obj: Mapping[str, Any]
    pods: Mapping[str, PodInfo]
    allocatable: Mapping[str, int]
    requested: Mapping[str, int]


def node_view(cluster: ClusterState, slot: int) -> NodeView:
    node = cluster.node(slot)
    names = list(cluster.resources)
    return NodeView(slot, node.name, node.labels, node.obj, cluster.pods_on[slot],
                    dict(zip(names, cluster.allocatable[slot].tolist(), strict=True)),
                    dict(zip(names, cluster.requested[slot].tolist(), strict=True)))


class NodeFilterPlugin(FilterPlugin):
    """A filter written one node at a time."""

    reads_only_its_node = True  # it sees one NodeView and the cycle state

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> Status:
        raise NotImplementedError

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        return NodeVerdicts.from_statuses(
            [self.filter_node(state, pod, node_view(cluster, int(s))) for s in slots])


@dataclass(frozen=True)
class PostFilterResult:
    """``nominated_node_name`` "" clears a nomination; ``details`` is plugin-specific (the
    preemption plugin puts its candidates and victims there)."""

    nominated_node_name: str | None = None
    details: Any = None


class PostFilterPlugin(Plugin):
    def post_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                    diagnosis: Any) -> tuple[PostFilterResult | None, Status]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        raise NotImplementedError


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    #: Plugins with a NormalizeScore extension override this.
    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        return None

    #: Whether ``normalize`` given 2-D scores and slots normalizes each row on its own (the
    #: nodes of one cycle): the audit scores many sampled windows at once that way.
    normalizes_rows: ClassVar[bool] = False

    def nodes_read_by_pre_score(self, state: CycleState, cluster: ClusterState,
                                windows: np.ndarray) -> np.ndarray | None:
        """What a node's score depends on, of the other feasible nodes PreScore was given (a
        sampled cycle scores only some), beyond what NormalizeScore reads; ``windows`` holds
        sets of feasible nodes, one per row. None when nothing (a score computed over every
        feasible node holds for any subset); otherwise one row of integers per set, equal for
        sets PreScore treats alike."""
        return None


class NodeScorePlugin(ScorePlugin):
    """A score written one node at a time."""

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> int:
        raise NotImplementedError

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        return np.asarray([self.score_node(state, pod, node_view(cluster, int(s)))
                           for s in slots], dtype=np.int64)


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError


class BindPlugin(Plugin):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


EXTENSION_BASES: dict[str, type] = {
    "PreEnqueue": PreEnqueuePlugin, "QueueSort": QueueSortPlugin, "PreFilter": PreFilterPlugin,
    "Filter": FilterPlugin, "PostFilter": PostFilterPlugin, "PreScore": PreScorePlugin,
    "Score": ScorePlugin, "Reserve": ReservePlugin, "Permit": PermitPlugin,
    "PreBind": PreBindPlugin, "Bind": BindPlugin, "PostBind": PostBindPlugin,
}


def extension_points(plugin_class: type) -> frozenset[str]:
    """The extension points a plugin class implements."""
    return frozenset(point for point, base in EXTENSION_BASES.items()
                     if issubclass(plugin_class, base))
