"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, bindable or provisionable on
the node.

Mirrors ``pkg/scheduler/framework/plugins/volumebinding/{volume_binding.go,binder.go,
scorer.go}`` and the helpers it calls in ``component-helpers/storage/volume/{helpers.go,
pv_helpers.go}`` (``GetPersistentVolumeClaimClass``, ``IsDelayBindingMode``,
``FindMatchingVolume``, ``CheckNodeAffinity``, ``GetBindVolumeToClaim``),
``component-helpers/storage/ephemeral`` and ``pkg/scheduler/util.GetLocalPersistentVolumeNodeNames``
(Kubernetes v1.34):

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
* **Reserve** assumes the chosen bindings (the PV's ``claimRef``, the claim's
  ``volume.kubernetes.io/selected-node``) in an assume cache on the plugin instance, so later
  pods of the same replay see them; **Unreserve** reverts them. An assumption lapses when
  the PV or claim object is replaced in the cluster state (the informer's newer version).
  **PreBind** succeeds: the replay observes the binding in the trace.
* **Score** (only with ``StorageCapacityScoring``) rates static bindings by the
  utilisation shape.

Not modelled: CSI storage capacity (``CSIStorageCapacity``/``CSIDriver`` are not stored, so
``node(s) did not have enough free storage`` never appears and dynamic provisions score 0),
and translating in-tree PVs to CSI before checking their node affinity.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from kaudit.cluster.matching import requirement_mask
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.errors import QuantityError
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    ClusterEventWithHint,
    QueueingHint,
    register,
)
from kaudit.framework.plugin import (
    MAX_NODE_SCORE,
    FilterPlugin,
    NodeVerdicts,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.model.selectors import (
    LabelSelector,
    NodeSelector,
    Requirement,
    SelectorError,
    valid_label_key,
    valid_label_value,
)
from kaudit.plugins import names
from kaudit.plugins.helper import go_round_scalar
from kaudit.plugins.hint_objects import (
    metadata,
    name_of,
    typed,
    uses_claim,
)
from kaudit.quantity import parse_quantity

JSON = dict[str, Any]

# --------------------------------------------------------------------------- shared helpers
# Used by the other volume plugins (VolumeRestrictions, VolumeZone, NodeVolumeLimits) too.

PVC_KIND, PV_KIND, SC_KIND, CSINODE_KIND = (
    "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode")
#: ``GroupResource.String()`` of the informer listers' NotFound errors.
PVC_RESOURCE = "persistentvolumeclaim"
PV_RESOURCE = "persistentvolume"
SC_RESOURCE = "storageclass.storage.k8s.io"

ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
LABEL_HOSTNAME = "kubernetes.io/hostname"


def meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("spec") or {}


def annotations(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def not_found(resource: str, name: str) -> str:
    """The text of ``apierrors.NewNotFound(resource, name)``."""
    return f'{resource} "{name}" not found'


def claim_class(pvc: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation, then ``storageClassName``."""
    notes = annotations(pvc)
    if ANN_STORAGE_CLASS in notes:
        return notes[ANN_STORAGE_CLASS] or ""
    return spec(pvc).get("storageClassName") or ""


def volume_class(pv: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClass``."""
    notes = annotations(pv)
    if ANN_STORAGE_CLASS in notes:
        return notes[ANN_STORAGE_CLASS] or ""
    return spec(pv).get("storageClassName") or ""


def storage_nanos(resources: Mapping[str, Any] | None) -> int:
    """The ``storage`` quantity of a resource list, exactly (0 when absent)."""
    text = (resources or {}).get("storage")
    if text is None:
        return 0
    try:
        return parse_quantity(str(text)).nanos
    except QuantityError:
        return 0


def claim_volumes(pod: PodInfo) -> list[tuple[str, bool]]:
    """``(claim name, is generic ephemeral)`` of each PVC or ephemeral volume, in order."""
    result = []
    for volume in pod.volumes:
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, dict):
            result.append((source.get("claimName") or "", False))
        elif volume.get("ephemeral") is not None:
            result.append((ephemeral_claim_name(pod, volume), True))
    return result


def ephemeral_claim_name(pod: PodInfo, volume: Mapping[str, Any]) -> str:
    """``ephemeral.VolumeClaimName``."""
    return f"{pod.name}-{volume.get('name') or ''}"


def ephemeral_owner_error(pod: PodInfo, pvc: Mapping[str, Any]) -> str | None:
    """``ephemeral.VolumeIsForPod``: the claim must be controlled by the pod."""
    metadata = meta(pvc)
    owner = next((o for o in metadata.get("ownerReferences") or [] if o.get("controller")),
                 None)
    if metadata.get("namespace") == pod.namespace and owner is not None \
            and owner.get("uid") == pod.uid:
        return None
    return (f"PVC {metadata.get('namespace') or ''}/{metadata.get('name') or ''} was not "
            f"created for pod {pod.namespace}/{pod.name} (pod is not owner)")


def pv_node_selector(pv: Mapping[str, Any]) -> NodeSelector | None:
    """The PV's required node affinity; None when it has none (matches every node)."""
    affinity = spec(pv).get("nodeAffinity")
    required = (affinity or {}).get("required") if isinstance(affinity, dict) else None
    if required is None:
        return None
    try:
        return NodeSelector.parse(required, "spec.nodeAffinity.required")
    except SelectorError:
        return NodeSelector(())


def pv_affinity_mask(cluster: ClusterState, slots: np.ndarray,
                     selector: NodeSelector | None) -> np.ndarray:
    """``volume.CheckNodeAffinity`` over slots. Upstream matches a node built from the
    labels alone, so ``matchFields`` see an empty ``metadata.name``."""
    if selector is None:
        return np.ones(len(slots), dtype=bool)
    mask = np.zeros(len(slots), dtype=bool)
    for term in selector.terms:
        if term.error is not None or (not term.expressions and not term.fields):
            continue
        if not all(r.matches({"metadata.name": ""}) for r in term.fields):
            continue
        term_mask = np.ones(len(slots), dtype=bool)
        for requirement in term.expressions:
            term_mask &= requirement_mask(cluster, slots, requirement)
        mask |= term_mask
    return mask


class SlotIndex:
    """Positions of ``slots`` by label value, so that ``In`` node-affinity terms (local and
    zonal PVs) are evaluated on the matching nodes only, not as full masks."""

    def __init__(self, cluster: ClusterState, slots: np.ndarray) -> None:
        self.cluster = cluster
        self.slots = slots
        self._keys: dict[str, tuple[dict[str, int], np.ndarray, np.ndarray]] = {}

    def with_label(self, key: str, values: Iterable[str]) -> np.ndarray:
        """Sorted positions whose node has label ``key`` with one of ``values``."""
        entry = self._keys.get(key)
        if entry is None:
            topology = self.cluster.topology_codes(key)
            codes = topology.codes[self.slots]
            order = np.argsort(codes, kind="stable")
            entry = self._keys[key] = (topology.index, order, codes[order])
        index, order, ordered = entry
        parts = []
        for value in values:
            code = index.get(value)
            if code is not None:
                low, high = np.searchsorted(ordered, [code, code + 1])
                parts.append(order[low:high])
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def matching(self, selector: NodeSelector | None) -> np.ndarray:
        """Sorted positions where ``pv_affinity_mask`` is true."""
        if selector is None:
            return np.arange(len(self.slots))
        found: list[np.ndarray] = []
        for term in selector.terms:
            if term.error is not None or (not term.expressions and not term.fields):
                continue
            if not all(r.matches({"metadata.name": ""}) for r in term.fields):
                continue
            if term.expressions and all(r.operator == "In" for r in term.expressions):
                positions = self.with_label(term.expressions[0].key, term.expressions[0].values)
                for requirement in term.expressions[1:]:
                    positions = np.intersect1d(
                        positions, self.with_label(requirement.key, requirement.values))
            else:
                single = NodeSelector((term,))
                positions = np.flatnonzero(pv_affinity_mask(self.cluster, self.slots, single))
            found.append(positions)
        if not found:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(found))


def topology_terms_mask(cluster: ClusterState, slots: np.ndarray,
                        terms: Sequence[Mapping[str, Any]] | None) -> np.ndarray:
    """``v1helper.MatchTopologySelectorTerms`` (a StorageClass's ``allowedTopologies``)."""
    if not terms:
        return np.ones(len(slots), dtype=bool)
    mask = np.zeros(len(slots), dtype=bool)
    for term in terms:
        requirements = _topology_requirements((term or {}).get("matchLabelExpressions") or [])
        if not requirements:
            continue
        term_mask = np.ones(len(slots), dtype=bool)
        for requirement in requirements:
            term_mask &= requirement_mask(cluster, slots, requirement)
        mask |= term_mask
    return mask


def _topology_requirements(expressions: Iterable[Mapping[str, Any]]) -> list[Requirement]:
    """The ``In`` requirements of a topology term; empty when one is invalid."""
    result = []
    for expression in expressions:
        key, values = expression.get("key") or "", list(expression.get("values") or [])
        if not valid_label_key(key) or not values or not all(
                isinstance(v, str) and valid_label_value(v) for v in values):
            return []
        result.append(Requirement(key, "In", frozenset(values)))
    return result


def objects_of(cluster: ClusterState, kind: str) -> Mapping[str, JSON]:
    """Stored objects of ``kind`` (without adding an empty entry to the store)."""
    return cluster.objects.get(kind) or {}


# --------------------------------------------------------------------------- assume cache

@dataclass
class Assumed:
    """An assumed object and the stored object it was derived from."""

    base: JSON
    obj: JSON


class AssumeCache:
    """The PV and PVC assume caches of ``binder.go``: assumed versions shadow the stored
    objects until Unreserve restores them or the stored object is replaced."""

    def __init__(self) -> None:
        self.volumes: dict[str, Assumed] = {}
        self.claims: dict[str, Assumed] = {}

    @staticmethod
    def _view(cache: dict[str, Assumed], key: str, base: JSON | None) -> JSON | None:
        assumed = cache.get(key)
        if assumed is None:
            return base
        if base is not None and assumed.base is base:
            return assumed.obj
        del cache[key]  # a newer object arrived (or it was deleted)
        return base

    def volume(self, cluster: ClusterState, name: str) -> tuple[JSON | None, JSON | None]:
        """``(effective PV, stored PV)``."""
        base = objects_of(cluster, PV_KIND).get(name)
        return self._view(self.volumes, name, base), base

    def claim(self, cluster: ClusterState, key: str) -> tuple[JSON | None, JSON | None]:
        base = objects_of(cluster, PVC_KIND).get(key)
        return self._view(self.claims, key, base), base

    def volumes_of_class(self, cluster: ClusterState, class_name: str) -> list[Volume]:
        """``PVAssumeCache.ListPVs``: every PV of the class, assumed versions included."""
        result = []
        for name in list(objects_of(cluster, PV_KIND)):
            obj, base = self.volume(cluster, name)
            if obj is not None and base is not None and volume_class(obj) == class_name:
                result.append(Volume.of(obj, base))
        return result


# --------------------------------------------------------------------------- parsed objects

@dataclass
class Claim:
    obj: JSON
    base: JSON
    namespace: str
    name: str
    uid: str
    class_name: str
    request: int
    modes: frozenset[str]
    volume_mode: str
    attributes_class: str
    volume_name: str

    @classmethod
    def of(cls, obj: JSON, base: JSON) -> Claim:
        metadata, claim_spec = meta(obj), spec(obj)
        return cls(obj, base, metadata.get("namespace") or "", metadata.get("name") or "",
                   metadata.get("uid") or "", claim_class(obj),
                   storage_nanos((claim_spec.get("resources") or {}).get("requests")),
                   frozenset(claim_spec.get("accessModes") or []),
                   claim_spec.get("volumeMode") or "Filesystem",
                   claim_spec.get("volumeAttributesClassName") or "",
                   claim_spec.get("volumeName") or "")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def selected_node(self) -> str | None:
        return annotations(self.obj).get(ANN_SELECTED_NODE)


@dataclass
class Volume:
    obj: JSON
    base: JSON
    name: str
    capacity: int
    selector: NodeSelector | None

    @classmethod
    def of(cls, obj: JSON, base: JSON) -> Volume:
        return cls(obj, base, meta(obj).get("name") or "",
                   storage_nanos(spec(obj).get("capacity")), pv_node_selector(obj))

    def bound_to(self, claim: Claim) -> bool:
        return volume_bound_to(self.obj, claim)


def volume_bound_to(pv: Mapping[str, Any], claim: Claim) -> bool:
    """``IsVolumeBoundToClaim``: the PV's ``claimRef`` names the claim (and its UID, if set)."""
    ref = spec(pv).get("claimRef")
    if not ref:
        return False
    if ref.get("name") != claim.name or ref.get("namespace") != claim.namespace:
        return False
    return not ref.get("uid") or ref.get("uid") == claim.uid


# --------------------------------------------------------------------------- cycle state

STATE_KEY = names.VOLUME_BINDING
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
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


# --------------------------------------------------------------------------- the plugin

class VolumeBinding(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin,
                    PreBindPlugin):
    name = names.VOLUME_BINDING
    args_spec = ArgsSpec(
        kind="VolumeBindingArgs", schema=args_schema.VOLUME_BINDING_ARGS,
        set_defaults=args_defaults.set_defaults_volume_binding,
        validate=args_validation.validate_volume_binding_args)
    # Upstream's PreScore returns Skip without the gate; kaudit leaves the points out.
    gated_points = MappingProxyType(
        {"StorageCapacityScoring": frozenset({"PreScore", "Score"})})

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [
            register(STORAGE_CLASS, ["Add", "Update"], _after_storage_class_change),
            register(PERSISTENT_VOLUME_CLAIM, ["Add", "Update"], _after_claim_change),
            register(PERSISTENT_VOLUME, ["Add", "Update"]),
            register(NODE, ["Add", "UpdateNodeLabel"]),
            register(CSI_NODE, ["Add", "Update"], _after_csi_node_change),
            register(CSI_DRIVER, ["Update"], _after_csi_driver_change),
            register(CSI_STORAGE_CAPACITY, ["Add", "Update"], _after_capacity_change),
        ]

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.bind_timeout_seconds = int(self.args.get("bindTimeoutSeconds", 600))
        self.assumed = AssumeCache()
        self.attributes_class_enabled = _gate(handle, "VolumeAttributesClass", True)
        shape = self.args.get("shape")
        self.shape: list[tuple[int, int]] | None = None
        if _gate(handle, "StorageCapacityScoring", False):
            points = shape or [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
            self.shape = [(int(p.get("utilization") or 0),
                           int(p.get("score") or 0) * (MAX_NODE_SCORE // 10)) for p in points]

    # ----------------------------------------------------------------- PreFilter

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        has_claims, problem = self._pod_has_claims(pod, cluster)
        if problem is not None:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, problem)
        if not has_claims:
            state.write(STATE_KEY, BindingState(all_bound=True))
            return None, Status.of(Code.SKIP)
        try:
            binding, immediate = self._pod_volume_claims(pod, cluster)
        except _BinderError as exc:
            return None, Status.of(Code.ERROR, str(exc))
        if immediate:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNBOUND_IMMEDIATE)
        binding.slot_of = cluster.slot_of
        binding.all_bound = not binding.delayed
        state.write(STATE_KEY, binding)
        eligible = _eligible_nodes(binding.bound)
        return (PreFilterResult(eligible) if eligible is not None else None), Status.success()

    def _pod_has_claims(self, pod: PodInfo, cluster: ClusterState) -> tuple[bool, str | None]:
        """``podHasPVCs``: whether the pod uses claims, and why it cannot use them."""
        volumes = claim_volumes(pod)
        for claim_name, ephemeral in volumes:
            pvc = objects_of(cluster, PVC_KIND).get(f"{pod.namespace}/{claim_name}")
            if pvc is None:
                if ephemeral:
                    return True, ("waiting for ephemeral volume controller to create the "
                                  f'persistentvolumeclaim "{claim_name}"')
                return True, not_found(PVC_RESOURCE, claim_name)
            name = meta(pvc).get("name") or ""
            if ((pvc.get("status") or {}).get("phase")) == "Lost":
                return True, (f'persistentvolumeclaim "{name}" bound to non-existent '
                              f'persistentvolume "{spec(pvc).get("volumeName") or ""}"')
            if meta(pvc).get("deletionTimestamp") is not None:
                return True, f'persistentvolumeclaim "{name}" is being deleted'
            if ephemeral and (error := ephemeral_owner_error(pod, pvc)) is not None:
                return True, error
        return bool(volumes), None

    def _pod_volume_claims(self, pod: PodInfo, cluster: ClusterState
                           ) -> tuple[BindingState, list[Claim]]:
        """``GetPodVolumeClaims``: bound, unbound delayed and unbound immediate claims."""
        binding, immediate = BindingState(), []
        for claim_name, _ in claim_volumes(pod):
            key = f"{pod.namespace}/{claim_name}"
            obj, base = self.assumed.claim(cluster, key)
            if obj is None or base is None:
                raise _BinderError(f'error getting PVC "{key}": {not_found(PVC_RESOURCE, key)}')
            claim = Claim.of(obj, base)
            if claim.volume_name and ANN_BIND_COMPLETED in annotations(obj):
                pv, pv_base = self.assumed.volume(cluster, claim.volume_name)
                binding.bound.append((claim, Volume.of(pv, pv_base) if pv and pv_base else None))
            elif _delay_binding(cluster, claim) and not claim.volume_name:
                binding.delayed.append(claim)
            else:
                immediate.append(claim)
        for claim in binding.delayed:
            if claim.class_name not in binding.volumes_by_class:
                binding.volumes_by_class[claim.class_name] = self.assumed.volumes_of_class(
                    cluster, claim.class_name)
        return binding, immediate

    # ----------------------------------------------------------------- Filter

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        binding = state.read(STATE_KEY)
        outcome = _Outcome(len(slots))
        if not isinstance(binding, BindingState):
            outcome.error(np.ones(len(slots), dtype=bool), "not found")
            return outcome.verdicts()
        _check_bound(cluster, slots, binding, outcome)
        record = None
        if binding.delayed:
            record = self._check_unbound(cluster, slots, binding, outcome)
        verdicts = outcome.verdicts()
        if record is not None:
            record.passed = verdicts.codes == 0
            binding.records.append(record)
            binding.has_static_bindings |= bool(
                ((record.choices >= 0).any(axis=0) & record.passed).any())
        return verdicts

    def _check_unbound(self, cluster: ClusterState, slots: np.ndarray, binding: BindingState,
                       outcome: _Outcome) -> FilterRecord:
        """The unbound WaitForFirstConsumer claims of ``FindPodVolumes``."""
        selected = binding.selected
        elsewhere = np.zeros(len(slots), dtype=bool)
        for claim in selected:
            elsewhere |= slots != binding.slot_of.get(claim.selected_node or "", -1)
        matching = sorted((c for c in binding.delayed if c.selected_node is None),
                          key=lambda c: c.request)
        record = self._match_volumes(cluster, slots, binding, matching, outcome, ~elsewhere)
        queue = [(claim, ~elsewhere) for claim in selected]
        queue += [(claim, ~elsewhere & (record.choices[i] < 0))
                  for i, claim in enumerate(matching)]
        outcome.bind_conflict |= elsewhere | self._provisioning_fails(cluster, slots, queue,
                                                                      outcome)
        return record

    def _match_volumes(self, cluster: ClusterState, slots: np.ndarray, binding: BindingState,
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
                candidates = self._candidates(claim, binding.volumes_by_class.get(
                    claim.class_name, []))
            except SelectorError as exc:
                outcome.error(reached, f"error creating internal label selector for claim: "
                              f"{claim.key}: {exc}")
                continue
            choices[i] = _choose(slot_index, [(index[v.name], v, pre) for v, pre in candidates],
                                 choices[:i], fitting)
        return FilterRecord(slots, matching, volumes, choices, np.zeros(len(slots), dtype=bool))

    def _candidates(self, claim: Claim, volumes: list[Volume]) -> list[tuple[Volume, bool]]:
        """The node-independent part of ``FindMatchingVolume``: ``(PV, pre-bound)`` in list
        order; free PVs sorted later by capacity."""
        if not self.attributes_class_enabled and claim.attributes_class:
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
            if (claim.attributes_class != volume_vac if self.attributes_class_enabled
                    else bool(volume_vac)):
                continue
            if meta(volume.obj).get("deletionTimestamp") is not None:
                continue
            if prebound or _free_volume_fits(volume, claim, selector):
                result.append((volume, prebound))
        return result

    def _provisioning_fails(self, cluster: ClusterState, slots: np.ndarray,
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

    # ----------------------------------------------------------------- Score

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        if self.shape is None:
            return Status.of(Code.SKIP)
        if not isinstance(state.read(STATE_KEY), BindingState):
            return Status.of(Code.ERROR, "not found")
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        binding = state.read(STATE_KEY)
        scores = np.zeros(len(slots), dtype=np.int64)
        if self.shape is None or not isinstance(binding, BindingState):
            return scores
        found = binding.pod_volumes_by_slot()
        for position, slot in enumerate(slots.tolist()):
            if slot in found:
                scores[position] = _capacity_score(self.shape, found[slot][0])
        return scores

    # ----------------------------------------------------------------- Reserve, PreBind

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
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
                self.assumed.volumes[volume.name] = Assumed(volume.base, assumed)
        for claim in provisions:
            clone = copy.deepcopy(claim.obj)
            clone.setdefault("metadata", {}).setdefault("annotations", {})[
                ANN_SELECTED_NODE] = node_name
            self.assumed.claims[claim.key] = Assumed(claim.base, clone)
        binding.all_bound = False
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        binding = state.read(STATE_KEY)
        if not isinstance(binding, BindingState):
            return
        found = binding.pod_volumes(node_name)
        if found is None:
            return
        for volume, _ in found[0]:
            self.assumed.volumes.pop(volume.name, None)
        for claim in found[1]:
            self.assumed.claims.pop(claim.key, None)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.success()


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
    storage_class = objects_of(cluster, SC_KIND).get(claim.class_name)
    if storage_class is None:
        return False
    mode = storage_class.get("volumeBindingMode")
    if mode is None:
        raise _BinderError(f'VolumeBindingMode not set for StorageClass "{claim.class_name}"')
    return bool(mode == WAIT_FOR_FIRST_CONSUMER)


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
        return f'no class for claim "{claim.key}"'
    storage_class = objects_of(cluster, SC_KIND).get(claim.class_name)
    if storage_class is None:
        return f'failed to find storage class "{claim.class_name}"'
    provisioner = storage_class.get("provisioner") or ""
    if provisioner in ("", NO_PROVISIONER):
        return np.zeros(len(slots), dtype=bool)
    return topology_terms_mask(cluster, slots, storage_class.get("allowedTopologies"))


def _bind_volume_to_claim(pv: JSON, claim: Claim) -> JSON | None:
    """``GetBindVolumeToClaim``: the PV with ``claimRef`` set, or None if unchanged."""
    ref = spec(pv).get("claimRef") or {}
    rebind = (ref.get("name") != claim.name or ref.get("namespace") != claim.namespace
              or (ref.get("uid") or "") != claim.uid)
    mark = not volume_bound_to(pv, claim) and ANN_BOUND_BY_CONTROLLER not in annotations(pv)
    if not rebind and not mark:
        return None
    clone = copy.deepcopy(pv)
    if rebind:
        clone.setdefault("spec", {})["claimRef"] = {
            "kind": "PersistentVolumeClaim", "namespace": claim.namespace, "name": claim.name,
            "uid": claim.uid, "apiVersion": "v1",
            "resourceVersion": meta(claim.obj).get("resourceVersion") or ""}
    if mark:
        clone.setdefault("metadata", {}).setdefault("annotations", {})[
            ANN_BOUND_BY_CONTROLLER] = "yes"
    return clone


def _shape_score(shape: list[tuple[int, int]], utilization: int) -> int:
    """``helper.BuildBrokenLinearFunction`` at one point (Go integer division)."""
    for i, (point, score) in enumerate(shape):
        if utilization <= point:
            if i == 0:
                return score
            previous_point, previous_score = shape[i - 1]
            numerator = (score - previous_score) * (utilization - previous_point)
            quotient = abs(numerator) // (point - previous_point)
            return previous_score + (quotient if numerator >= 0 else -quotient)
    return shape[-1][1]


def _capacity_score(shape: list[tuple[int, int]], bindings: list[tuple[Volume, Claim]]) -> int:
    """``buildScorerFunction`` over the static bindings grouped by the PV's class."""
    classes: dict[str, list[int]] = {}
    for volume, claim in bindings:
        totals = classes.setdefault(spec(volume.obj).get("storageClassName") or "", [0, 0])
        totals[0] += -(-claim.request // 10**9)
        totals[1] += -(-volume.capacity // 10**9)
    if not classes:
        return 0
    total = 0
    for requested, capacity in classes.values():
        utilization = 100 if capacity == 0 or requested > capacity else \
            requested * 100 // capacity
        total += _shape_score(shape, utilization)
    return go_round_scalar(total / len(classes))


# ------------------------------------------------------------------ queueing hints

_QUEUE, _SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"


def _after_csi_node_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterCSINodeChange``: a new CSINode, or a change of its migrated
    plugins."""
    if old is None:
        return _QUEUE
    before, after = typed("CSINode", old), typed("CSINode", new)
    assert before is not None and after is not None
    changed = ((metadata(before).get("annotations") or {}).get(_MIGRATED_PLUGINS, "")
               != (metadata(after).get("annotations") or {}).get(_MIGRATED_PLUGINS, ""))
    return _QUEUE if changed else _SKIP


def _after_claim_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimChange``: a claim the pod uses."""
    typed(PVC_KIND, old)
    claim = typed(PVC_KIND, new)
    assert claim is not None
    return _QUEUE if uses_claim(pod, claim, ephemeral=True) else _SKIP


def _after_storage_class_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterStorageClassChange``: a new class, or changed allowed topologies."""
    before, after = typed("StorageClass", old), typed("StorageClass", new)
    if before is None:
        return _QUEUE
    assert after is not None
    same = (before.get("allowedTopologies") or []) == (after.get("allowedTopologies") or [])
    return _SKIP if same else _QUEUE


def _volume_limit(capacity: dict[str, Any]) -> int | None:
    value = capacity.get("maximumVolumeSize")
    if value is None:
        value = capacity.get("capacity")
    return None if value is None else parse_quantity(str(value)).value()


def _after_capacity_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterCSIStorageCapacityChange``: new capacity, or a larger limit."""
    before, after = typed("CSIStorageCapacity", old), typed("CSIStorageCapacity", new)
    if before is None:
        return _QUEUE
    assert after is not None
    old_limit, new_limit = _volume_limit(before), _volume_limit(after)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return _QUEUE
    return _SKIP


def _after_csi_driver_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterCSIDriverChange``: a driver of the pod's inline CSI volumes
    stopped tracking storage capacity."""
    before, after = typed("CSIDriver", old), typed("CSIDriver", new)
    assert before is not None and after is not None
    for volume in pod.obj.get("spec", {}).get("volumes") or []:
        csi = volume.get("csi")
        if csi is None or csi.get("driver") != name_of(after):
            continue
        if (before.get("spec") or {}).get("storageCapacity") is True and \
                not (after.get("spec") or {}).get("storageCapacity"):
            return _QUEUE
    return _SKIP
