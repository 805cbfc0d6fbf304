"""What PodTopologySpread's filtering and scoring share: constraints, default selectors,
pod counting and node inclusion policies.

Mirrors ``podtopologyspread/common.go`` and ``plugins/helper/spread.go`` (``DefaultSelector``)
of Kubernetes v1.34:

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

Everything is computed over slot arrays: pods are tabulated once per cluster generation, counted
per slot with ``np.bincount`` and per domain with a second ``bincount`` over the interned
topology codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kaudit.cluster.matching import required_node_affinity_mask
from kaudit.cluster.pod_columns import pods_matching
from kaudit.cluster.state import ClusterState
from kaudit.framework.plugin import (
    Handle,
    NodeVerdicts,
)
from kaudit.framework.status import Code
from kaudit.k8s import well_known
from kaudit.model.pod import PodInfo, SpreadConstraint, parse_spread_constraint
from kaudit.model.selectors import LabelSelector, Requirement, SelectorError
from kaudit.model.taints import untolerated_taint
from kaudit.plugins import names

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
SYSTEM_DEFAULTING, LIST_DEFAULTING = "System", "List"
LABEL_HOSTNAME = well_known.LABEL_HOSTNAME
LABEL_ZONE = well_known.LABEL_TOPOLOGY_ZONE

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

    @classmethod
    def build(cls, cluster: ClusterState) -> PodTable:
        return cls(cluster)

    def count_per_slot(self, selector: LabelSelector, namespace: str, capacity: int
                       ) -> np.ndarray:
        """``countPodsMatchSelector`` for every slot at once."""
        code = self.namespace_index.get(namespace)
        if code is None or selector.empty or selector.nothing:
            return np.zeros(capacity, np.int64)
        rows = pods_matching(self.cluster, (selector,), np.flatnonzero(self.namespaces == code))
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
