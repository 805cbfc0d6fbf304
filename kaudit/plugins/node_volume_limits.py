"""NodeVolumeLimits: CSI volumes attached to a node must stay within the driver's limit.

Mirrors ``pkg/scheduler/framework/plugins/nodevolumelimits/{csi.go,utils.go}`` and the parts
of ``k8s.io/csi-translation-lib`` it relies on (Kubernetes v1.34):

* **PreFilter** is skipped unless the pod has a PVC, a generic ephemeral volume or an
  in-line volume of a migratable in-tree plugin.
* **Filter** counts unique volumes (``<driver>/<volumeHandle>``) per CSI driver: those of the
  pods on the node, plus VolumeAttachments to the node not used by those pods, plus the new
  pod's volumes not already attached; more than the CSINode's
  ``spec.drivers[].allocatable.count`` gives U ``node(s) exceed max volume count``. Nodes
  without a CSINode, or whose drivers report no count, are not limited.
* A claim resolves to its PV's ``spec.csi`` driver and handle; an unbound claim (or one whose
  PV is missing) counts for its StorageClass's provisioner under a per-plugin handle. A new
  pod's missing claim gives UU ``looking up PVC <ns>/<name>: persistentvolumeclaim "<name>"
  not found``; an existing pod's is ignored.
* In-tree AWS EBS, GCE PD, Azure Disk and Cinder volumes (PVs, in-line volumes, in-tree
  provisioners) count for their CSI driver when the node has a CSINode (migration is GA);
  Portworx also needs the CSINode's migrated-plugins annotation. Volume handles are
  translated as csi-translation-lib does for these plugins (AWS ``aws://`` IDs, GCE zonal
  and regional disk paths); Azure File and vSphere are never counted, as upstream.
* **VolumeLimitScaling** (beta; on by default in v1.37, ``csi.go`` of v1.36.3 and v1.37.2):
  before the count, each CSI driver of the new pod's volumes whose CSIDriver opts in
  (``spec.preventPodSchedulingIfMissing: true``) must be on the node's CSINode, else
  U ``<driver> CSI driver is not installed on the node``; a node without a CSINode has none.
  (v1.35's alpha checked every CSIDriver; kaudit models the opt-in of v1.36 on.)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import (
    CSI_NODE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    VOLUME_ATTACHMENT,
    ClusterEventWithHint,
    QueueingHint,
    register,
)
from kaudit.framework.plugin import FilterPlugin, NodeVerdicts, PreFilterPlugin, PreFilterResult
from kaudit.framework.status import Code, Status
from kaudit.k8s.well_known import LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_ZONE
from kaudit.model.pod import PodInfo
from kaudit.plugins import names
from kaudit.plugins.hint_objects import (
    typed,
    uses_claim,
    volumes,
)
from kaudit.plugins.storage_objects import (
    ANN_MIGRATED_PLUGINS,
    CSIDRIVER_KIND,
    CSINODE_KIND,
    PVC_KIND,
    PVC_RESOURCE,
    annotations_of,
    claim_class,
    ephemeral_claim_name,
    ephemeral_owner_error,
    meta,
    not_found,
    objects_of,
    pv_of,
    pvc_of,
    spec,
    storage_class_of,
)

REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
VOLUME_ATTACHMENT_KIND = "VolumeAttachment"
UNBOUND_HANDLE_PREFIX = "kaudit-unbound-claim"

AWS_EBS, GCE_PD = "kubernetes.io/aws-ebs", "kubernetes.io/gce-pd"
AZURE_DISK, AZURE_FILE = "kubernetes.io/azure-disk", "kubernetes.io/azure-file"
VSPHERE, CINDER = "kubernetes.io/vsphere-volume", "kubernetes.io/cinder"
PORTWORX = "kubernetes.io/portworx-volume"
#: In-tree plugin → (volume source field, CSI driver), as csi-translation-lib knows them.
IN_TREE: Mapping[str, tuple[str, str]] = {
    AWS_EBS: ("awsElasticBlockStore", "ebs.csi.aws.com"),
    GCE_PD: ("gcePersistentDisk", "pd.csi.storage.gke.io"),
    AZURE_DISK: ("azureDisk", "disk.csi.azure.com"),
    AZURE_FILE: ("azureFile", "file.csi.azure.com"),
    VSPHERE: ("vsphereVolume", "csi.vsphere.vmware.com"),
    CINDER: ("cinder", "cinder.csi.openstack.org"),
    PORTWORX: ("portworxVolume", "pxd.portworx.com"),
}
_ALWAYS_MIGRATED = frozenset({AWS_EBS, GCE_PD, AZURE_DISK, CINDER})

Volumes = dict[str, str]  # unique volume name -> driver


class _Failure(Exception):
    """Counting a pod's volumes failed; ``code`` is UU for a missing claim, else Error."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code


def in_tree_plugin(source: Mapping[str, Any]) -> str | None:
    """``GetInTreePluginNameFromSpec`` for a volume or PV spec."""
    return next((plugin for plugin, (key, _) in IN_TREE.items()
                 if source.get(key) is not None), None)


def migration_on(csi_node: Mapping[str, Any] | None, plugin: str, portworx: bool) -> bool:
    """``isCSIMigrationOn``."""
    if csi_node is None or not plugin:
        return False
    if plugin in _ALWAYS_MIGRATED:
        return True
    if plugin != PORTWORX or not portworx:
        return False
    listed = annotations_of(csi_node).get(ANN_MIGRATED_PLUGINS) or ""
    return plugin in listed.split(",")


def volume_limits(csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    """``getVolumeLimits``: ``allocatable.count`` of each driver on the CSINode."""
    limits = {}
    for driver in spec(csi_node).get("drivers") or []:
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[driver.get("name") or ""] = int(count)
    return limits


def _ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    path = kubernetes_id[len("aws://"):].partition("/")[2].strip("/")
    if not path.startswith("vol-") or "/" in path:
        raise ValueError("failed to translate Kubernetes ID to EBS Volume ID Invalid format "
                         f"for AWS volume ({kubernetes_id})")
    return path


def _gce_handle(source: Mapping[str, Any], labels: Mapping[str, str] | None) -> str:
    """The GCE PD handle: zonal, regional, or with an unspecified zone (in-line volumes)."""
    disk = source.get("pdName") or ""
    beta = (labels or {}).get(LABEL_FAILURE_DOMAIN_BETA_ZONE) or ""
    ga = (labels or {}).get(LABEL_TOPOLOGY_ZONE) or ""
    if beta and ga and beta != ga:
        raise ValueError(f"labels {beta} and {ga} have different values")
    zones = (beta or ga).split("__")
    if len(zones) == 1 and zones[0]:
        return f"projects/UNSPECIFIED/zones/{zones[0]}/disks/{disk}"
    if len(zones) > 1:
        regions = {zone.rpartition("-")[0] for zone in zones}
        if len(regions) != 1 or "" in regions:
            raise ValueError(f"zones {zones} are not in one region")
        return f"projects/UNSPECIFIED/regions/{regions.pop()}/disks/{disk}"
    return f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{disk}"


def translated_handle(plugin: str, source: Mapping[str, Any],
                      labels: Mapping[str, str] | None) -> str:
    """The CSI volume handle csi-translation-lib gives an in-tree volume source."""
    if plugin == AWS_EBS:
        return _ebs_volume_id(source.get("volumeID") or "")
    if plugin == GCE_PD:
        return _gce_handle(source, labels)
    if plugin == AZURE_DISK:
        return source.get("diskURI") or ""
    return source.get("volumeID") or ""


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    name = names.NODE_VOLUME_LIMITS
    signs_pods = True
    reads_only_its_node = True
    # Not added_pods_only_hinder: a VolumeAttachment of the very volume the pod wants counts
    # on top of the pod's own use of it unless a pod on the node already mounts it, so a pod
    # added with that volume can turn "exceed max volume count" into a pass (upstream's
    # counting; tests/cluster/test_nominated.py shows it).

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35)."""
        return ((signing.VOLUMES, signing.volumes(pod)),)

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return bool(pod.volumes)  # the node's pods' volumes, for a pod with volumes

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister``."""
        return [register(CSI_NODE, "Add"),
                register(CSI_NODE, "Update", _after_csi_node_updated),
                register(POD, "Delete", _after_pod_deleted),
                register(PERSISTENT_VOLUME_CLAIM, "Add", _after_claim_added),
                register(VOLUME_ATTACHMENT, "Delete", _after_attachment_deleted)]

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        gates = getattr(handle, "feature_gates", None)
        self.portworx = True if gates is None else bool(gates.enabled("CSIMigrationPortworx"))
        #: VolumeLimitScaling with v1.36's opt-in (``checkCSIDriverOnNode``).
        self.driver_check = gates is not None and "VolumeLimitScaling" in gates and bool(
            gates.enabled("VolumeLimitScaling")) and versions.carries(
            gates.version, "volume-limit-scaling-opt-in")
        #: pod uid -> (pod object, has countable volumes)
        self._countable: dict[str, tuple[dict[str, Any], bool]] = {}

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        for volume in pod.volumes:
            if (isinstance(volume.get("persistentVolumeClaim"), dict)
                    or volume.get("ephemeral") is not None or in_tree_plugin(volume)):
                return None, Status.success()
        return None, Status.of(Code.SKIP)

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        if not pod.volumes:
            return NodeVerdicts.passing(len(slots))
        csi_nodes = {cluster.slot_of[name]: obj for name, obj in
                     objects_of(cluster, CSINODE_KIND).items() if name in cluster.slot_of}
        plain = self._new_volumes(pod, cluster, None)
        opted = opted_in_drivers(cluster) if self.driver_check else frozenset()
        default = plain if isinstance(plain, Status) else missing_driver(plain, opted, None)
        verdicts = _Verdicts(len(slots), default)
        limited = np.isin(slots, np.fromiter(csi_nodes, dtype=np.int64, count=len(csi_nodes)))
        if not limited.any():
            return verdicts.result()
        attachments = _attachments_by_node(cluster)
        attached = {cluster.slot_of[name] for name in attachments if name in cluster.slot_of}
        variants: dict[bool, Volumes | Status] = {}
        for position in np.flatnonzero(limited).tolist():
            slot = int(slots[position])
            csi_node = csi_nodes[slot]
            portworx = migration_on(csi_node, PORTWORX, self.portworx)
            if portworx not in variants:
                variants[portworx] = self._new_volumes(pod, cluster, csi_node)
            new = variants[portworx]
            if isinstance(new, Status):
                verdicts.set(position, new)
            elif opted and (missing := missing_driver(new, opted, csi_node)) is not None:
                verdicts.set(position, missing)
            elif slot in attached or self._busy(cluster, slot):
                verdicts.set(position, self._node_status(cluster, slot, csi_node, dict(new),
                                                         attachments))
            else:
                verdicts.set(position, _within_limits(new, Counter(), volume_limits(csi_node)))
        return verdicts.result()

    def _busy(self, cluster: ClusterState, slot: int) -> bool:
        """Whether the node has pods with volumes this plugin may count."""
        return any(self._may_count(other) for other in cluster.pods_on[slot].values())

    def _may_count(self, pod: PodInfo) -> bool:
        """Whether the pod has a PVC, ephemeral or in-tree volume (memoised per pod object)."""
        cached = self._countable.get(pod.uid)
        if cached is not None and cached[0] is pod.obj:
            return cached[1]
        countable = any(isinstance(v.get("persistentVolumeClaim"), dict)
                        or v.get("ephemeral") is not None or in_tree_plugin(v) is not None
                        for v in pod.volumes)
        self._countable[pod.uid] = (pod.obj, countable)
        return countable

    def _new_volumes(self, pod: PodInfo, cluster: ClusterState,
                     csi_node: Mapping[str, Any] | None) -> Volumes | Status:
        try:
            return self._attachable(pod, cluster, csi_node, new_pod=True)
        except _Failure as failure:
            return Status.of(failure.code, str(failure))

    def _node_status(self, cluster: ClusterState, slot: int, csi_node: Mapping[str, Any],
                     new: Volumes, attachments: dict[str, Volumes]) -> Status:
        """The limit check of one node with a CSINode, given the new pod's volumes."""
        limits = volume_limits(csi_node)
        if not new or not limits:
            return Status.success()
        attached: Volumes = {}
        try:
            for other in cluster.pods_on[slot].values():
                attached.update(self._attachable(other, cluster, csi_node, new_pod=False))
        except _Failure as failure:
            return Status.of(Code.ERROR, str(failure))
        counts: Counter[str] = Counter(attached.values())
        for unique in attached:
            new.pop(unique, None)
        node_name = cluster.node(slot).name
        for unique, driver in attachments.get(node_name, {}).items():
            if unique not in attached:
                counts[driver] += 1
        return _within_limits(new, counts, limits)

    # ----------------------------------------------------------------- volume resolution

    def _attachable(self, pod: PodInfo, cluster: ClusterState,
                    csi_node: Mapping[str, Any] | None, new_pod: bool) -> Volumes:
        """``filterAttachableVolumes``: the pod's countable volumes."""
        result: Volumes = {}
        for volume in pod.volumes:
            source = volume.get("persistentVolumeClaim")
            if isinstance(source, dict):
                claim_name, ephemeral = source.get("claimName") or "", False
            elif volume.get("ephemeral") is not None:
                claim_name, ephemeral = ephemeral_claim_name(pod, volume), True
            else:
                self._inline(volume, csi_node, result)
                continue
            if not claim_name:
                raise _Failure(Code.ERROR, "PersistentVolumeClaim had no name")
            pvc = pvc_of(cluster, pod.namespace, claim_name)
            if pvc is None:
                if new_pod:
                    raise _Failure(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                   f"looking up PVC {pod.namespace}/{claim_name}: "
                                   + not_found(PVC_RESOURCE, claim_name))
                continue
            if ephemeral and (error := ephemeral_owner_error(pod, pvc)) is not None:
                raise _Failure(Code.ERROR, error)
            driver, handle = self._claim_driver(cluster, csi_node, pvc)
            if driver and handle:
                result[f"{driver}/{handle}"] = driver
        return result

    def _inline(self, volume: Mapping[str, Any], csi_node: Mapping[str, Any] | None,
                result: Volumes) -> None:
        """``checkAttachableInlineVolume``."""
        plugin = in_tree_plugin(volume)
        if plugin is None or not migration_on(csi_node, plugin, self.portworx):
            return
        key, driver = IN_TREE[plugin]
        try:
            handle = translated_handle(plugin, volume.get(key) or {}, None)
        except ValueError as exc:
            raise _Failure(Code.ERROR, f"converting volume({volume.get('name') or ''}) from "
                                       f"inline to csi: {exc}") from None
        result[f"{driver}/{handle}"] = driver

    def _claim_driver(self, cluster: ClusterState, csi_node: Mapping[str, Any] | None,
                      pvc: Mapping[str, Any]) -> tuple[str, str]:
        """``getCSIDriverInfo``: the driver and handle of the claim's PV."""
        volume_name = spec(pvc).get("volumeName") or ""
        pv = pv_of(cluster, volume_name) if volume_name else None
        if pv is None:
            return self._class_driver(cluster, csi_node, pvc)
        csi = spec(pv).get("csi")
        if csi is not None:
            return csi.get("driver") or "", csi.get("volumeHandle") or ""
        plugin = in_tree_plugin(spec(pv))
        if plugin is None or not migration_on(csi_node, plugin, self.portworx):
            return "", ""
        key, driver = IN_TREE[plugin]
        try:
            return driver, translated_handle(plugin, spec(pv).get(key) or {},
                                             meta(pv).get("labels"))
        except ValueError:
            return "", ""

    def _class_driver(self, cluster: ClusterState, csi_node: Mapping[str, Any] | None,
                      pvc: Mapping[str, Any]) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: the provisioner, with a handle unique to the claim."""
        class_name = claim_class(pvc)
        storage_class = storage_class_of(cluster, class_name) if class_name else None
        if storage_class is None:
            return "", ""
        handle = (f"{UNBOUND_HANDLE_PREFIX}-{meta(pvc).get('namespace') or ''}/"
                  f"{meta(pvc).get('name') or ''}")
        provisioner = storage_class.get("provisioner") or ""
        if provisioner in IN_TREE:
            if not migration_on(csi_node, provisioner, self.portworx):
                return "", ""
            return IN_TREE[provisioner][1], handle
        return provisioner, handle


def _within_limits(new: Volumes, attached: Counter[str], limits: Mapping[str, int]) -> Status:
    """The final comparison of ``CSILimits.Filter``, per driver of the new volumes."""
    for driver, count in Counter(new.values()).items():
        if driver in limits and attached[driver] + count > limits[driver]:
            return Status.of(Code.UNSCHEDULABLE, REASON_MAX_VOLUME_COUNT)
    return Status.success()


def opted_in_drivers(cluster: ClusterState) -> frozenset[str]:
    """The CSI drivers whose CSIDriver sets ``spec.preventPodSchedulingIfMissing: true``."""
    return frozenset(name for name, driver in objects_of(cluster, CSIDRIVER_KIND).items()
                     if spec(driver).get("preventPodSchedulingIfMissing") is True)


def missing_driver(new: Volumes, opted: frozenset[str],
                   csi_node: Mapping[str, Any] | None) -> Status | None:
    """``checkCSIDriverOnNode`` over the new pod's volumes: the failure for the first opted-in
    driver the node's CSINode (None: the node has none) does not list."""
    if not opted:
        return None
    installed = {d.get("name") for d in spec(csi_node).get("drivers") or []
                 if isinstance(d, dict)} if csi_node is not None else set()
    for driver in new.values():
        if driver in opted and driver not in installed:
            return Status.of(Code.UNSCHEDULABLE,
                             f"{driver} CSI driver is not installed on the node")
    return None


class _Verdicts:
    """Verdicts that share one status everywhere except at a few positions."""

    def __init__(self, size: int, default: Status | None) -> None:
        self.table: dict[tuple[str, ...], int] = {(): 0}
        self.codes = np.zeros(size, dtype=np.int8)
        self.ids = np.zeros(size, dtype=np.int32)
        if default is not None and not default.ok:
            self.codes[:] = default.code
            self.ids[:] = self.table.setdefault(default.reasons, len(self.table))

    def set(self, position: int, status: Status) -> None:
        self.codes[position] = status.code
        self.ids[position] = self.table.setdefault(status.reasons, len(self.table)) \
            if not status.ok else 0

    def result(self) -> NodeVerdicts:
        return NodeVerdicts(self.codes, self.ids, list(self.table))


def _attachments_by_node(cluster: ClusterState) -> dict[str, Volumes]:
    """``getNodeVolumeAttachmentInfo`` for every node: CSI volumes VolumeAttachments attach."""
    result: dict[str, Volumes] = defaultdict(dict)
    for attachment in objects_of(cluster, VOLUME_ATTACHMENT_KIND).values():
        attachment_spec = spec(attachment)
        attacher = attachment_spec.get("attacher") or ""
        pv_name = (attachment_spec.get("source") or {}).get("persistentVolumeName")
        if not attacher or pv_name is None:
            continue
        csi = spec(pv_of(cluster, pv_name)).get("csi")
        if csi is None:
            continue
        node = attachment_spec.get("nodeName") or ""
        result[node][f"{attacher}/{csi.get('volumeHandle') or ''}"] = attacher
    return result


# ------------------------------------------------------------------ queueing hints


def _after_pod_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: an assigned pod with claims or migratable inline
    volumes went away."""
    deleted = typed("Pod", old)
    assert deleted is not None
    found = volumes(deleted)
    if not found or not (deleted.get("spec") or {}).get("nodeName"):
        return QueueingHint.QUEUE_SKIP
    for volume in found:
        if volume.get("persistentVolumeClaim") is not None or \
                volume.get("ephemeral") is not None or in_tree_plugin(volume) is not None:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_claim_added(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPVCAdded``: a claim the pod uses."""
    claim = typed(PVC_KIND, new)
    assert claim is not None
    return QueueingHint.QUEUE if uses_claim(pod, claim, ephemeral=True) \
        else QueueingHint.QUEUE_SKIP


def _after_attachment_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterVolumeAttachmentDeleted``: the pod has claims, or an inline volume
    migrated to the attachment's driver."""
    attachment = typed("VolumeAttachment", old)
    assert attachment is not None
    attacher = (attachment.get("spec") or {}).get("attacher")
    for volume in volumes(pod.obj):
        if volume.get("persistentVolumeClaim") is not None:
            return QueueingHint.QUEUE
        plugin = in_tree_plugin(volume)
        if plugin is not None and IN_TREE[plugin][1] == attacher:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _driver_limits(csi_node: dict[str, Any]) -> dict[str, int]:
    limits = {}
    for driver in (csi_node.get("spec") or {}).get("drivers") or []:
        count = (driver.get("allocatable") or {}).get("count")
        limits[driver.get("name") or ""] = int(count or 0)
    return limits


def _after_csi_node_updated(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterCSINodeUpdated``: a driver's volume limit went up."""
    before, after = typed(CSINODE_KIND, old), typed(CSINODE_KIND, new)
    assert before is not None and after is not None
    previous = _driver_limits(before)
    raised = any(limit > previous.get(name, 0) for name, limit in _driver_limits(after).items())
    return QueueingHint.QUEUE if raised else QueueingHint.QUEUE_SKIP
