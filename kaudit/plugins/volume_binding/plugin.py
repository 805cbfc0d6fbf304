"""The VolumeBinding plugin: its args, events and queueing hints.

Mirrors ``volumebinding/volume_binding.go`` of Kubernetes v1.34; the extension points live in
:mod:`.binder` and :mod:`.scorer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework import signing
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
from kaudit.framework.status import Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import (
    metadata,
    name_of,
    typed,
    uses_claim,
)
from kaudit.plugins.storage_objects import ANN_MIGRATED_PLUGINS, CSINODE_KIND, PVC_KIND, SC_KIND
from kaudit.plugins.volume_binding import binder, scorer
from kaudit.plugins.volume_binding.assume_cache import AssumeCache
from kaudit.plugins.volume_binding.binder import BindingState, FilterRecord, _gate, _Outcome
from kaudit.plugins.volume_binding.common import Claim, Volume
from kaudit.quantity import parse_quantity

# --------------------------------------------------------------------------- the plugin

class VolumeBinding(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin,
                    PreBindPlugin):
    name = names.VOLUME_BINDING
    signs_pods = True
    args_spec = ArgsSpec(
        kind="VolumeBindingArgs", schema=args_schema.VOLUME_BINDING_ARGS,
        set_defaults=args_defaults.set_defaults_volume_binding,
        validate=args_validation.validate_volume_binding_args)
    # Upstream's PreScore returns Skip without the gate; kaudit leaves the points out.
    gated_points = MappingProxyType(
        {"StorageCapacityScoring": frozenset({"PreScore", "Score"})})

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.VOLUMES, signing.volumes(pod)),)

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

    # ------------------------------------------------------------------ binder

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        return binder.pre_filter(self, state, pod, cluster)

    def _pod_has_claims(self, pod: PodInfo, cluster: ClusterState) -> tuple[bool, str | None]:
        return binder._pod_has_claims(self, pod, cluster)

    def _pod_volume_claims(self, pod: PodInfo, cluster: ClusterState
                           ) -> tuple[BindingState, list[Claim]]:
        return binder._pod_volume_claims(self, pod, cluster)

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        return binder.filter(self, state, pod, cluster, slots)

    def _check_unbound(self, cluster: ClusterState, slots: np.ndarray, binding: BindingState,
                       outcome: _Outcome) -> FilterRecord:
        return binder._check_unbound(self, cluster, slots, binding, outcome)

    def _match_volumes(self, cluster: ClusterState, slots: np.ndarray, binding: BindingState,
                       matching: list[Claim], outcome: _Outcome, reached: np.ndarray
                       ) -> FilterRecord:
        return binder._match_volumes(self, cluster, slots, binding, matching, outcome, reached)

    def _candidates(self, claim: Claim, volumes: list[Volume]) -> list[tuple[Volume, bool]]:
        return binder._candidates(self, claim, volumes)

    def _provisioning_fails(self, cluster: ClusterState, slots: np.ndarray,
                            queue: list[tuple[Claim, np.ndarray]],
                            outcome: _Outcome) -> np.ndarray:
        return binder._provisioning_fails(self, cluster, slots, queue, outcome)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return binder.reserve(self, state, pod, node_name)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        binder.unreserve(self, state, pod, node_name)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return binder.pre_bind(self, state, pod, node_name)

    # ------------------------------------------------------------------ scorer

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        return scorer.pre_score(self, state, pod, cluster, slots)

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        return scorer.score(self, state, pod, cluster, slots)


# ------------------------------------------------------------------ queueing hints

_QUEUE, _SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def _after_csi_node_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterCSINodeChange``: a new CSINode, or a change of its migrated
    plugins."""
    if old is None:
        return _QUEUE
    before, after = typed(CSINODE_KIND, old), typed(CSINODE_KIND, new)
    assert before is not None and after is not None
    changed = ((metadata(before).get("annotations") or {}).get(ANN_MIGRATED_PLUGINS, "")
               != (metadata(after).get("annotations") or {}).get(ANN_MIGRATED_PLUGINS, ""))
    return _QUEUE if changed else _SKIP


def _after_claim_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimChange``: a claim the pod uses."""
    typed(PVC_KIND, old)
    claim = typed(PVC_KIND, new)
    assert claim is not None
    return _QUEUE if uses_claim(pod, claim, ephemeral=True) else _SKIP


def _after_storage_class_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterStorageClassChange``: a new class, or changed allowed topologies."""
    before, after = typed(SC_KIND, old), typed(SC_KIND, new)
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

