"""VolumeBinding's storage helpers: the pod's claim volumes, PV node affinity and
StorageClass topology over slots, and parsed claims and volumes. Reading the storage objects
themselves is :mod:`kaudit.plugins.storage_objects`, which the other volume plugins share.

Mirrors the helpers in ``component-helpers/storage/volume/pv_helpers.go``
(``CheckNodeAffinity``, ``IsVolumeBoundToClaim``) and
``pkg/scheduler/util.GetLocalPersistentVolumeNodeNames`` (Kubernetes v1.34).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.matching import requirement_mask
from kaudit.cluster.state import ClusterState
from kaudit.errors import QuantityError
from kaudit.model.pod import PodInfo
from kaudit.model.selectors import (
    NodeSelector,
    Requirement,
    SelectorError,
    valid_label_key,
    valid_label_value,
)
from kaudit.plugins.storage_objects import (
    JSON,
    annotations_of,
    claim_class,
    ephemeral_claim_name,
    meta,
    spec,
)
from kaudit.quantity import parse_quantity

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


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
        return annotations_of(self.obj).get(ANN_SELECTED_NODE)


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
