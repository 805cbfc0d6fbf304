"""VolumeBinding's volume binder: PreFilter, Filter, Reserve, Unreserve and PreBind.

Mirrors ``volumebinding/binder.go`` and the extension points of ``volume_binding.go``
(Kubernetes v1.34), with ``FindMatchingVolume``, ``IsDelayBindingMode`` and
``GetBindVolumeToClaim`` of ``component-helpers/storage/volume``:

* **PreFilter** skips pods without PVC or generic ephemeral volumes. A missing claim, a
  claim in phase Lost or being deleted, or an ephemeral claim the pod does not own gives UU
  with upstream's error text; an unbound claim whose class binds Immediately (or a claim
  pre-bound to a PV but not yet bound) gives UU ``pod has unbound immediate
  PersistentVolumeClaims``. Bound claims whose PVs pin ``kubernetes.io/hostname`` narrow the
  nodes (PreFilterResult).
* **Filter** returns one UU status holding every conflict reason, in upstream's order:
  the bound PVs' node affinity, an available PV for each unbound WaitForFirstConsumer claim
  (smallest that fits, pre-bound ones first) or dynamic provisioning (a provisioner other
  than ``kubernetes.io/no-provisioner`` and the class's ``allowedTopologies``), and PVs that
  do not exist.
* **Reserve** assumes the chosen bindings in the assume cache; **Unreserve** reverts them.
  **PreBind** succeeds: the replay observes the binding in the trace.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    NodeVerdicts,
    PreFilterResult,
)
from kaudit.framework.status import Code, Status
from kaudit.gostrings import go_quote
from kaudit.k8s.well_known import LABEL_HOSTNAME
from kaudit.model.pod import PodInfo
from kaudit.model.selectors import (
    LabelSelector,
    SelectorError,
)
from kaudit.plugins import names
from kaudit.plugins.storage_objects import (
    JSON,
    PVC_KIND,
    PVC_RESOURCE,
    WAIT_FOR_FIRST_CONSUMER,
    annotations_of,
    binding_mode,
    ephemeral_owner_error,
    meta,
    not_found,
    pvc_of,
    spec,
    storage_class_of,
    volume_class,
)
from kaudit.plugins.volume_binding.assume_cache import Assumed
from kaudit.plugins.volume_binding.common import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    Claim,
    SlotIndex,
    Volume,
    claim_volumes,
    pv_affinity_mask,
    topology_terms_mask,
    volume_bound_to,
)

if TYPE_CHECKING:
    from kaudit.plugins.volume_binding.plugin import VolumeBinding


# --------------------------------------------------------------------------- cycle state

STATE_KEY = names.VOLUME_BINDING
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
_REASONS = (REASON_NODE_CONFLICT, REASON_BIND_CONFLICT, REASON_NOT_ENOUGH_SPACE,
            REASON_PV_NOT_EXIST)


@dataclass
class FilterRecord:
    """What Filter chose on a batch of slots: ``choices[i, j]`` indexes ``volumes`` (the PV
    for ``matching[i]`` on ``slots[j]``, -1 for none); unmatched claims are provisioned."""

    slots: np.ndarray
    matching: list[Claim]
    volumes: list[Volume]
    choices: np.ndarray
    passed: np.ndarray

    def pod_volumes(self, position: int, selected: list[Claim]
                    ) -> tuple[list[tuple[Volume, Claim]], list[Claim]]:
        bindings, provisions = [], list(selected)
        for i, claim in enumerate(self.matching):
            index = int(self.choices[i, position])
            if index >= 0:
                bindings.append((self.volumes[index], claim))
            else:
                provisions.append(claim)
        return bindings, provisions


@dataclass
class BindingState:
    """VolumeBinding's cycle-state entry (``stateData``)."""

    bound: list[tuple[Claim, Volume | None]] = field(default_factory=list)
    delayed: list[Claim] = field(default_factory=list)
    volumes_by_class: dict[str, list[Volume]] = field(default_factory=dict)
    slot_of: Mapping[str, int] = field(default_factory=dict)
    records: list[FilterRecord] = field(default_factory=list)
    has_static_bindings: bool = False
    all_bound: bool = False

    def clone(self) -> BindingState:
        return BindingState(self.bound, self.delayed, self.volumes_by_class, self.slot_of,
                            list(self.records), self.has_static_bindings, self.all_bound)

    @property
    def selected(self) -> list[Claim]:
        return [c for c in self.delayed if c.selected_node is not None]

    def pod_volumes(self, node_name: str
                    ) -> tuple[list[tuple[Volume, Claim]], list[Claim]] | None:
        """The bindings and provisions Filter found for a node that passed, if any."""
        slot = self.slot_of.get(node_name)
        if slot is None:
            return None
        for record in reversed(self.records):
            positions = np.flatnonzero(record.slots == slot)
            if len(positions):
                return self._at(record, int(positions[0]))
        return None

    def pod_volumes_by_slot(self) -> dict[int, tuple[list[tuple[Volume, Claim]], list[Claim]]]:
        """``pod_volumes`` of every slot Filter passed, from the latest record of each."""
        latest: dict[int, tuple[FilterRecord, int]] = {}
        for record in self.records:
            latest.update((slot, (record, i)) for i, slot in enumerate(record.slots.tolist()))
        result = {}
        for slot, (record, position) in latest.items():
            found = self._at(record, position)
            if found is not None:
                result[slot] = found
        return result

    def _at(self, record: FilterRecord, position: int
            ) -> tuple[list[tuple[Volume, Claim]], list[Claim]] | None:
        if not record.passed[position]:
            return None
        return record.pod_volumes(position, self.selected)


@dataclass
class _Outcome:
    """Per-slot conflict flags of one Filter call, and errors that abort it."""

    size: int
    node_conflict: np.ndarray = field(init=False)
    bind_conflict: np.ndarray = field(init=False)
    pv_missing: np.ndarray = field(init=False)
    errors: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.node_conflict = np.zeros(self.size, dtype=bool)
        self.bind_conflict = np.zeros(self.size, dtype=bool)
        self.pv_missing = np.zeros(self.size, dtype=bool)

    def error(self, mask: np.ndarray, message: str) -> None:
        if mask.any():
            previous = self.errors.get(message)
            self.errors[message] = mask.copy() if previous is None else previous | mask

    def verdicts(self) -> NodeVerdicts:
        bits = (self.node_conflict.astype(np.int32) | self.bind_conflict.astype(np.int32) << 1
                | self.pv_missing.astype(np.int32) << 3)
        table: dict[tuple[str, ...], int] = {(): 0}
        ids = np.zeros(self.size, dtype=np.int32)
        for value in np.unique(bits[bits > 0]).tolist():
            reasons = tuple(r for i, r in enumerate(_REASONS) if value >> i & 1)
            ids[bits == value] = table.setdefault(reasons, len(table))
        codes = np.where(bits > 0, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0))
        for message, mask in self.errors.items():
            codes[mask] = Code.ERROR
            ids[mask] = table.setdefault((message,), len(table))
        return NodeVerdicts(codes.astype(np.int8), ids, list(table))


class _BinderError(Exception):
    """An error of the volume binder (upstream returns it as an Error status)."""


# --------------------------------------------------------------------------- helpers

def _gate(handle: Any, gate: str, default: bool) -> bool:
    gates = getattr(handle, "feature_gates", None)
    if gates is None:
        return default
    try:
        return bool(gates.enabled(gate))
    except KeyError:
        return default


def _delay_binding(cluster: ClusterState, claim: Claim) -> bool:
    """``volume.IsDelayBindingMode``."""
    if not claim.class_name:
        return False
    storage_class = storage_class_of(cluster, claim.class_name)
    if storage_class is None:
        return False
    try:
        return binding_mode(storage_class, claim.class_name) == WAIT_FOR_FIRST_CONSUMER
    except ValueError as exc:
        raise _BinderError(str(exc)) from None


def local_node_names(pv: Mapping[str, Any]) -> list[str]:
    """``util.GetLocalPersistentVolumeNodeNames``: ``kubernetes.io/hostname In`` values
    of the PV's required node affinity, intersected within a term, united across terms."""
    required = ((spec(pv).get("nodeAffinity") or {}).get("required") or {})
    result: set[str] = set()
    for term in required.get("nodeSelectorTerms") or []:
        nodes: set[str] | None = None
        for expression in (term or {}).get("matchExpressions") or []:
            if expression.get("key") == LABEL_HOSTNAME and expression.get("operator") == "In":
                values = set(expression.get("values") or [])
                nodes = values if nodes is None else nodes & values
        result |= nodes or set()
    return sorted(result)


def _eligible_nodes(bound: list[tuple[Claim, Volume | None]]) -> frozenset[str] | None:
    """``GetEligibleNodes``: nodes the bound local PVs allow (None: all nodes)."""
    eligible: frozenset[str] | None = None
    for _, volume in bound:
        if volume is None:
            return None
        nodes = local_node_names(volume.obj)
        if nodes:
            eligible = frozenset(nodes) if eligible is None else eligible & frozenset(nodes)
    return eligible


def _check_bound(cluster: ClusterState, slots: np.ndarray, binding: BindingState,
                 outcome: _Outcome) -> None:
    """``checkBoundClaims``: the first bound claim that fails a node decides its reason."""
    undecided = np.ones(len(slots), dtype=bool)
    for _, volume in binding.bound:
        if volume is None:
            outcome.pv_missing |= undecided
            return
        fails = undecided & ~pv_affinity_mask(cluster, slots, volume.selector)
        outcome.node_conflict |= fails
        undecided &= ~fails


def _free_volume_fits(volume: Volume, claim: Claim, selector: LabelSelector | None) -> bool:
    """The checks ``FindMatchingVolume`` makes on a PV not pre-bound to the claim."""
    if (volume.obj.get("status") or {}).get("phase") != "Available":
        return False
    if selector is not None and not selector.matches(meta(volume.obj).get("labels") or {}):
        return False
    if volume_class(volume.obj) != claim.class_name:
        return False
    return claim.modes <= frozenset(spec(volume.obj).get("accessModes") or [])


def _choose(index: SlotIndex, candidates: list[tuple[int, Volume, bool]],
            earlier: np.ndarray, fitting: dict[int, np.ndarray]) -> np.ndarray:
    """Per node, the PV ``FindMatchingVolume`` returns: the first available pre-bound PV
    (none at all if it does not fit the node), else the smallest fitting one."""
    size = len(index.slots)
    ranks = {i: r for r, (i, _, _) in enumerate(
        sorted((c for c in candidates if not c[2]), key=lambda c: c[1].capacity))}
    resolved = np.zeros(size, dtype=bool)
    result = np.full(size, -1, dtype=np.int64)
    best = np.full(size, -1, dtype=np.int64)
    best_rank = np.full(size, len(candidates) + 1, dtype=np.int64)
    for volume_index, volume, prebound in candidates:
        if volume_index not in fitting:
            fitting[volume_index] = index.matching(volume.selector)
        positions = fitting[volume_index]
        if prebound:
            available = ~(earlier == volume_index).any(axis=0) & ~resolved
            fits = np.zeros(size, dtype=bool)
            fits[positions] = True
            result[available & fits] = volume_index
            resolved |= available
            continue
        better = ~resolved[positions] & (ranks[volume_index] < best_rank[positions])
        if len(earlier):
            better &= ~(earlier[:, positions] == volume_index).any(axis=0)
        chosen = positions[better]
        best[chosen] = volume_index
        best_rank[chosen] = ranks[volume_index]
    return np.where(resolved, result, best)


def _provisionable(cluster: ClusterState, slots: np.ndarray, claim: Claim
                   ) -> np.ndarray | str:
    """Nodes where the claim can be provisioned, or the binder's error."""
    if not claim.class_name:
        return f"no class for claim {go_quote(claim.key)}"
    storage_class = storage_class_of(cluster, claim.class_name)
    if storage_class is None:
        return f"failed to find storage class {go_quote(claim.class_name)}"
    provisioner = storage_class.get("provisioner") or ""
    if provisioner in ("", NO_PROVISIONER):
        return np.zeros(len(slots), dtype=bool)
    return topology_terms_mask(cluster, slots, storage_class.get("allowedTopologies"))


def _bind_volume_to_claim(pv: JSON, claim: Claim) -> JSON | None:
    """``GetBindVolumeToClaim``: the PV with ``claimRef`` set, or None if unchanged."""
    ref = spec(pv).get("claimRef") or {}
    rebind = (ref.get("name") != claim.name or ref.get("namespace") != claim.namespace
              or (ref.get("uid") or "") != claim.uid)
    mark = not volume_bound_to(pv, claim) and ANN_BOUND_BY_CONTROLLER not in annotations_of(pv)
    if not rebind and not mark:
        return None
    clone = copy.deepcopy(pv)
    if rebind:
        clone.setdefault("spec", {})["claimRef"] = {
            "kind": PVC_KIND, "namespace": claim.namespace, "name": claim.name,
            "uid": claim.uid, "apiVersion": "v1",
            "resourceVersion": meta(claim.obj).get("resourceVersion") or ""}
    if mark:
        clone.setdefault("metadata", {}).setdefault("annotations", {})[
            ANN_BOUND_BY_CONTROLLER] = "yes"
    return clone


def pre_filter(plugin: VolumeBinding, state: CycleState, pod: PodInfo, cluster: ClusterState
               ) -> tuple[PreFilterResult | None, Status]:
    has_claims, problem = plugin._pod_has_claims(pod, cluster)
    if problem is not None:
        return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, problem)
    if not has_claims:
        state.write(STATE_KEY, BindingState(all_bound=True))
        return None, Status.of(Code.SKIP)
    try:
        binding, immediate = plugin._pod_volume_claims(pod, cluster)
    except _BinderError as exc:
        return None, Status.of(Code.ERROR, str(exc))
    if immediate:
        return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNBOUND_IMMEDIATE)
    binding.slot_of = cluster.slot_of
    binding.all_bound = not binding.delayed
    state.write(STATE_KEY, binding)
    eligible = _eligible_nodes(binding.bound)
    return (PreFilterResult(eligible) if eligible is not None else None), Status.success()


def _pod_has_claims(plugin: VolumeBinding, pod: PodInfo, cluster: ClusterState) -> tuple[bool,
                    str | None]:
    """``podHasPVCs``: whether the pod uses claims, and why it cannot use them."""
    volumes = claim_volumes(pod)
    for claim_name, ephemeral in volumes:
        pvc = pvc_of(cluster, pod.namespace, claim_name)
        if pvc is None:
            if ephemeral:
                return True, ("waiting for ephemeral volume controller to create the "
                              f"persistentvolumeclaim {go_quote(claim_name)}")
            return True, not_found(PVC_RESOURCE, claim_name)
        name = meta(pvc).get("name") or ""
        if ((pvc.get("status") or {}).get("phase")) == "Lost":
            return True, (f"persistentvolumeclaim {go_quote(name)} bound to non-existent "
                          f"persistentvolume {go_quote(spec(pvc).get('volumeName') or '')}")
        if meta(pvc).get("deletionTimestamp") is not None:
            return True, f"persistentvolumeclaim {go_quote(name)} is being deleted"
        if ephemeral and (error := ephemeral_owner_error(pod, pvc)) is not None:
            return True, error
    return bool(volumes), None


def _pod_volume_claims(plugin: VolumeBinding, pod: PodInfo, cluster: ClusterState
                       ) -> tuple[BindingState, list[Claim]]:
    """``GetPodVolumeClaims``: bound, unbound delayed and unbound immediate claims."""
    binding, immediate = BindingState(), []
    for claim_name, _ in claim_volumes(pod):
        key = f"{pod.namespace}/{claim_name}"
        obj, base = plugin.assumed.claim(cluster, key)
        if obj is None or base is None:
            raise _BinderError(f"error getting PVC {go_quote(key)}: "
                               f"{not_found(PVC_RESOURCE, key)}")
        claim = Claim.of(obj, base)
        if claim.volume_name and ANN_BIND_COMPLETED in annotations_of(obj):
            pv, pv_base = plugin.assumed.volume(cluster, claim.volume_name)
            binding.bound.append((claim, Volume.of(pv, pv_base) if pv and pv_base else None))
        elif _delay_binding(cluster, claim) and not claim.volume_name:
            binding.delayed.append(claim)
        else:
            immediate.append(claim)
    for claim in binding.delayed:
        if claim.class_name not in binding.volumes_by_class:
            binding.volumes_by_class[claim.class_name] = plugin.assumed.volumes_of_class(
                cluster, claim.class_name)
    return binding, immediate


def filter(plugin: VolumeBinding, state: CycleState, pod: PodInfo, cluster: ClusterState,
           slots: np.ndarray) -> NodeVerdicts:
    binding = state.read(STATE_KEY)
    outcome = _Outcome(len(slots))
    if not isinstance(binding, BindingState):
        outcome.error(np.ones(len(slots), dtype=bool), "not found")
        return outcome.verdicts()
    _check_bound(cluster, slots, binding, outcome)
    record = None
    if binding.delayed:
        record = plugin._check_unbound(cluster, slots, binding, outcome)
    verdicts = outcome.verdicts()
    if record is not None:
        record.passed = verdicts.codes == 0
        binding.records.append(record)
        binding.has_static_bindings |= bool(
            ((record.choices >= 0).any(axis=0) & record.passed).any())
    return verdicts


def _check_unbound(plugin: VolumeBinding, cluster: ClusterState, slots: np.ndarray,
                   binding: BindingState,
                   outcome: _Outcome) -> FilterRecord:
    """The unbound WaitForFirstConsumer claims of ``FindPodVolumes``."""
    selected = binding.selected
    elsewhere = np.zeros(len(slots), dtype=bool)
    for claim in selected:
        elsewhere |= slots != binding.slot_of.get(claim.selected_node or "", -1)
    matching = sorted((c for c in binding.delayed if c.selected_node is None),
                      key=lambda c: c.request)
    record = plugin._match_volumes(cluster, slots, binding, matching, outcome, ~elsewhere)
    queue = [(claim, ~elsewhere) for claim in selected]
    queue += [(claim, ~elsewhere & (record.choices[i] < 0))
              for i, claim in enumerate(matching)]
    outcome.bind_conflict |= elsewhere | plugin._provisioning_fails(cluster, slots, queue,
                                                                  outcome)
    return record


def _match_volumes(plugin: VolumeBinding, cluster: ClusterState, slots: np.ndarray,
                   binding: BindingState,
                   matching: list[Claim], outcome: _Outcome, reached: np.ndarray
                   ) -> FilterRecord:
    """``findMatchingVolumes``: per claim (smallest request first) the PV each node
    would bind, excluding PVs chosen for earlier claims on the same node."""
    volumes: list[Volume] = []
    index: dict[str, int] = {}
    for claim in matching:
        for volume in binding.volumes_by_class.get(claim.class_name, []):
            index.setdefault(volume.name, len(volumes))
            if index[volume.name] == len(volumes):
                volumes.append(volume)
    slot_index = SlotIndex(cluster, slots)
    fitting: dict[int, np.ndarray] = {}
    choices = np.full((len(matching), len(slots)), -1, dtype=np.int64)
    for i, claim in enumerate(matching):
        try:
            candidates = plugin._candidates(claim, binding.volumes_by_class.get(
                claim.class_name, []))
        except SelectorError as exc:
            outcome.error(reached, f"error creating internal label selector for claim: "
                          f"{claim.key}: {exc}")
            continue
        choices[i] = _choose(slot_index, [(index[v.name], v, pre) for v, pre in candidates],
                             choices[:i], fitting)
    return FilterRecord(slots, matching, volumes, choices, np.zeros(len(slots), dtype=bool))


def _candidates(plugin: VolumeBinding, claim: Claim, volumes: list[Volume]) -> list[tuple[Volume,
                bool]]:
    """The node-independent part of ``FindMatchingVolume``: ``(PV, pre-bound)`` in list
    order; free PVs sorted later by capacity."""
    if not plugin.attributes_class_enabled and claim.attributes_class:
        return []
    selector_raw = spec(claim.obj).get("selector")
    selector = (LabelSelector.parse(selector_raw, "spec.selector")
                if selector_raw is not None else None)
    result = []
    for volume in volumes:
        volume_spec = spec(volume.obj)
        prebound = volume.bound_to(claim)
        if volume_spec.get("claimRef") and not prebound:
            continue
        if volume.capacity < claim.request:
            continue
        if (volume_spec.get("volumeMode") or "Filesystem") != claim.volume_mode:
            continue
        volume_vac = volume_spec.get("volumeAttributesClassName") or ""
        if (claim.attributes_class != volume_vac if plugin.attributes_class_enabled
                else bool(volume_vac)):
            continue
        if meta(volume.obj).get("deletionTimestamp") is not None:
            continue
        if prebound or _free_volume_fits(volume, claim, selector):
            result.append((volume, prebound))
    return result


def _provisioning_fails(plugin: VolumeBinding, cluster: ClusterState, slots: np.ndarray,
                        queue: list[tuple[Claim, np.ndarray]],
                        outcome: _Outcome) -> np.ndarray:
    """``checkVolumeProvisions`` over the claims each node must provision, in order;
    the first claim that cannot be provisioned decides."""
    failed = np.zeros(len(slots), dtype=bool)
    undecided = np.ones(len(slots), dtype=bool)
    for claim, applies in queue:
        here = applies & undecided
        if not here.any():
            continue
        verdict = _provisionable(cluster, slots, claim)
        if isinstance(verdict, str):
            outcome.error(here, verdict)
            undecided &= ~here
            continue
        fails = here & ~verdict
        failed |= fails
        undecided &= ~fails
    return failed


def reserve(plugin: VolumeBinding, state: CycleState, pod: PodInfo, node_name: str) -> Status:
    binding = state.read(STATE_KEY)
    if not isinstance(binding, BindingState):
        return Status.of(Code.ERROR, "not found")
    found = binding.pod_volumes(node_name)
    if found is None or not binding.delayed:
        binding.all_bound = True
        return Status.success()
    bindings, provisions = found
    for volume, claim in bindings:
        assumed = _bind_volume_to_claim(volume.obj, claim)
        if assumed is not None:
            plugin.assumed.volumes[volume.name] = Assumed(volume.base, assumed)
    for claim in provisions:
        clone = copy.deepcopy(claim.obj)
        clone.setdefault("metadata", {}).setdefault("annotations", {})[
            ANN_SELECTED_NODE] = node_name
        plugin.assumed.claims[claim.key] = Assumed(claim.base, clone)
    binding.all_bound = False
    return Status.success()


def unreserve(plugin: VolumeBinding, state: CycleState, pod: PodInfo, node_name: str) -> None:
    binding = state.read(STATE_KEY)
    if not isinstance(binding, BindingState):
        return
    found = binding.pod_volumes(node_name)
    if found is None:
        return
    for volume, _ in found[0]:
        plugin.assumed.volumes.pop(volume.name, None)
    for claim in found[1]:
        plugin.assumed.claims.pop(claim.key, None)


def pre_bind(plugin: VolumeBinding, state: CycleState, pod: PodInfo, node_name: str) -> Status:
    return Status.success()
