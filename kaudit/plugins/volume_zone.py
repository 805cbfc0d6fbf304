"""VolumeZone: the zone and region labels of a pod's bound PersistentVolumes must match the
node's.

Mirrors ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go`` and
``k8s.io/cloud-provider/volume/helpers.LabelZonesToSet`` (Kubernetes v1.34):

* **PreFilter** collects, for each PVC volume, the bound PV's
  ``failure-domain.beta.kubernetes.io/{zone,region}`` and
  ``topology.kubernetes.io/{zone,region}`` labels (a value may list several zones joined by
  ``__``). An unbound claim of a WaitForFirstConsumer class is skipped (VolumeBinding decides
  its topology); an unbound claim of another class, a class without ``volumeBindingMode``, a
  claim without a class, or a missing claim/class/PV gives UU with upstream's text. With no
  labelled PV the plugin is skipped.
* **Filter** passes nodes carrying none of the four labels (single-zone clusters) and
  otherwise needs each PV label's key, or its GA form for a beta key, to be on the node with
  one of the PV's values; else UU ``node(s) had no available volume zone``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import (
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    ClusterEventWithHint,
    QueueingHint,
    register,
)
from kaudit.framework.plugin import FilterPlugin, NodeVerdicts, PreFilterPlugin, PreFilterResult
from kaudit.framework.status import Code, Status
from kaudit.k8s import well_known
from kaudit.model.pod import PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import (
    metadata,
    typed,
    uses_claim,
)
from kaudit.plugins.storage_objects import (
    PV_KIND,
    PV_RESOURCE,
    PVC_KIND,
    PVC_RESOURCE,
    SC_KIND,
    SC_RESOURCE,
    WAIT_FOR_FIRST_CONSUMER,
    binding_mode,
    claim_class,
    meta,
    not_found,
    pv_of,
    pvc_of,
    spec,
    storage_class_of,
)

REASON_CONFLICT = "node(s) had no available volume zone"
STATE_KEY = "PreFilter" + names.VOLUME_ZONE

BETA_ZONE = well_known.LABEL_FAILURE_DOMAIN_BETA_ZONE
BETA_REGION = well_known.LABEL_FAILURE_DOMAIN_BETA_REGION
ZONE = well_known.LABEL_TOPOLOGY_ZONE
REGION = well_known.LABEL_TOPOLOGY_REGION
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA_LABEL = {BETA_ZONE: ZONE, BETA_REGION: REGION}


@dataclass(frozen=True)
class VolumeTopology:
    """One topology label of a bound PV (``pvTopology``)."""

    volume: str
    key: str
    values: frozenset[str]


@dataclass(frozen=True)
class ZoneState:
    topologies: tuple[VolumeTopology, ...]

    def clone(self) -> ZoneState:
        return self


class _Unresolvable(Exception):
    """A claim the plugin cannot resolve; the message is the UU reason."""


def label_zones(value: str) -> frozenset[str] | None:
    """``LabelZonesToSet``: zones joined by ``__``; None if one is empty."""
    zones = [zone.strip() for zone in value.split("__")]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)


class VolumeZone(PreFilterPlugin, FilterPlugin):
    name = names.VOLUME_ZONE
    signs_pods = True
    reads_only_its_node = True
    added_pods_only_hinder = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.VOLUMES, signing.volumes(pod)),)

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the node and the sums only

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(STORAGE_CLASS, "Add", _after_storage_class_added),
                register(NODE, ["Add", "UpdateNodeLabel"]),
                register(PERSISTENT_VOLUME_CLAIM, ["Add", "Update"], _after_claim_change),
                register(PERSISTENT_VOLUME, ["Add", "Update"], _after_volume_change)]

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        try:
            topologies = _pod_topologies(pod, cluster)
        except _Unresolvable as exc:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
        if not topologies:
            return None, Status.of(Code.SKIP)
        state.write(STATE_KEY, ZoneState(topologies))
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        if not pod.volumes:
            return NodeVerdicts.passing(len(slots))
        zone_state = state.read(STATE_KEY)
        if isinstance(zone_state, ZoneState):
            topologies = zone_state.topologies
        else:
            try:
                topologies = _pod_topologies(pod, cluster)
            except _Unresolvable as exc:
                return NodeVerdicts.from_mask(np.ones(len(slots), dtype=bool),
                                              Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
        failed = np.zeros(len(slots), dtype=bool)
        for topology in topologies:
            failed |= ~_label_matches(cluster, slots, topology)
        failed &= _has_zone_labels(cluster, slots)
        return NodeVerdicts.from_mask(failed, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                      REASON_CONFLICT)


def _pod_topologies(pod: PodInfo, cluster: ClusterState) -> tuple[VolumeTopology, ...]:
    """``getPVbyPod``: the topology labels of the PVs bound to the pod's claims."""
    result: list[VolumeTopology] = []
    for volume in pod.volumes:
        source = volume.get("persistentVolumeClaim")
        if not isinstance(source, dict):
            continue
        pv = _bound_volume(pod, cluster, source.get("claimName") or "")
        if pv is None:
            continue
        labels = meta(pv).get("labels") or {}
        for key in TOPOLOGY_LABELS:
            if key in labels and (zones := label_zones(labels[key])) is not None:
                result.append(VolumeTopology(meta(pv).get("name") or "", key, zones))
    return tuple(result)


def _bound_volume(pod: PodInfo, cluster: ClusterState, claim_name: str
                  ) -> dict[str, Any] | None:
    """The PV bound to a claim; None for an unbound WaitForFirstConsumer claim."""
    if not claim_name:
        raise _Unresolvable("PersistentVolumeClaim had no name")
    pvc = pvc_of(cluster, pod.namespace, claim_name)
    if pvc is None:
        raise _Unresolvable(not_found(PVC_RESOURCE, claim_name))
    volume_name = spec(pvc).get("volumeName") or ""
    if not volume_name:
        class_name = claim_class(pvc)
        if not class_name:
            raise _Unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
        storage_class = storage_class_of(cluster, class_name)
        if storage_class is None:
            raise _Unresolvable(not_found(SC_RESOURCE, class_name))
        try:
            mode = binding_mode(storage_class, class_name)
        except ValueError as exc:
            raise _Unresolvable(str(exc)) from None
        if mode == WAIT_FOR_FIRST_CONSUMER:
            return None
        raise _Unresolvable("PersistentVolume had no name")
    pv = pv_of(cluster, volume_name)
    if pv is None:
        raise _Unresolvable(not_found(PV_RESOURCE, volume_name))
    return pv


def _has_zone_labels(cluster: ClusterState, slots: np.ndarray) -> np.ndarray:
    """Nodes with at least one of the four topology labels."""
    mask = np.zeros(len(slots), dtype=bool)
    for key in TOPOLOGY_LABELS:
        mask |= cluster.topology_codes(key).codes[slots] >= 0
    return mask


def _value_in(cluster: ClusterState, slots: np.ndarray, key: str, values: frozenset[str]
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(node has the label, its value is one of values)`` per slot."""
    topology = cluster.topology_codes(key)
    codes = topology.codes[slots]
    wanted = [topology.index[v] for v in values if v in topology.index]
    inside = np.isin(codes, wanted) if wanted else np.zeros(len(slots), dtype=bool)
    return codes >= 0, inside


def _label_matches(cluster: ClusterState, slots: np.ndarray, topology: VolumeTopology
                   ) -> np.ndarray:
    """The node's value for the PV's label key (or its GA form for a beta key) is one of the
    PV's values."""
    present, inside = _value_in(cluster, slots, topology.key, topology.values)
    ga_key = _GA_LABEL.get(topology.key)
    if ga_key is None:
        return inside
    ga_present, ga_inside = _value_in(cluster, slots, ga_key, topology.values)
    return np.where(present, inside, ga_present & ga_inside)


# ------------------------------------------------------------------ queueing hints


def _after_claim_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimChange``: a claim the pod names."""
    typed(PVC_KIND, old)
    claim = typed(PVC_KIND, new)
    if claim is not None and uses_claim(pod, claim, ephemeral=False):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_storage_class_added(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterStorageClassAdded``: a WaitForFirstConsumer class."""
    storage_class = typed(SC_KIND, new)
    assert storage_class is not None
    waits = storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
    return QueueingHint.QUEUE if waits else QueueingHint.QUEUE_SKIP


def _topologies(volume: dict[str, Any]) -> list[tuple[str, frozenset[str]]]:
    """``getPVTopologies``: the volume's zone and region labels (ill-formed ones skipped)."""
    labels = metadata(volume).get("labels") or {}
    found = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = [zone.strip() for zone in str(labels[key]).split("__")]
            if all(zones):
                found.append((key, frozenset(zones)))
    return found


def _after_volume_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeChange``: a new volume, or changed topology."""
    after = typed(PV_KIND, new)
    before = typed(PV_KIND, old)
    if before is None:
        return QueueingHint.QUEUE
    assert after is not None
    same = _topologies(before) == _topologies(after)
    return QueueingHint.QUEUE_SKIP if same else QueueingHint.QUEUE
