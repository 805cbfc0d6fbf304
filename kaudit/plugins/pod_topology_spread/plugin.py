"""The PodTopologySpread plugin: its args, events and queueing hints, and the constraints that
apply to a pod.

Mirrors ``podtopologyspread/plugin.go`` of Kubernetes v1.34; the extension points live in
:mod:`.filtering` and :mod:`.scoring`, as upstream's methods live in those files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import (
    FilterPlugin,
    Handle,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Status
from kaudit.model.pod import PodInfo, SpreadConstraint
from kaudit.plugins import names
from kaudit.plugins.hint_objects import as_node, as_pod
from kaudit.plugins.pod_topology_spread import filtering, scoring
from kaudit.plugins.pod_topology_spread.common import (
    DO_NOT_SCHEDULE,
    GATE_MATCH_LABEL_KEYS,
    GATE_NODE_INCLUSION_POLICY,
    HONOR,
    IGNORE,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    PodTable,
    _raw_constraints,
    default_selector,
    gate_enabled,
    parse_constraint,
    parse_pod_constraint,
)
from kaudit.plugins.pod_topology_spread.filtering import PreFilterState
from kaudit.plugins.pod_topology_spread.scoring import PreScoreState


class PodTopologySpread(PreFilterPlugin, PreFilterExtensions, FilterPlugin,
                        PreScorePlugin, ScorePlugin):
    name = names.POD_TOPOLOGY_SPREAD
    # Filter reads the PreFilter state and its node's labels; the cluster's other pods
    # enter only through PreFilter and the AddPod/RemovePod extensions.
    reads_only_its_node = True
    args_spec = ArgsSpec(
        kind="PodTopologySpreadArgs", schema=args_schema.POD_TOPOLOGY_SPREAD_ARGS,
        set_defaults=args_defaults.set_defaults_pod_topology_spread,
        validate=args_validation.validate_pod_topology_spread_args)

    signs_pods = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35): a pod with spread constraints, or any pod when the plugin
        has default constraints (the System defaulting's included), is not signed."""
        if pod.spread_constraints or self.default_constraints:
            return None
        return ()

    def __init__(self, args: Mapping[str, Any] | None = None,
                 handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        defaulting = self.args.get("defaultingType") or SYSTEM_DEFAULTING
        self.system_defaulted = defaulting == SYSTEM_DEFAULTING
        self.default_constraints: tuple[SpreadConstraint, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else
            tuple(parse_constraint(c) for c in self.args.get("defaultConstraints") or []))
        self.enable_match_label_keys = gate_enabled(handle, GATE_MATCH_LABEL_KEYS)
        self.enable_node_inclusion_policy = gate_enabled(handle, GATE_NODE_INCLUSION_POLICY)
        #: v1.36: the queueing hint treats a pod with a nominated node like a placed one.
        self.nominated_pods_count = versions.handle_carries(
            handle, "nominated-pods-count-in-affinity-hints")
        self._table: tuple[ClusterState, int, PodTable] | None = None
        #: The cluster PreFilter last ran on: queueing hints read default constraints' selectors
        #: from it (the Services and controllers of the pod).
        self._cluster: ClusterState | None = None

    # ------------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(POD, ["Add", "UpdatePodLabel", "UpdatePodToleration", "Delete"],
                         self._after_pod_change),
                register(NODE, ["Add", "Delete", "UpdateNodeLabel", "UpdateNodeTaint"],
                         self._after_node_change)]

    def _hard_constraints(self, pod: PodInfo) -> tuple[SpreadConstraint, ...]:
        return self.constraints(pod, self._cluster or ClusterState(), DO_NOT_SCHEDULE)

    def _after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterPodChange``: an assigned pod of the namespace whose labels match
        (or stop matching) a constraint's selector; the pod's own new tolerations when a
        constraint honours taints."""
        original, modified = as_pod(old), as_pod(new)
        nominated_count = self.nominated_pods_count

        def involved(other: PodInfo) -> bool:
            """``involvedInTopologySpreading``; from v1.36 a pod with a nominated node counts
            as placed (upstream PR #135392)."""
            placed = bool(other.node_name) or (nominated_count
                                               and bool(other.nominated_node_name))
            return other.uid == pod.uid or (placed and other.namespace == pod.namespace)

        if (modified is not None and not involved(modified)) or \
                (original is not None and not involved(original)):
            return QueueingHint.QUEUE_SKIP
        constraints = self._hard_constraints(pod)
        if original is not None and modified is not None:
            if modified.uid == pod.uid and original.tolerations != modified.tolerations and \
                    any(c.node_taints_policy == HONOR for c in constraints):
                return QueueingHint.QUEUE
            if original.labels == modified.labels:
                return QueueingHint.QUEUE_SKIP
            changed = any(c.selector.matches(original.labels) != c.selector.matches(modified.labels)
                          for c in constraints)
            return QueueingHint.QUEUE if changed else QueueingHint.QUEUE_SKIP
        labels = (modified or original).labels
        matches = any(c.selector.matches(labels) for c in constraints)
        return QueueingHint.QUEUE if matches else QueueingHint.QUEUE_SKIP

    def _after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: a node that has (or had) every topology key of the
        pod's constraints came, went or changed its topology labels or taints."""
        original, modified = as_node(old), as_node(new)
        constraints = self._hard_constraints(pod)

        def matching(node: Any) -> bool:
            return node is not None and all(c.topology_key in node.labels for c in constraints)

        was, now = matching(original), matching(modified)
        if original is not None and modified is not None:
            if was != now:
                return QueueingHint.QUEUE
            moved = any(original.labels.get(c.topology_key) != modified.labels.get(c.topology_key)
                        for c in constraints)
            if now and (moved or original.taints != modified.taints):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if (now if modified is not None else was) \
            else QueueingHint.QUEUE_SKIP

    # ------------------------------------------------------------------ constraints

    def _with_gates(self, constraint: SpreadConstraint) -> SpreadConstraint:
        if self.enable_node_inclusion_policy:
            return constraint
        return replace(constraint, node_affinity_policy=HONOR, node_taints_policy=IGNORE)

    def constraints(self, pod: PodInfo, cluster: ClusterState, action: str
                    ) -> tuple[SpreadConstraint, ...]:
        """``getConstraints`` / ``initPreScoreState``: the pod's constraints for ``action``,
        or the default ones when it has none. Raises :class:`SelectorError` when one of the
        pod's constraints for ``action`` has a malformed selector."""
        raw = _raw_constraints(pod)
        if raw or pod.spread_constraints:
            return tuple(self._with_gates(c) for c in self._pod_constraints(pod, raw, action))
        defaults = [c for c in self.default_constraints if c.when_unsatisfiable == action]
        if not defaults:
            return ()
        selector = default_selector(pod, cluster)
        if selector.empty:
            return ()
        return tuple(self._with_gates(replace(c, selector=selector)) for c in defaults)

    def _pod_constraints(self, pod: PodInfo, raw: list[Mapping[str, Any]], action: str
                         ) -> list[SpreadConstraint]:
        """The parsed constraints of ``pod`` when they fit the gate (``parse_pod`` merged
        ``matchLabelKeys`` and kept every constraint), else parsed again from the spec."""
        parsed = pod.spread_constraints
        if raw and (not self.enable_match_label_keys or len(parsed) != len(raw)):
            return [parse_pod_constraint(c, pod.labels, f"spec.topologySpreadConstraints[{i}]",
                                         self.enable_match_label_keys)
                    for i, c in enumerate(raw)
                    if (c.get("whenUnsatisfiable") or DO_NOT_SCHEDULE) == action]
        return [c for c in parsed if c.when_unsatisfiable == action]

    def pod_table(self, cluster: ClusterState) -> PodTable:
        """The pod table of ``cluster``, rebuilt when the cluster or its generation changes."""
        cached = self._table
        if cached is not None and cached[0] is cluster and cached[1] == cluster.generation:
            return cached[2]
        table = PodTable.build(cluster)
        self._table = (cluster, cluster.generation, table)
        return table

    # ------------------------------------------------------------------ filtering

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        return filtering.pre_filter(self, state, pod, cluster)

    def pre_filter_state(self, pod: PodInfo, cluster: ClusterState,
                         constraints: tuple[SpreadConstraint, ...]) -> PreFilterState:
        return filtering.pre_filter_state(self, pod, cluster, constraints)

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        return filtering.filter(self, state, pod, cluster, slots)

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
                slot: int,
                cluster: ClusterState) -> Status:
        return filtering.add_pod(self, state, pod, pod_to_add, slot, cluster)

    def remove_pod(self, state: CycleState, pod: PodInfo,
                   pod_to_remove: PodInfo, slot: int,
                   cluster: ClusterState) -> Status:
        return filtering.remove_pod(self, state, pod, pod_to_remove, slot, cluster)

    def _update_with_pod(self, state: CycleState, pod: PodInfo,
                         updated: PodInfo, slot: int,
                         cluster: ClusterState, delta: int) -> Status:
        return filtering._update_with_pod(self, state, pod, updated, slot, cluster, delta)

    # ------------------------------------------------------------------ scoring

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        return scoring.pre_score(self, state, pod, cluster, slots)

    def pre_score_state(self, pod: PodInfo, cluster: ClusterState,
                        feasible: np.ndarray,
                        constraints: tuple[SpreadConstraint, ...], require_all: bool
                        ) -> PreScoreState:
        return scoring.pre_score_state(self, pod, cluster, feasible, constraints, require_all)

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        return scoring.score(self, state, pod, cluster, slots)

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        return scoring.normalize(self, state, pod, slots, scores)

    normalizes_rows = True

    def nodes_read_by_pre_score(self, state: CycleState, cluster: ClusterState,
                                windows: np.ndarray) -> np.ndarray | None:
        return scoring.nodes_read(state, cluster, windows)
