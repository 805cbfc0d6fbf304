"""PodTopologySpread: spread matching pods evenly over topology domains.

Mirrors ``pkg/scheduler/framework/plugins/podtopologyspread/{plugin.go,common.go,
filtering.go,scoring.go}`` and ``pkg/scheduler/framework/plugins/helper/spread.go``
(``DefaultSelector``) of Kubernetes v1.34:

* **Constraints.** The pod's own constraints with the wanted ``whenUnsatisfiable``
  (``DoNotSchedule`` to filter, ``ScheduleAnyway`` to score); a pod without constraints gets the
  default ones (``defaultingType: System``: hostname maxSkew 3 and zone maxSkew 5, both
  ScheduleAnyway; ``List``: ``defaultConstraints``) with the selector built from the Services,
  ReplicationControllers, ReplicaSets and StatefulSets selecting the pod, dropped when that
  selector is empty. With ``MatchLabelKeysInPodTopologySpread`` off the pod's ``matchLabelKeys``
  are ignored (the selector is parsed again from the pod); with
  ``NodeInclusionPolicyInPodTopologySpread`` off the policies are Honor/Ignore. A malformed
  selector among the constraints of an extension point makes it return Error.
* **Counting** (``countPodsMatchSelector``): pods in the incoming pod's namespace, not
  terminating, matched by the selector; an *empty* selector (``{}``, no requirements) counts
  nothing, as upstream's ``selector.Empty()`` short-cut does in v1.34.
* **PreFilter/Filter**: nodes carrying every constraint key and passing the constraint's node
  inclusion policies register their domain; ``skew = count(domain) + selfMatch - min`` with
  ``min = 0`` below ``minDomains``; U above ``maxSkew``, UU when the node lacks the key.
  Skip without hard constraints.
* **AddPod/RemovePod** (``updateWithPod``): like upstream they test the selector directly, so a
  terminating pod or an empty selector is counted there although the from-scratch count skips it.
  The global minimum is recomputed exactly from the domain counts; upstream keeps two "critical
  paths", which agree whenever the changes touch one node, as the framework guarantees.
* **PreScore/Score/NormalizeScore**: ignored nodes (feasible nodes lacking a key, unless the
  constraints are system defaults), domains registered from the feasible nodes (a missing key
  is the value ``""`` then), counts over every node of the snapshot, ``ln(size + 2)`` weights,
  ``cnt * weight + maxSkew - 1`` summed and ``math.Round``-ed, hostname counted per node, and
  ``100 * (max + min - s) / max``.

Everything is computed over slot arrays: pods are tabulated once per cluster generation, counted
per slot with ``np.bincount`` and per domain with a second ``bincount`` over the interned
topology codes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kaudit.cluster.matching import required_node_affinity_mask
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import (
    MAX_NODE_SCORE,
    FilterPlugin,
    Handle,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo, SpreadConstraint, parse_spread_constraint
from kaudit.model.selectors import LabelSelector, Requirement, SelectorError
from kaudit.plugins import names
from kaudit.plugins.hint_objects import as_node, as_pod
from kaudit.plugins.taint_toleration import untolerated_taint

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
SYSTEM_DEFAULTING, LIST_DEFAULTING = "System", "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

GATE_MATCH_LABEL_KEYS = "MatchLabelKeysInPodTopologySpread"
GATE_NODE_INCLUSION_POLICY = "NodeInclusionPolicyInPodTopologySpread"
#: v1.34 defaults, used when the handle carries no feature gates.
_GATE_DEFAULTS = {GATE_MATCH_LABEL_KEYS: True, GATE_NODE_INCLUSION_POLICY: True}

PRE_FILTER_STATE_KEY = "PreFilter" + names.POD_TOPOLOGY_SPREAD
PRE_SCORE_STATE_KEY = "PreScore" + names.POD_TOPOLOGY_SPREAD
_MAX_INT32 = 2**31 - 1

_NOTHING = LabelSelector(nothing=True)
SYSTEM_DEFAULT_CONSTRAINTS = (
    SpreadConstraint(3, LABEL_HOSTNAME, SCHEDULE_ANYWAY, _NOTHING, 1, HONOR, IGNORE),
    SpreadConstraint(5, LABEL_ZONE, SCHEDULE_ANYWAY, _NOTHING, 1, HONOR, IGNORE),
)

_FILTER_REASONS: list[tuple[str, ...]] = [
    (), (REASON_CONSTRAINTS_NOT_MATCH,), (REASON_NODE_LABEL_NOT_MATCH,)]
_REASON_SKEW, _REASON_LABEL = 1, 2


# --------------------------------------------------------------------------- constraints

def gate_enabled(handle: Handle | None, name: str) -> bool:
    """A feature gate's value; the v1.34 default without gates (or for an unknown gate)."""
    gates = getattr(handle, "feature_gates", None)
    if gates is None:
        return _GATE_DEFAULTS[name]
    try:
        return bool(gates.enabled(name))
    except (KeyError, AttributeError):
        return _GATE_DEFAULTS[name]


def parse_constraint(raw: Mapping[str, Any]) -> SpreadConstraint:
    """A ``v1.TopologySpreadConstraint`` of the plugin args; its selector is set per pod."""
    return SpreadConstraint(
        max_skew=int(raw.get("maxSkew") or 0),
        topology_key=raw.get("topologyKey") or "",
        when_unsatisfiable=raw.get("whenUnsatisfiable") or "",
        selector=_NOTHING,
        min_domains=int(raw.get("minDomains") or 1),
        node_affinity_policy=raw.get("nodeAffinityPolicy") or HONOR,
        node_taints_policy=raw.get("nodeTaintsPolicy") or IGNORE,
    )


def _raw_constraints(pod: PodInfo) -> list[Mapping[str, Any]]:
    return list(((pod.obj or {}).get("spec") or {}).get("topologySpreadConstraints") or [])


def parse_pod_constraint(raw: Mapping[str, Any], pod_labels: Mapping[str, str], where: str,
                         match_label_keys: bool) -> SpreadConstraint:
    """One of the pod's constraints: its ``labelSelector``, ANDed with ``key In [value]`` for
    each ``matchLabelKeys`` key the pod has when ``match_label_keys``; raises
    :class:`SelectorError` for a malformed selector."""
    return parse_spread_constraint(pod_labels, raw, where, match_label_keys)


def _controller(pod: PodInfo) -> tuple[str, str, str, str] | None:
    """``metav1.GetControllerOfNoCopy`` (the first owner reference with ``controller: true``)
    as (group, version, kind, name); None without one or with an unparsable apiVersion
    (``schema.ParseGroupVersion``: ``v1`` is the core group, two ``/`` are an error)."""
    metadata = (pod.obj or {}).get("metadata") or {}
    for ref in metadata.get("ownerReferences") or []:
        if not ref.get("controller"):
            continue
        parts = (ref.get("apiVersion") or "").split("/")
        if len(parts) > 2:
            return None
        group, version = ("", parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        return group, version, ref.get("kind") or "", ref.get("name") or ""
    return None


def _equality_requirements(labels: Mapping[str, str]) -> list[Requirement]:
    return [Requirement(k, "In", frozenset([v])) for k, v in sorted(labels.items())]


def _pod_services_labels(pod: PodInfo, cluster: ClusterState) -> dict[str, str]:
    """Union of the selectors of the pod's namespace's Services that select the pod."""
    label_set: dict[str, str] = {}
    for service in cluster.objects.get("Service", {}).values():
        if ((service.get("metadata") or {}).get("namespace") or "") != pod.namespace:
            continue
        selector = (service.get("spec") or {}).get("selector")
        if selector is None:  # a nil selector selects nothing
            continue
        if all(pod.labels.get(k) == v for k, v in selector.items()):
            label_set.update(selector)
    return label_set


def _owner_selector_requirements(spec_selector: Any) -> list[Requirement]:
    try:
        selector = LabelSelector.parse(spec_selector)
    except SelectorError:
        return []
    return [] if selector.nothing else list(selector.requirements)


def default_selector(pod: PodInfo, cluster: ClusterState) -> LabelSelector:
    """``helper.DefaultSelector``: the Services selecting the pod, plus its controller's
    selector (ReplicationController, ReplicaSet or StatefulSet)."""
    label_set = _pod_services_labels(pod, cluster)
    requirements = _equality_requirements(label_set)
    owner = _controller(pod)
    if owner is None:
        return LabelSelector(tuple(requirements))
    group, version, kind, name = owner
    if (group, version, kind) == ("", "v1", "ReplicationController"):
        rc = cluster.get_object(kind, pod.namespace, name)
        if rc is not None:
            label_set.update((rc.get("spec") or {}).get("selector") or {})
            requirements = _equality_requirements(label_set)
    elif (group, version) == ("apps", "v1") and kind in ("ReplicaSet", "StatefulSet"):
        controller = cluster.get_object(kind, pod.namespace, name)
        if controller is not None:
            requirements += _owner_selector_requirements(
                (controller.get("spec") or {}).get("selector"))
    return LabelSelector(tuple(requirements))


# --------------------------------------------------------------------------- pod counting

class PodTable:
    """The cluster's non-terminating assigned pods as arrays (slot, namespace code, interned
    label columns), so selectors are evaluated over all pods at once. A view over the pod
    columns :class:`ClusterState` keeps up to date as pods come and go."""

    def __init__(self, cluster: ClusterState) -> None:
        rows = cluster.pod_rows
        self.cluster = cluster
        self.slots = cluster.pod_row_slot[:rows]
        self.namespaces = cluster.pod_row_namespace[:rows]
        self.namespace_index = cluster.namespace_codes
        self.labels = cluster.pod_row_labels

    @classmethod
    def build(cls, cluster: ClusterState) -> PodTable:
        return cls(cluster)

    def column(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Interned values of label ``key`` per pod (-1 without the label)."""
        codes, index = self.cluster.pod_label_column(key)
        return codes[:len(self.slots)], index

    def requirement_mask(self, requirement: Requirement, rows: np.ndarray) -> np.ndarray:
        op = requirement.operator
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return np.fromiter((requirement.matches(self.labels[r]) for r in rows.tolist()),
                               bool, len(rows))
        codes, index = self.column(requirement.key)
        codes = codes[rows]
        if op == "Exists":
            return codes >= 0
        if op == "DoesNotExist":
            return codes < 0
        wanted = [index[v] for v in requirement.values if v in index]
        inside = np.isin(codes, wanted) if wanted else np.zeros(len(codes), dtype=bool)
        return inside if op == "In" else ~inside

    def count_per_slot(self, selector: LabelSelector, namespace: str, capacity: int
                       ) -> np.ndarray:
        """``countPodsMatchSelector`` for every slot at once."""
        code = self.namespace_index.get(namespace)
        if code is None or selector.empty or selector.nothing:
            return np.zeros(capacity, np.int64)
        rows = np.flatnonzero(self.namespaces == code)
        for requirement in selector.requirements:
            rows = rows[self.requirement_mask(requirement, rows)]
        return np.bincount(self.slots[rows], minlength=capacity)[:capacity].astype(np.int64)


def padded_codes(cluster: ClusterState, key: str) -> tuple[np.ndarray, dict[str, int]]:
    """Topology codes of ``key`` over all slots (-1: no such label or not a node)."""
    topology = cluster.topology_codes(key)
    codes = topology.codes
    if len(codes) < cluster.capacity:
        codes = np.concatenate([codes, np.full(cluster.capacity - len(codes), -1, np.int32)])
    return codes[:cluster.capacity].astype(np.int64), topology.index


def codes_at(codes: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """``codes[slots]``, -1 for slots past the end."""
    slots = np.asarray(slots, dtype=np.int64)
    inside = slots < len(codes)
    return np.where(inside, codes[np.where(inside, slots, 0)], -1)


class NodeInclusion:
    """Per-slot results of the node inclusion policies for one pod, computed on demand."""

    def __init__(self, cluster: ClusterState, pod: PodInfo) -> None:
        self.cluster = cluster
        self.pod = pod
        self._affinity: np.ndarray | None = None
        self._tolerated: np.ndarray | None = None

    def affinity(self) -> np.ndarray:
        """Slots matching the pod's nodeSelector and required node affinity."""
        if self._affinity is None:
            slots = self.cluster.order_array
            mask = np.zeros(self.cluster.capacity, dtype=bool)
            mask[slots] = required_node_affinity_mask(
                self.cluster, slots, self.pod.node_selector, self.pod.required_node_affinity)
            self._affinity = mask
        return self._affinity

    def tolerated(self) -> np.ndarray:
        """Slots whose NoSchedule/NoExecute taints the pod tolerates."""
        if self._tolerated is None:
            groups = np.fromiter(
                (untolerated_taint(taints, self.pod.tolerations) is None
                 for taints in self.cluster.taint_sets), bool, len(self.cluster.taint_sets))
            self._tolerated = groups[self.cluster.taint_group[:self.cluster.capacity]]
        return self._tolerated

    def mask(self, constraint: SpreadConstraint) -> np.ndarray:
        """Live slots passing ``matchNodeInclusionPolicies`` for ``constraint``."""
        mask = self.cluster.live[:self.cluster.capacity].copy()
        if constraint.node_affinity_policy == HONOR:
            mask &= self.affinity()
        if constraint.node_taints_policy == HONOR:
            mask &= self.tolerated()
        return mask


# --------------------------------------------------------------------------- cycle state

@dataclass
class PreFilterState:
    """Matching-pod counts per domain of each hard constraint.

    ``match_num[i]`` and ``present[i]`` are indexed by the topology code of constraint ``i``'s
    key, with one extra trailing entry (always 0 / absent) that code -1 picks.
    """

    constraints: tuple[SpreadConstraint, ...]
    codes: list[np.ndarray]
    values: list[dict[str, int]]
    match_num: list[np.ndarray]
    present: list[np.ndarray]

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, self.codes, self.values,
                              [m.copy() for m in self.match_num],
                              [p.copy() for p in self.present])

    def domains(self, i: int) -> dict[str, int]:
        """``TpValueToMatchNum[i]``: count per registered domain value."""
        return {value: int(self.match_num[i][code]) for value, code in self.values[i].items()
                if self.present[i][code]}

    def min_match_num(self, i: int) -> int:
        present = self.present[i]
        domains = int(present.sum())
        if domains < self.constraints[i].min_domains:
            return 0
        if domains == 0:
            return _MAX_INT32
        return int(self.match_num[i][present].min())


@dataclass
class PreScoreState:
    """What Score and NormalizeScore read; like upstream it is shared, not copied, on clone."""

    constraints: tuple[SpreadConstraint, ...]
    ignored: np.ndarray
    has_key: list[np.ndarray]
    node_counts: list[np.ndarray]
    weights: list[float]

    def clone(self) -> PreScoreState:
        return self


# --------------------------------------------------------------------------- helpers

def go_round(values: np.ndarray) -> np.ndarray:
    """Go's ``math.Round`` (half away from zero) for non-negative floats, as int64."""
    floor = np.floor(values)
    return (floor + (values - floor >= 0.5)).astype(np.int64)


def _error_verdicts(count: int, message: str) -> NodeVerdicts:
    return NodeVerdicts(np.full(count, Code.ERROR, np.int8), np.ones(count, np.int32),
                        [(), (message,)])


def _all_keys_present(codes: Iterable[np.ndarray], capacity: int) -> np.ndarray:
    mask = np.ones(capacity, dtype=bool)
    for key_codes in codes:
        mask &= key_codes >= 0
    return mask


def _domain_counts(domain: np.ndarray, per_slot: np.ndarray, nodes: np.ndarray, size: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per domain code: the sum of ``per_slot`` over ``nodes``, and whether any node is there."""
    codes = domain[nodes]
    counts = np.bincount(codes, weights=per_slot[nodes], minlength=size)[:size]
    present = np.bincount(codes, minlength=size)[:size] > 0
    return np.rint(counts).astype(np.int64), present


# --------------------------------------------------------------------------- the plugin

class PodTopologySpread(PreFilterPlugin, PreFilterExtensions, FilterPlugin, PreScorePlugin,
                        ScorePlugin):
    name = names.POD_TOPOLOGY_SPREAD
    args_spec = ArgsSpec(
        kind="PodTopologySpreadArgs", schema=args_schema.POD_TOPOLOGY_SPREAD_ARGS,
        set_defaults=args_defaults.set_defaults_pod_topology_spread,
        validate=args_validation.validate_pod_topology_spread_args)

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

        def involved(other: PodInfo) -> bool:
            return other.uid == pod.uid or (bool(other.node_name)
                                            and other.namespace == pod.namespace)

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

    # ------------------------------------------------------------------ PreFilter / Filter

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        self._cluster = cluster
        try:
            constraints = self.constraints(pod, cluster, DO_NOT_SCHEDULE)
        except SelectorError as exc:
            return None, Status.of(Code.ERROR, "get constraints from pod: obtaining pod's hard "
                                               f"topology spread constraints: {exc}")
        if not constraints:
            return None, Status.of(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, self.pre_filter_state(pod, cluster, constraints))
        return None, Status.success()

    def pre_filter_state(self, pod: PodInfo, cluster: ClusterState,
                         constraints: tuple[SpreadConstraint, ...]) -> PreFilterState:
        """``calPreFilterState`` over every node of the cluster."""
        capacity = cluster.capacity
        keyed = [padded_codes(cluster, c.topology_key) for c in constraints]
        with_keys = _all_keys_present((codes for codes, _ in keyed), capacity)
        inclusion = NodeInclusion(cluster, pod)
        table = self.pod_table(cluster)
        match_num, present = [], []
        for constraint, (codes, index) in zip(constraints, keyed, strict=True):
            nodes = with_keys & inclusion.mask(constraint)
            per_slot = table.count_per_slot(constraint.selector, pod.namespace, capacity)
            counts, seen = _domain_counts(codes, per_slot, nodes, len(index) + 1)
            match_num.append(counts)
            present.append(seen)
        return PreFilterState(constraints, [codes for codes, _ in keyed],
                              [index for _, index in keyed], match_num, present)

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return _error_verdicts(len(slots), f'reading "{PRE_FILTER_STATE_KEY}" from '
                                               "cycleState: not found")
        count = len(slots)
        codes = np.zeros(count, np.int8)
        reason_ids = np.zeros(count, np.int32)
        undecided = np.ones(count, dtype=bool)
        for i, constraint in enumerate(s.constraints):
            domain = codes_at(s.codes[i], slots)
            missing = undecided & (domain < 0)
            codes[missing] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            reason_ids[missing] = _REASON_LABEL
            undecided &= ~missing
            self_match = 1 if constraint.selector.matches(pod.labels) else 0
            skew = s.match_num[i][domain] + self_match - s.min_match_num(i)
            failed = undecided & (skew > constraint.max_skew)
            codes[failed] = Code.UNSCHEDULABLE
            reason_ids[failed] = _REASON_SKEW
            undecided &= ~failed
        return NodeVerdicts(codes, reason_ids, list(_FILTER_REASONS))

    # ------------------------------------------------------------------ PreFilter extensions

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, slot: int,
                cluster: ClusterState) -> Status:
        return self._update_with_pod(state, pod, pod_to_add, slot, cluster, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, slot: int,
                   cluster: ClusterState) -> Status:
        return self._update_with_pod(state, pod, pod_to_remove, slot, cluster, -1)

    def _update_with_pod(self, state: CycleState, pod: PodInfo, updated: PodInfo, slot: int,
                         cluster: ClusterState, delta: int) -> Status:
        """``updateWithPod``: the pod's labels are tested directly (no terminating check)."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return Status.of(Code.ERROR, f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: '
                                         "not found")
        if updated.namespace != pod.namespace or slot >= len(cluster.nodes):
            return Status.success()
        if cluster.nodes[slot] is None:
            return Status.success()
        domains = [int(codes_at(codes, np.asarray([slot]))[0]) for codes in s.codes]
        if min(domains, default=0) < 0:
            return Status.success()
        where = np.asarray([slot])
        affinity = bool(required_node_affinity_mask(
            cluster, where, pod.node_selector, pod.required_node_affinity)[0])
        taints = cluster.taint_sets[int(cluster.taint_group[slot])]
        tolerated = untolerated_taint(taints, pod.tolerations) is None
        for i, constraint in enumerate(s.constraints):
            if not constraint.selector.matches(updated.labels):
                continue
            if constraint.node_affinity_policy == HONOR and not affinity:
                continue
            if constraint.node_taints_policy == HONOR and not tolerated:
                continue
            s.match_num[i][domains[i]] += delta
            s.present[i][domains[i]] = True
        return Status.success()

    # ------------------------------------------------------------------ PreScore / Score

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        if cluster.node_count == 0:
            return Status.of(Code.SKIP)
        try:
            constraints = self.constraints(pod, cluster, SCHEDULE_ANYWAY)
        except SelectorError as exc:
            return Status.of(Code.ERROR, "calculating preScoreState: obtaining pod's soft "
                                         f"topology spread constraints: {exc}")
        if not constraints:
            return Status.of(Code.SKIP)
        explicit = bool(_raw_constraints(pod) or pod.spread_constraints)
        require_all = explicit or not self.system_defaulted
        state.write(PRE_SCORE_STATE_KEY,
                    self.pre_score_state(pod, cluster, np.asarray(slots, np.int64),
                                         constraints, require_all))
        return Status.success()

    def pre_score_state(self, pod: PodInfo, cluster: ClusterState, feasible: np.ndarray,
                        constraints: tuple[SpreadConstraint, ...], require_all: bool
                        ) -> PreScoreState:
        """``initPreScoreState`` plus the counting of ``PreScore``."""
        capacity = cluster.capacity
        keyed = [padded_codes(cluster, c.topology_key) for c in constraints]
        with_keys = _all_keys_present((codes for codes, _ in keyed), capacity)
        ignored = np.zeros(capacity, dtype=bool)
        if require_all:
            ignored[feasible] = ~with_keys[feasible]
        scored = feasible[~ignored[feasible]]
        counted = cluster.live[:capacity] & (with_keys if require_all else True)
        inclusion = NodeInclusion(cluster, pod)
        table = self.pod_table(cluster)
        has_key, node_counts, weights = [], [], []
        for constraint, (codes, index) in zip(constraints, keyed, strict=True):
            per_slot = table.count_per_slot(constraint.selector, pod.namespace, capacity)
            has_key.append(codes >= 0)
            if constraint.topology_key == LABEL_HOSTNAME:
                node_counts.append(per_slot)
                weights.append(math.log(len(feasible) - int(ignored[feasible].sum()) + 2))
                continue
            # A node without the key has the value "" (a Go map lookup) when it is not ignored.
            domain = np.where(codes >= 0, codes, index.get("", len(index)))
            registered = np.zeros(len(index) + 1, dtype=bool)
            registered[domain[scored]] = True
            nodes = counted & inclusion.mask(constraint)
            counts, _ = _domain_counts(domain, per_slot, nodes, len(index) + 1)
            node_counts.append(np.where(registered, counts, 0)[domain])
            weights.append(math.log(int(registered.sum()) + 2))
        return PreScoreState(constraints, ignored, has_key, node_counts, weights)

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            raise LookupError(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState')
        slots = np.asarray(slots, dtype=np.int64)
        total = np.zeros(len(slots), dtype=np.float64)
        for i, constraint in enumerate(s.constraints):
            has_key = s.has_key[i][slots]
            term = (s.node_counts[i][slots].astype(np.float64) * s.weights[i]
                    + float(constraint.max_skew - 1))
            total = total + np.where(has_key, term, 0.0)
        return np.where(s.ignored[slots], 0, go_round(total))

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return None
        scores = np.asarray(scores, dtype=np.int64)
        ignored = s.ignored[np.asarray(slots, dtype=np.int64)]
        valid = scores[~ignored]
        if len(valid) == 0:
            return np.zeros_like(scores)
        low, high = int(valid.min()), max(int(valid.max()), 0)
        if high == 0:
            return np.where(ignored, 0, MAX_NODE_SCORE).astype(np.int64)
        return np.where(ignored, 0, MAX_NODE_SCORE * (high + low - scores) // high)
