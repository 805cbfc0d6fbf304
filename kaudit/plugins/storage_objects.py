"""Reading storage API objects from the cluster state, as the volume plugins' informer listers
read them (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits).

Mirrors, for Kubernetes v1.34: the PersistentVolumeClaim, PersistentVolume, StorageClass and
CSINode listers (``client-go/listers/{core,storage}/v1``) and the text of their NotFound errors
(``apierrors.NewNotFound``, ``apimachinery/pkg/api/errors/errors.go``);
``GetPersistentVolumeClaimClass`` and ``GetPersistentVolumeClass``
(``component-helpers/storage/volume/helpers.go``); ``VolumeClaimName`` and
``VolumeIsForPod`` (``component-helpers/storage/ephemeral/ephemeral.go``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaudit.cluster.state import ClusterState
from kaudit.gostrings import go_quote
from kaudit.model.pod import PodInfo

JSON = dict[str, Any]

PVC_KIND, PV_KIND, SC_KIND, CSINODE_KIND, CSIDRIVER_KIND = (
    "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver")
#: ``GroupResource.String()`` of the informer listers' NotFound errors.
PVC_RESOURCE = "persistentvolumeclaim"
PV_RESOURCE = "persistentvolume"
SC_RESOURCE = "storageclass.storage.k8s.io"

ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
#: ``v1.MigratedPluginsAnnotationKey``: the in-tree plugins a CSINode's drivers took over.
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
#: A StorageClass's ``volumeBindingMode`` that delays binding until a pod is scheduled.
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


def meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("spec") or {}


def annotations_of(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def not_found(resource: str, name: str) -> str:
    """The text of ``apierrors.NewNotFound(resource, name)`` (``%s %q not found``)."""
    return f"{resource} {go_quote(name)} not found"


def objects_of(cluster: ClusterState, kind: str) -> Mapping[str, JSON]:
    """Stored objects of ``kind`` (without adding an empty entry to the store)."""
    return cluster.objects.get(kind) or {}


def pvc_of(cluster: ClusterState, namespace: str, name: str) -> JSON | None:
    """``PersistentVolumeClaims(namespace).Get(name)``; None when not found."""
    return objects_of(cluster, PVC_KIND).get(f"{namespace}/{name}")


def pv_of(cluster: ClusterState, name: str) -> JSON | None:
    """``PersistentVolumes().Get(name)``; None when not found."""
    return objects_of(cluster, PV_KIND).get(name)


def storage_class_of(cluster: ClusterState, name: str) -> JSON | None:
    """``StorageClasses().Get(name)``; None when not found."""
    return objects_of(cluster, SC_KIND).get(name)


def binding_mode(storage_class: Mapping[str, Any], class_name: str) -> str:
    """The StorageClass's ``volumeBindingMode``; a :class:`ValueError` worded as VolumeBinding
    and VolumeZone word it when the class has none."""
    mode = storage_class.get("volumeBindingMode")
    if mode is None:
        raise ValueError(f"VolumeBindingMode not set for StorageClass {go_quote(class_name)}")
    return str(mode)


def claim_class(pvc: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation, then ``storageClassName``."""
    notes = annotations_of(pvc)
    if ANN_STORAGE_CLASS in notes:
        return notes[ANN_STORAGE_CLASS] or ""
    return spec(pvc).get("storageClassName") or ""


def volume_class(pv: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClass``."""
    notes = annotations_of(pv)
    if ANN_STORAGE_CLASS in notes:
        return notes[ANN_STORAGE_CLASS] or ""
    return spec(pv).get("storageClassName") or ""


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
