"""VolumeRestrictions: in-line disks that cannot be shared, and ReadWriteOncePod claims.

Mirrors ``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go``
(Kubernetes v1.34):

* **Disk conflicts** (U ``node(s) had no available disk``) with a pod already on the node:
  the same GCE PD (``pdName``) unless both mount it read-only; the same AWS EBS
  ``volumeID``; the same iSCSI IQN unless both are read-only; an RBD image with a common
  Ceph monitor, the same pool and image, unless both are read-only.
* **ReadWriteOncePod** (U ``node has pod using PersistentVolumeClaim with the same name and
  ReadWriteOncePod access mode``): PreFilter counts the pod's RWOP claims already used by a
  scheduled pod anywhere in the cluster; any use rejects every node (preemption can clear it
  through AddPod/RemovePod). PreFilter looks up every PVC the pod names: a missing one is UU
  ``persistentvolumeclaim "<name>" not found``.
* PreFilter is skipped when the pod has no in-line disk to check and no RWOP claim in use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import (
    NODE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    ClusterEventWithHint,
    QueueingHint,
    register,
)
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import (
    claim_names,
    namespace_of,
    typed,
    uses_claim,
    volumes,
)
from kaudit.plugins.storage_objects import (
    PVC_KIND,
    PVC_RESOURCE,
    not_found,
    pvc_of,
    spec,
)

REASON_DISK_CONFLICT = "node(s) had no available disk"
REASON_RWOP_CONFLICT = ("node has pod using PersistentVolumeClaim with the same name and "
                        "ReadWriteOncePod access mode")
STATE_KEY = "PreFilter" + names.VOLUME_RESTRICTIONS
_DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


@dataclass
class RestrictionsState:
    """``preFilterState``: the pod's RWOP claim names and how often scheduled pods use them."""

    read_write_once_pod: frozenset[str]
    conflicting_refs: int

    def clone(self) -> RestrictionsState:
        return RestrictionsState(self.read_write_once_pod, self.conflicting_refs)

    def update(self, pod: PodInfo, sign: int) -> None:
        self.conflicting_refs += sign * sum(
            1 for claim in pod.claim_names if claim in self.read_write_once_pod)


def needs_check(volume: Mapping[str, Any]) -> bool:
    """``needsRestrictionsCheck``: an in-line GCE PD, AWS EBS, RBD or iSCSI volume."""
    return any(volume.get(source) is not None for source in _DISK_SOURCES)


def _both_read_only(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return bool(a.get("readOnly")) and bool(b.get("readOnly"))


def volumes_conflict(volume: Mapping[str, Any], existing: Mapping[str, Any]) -> bool:
    """``isVolumeConflict`` for one pair of volumes."""
    disk, other = volume.get("gcePersistentDisk"), existing.get("gcePersistentDisk")
    if disk is not None and other is not None and disk.get("pdName") == other.get("pdName") \
            and not _both_read_only(disk, other):
        return True
    ebs, other = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
    if ebs is not None and other is not None and ebs.get("volumeID") == other.get("volumeID"):
        return True
    iscsi, other = volume.get("iscsi"), existing.get("iscsi")
    if iscsi is not None and other is not None and iscsi.get("iqn") == other.get("iqn") \
            and not _both_read_only(iscsi, other):
        return True
    rbd, other = volume.get("rbd"), existing.get("rbd")
    return (rbd is not None and other is not None
            and bool(set(rbd.get("monitors") or []) & set(other.get("monitors") or []))
            and (rbd.get("pool") or "rbd") == (other.get("pool") or "rbd")
            and rbd.get("image") == other.get("image") and not _both_read_only(rbd, other))


def pod_conflicts(volumes: Sequence[Mapping[str, Any]], existing: PodInfo) -> bool:
    return any(volumes_conflict(v, e) for v in volumes for e in existing.volumes)


class VolumeRestrictions(PreFilterPlugin, PreFilterExtensions, FilterPlugin):
    name = names.VOLUME_RESTRICTIONS
    signs_pods = True
    reads_only_its_node = True
    added_pods_only_hinder = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.VOLUMES, signing.volumes(pod)),)

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return bool(pod.volumes)  # the node's pods' volumes, for a pod with volumes

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(POD, "Delete", _after_pod_deleted),
                register(NODE, "Add"),
                register(PERSISTENT_VOLUME_CLAIM, "Add", _after_claim_added)]

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        claims, missing = _read_write_once_pod_claims(pod, cluster)
        if missing is not None:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                   not_found(PVC_RESOURCE, missing))
        used = _claims_in_use(cluster) if claims else set()
        restrictions = RestrictionsState(
            claims, sum(1 for c in claims if f"{pod.namespace}/{c}" in used))
        if not any(needs_check(v) for v in pod.volumes) and restrictions.conflicting_refs == 0:
            return None, Status.of(Code.SKIP)
        state.write(STATE_KEY, restrictions)
        return None, Status.success()

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, slot: int,
                cluster: ClusterState) -> Status:
        return self._update(state, pod_to_add, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, slot: int,
                   cluster: ClusterState) -> Status:
        return self._update(state, pod_to_remove, -1)

    @staticmethod
    def _update(state: CycleState, other: PodInfo, sign: int) -> Status:
        restrictions = state.read(STATE_KEY)
        if not isinstance(restrictions, RestrictionsState):
            return Status.of(Code.ERROR, f'cannot read "{STATE_KEY}" from cycleState')
        restrictions.update(other, sign)
        return Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        disk_conflict = _disk_conflicts(pod, cluster, slots)
        restrictions = state.read(STATE_KEY)
        in_use = isinstance(restrictions, RestrictionsState) and restrictions.conflicting_refs > 0
        codes = np.where(disk_conflict | in_use, np.int8(Code.UNSCHEDULABLE), np.int8(0))
        reason_ids = np.where(disk_conflict, 1, np.where(in_use, 2, 0)).astype(np.int32)
        return NodeVerdicts(codes.astype(np.int8), reason_ids,
                            [(), (REASON_DISK_CONFLICT,), (REASON_RWOP_CONFLICT,)])


def _read_write_once_pod_claims(pod: PodInfo, cluster: ClusterState
                                ) -> tuple[frozenset[str], str | None]:
    """``readWriteOncePodPVCsForPod``: the pod's RWOP claim names, or the first missing one."""
    claims = set()
    for claim_name in pod.claim_names:
        pvc = pvc_of(cluster, pod.namespace, claim_name)
        if pvc is None:
            return frozenset(), claim_name
        if "ReadWriteOncePod" in (spec(pvc).get("accessModes") or []):
            claims.add(claim_name)
    return frozenset(claims), None


def _claims_in_use(cluster: ClusterState) -> set[str]:
    """``StorageInfos().IsPVCUsedByPods``: ``namespace/claim`` of every scheduled pod's PVCs."""
    return {f"{pod.namespace}/{claim}" for pod in cluster.pods.values()
            for claim in pod.claim_names}


def _disk_conflicts(pod: PodInfo, cluster: ClusterState, slots: np.ndarray) -> np.ndarray:
    """``satisfyVolumeConflicts`` negated, per slot: only each node's own pods that mount
    in-line disks are looked at."""
    volumes = [v for v in pod.volumes if needs_check(v)]
    if not volumes:
        return np.zeros(len(slots), dtype=bool)
    return np.fromiter(
        (any(any(needs_check(v) for v in other.volumes) and pod_conflicts(volumes, other)
             for other in cluster.pods_on[slot].values()) for slot in slots.tolist()),
        dtype=bool, count=len(slots))



# ------------------------------------------------------------------ queueing hints


def _after_claim_added(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimAdded``: a claim the pod names."""
    claim = typed(PVC_KIND, new)
    assert claim is not None
    return QueueingHint.QUEUE if uses_claim(pod, claim, ephemeral=False) \
        else QueueingHint.QUEUE_SKIP


def _conflicts(volume: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """The disk conflicts a deleted pod's volume can resolve (``isVolumeConflict``)."""
    checks: tuple[tuple[str, Callable[[Any, Any], bool]], ...] = (
        ("gcePersistentDisk", lambda a, b: a.get("pdName") == b.get("pdName")),
        ("awsElasticBlockStore", lambda a, b: a.get("volumeID") == b.get("volumeID")),
        ("iscsi", lambda a, b: a.get("iqn") == b.get("iqn")),
        ("rbd", lambda a, b: bool(set(a.get("monitors") or []) & set(b.get("monitors") or []))
         and a.get("pool") == b.get("pool") and a.get("image") == b.get("image")))
    for key, same in checks:
        mine, theirs = volume.get(key), other.get(key)
        if mine is None or theirs is None or not same(mine, theirs):
            continue
        if key == "awsElasticBlockStore":
            return True
        if not (mine.get("readOnly") and theirs.get("readOnly")):
            return True
    return False


def _after_pod_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: the deleted pod held a disk or a claim this pod
    needs."""
    deleted = typed("Pod", old)
    assert deleted is not None
    if namespace_of(deleted) != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    theirs = volumes(deleted)
    for volume in volumes(pod.obj):
        if any(_conflicts(volume, other) for other in theirs):
            return QueueingHint.QUEUE
    mine = set(claim_names(pod.obj, ephemeral=False))
    if any(name in mine for name in claim_names(deleted, ephemeral=False)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
