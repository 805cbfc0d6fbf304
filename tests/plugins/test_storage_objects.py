"""``kaudit.plugins.storage_objects``: the volume plugins read PVCs, PVs and StorageClasses
as their listers do, and word a missing one as ``apierrors.NewNotFound``."""

from __future__ import annotations

import pytest

from kaudit.cluster.state import ClusterState
from kaudit.plugins.storage_objects import (
    PVC_RESOURCE,
    SC_RESOURCE,
    binding_mode,
    claim_class,
    not_found,
    pv_of,
    pvc_of,
    storage_class_of,
)


def _cluster() -> ClusterState:
    cluster = ClusterState()
    cluster.set_object("PersistentVolumeClaim", {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "team-a",
                     "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}},
        "spec": {"storageClassName": "fast"}})
    cluster.set_object("PersistentVolume", {"kind": "PersistentVolume",
                                            "metadata": {"name": "pv-1"}})
    cluster.set_object("StorageClass", {"kind": "StorageClass", "metadata": {"name": "fast"}})
    return cluster


def test_claims_are_read_by_namespace_and_name() -> None:
    cluster = _cluster()
    claim = pvc_of(cluster, "team-a", "data")
    assert claim is not None and claim["metadata"]["name"] == "data"
    assert pvc_of(cluster, "team-b", "data") is None
    assert pv_of(cluster, "pv-1") is not None and pv_of(cluster, "pv-2") is None
    assert storage_class_of(cluster, "fast") is not None
    assert storage_class_of(cluster, "slow") is None


def test_the_beta_annotation_names_the_claim_class_first() -> None:
    claim = pvc_of(_cluster(), "team-a", "data")
    assert claim is not None and claim_class(claim) == "beta"


def test_not_found_is_the_api_servers_text() -> None:
    assert not_found(PVC_RESOURCE, "data") == 'persistentvolumeclaim "data" not found'
    assert not_found(SC_RESOURCE, "slow") == 'storageclass.storage.k8s.io "slow" not found'


def test_names_are_quoted_as_go_quotes_them() -> None:
    assert not_found(PVC_RESOURCE, 'a"b\n') == 'persistentvolumeclaim "a\\"b\\n" not found'


def test_a_class_without_a_binding_mode_is_an_error() -> None:
    assert binding_mode({"volumeBindingMode": "Immediate"}, "fast") == "Immediate"
    with pytest.raises(ValueError, match=r'^VolumeBindingMode not set for StorageClass "fast"$'):
        binding_mode({}, "fast")
