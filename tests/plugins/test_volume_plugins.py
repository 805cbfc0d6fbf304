"""The storage plugins against tables transcribed from upstream's unit tests (v1.34):
``volumerestrictions/volume_restrictions_test.go``, ``volumezone/volume_zone_test.go``,
``nodevolumelimits/csi_test.go`` and ``volumebinding/volume_binding_test.go``, plus the
Reserve/Unreserve behaviour of ``volumebinding/binder.go``.

Where upstream's tests use fake listers, their NotFound texts (``persistentvolumeclaims``,
``storageclasses.storage.k8s.io``) differ from the informer listers the scheduler runs with
(``persistentvolumeclaim``, ``storageclass.storage.k8s.io``); the cases expect the latter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import Handle, Plugin
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo, parse_pod
from kaudit.plugins.node_volume_limits import REASON_MAX_VOLUME_COUNT, NodeVolumeLimits
from kaudit.plugins.volume_binding import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    VolumeBinding,
)
from kaudit.plugins.volume_restrictions import (
    REASON_DISK_CONFLICT,
    REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from kaudit.plugins.volume_zone import REASON_CONFLICT as REASON_ZONE_CONFLICT
from kaudit.plugins.volume_zone import VolumeZone
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import V1_34, gates_at

JSON = dict[str, Any]
SUCCESS, SKIP, ERROR = Code.SUCCESS, Code.SKIP, Code.ERROR
U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"


# --------------------------------------------------------------------------- object builders

def pv(name: str, storage_class: str = "", *, labels: dict[str, str] | None = None,
       capacity: str | None = None, phase: str | None = None,
       affinity: dict[str, list[str]] | None = None, claim: str | None = None,
       **source: Any) -> JSON:
    """A PersistentVolume; ``affinity`` is one node-selector term of ``In`` expressions."""
    body: JSON = {"kind": "PersistentVolume", "metadata": {"name": name},
                  "spec": {"storageClassName": storage_class, **source}}
    if labels:
        body["metadata"]["labels"] = labels
    if capacity is not None:
        body["spec"]["capacity"] = {"storage": capacity}
    if phase is not None:
        body["status"] = {"phase": phase}
    if affinity is not None:
        body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": k, "operator": "In", "values": v}
                                 for k, v in affinity.items()]}]}}
    if claim is not None:
        body["spec"]["claimRef"] = {"namespace": "default", "name": claim}
    return body


def pvc(name: str, storage_class: str | None = None, *, namespace: str = "default",
        volume: str | None = None, bound: bool = False, request: str | None = None,
        modes: list[str] | None = None, phase: str | None = None,
        annotations: dict[str, str] | None = None, owner_uid: str | None = None) -> JSON:
    """A claim; ``bound`` adds ``pv.kubernetes.io/bind-completed`` like ``withBoundPV``."""
    body: JSON = {"kind": "PersistentVolumeClaim",
                  "metadata": {"name": name, "namespace": namespace,
                               "uid": f"uid-{namespace}-{name}"}, "spec": {}}
    if storage_class is not None:
        body["spec"]["storageClassName"] = storage_class
    if volume is not None:
        body["spec"]["volumeName"] = volume
    notes = dict(annotations or {})
    if bound:
        notes["pv.kubernetes.io/bind-completed"] = "true"
    if notes:
        body["metadata"]["annotations"] = notes
    if request is not None:
        body["spec"]["resources"] = {"requests": {"storage": request}}
    if modes is not None:
        body["spec"]["accessModes"] = modes
    if phase is not None:
        body["status"] = {"phase": phase}
    if owner_uid is not None:
        body["metadata"]["ownerReferences"] = [
            {"kind": "Pod", "name": "abc", "uid": owner_uid, "controller": True}]
    return body


def storage_class(name: str, mode: str | None = None, provisioner: str | None = None,
                  allowed: list[JSON] | None = None) -> JSON:
    body: JSON = {"kind": "StorageClass", "metadata": {"name": name}}
    if mode is not None:
        body["volumeBindingMode"] = mode
    if provisioner is not None:
        body["provisioner"] = provisioner
    if allowed is not None:
        body["allowedTopologies"] = allowed
    return body


def csi_node(name: str, drivers: dict[str, int | None], migrated: str | None = None) -> JSON:
    body: JSON = {"kind": "CSINode", "metadata": {"name": name}, "spec": {"drivers": [
        {"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None else {})}
        for d, c in drivers.items()]}}
    if migrated is not None:
        body["metadata"]["annotations"] = {
            "storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return body


def pod(name: str = "pod", *claims: str, namespace: str = "default", uid: str | None = None,
        node: str | None = None, volumes: list[JSON] = ()) -> JSON:  # type: ignore[assignment]
    builder = make_pod(name, namespace)
    for i, claim in enumerate(claims):
        builder.pvc(f"vol-{i}", claim)
    if uid is not None:
        builder.uid(uid)
    if node is not None:
        builder.node(node)
    body = builder.obj()
    body["spec"].setdefault("volumes", []).extend(volumes)
    return body


def cluster_of(nodes: list[JSON], objects: list[JSON] = (),  # type: ignore[assignment]
               pods: list[JSON] = ()) -> ClusterState:  # type: ignore[assignment]
    cluster = ClusterState()
    for node in nodes:
        cluster.add_node(node)
    for obj in objects:
        cluster.set_object(obj["kind"], obj)
    for existing in pods:
        cluster.add_pod(parse_pod(existing))
    return cluster


@dataclass
class Run:
    """One plugin's PreFilter, then Filter on each node (when PreFilter succeeded)."""

    plugin: Plugin
    cluster: ClusterState
    pod: PodInfo
    state: CycleState = field(default_factory=CycleState)
    prefilter: Status = field(default_factory=Status)
    node_names: frozenset[str] | None = None

    @classmethod
    def of(cls, plugin: Plugin, cluster: ClusterState, pod_obj: JSON) -> Run:
        run = cls(plugin, cluster, parse_pod(pod_obj))
        result, run.prefilter = plugin.pre_filter(run.state, run.pod, cluster)  # type: ignore[attr-defined]
        run.node_names = None if result is None else result.node_names
        return run

    def filter(self, *nodes: str) -> list[Status]:
        names = nodes or tuple(self.cluster.names(self.cluster.order))
        slots = np.asarray([self.cluster.slot_of[n] for n in names], dtype=np.int64)
        verdicts = self.plugin.filter(self.state, self.pod, self.cluster, slots)  # type: ignore[attr-defined]
        return [verdicts.status(i) for i in range(len(names))]


def expect(status: Status, code: Code, *reasons: str) -> None:
    assert (status.code, status.reasons) == (code, reasons), status


# =========================================================================== VolumeRestrictions

GCE = ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}})
AWS = ({"awsElasticBlockStore": {"volumeID": "foo"}},
       {"awsElasticBlockStore": {"volumeID": "bar"}})
RBD = ({"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
       {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}})
ISCSI = ({"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01",
                    "fsType": "ext4", "lun": 0}},
         {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01",
                    "fsType": "ext4", "lun": 0}})


def _disk_cases() -> list[Any]:
    """TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts."""
    cases = []
    for kind, (state, state2) in {"gce": GCE, "aws": AWS, "rbd": RBD, "iscsi": ISCSI}.items():
        cases += [
            pytest.param([], [], SKIP, None, id=f"{kind}-nothing"),
            pytest.param([], [state], SKIP, None, id=f"{kind}-one state"),
            pytest.param([state], [state], SUCCESS, (U, REASON_DISK_CONFLICT),
                         id=f"{kind}-same state"),
            pytest.param([state2], [state], SUCCESS, (SUCCESS,), id=f"{kind}-different state"),
        ]
    return cases


@pytest.mark.parametrize(("new", "existing", "prefilter", "want"), _disk_cases())
def test_disk_conflicts(new: list[JSON], existing: list[JSON], prefilter: Code,
                        want: tuple[Any, ...] | None) -> None:
    volumes = [{"name": f"v{i}", **v} for i, v in enumerate(new)]
    others = [pod("existing", node="node-1",
                  volumes=[{"name": f"v{i}", **v} for i, v in enumerate(existing)])]
    run = Run.of(VolumeRestrictions(), cluster_of([make_node("node-1").obj()], pods=others),
                 pod("new", volumes=volumes))
    assert run.prefilter.code == prefilter
    if want is not None:
        expect(run.filter()[0], *want)


@pytest.mark.parametrize(("new", "existing", "conflict"), [
    pytest.param({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
                 {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}, False,
                 id="gce both read-only"),
    pytest.param({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
                 {"gcePersistentDisk": {"pdName": "foo"}}, True, id="gce one read-write"),
    pytest.param({"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}},
                 {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}, True,
                 id="aws read-only still conflicts"),
    pytest.param({"iscsi": {"iqn": "iqn-1", "readOnly": True}},
                 {"iscsi": {"iqn": "iqn-1", "readOnly": True}}, False, id="iscsi both read-only"),
    pytest.param({"rbd": {"monitors": ["a", "b"], "image": "img"}},
                 {"rbd": {"monitors": ["b", "c"], "pool": "rbd", "image": "img"}}, True,
                 id="rbd shared monitor, default pool"),
    pytest.param({"rbd": {"monitors": ["a"], "pool": "p1", "image": "img"}},
                 {"rbd": {"monitors": ["a"], "pool": "p2", "image": "img"}}, False,
                 id="rbd other pool"),
])
def test_disk_conflict_rules(new: JSON, existing: JSON, conflict: bool) -> None:
    cluster = cluster_of([make_node("node-1").obj(), make_node("node-2").obj()],
                         pods=[pod("existing", node="node-1",
                                   volumes=[{"name": "v", **existing}])])
    run = Run.of(VolumeRestrictions(), cluster, pod("new", volumes=[{"name": "v", **new}]))
    node1, node2 = run.filter("node-1", "node-2")
    expect(node1, *((U, REASON_DISK_CONFLICT) if conflict else (SUCCESS,)))
    expect(node2, SUCCESS)


RWOP_1 = pvc("claim-with-rwop-1", modes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", modes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", modes=["ReadWriteMany"])


@pytest.mark.parametrize(("new", "existing", "claims", "prefilter", "filtered"), [
    pytest.param(pod("nothing"), [], [], (SKIP,), None, id="nothing"),
    pytest.param(pod("p", "claim-with-rwop-1"), [], [],
                 (UU, 'persistentvolumeclaim "claim-with-rwop-1" not found'), None,
                 id="failed to get PVC"),
    pytest.param(pod("p", "claim-with-rwop-1"), [pod("rwx", "claim-with-rwx", node="node-1")],
                 [RWOP_1, RWX], (SKIP,), None, id="no access mode conflict"),
    pytest.param(pod("p", "claim-with-rwop-1"),
                 [pod("one", "claim-with-rwop-1", node="node-1"),
                  pod("rwx", "claim-with-rwx", node="node-1")],
                 [RWOP_1, RWX], (SUCCESS,), (U, REASON_RWOP_CONFLICT),
                 id="access mode conflict, unschedulable"),
    pytest.param(pod("p", "claim-with-rwop-1", "claim-with-rwop-2"),
                 [pod("two", "claim-with-rwop-1", "claim-with-rwop-2", node="node-1"),
                  pod("rwx", "claim-with-rwx", node="node-1")],
                 [RWOP_1, RWOP_2, RWX], (SUCCESS,), (U, REASON_RWOP_CONFLICT),
                 id="two conflicts, unschedulable"),
])
def test_access_mode_conflicts(new: JSON, existing: list[JSON], claims: list[JSON],
                               prefilter: tuple[Any, ...], filtered: tuple[Any, ...] | None
                               ) -> None:
    """TestAccessModeConflicts: a RWOP claim in use rejects every node."""
    nodes = [make_node("node-1").obj(), make_node("node-2").obj()]
    run = Run.of(VolumeRestrictions(), cluster_of(nodes, claims, existing), new)
    expect(run.prefilter, *prefilter)
    if filtered is not None:
        for status in run.filter():
            expect(status, *filtered)


def test_access_mode_conflict_cleared_by_removing_the_user() -> None:
    """RemovePod (a preemption victim) releases the claim; AddPod takes it back."""
    user = pod("one", "claim-with-rwop-1", node="node-1")
    cluster = cluster_of([make_node("node-1").obj()], [RWOP_1], [user])
    plugin = VolumeRestrictions()
    run = Run.of(plugin, cluster, pod("p", "claim-with-rwop-1"))
    state = run.state.clone()
    assert plugin.remove_pod(state, run.pod, parse_pod(user), 0, cluster).ok
    assert plugin.filter(state, run.pod, cluster, np.asarray([0])).status(0).ok
    expect(run.filter()[0], U, REASON_RWOP_CONFLICT)  # the original state is untouched
    assert plugin.add_pod(state, run.pod, parse_pod(user), 0, cluster).ok
    expect(plugin.filter(state, run.pod, cluster, np.asarray([0])).status(0), U,
           REASON_RWOP_CONFLICT)


# =========================================================================== VolumeZone

def _zone_objects() -> list[JSON]:
    return [
        pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
        pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
        pv("Vol_3", labels={BETA_REGION: "us-west1"}),
        pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
        pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
        pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
        pv("Vol_Multi_1", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
        pv("Vol_Multi_2", labels={ZONE: "us-west1-c__us-west1-a"}),
        *[pvc(f"PVC_{n}", volume=f"Vol_{n}") for n in
          ("1", "2", "3", "Stable_1", "Stable_2", "Stable_3", "Multi_1", "Multi_2")],
        pvc("PVC_4", volume="Vol_not_exist"),
    ]


def _labelled(name: str, labels: dict[str, str]) -> JSON:
    builder = make_node(name)
    for key, value in labels.items():
        builder.label(key, value)
    return builder.obj()


@pytest.mark.parametrize(("claim", "labels", "want"), [
    # TestSingleZone
    pytest.param(None, {BETA_ZONE: "us-west1-a"}, None, id="pod without volume"),
    pytest.param("PVC_1", {}, (SUCCESS,), id="node without labels"),
    pytest.param("PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, (SUCCESS,),
                 id="beta zone label matched"),
    pytest.param("PVC_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, (SUCCESS,),
                 id="beta region label matched"),
    pytest.param("PVC_2", {BETA_REGION: "no_us-west1", "uselessLabel": "none"},
                 (UU, REASON_ZONE_CONFLICT), id="beta region label doesn't match"),
    pytest.param("PVC_1", {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"},
                 (UU, REASON_ZONE_CONFLICT), id="beta zone label doesn't match"),
    pytest.param("PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, (SUCCESS,),
                 id="zone label matched"),
    pytest.param("PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, (SUCCESS,),
                 id="region label matched"),
    pytest.param("PVC_Stable_2", {REGION: "no_us-west1", "uselessLabel": "none"},
                 (UU, REASON_ZONE_CONFLICT), id="region label doesn't match"),
    pytest.param("PVC_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"},
                 (UU, REASON_ZONE_CONFLICT), id="zone label doesn't match"),
    pytest.param("PVC_Stable_3", {ZONE: "us-west1-a"}, (UU, REASON_ZONE_CONFLICT),
                 id="pv with zone and region, node with only zone"),
    pytest.param("PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, (UU, REASON_ZONE_CONFLICT),
                 id="pv with zone,node with beta zone"),
    pytest.param("PVC_1", {ZONE: "us-west1-a"}, (SUCCESS,),
                 id="pv with beta label,node with ga label, matched"),
    pytest.param("PVC_1", {ZONE: "us-west1-b"}, (UU, REASON_ZONE_CONFLICT),
                 id="pv with beta label,node with ga label, don't match"),
    # TestMultiZone
    pytest.param("PVC_Multi_1", {}, (SUCCESS,), id="multi: node without labels"),
    pytest.param("PVC_Multi_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, (SUCCESS,),
                 id="multi: beta zone label matched"),
    pytest.param("PVC_1", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"},
                 (UU, REASON_ZONE_CONFLICT), id="multi: beta zone label doesn't match"),
    pytest.param("PVC_Multi_2", {ZONE: "us-west1-a", "uselessLabel": "none"}, (SUCCESS,),
                 id="multi: zone label matched"),
    pytest.param("PVC_Stable_1", {ZONE: "us-west1-b", "uselessLabel": "none"},
                 (UU, REASON_ZONE_CONFLICT), id="multi: zone label doesn't match"),
])
def test_volume_zone(claim: str | None, labels: dict[str, str],
                     want: tuple[Any, ...] | None) -> None:
    """TestSingleZone and TestMultiZone."""
    new = pod("pod_1", *([claim] if claim else []))
    run = Run.of(VolumeZone(), cluster_of([_labelled("host1", labels)], _zone_objects()), new)
    if want is None:
        expect(run.prefilter, SKIP)
        return
    expect(run.prefilter, SUCCESS)
    expect(run.filter()[0], *want)


@pytest.mark.parametrize(("claim", "prefilter"), [
    pytest.param("PVC_1", (SUCCESS,), id="label zone failure domain matched"),
    pytest.param("PVC_EmptySC", (UU, "PersistentVolumeClaim had no pv name and storageClass name"),
                 id="unbound volume empty storage class"),
    pytest.param("PVC_NoSC", (UU, 'storageclass.storage.k8s.io "Class_0" not found'),
                 id="unbound volume no storage class"),
    pytest.param("PVC_ImmediateSC", (UU, 'VolumeBindingMode not set for StorageClass '
                                         '"Class_Immediate"'),
                 id="unbound volume immediate binding mode"),
    pytest.param("PVC_WaitSC", (SKIP,), id="unbound volume wait binding mode"),
    pytest.param("PVC_ExplicitImmediate", (UU, "PersistentVolume had no name"),
                 id="unbound volume explicit Immediate class"),
    pytest.param("PVC_4", (UU, 'persistentvolume "Vol_not_exist" not found'),
                 id="bound to a missing PV"),
    pytest.param("PVC_missing", (UU, 'persistentvolumeclaim "PVC_missing" not found'),
                 id="missing claim"),
])
def test_volume_zone_with_binding(claim: str, prefilter: tuple[Any, ...]) -> None:
    """TestWithBinding: unbound WaitForFirstConsumer claims are left to VolumeBinding."""
    objects = [
        storage_class("Class_Immediate"), storage_class("Class_Wait", "WaitForFirstConsumer"),
        storage_class("Class_Explicit", "Immediate"),
        pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
        pvc("PVC_1", volume="Vol_1"), pvc("PVC_NoSC", "Class_0"), pvc("PVC_EmptySC"),
        pvc("PVC_WaitSC", "Class_Wait"), pvc("PVC_ImmediateSC", "Class_Immediate"),
        pvc("PVC_ExplicitImmediate", "Class_Explicit"), pvc("PVC_4", volume="Vol_not_exist"),
    ]
    node = _labelled("host1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"})
    run = Run.of(VolumeZone(), cluster_of([node], objects), pod("pod_1", claim))
    expect(run.prefilter, *prefilter)
    if run.prefilter.ok:
        expect(run.filter()[0], SUCCESS)


def test_volume_zone_vectorised_over_nodes() -> None:
    nodes = [_labelled("a", {ZONE: "z1"}), _labelled("b", {ZONE: "z2"}), _labelled("c", {}),
             _labelled("d", {BETA_ZONE: "z1"}), _labelled("e", {REGION: "r1"})]
    objects = [pv("v", labels={ZONE: "z1__z3"}), pvc("c", volume="v")]
    run = Run.of(VolumeZone(), cluster_of(nodes, objects), pod("p", "c"))
    assert [s.code for s in run.filter()] == [SUCCESS, UU, SUCCESS, UU, UU]


# =========================================================================== NodeVolumeLimits

EBS, GCE_CSI = "ebs.csi.aws.com", "pd.csi.storage.gke.io"
AWS_IN_TREE, HOSTPATH = "kubernetes.io/aws-ebs", "kubernetes.io/hostpath"
LIMIT_NODE = "node-for-max-pd-test-1"


def _csi_objects(drivers: list[str], namespace: str = "default") -> list[JSON]:
    """``getFakeCSIPVLister``, ``getFakeCSIPVCLister`` and the StorageClass of csi_test.go."""
    objects = [storage_class("csi-sc", provisioner=drivers[0])]
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            if driver == AWS_IN_TREE:
                source: JSON = {"awsElasticBlockStore": {"volumeID": name}}
            elif driver == HOSTPATH:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = {"csi": {"driver": driver, "volumeHandle": name}}
            objects += [pv(name, **source), pvc(name, namespace=namespace, volume=name)]
    objects += [pvc("csi-4", "csi-sc", namespace=namespace), pvc("csi-5", namespace=namespace),
                pvc("csi-6", "csi-sc", namespace=namespace, volume="missing-in-action")]
    return objects


def _attachments(count: int, drivers: list[str]) -> list[JSON]:
    """``getFakeVolumeAttachmentLister``."""
    return [{"kind": "VolumeAttachment", "metadata": {"name": f"va-{d}-{j}"},
             "spec": {"nodeName": LIMIT_NODE, "attacher": d,
                      "source": {"persistentVolumeName": f"csi-{d}-{j}"}}}
            for d in drivers for j in range(count)]


def _ephemeral(name: str) -> JSON:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


CONFIG_AND_SECRET = [{"name": "cm", "configMap": {"name": "cm"}},
                     {"name": "secret", "secret": {"secretName": "s"}}]
INLINE_AWS = {"name": "aws", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}
INLINE_AWS_SAME_ID = {"name": "aws", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}}


def _limits_pod(kind: str, name: str = "new", node: str | None = None) -> JSON:
    """The pods of TestCSILimits, by their variable names."""
    claims = {
        "runningPod": ["csi-ebs.csi.aws.com-3"], "pendingVolumePod": ["csi-4"],
        "unboundPVCPod2": ["csi-4"], "missingPVPod": ["csi-6"], "noSCPVCPod": ["csi-5"],
        "gceTwoVolPod": ["csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2"],
        "inTreeOneVolPod": ["csi-kubernetes.io/aws-ebs-0"],
        "inTreeTwoVolPod": ["csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2"],
        "csiEBSOneVolPod": ["csi-ebs.csi.aws.com-0"],
        "csiEBSTwoVolPod": ["csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2"],
        "inTreeNonMigratableOneVolPod": ["csi-kubernetes.io/hostpath-0"],
        "pvcPodWithConfigmapAndSecret": ["csi-ebs.csi.aws.com-0"],
    }
    volumes = {
        "inTreeInlineVolPod": [INLINE_AWS], "inTreeInlineVolPodWithSameCSIVolumeID":
        [INLINE_AWS_SAME_ID], "onlyConfigmapAndSecretVolPod": CONFIG_AND_SECRET,
        "pvcPodWithConfigmapAndSecret": CONFIG_AND_SECRET,
        "inlineMigratablePodWithConfigmapAndSecret": [*CONFIG_AND_SECRET, INLINE_AWS],
    }
    if kind == "ephemeralVolumePod":
        return pod("abc", namespace="test", uid="12345", node=node,
                   volumes=[_ephemeral("xyz")])
    if kind == "ephemeralTwoVolumePod":
        return pod("abc", namespace="test", uid="12345II", node=node,
                   volumes=[_ephemeral("x"), _ephemeral("y")])
    if kind == "ephemeralPodWithConfigmapAndSecret":
        return pod("abc", namespace="test", node=node,
                   volumes=[*CONFIG_AND_SECRET, _ephemeral("xyz")])
    return pod(name, *claims.get(kind, []), node=node, volumes=volumes.get(kind, []))


EPHEMERAL_CLAIM = pvc("abc-xyz", "csi-sc", namespace="test", owner_uid="12345")
CONFLICTING_CLAIM = pvc("abc-xyz", "csi-sc", namespace="test")
EPHEMERAL_X = pvc("abc-x", "csi-sc", namespace="test", owner_uid="12345II")
EPHEMERAL_Y = pvc("abc-y", "csi-sc", namespace="test", owner_uid="12345II")


@dataclass
class LimitsCase:
    new: str
    existing: list[str]
    drivers: list[str]
    limit_source: str = "csinode"
    max_vols: int = 0
    va_count: int = 0
    extra_claims: list[JSON] = field(default_factory=list)
    want: tuple[Any, ...] = (SUCCESS,)
    prefilter: Code = SUCCESS


EXCEEDED = (U, REASON_MAX_VOLUME_COUNT)
MISSING_EPHEMERAL = (UU, 'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')
LIMITS_CASES = {
    "should count VolumeAttachments towards volume limit when no pods exist":
        LimitsCase("csiEBSOneVolPod", [], [EBS], max_vols=2, va_count=2, want=EXCEEDED),
    "should schedule pod when VolumeAttachments count does not exceed limit":
        LimitsCase("csiEBSOneVolPod", [], [EBS], max_vols=2, va_count=1),
    "fits when node volume limit >= new pods CSI volume":
        LimitsCase("csiEBSOneVolPod", ["runningPod", "csiEBSTwoVolPod"], [EBS], max_vols=4),
    "doesn't when node volume limit <= pods CSI volume":
        LimitsCase("csiEBSOneVolPod", ["runningPod", "csiEBSTwoVolPod"], [EBS], max_vols=2,
                   want=EXCEEDED),
    "should when driver does not support volume limits":
        LimitsCase("csiEBSOneVolPod", ["runningPod", "csiEBSTwoVolPod"], [EBS], max_vols=2,
                   limit_source="csinode-with-no-limit"),
    "count pending PVCs towards volume limit <= pods CSI volume":
        LimitsCase("csiEBSOneVolPod", ["pendingVolumePod", "csiEBSTwoVolPod"], [EBS],
                   max_vols=2, want=EXCEEDED),
    "count multiple pending pvcs towards volume limit >= pods CSI volume":
        LimitsCase("csiEBSOneVolPod", ["pendingVolumePod", "unboundPVCPod2", "csiEBSTwoVolPod"],
                   [EBS], max_vols=4),
    "should count PVCs with invalid PV name but valid SC":
        LimitsCase("csiEBSOneVolPod", ["missingPVPod", "csiEBSTwoVolPod"], [EBS], max_vols=2,
                   want=EXCEEDED),
    "don't count pvcs with missing SC towards volume limit":
        LimitsCase("csiEBSOneVolPod", ["runningPod", "noSCPVCPod"], [EBS], max_vols=2),
    "count pvcs with the same type towards volume limit":
        LimitsCase("csiEBSOneVolPod", ["gceTwoVolPod", "csiEBSTwoVolPod"], [EBS, GCE_CSI],
                   max_vols=2, want=EXCEEDED),
    "don't count pvcs with different type towards volume limit":
        LimitsCase("gceTwoVolPod", ["csiEBSTwoVolPod", "runningPod"], [EBS, GCE_CSI],
                   max_vols=2),
    "should count in-tree volumes if migration is enabled":
        LimitsCase("inTreeOneVolPod", ["inTreeTwoVolPod"], [AWS_IN_TREE, EBS], max_vols=2,
                   want=EXCEEDED),
    "nil csi node":
        LimitsCase("inTreeInlineVolPod", ["inTreeTwoVolPod"], [AWS_IN_TREE, EBS],
                   limit_source=""),
    "should count unbound in-tree volumes if migration is enabled":
        LimitsCase("pendingVolumePod", ["inTreeTwoVolPod"], [AWS_IN_TREE, EBS], max_vols=2,
                   want=EXCEEDED),
    "should not limit pod if volume used does not report limits":
        LimitsCase("inTreeOneVolPod", ["inTreeTwoVolPod"], [AWS_IN_TREE, EBS], max_vols=2,
                   limit_source="csinode-with-no-limit"),
    "should not count non-migratable in-tree volumes":
        LimitsCase("inTreeNonMigratableOneVolPod", ["csiEBSTwoVolPod"], [HOSTPATH, EBS],
                   max_vols=2),
    "should count in-tree inline volumes if migration is enabled":
        LimitsCase("inTreeInlineVolPod", ["inTreeTwoVolPod"], [AWS_IN_TREE, EBS], max_vols=2,
                   want=EXCEEDED),
    "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree "
    "volumes)":
        LimitsCase("inTreeOneVolPod", ["csiEBSTwoVolPod"], [AWS_IN_TREE, EBS], max_vols=2,
                   want=EXCEEDED),
    "should count in-tree, inline and csi volumes if migration is enabled (when scheduling "
    "in-tree volumes)":
        LimitsCase("inTreeInlineVolPod", ["csiEBSTwoVolPod", "inTreeOneVolPod"],
                   [AWS_IN_TREE, EBS], max_vols=3, want=EXCEEDED),
    "should not count in-tree, inline and csi volumes if migration is enabled (when "
    "scheduling in-tree volumes)":
        LimitsCase("inTreeInlineVolPodWithSameCSIVolumeID", ["csiEBSTwoVolPod",
                                                            "inTreeOneVolPod"],
                   [AWS_IN_TREE, EBS], max_vols=3),
    "should count in-tree and csi volumes if migration is enabled (when scheduling csi "
    "volumes)":
        LimitsCase("csiEBSOneVolPod", ["inTreeTwoVolPod"], [AWS_IN_TREE, EBS], max_vols=2,
                   want=EXCEEDED),
    "ephemeral volume missing":
        LimitsCase("ephemeralVolumePod", [], [EBS], limit_source="csinode-with-no-limit",
                   want=MISSING_EPHEMERAL),
    "ephemeral volume not owned":
        LimitsCase("ephemeralVolumePod", [], [EBS], limit_source="csinode-with-no-limit",
                   extra_claims=[CONFLICTING_CLAIM],
                   want=(ERROR, "PVC test/abc-xyz was not created for pod test/abc "
                                "(pod is not owner)")),
    "ephemeral volume unbound":
        LimitsCase("ephemeralVolumePod", [], [EBS], limit_source="csinode-with-no-limit",
                   extra_claims=[EPHEMERAL_CLAIM]),
    "ephemeral doesn't when node volume limit <= pods CSI volume":
        LimitsCase("ephemeralVolumePod", ["runningPod", "csiEBSTwoVolPod"], [EBS],
                   max_vols=2, extra_claims=[EPHEMERAL_CLAIM], want=EXCEEDED),
    "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume":
        LimitsCase("csiEBSOneVolPod", ["runningPod", "ephemeralTwoVolumePod"], [EBS],
                   max_vols=2, extra_claims=[EPHEMERAL_X, EPHEMERAL_Y], want=EXCEEDED),
    "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent "
    "volume":
        LimitsCase("csiEBSOneVolPod", ["runningPod", "ephemeralVolumePod", "csiEBSTwoVolPod"],
                   [EBS], max_vols=3, extra_claims=[EPHEMERAL_CLAIM], want=EXCEEDED),
    "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume":
        LimitsCase("csiEBSOneVolPod", ["runningPod", "ephemeralVolumePod", "csiEBSTwoVolPod"],
                   [EBS], max_vols=5, extra_claims=[EPHEMERAL_CLAIM]),
    "skip Filter when the pod only uses secrets and configmaps":
        LimitsCase("onlyConfigmapAndSecretVolPod", [], [EBS], max_vols=2, prefilter=SKIP),
    "don't skip Filter when the pod has pvcs":
        LimitsCase("pvcPodWithConfigmapAndSecret", [], [EBS], max_vols=2),
    "don't skip Filter when the pod has ephemeral volumes":
        LimitsCase("ephemeralPodWithConfigmapAndSecret", [], [EBS],
                   limit_source="csinode-with-no-limit", want=MISSING_EPHEMERAL),
    "don't skip Filter when the pod has inline migratable volumes":
        LimitsCase("inlineMigratablePodWithConfigmapAndSecret", ["inTreeTwoVolPod"],
                   [AWS_IN_TREE, EBS], max_vols=2, want=EXCEEDED),
}


@pytest.mark.parametrize("case", [pytest.param(c, id=n) for n, c in LIMITS_CASES.items()])
def test_csi_limits(case: LimitsCase) -> None:
    """TestCSILimits (the ``csinode`` limit sources; the Node-allocatable source is gone)."""
    objects = _csi_objects(case.drivers) + _csi_objects(case.drivers, "test")[1:]
    objects += case.extra_claims + _attachments(case.va_count, case.drivers)
    if case.limit_source:
        limit = case.max_vols if case.limit_source == "csinode" else None
        objects.append(csi_node(LIMIT_NODE, dict.fromkeys(case.drivers, limit),
                                migrated=AWS_IN_TREE))
    existing = [_limits_pod(kind, f"existing-{i}", LIMIT_NODE)
                for i, kind in enumerate(case.existing)]
    cluster = cluster_of([make_node(LIMIT_NODE).obj()], objects, existing)
    run = Run.of(NodeVolumeLimits(), cluster, _limits_pod(case.new))
    assert run.prefilter.code == case.prefilter
    if case.prefilter != SKIP:
        expect(run.filter()[0], *case.want)


def test_csi_limits_vectorised_over_nodes() -> None:
    """Only nodes with a CSINode count; each node counts its own pods."""
    nodes = [make_node(n).obj() for n in ("full", "free", "unlimited", "no-csinode")]
    objects = [*_csi_objects([EBS]), csi_node("full", {EBS: 2}), csi_node("free", {EBS: 2}),
               csi_node("unlimited", {EBS: None})]
    existing = [_limits_pod("csiEBSTwoVolPod", f"p-{n}", n) for n in ("full", "unlimited")]
    run = Run.of(NodeVolumeLimits(), cluster_of(nodes, objects, existing),
                 _limits_pod("csiEBSOneVolPod"))
    assert [s.code for s in run.filter("full", "free", "unlimited", "no-csinode")] == \
        [U, SUCCESS, SUCCESS, SUCCESS]


def test_csi_limits_shared_volume_counts_once() -> None:
    """A volume already attached to the node through another pod takes no new slot."""
    objects = [*_csi_objects([EBS]), csi_node(LIMIT_NODE, {EBS: 2})]
    existing = [_limits_pod("csiEBSTwoVolPod", "two", LIMIT_NODE)]
    cluster = cluster_of([make_node(LIMIT_NODE).obj()], objects, existing)
    run = Run.of(NodeVolumeLimits(), cluster, pod("new", "csi-ebs.csi.aws.com-1"))
    expect(run.filter()[0], SUCCESS)


def _csi_driver(name: str, opt_in: bool | None) -> JSON:
    body: JSON = {"kind": "CSIDriver", "metadata": {"name": name},
                  "spec": {"attachRequired": True}}
    if opt_in is not None:
        body["spec"]["preventPodSchedulingIfMissing"] = opt_in
    return body


NOT_INSTALLED = (U, f"{EBS} CSI driver is not installed on the node")


@pytest.mark.parametrize(("release", "gates", "opt_in", "want"), [
    ("v1.37.2", "", True, [NOT_INSTALLED, NOT_INSTALLED, (SUCCESS,), EXCEEDED]),
    ("v1.37.2", "", False, [(SUCCESS,), (SUCCESS,), (SUCCESS,), EXCEEDED]),
    ("v1.37.2", "", None, [(SUCCESS,), (SUCCESS,), (SUCCESS,), EXCEEDED]),
    ("v1.37.2", "VolumeLimitScaling=false", True,
     [(SUCCESS,), (SUCCESS,), (SUCCESS,), EXCEEDED]),
    ("v1.36.3", "VolumeLimitScaling=true", True,
     [NOT_INSTALLED, NOT_INSTALLED, (SUCCESS,), EXCEEDED]),
    ("v1.36.3", "", True, [(SUCCESS,), (SUCCESS,), (SUCCESS,), EXCEEDED]),  # gate off
])
def test_volume_limit_scaling_keeps_pods_off_nodes_without_an_opted_in_driver(
        release: str, gates: str, opt_in: bool | None, want: list[tuple[Any, ...]]) -> None:
    """``checkCSIDriverOnNode`` (``csi.go``, v1.36.3 and v1.37.2): a driver whose CSIDriver
    opts in must be on the node's CSINode, checked before the volume count; a node without a
    CSINode has no driver."""
    nodes = [make_node(n).obj() for n in ("no-csinode", "other-driver", "free", "full")]
    objects = [*_csi_objects([EBS]), _csi_driver(EBS, opt_in),
               csi_node("other-driver", {GCE_CSI: None}), csi_node("free", {EBS: 2}),
               csi_node("full", {EBS: 2})]
    existing = [_limits_pod("csiEBSTwoVolPod", "p-full", "full")]
    plugin = NodeVolumeLimits(handle=Handle(feature_gates=gates_at(release, gates)))
    run = Run.of(plugin, cluster_of(nodes, objects, existing), _limits_pod("csiEBSOneVolPod"))
    for status, expected in zip(run.filter("no-csinode", "other-driver", "free", "full"), want,
                                strict=True):
        expect(status, *expected)


# =========================================================================== VolumeBinding

WAIT, IMMEDIATE, WAIT_HDD = "wait-sc", "immediate-sc", "wait-hdd-sc"
CLASSES = [storage_class(IMMEDIATE, "Immediate"), storage_class(WAIT, "WaitForFirstConsumer"),
           storage_class(WAIT_HDD, "WaitForFirstConsumer")]


def binding_plugin(shape: list[JSON] | None = None, capacity_scoring: bool = False
                   ) -> VolumeBinding:
    gates = gates_at(V1_34, "StorageCapacityScoring=true" if capacity_scoring else "")
    args: JSON = {"bindTimeoutSeconds": 300}
    if shape is not None:
        args["shape"] = shape
    return VolumeBinding(args, Handle(feature_gates=gates))


def _hostname_nodes(*names: str) -> list[JSON]:
    return [make_node(n).obj() for n in names]


def _zonal_nodes() -> list[JSON]:
    return [_labelled(f"zone-{z}-node-{n}", {REGION: f"region-{z}", ZONE: f"zone-{z}"})
            for z in "abc" for n in "ab"]


def _local(name: str, storage: str, capacity: str, node: str) -> JSON:
    return pv(name, storage, phase="Available", capacity=capacity, affinity={HOSTNAME: [node]})


def _zonal(name: str, capacity: str, zone: str) -> JSON:
    return pv(name, WAIT, phase="Available", capacity=capacity,
              affinity={REGION: [f"region-{zone}"], ZONE: [f"zone-{zone}"]})


@dataclass
class BindingCase:
    claims: list[str]
    nodes: list[JSON]
    objects: list[JSON]
    prefilter: tuple[Any, ...] = (SUCCESS,)
    node_names: frozenset[str] | None = None
    filters: list[tuple[Any, ...]] = field(default_factory=list)
    scores: list[int] | None = None
    shape: list[JSON] | None = None


SHAPE_UP = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
OK = (SUCCESS,)
BIND = (UU, REASON_BIND_CONFLICT)
BINDING_CASES = {
    "pod has not pvcs": BindingCase([], _hostname_nodes("node-a"), [], prefilter=(SKIP,)),
    "all bound": BindingCase(
        ["pvc-a"], _hostname_nodes("node-a"),
        [pvc("pvc-a", WAIT, volume="pv-a", bound=True), pv("pv-a", WAIT, phase="Available")],
        filters=[OK]),
    "all bound with local volumes": BindingCase(
        ["pvc-a", "pvc-b"], _hostname_nodes("node-a"),
        [pvc("pvc-a", WAIT, volume="pv-a", bound=True),
         pvc("pvc-b", WAIT, volume="pv-b", bound=True),
         pv("pv-a", WAIT, phase="Bound", affinity={HOSTNAME: ["node-a"]}),
         pv("pv-b", WAIT, phase="Bound", affinity={HOSTNAME: ["node-a"]})],
        node_names=frozenset({"node-a"}), filters=[OK]),
    "PVC does not exist": BindingCase(
        ["pvc-a"], _hostname_nodes("node-a"), [],
        prefilter=(UU, 'persistentvolumeclaim "pvc-a" not found')),
    "Part of PVCs do not exist": BindingCase(
        ["pvc-a", "pvc-b"], _hostname_nodes("node-a"),
        [pvc("pvc-a", WAIT, volume="pv-a", bound=True)],
        prefilter=(UU, 'persistentvolumeclaim "pvc-b" not found')),
    "immediate claims not bound": BindingCase(
        ["pvc-a"], _hostname_nodes("node-a"), [pvc("pvc-a", IMMEDIATE)],
        prefilter=(UU, REASON_UNBOUND_IMMEDIATE)),
    "unbound claims no matches": BindingCase(
        ["pvc-a"], _hostname_nodes("node-a"), [pvc("pvc-a", WAIT)], filters=[BIND]),
    "bound and unbound unsatisfied": BindingCase(
        ["pvc-a", "pvc-b"], [_labelled("node-a", {"foo": "barbar"})],
        [pvc("pvc-a", WAIT, volume="pv-a", bound=True), pvc("pvc-b", WAIT),
         pv("pv-a", WAIT, phase="Available", affinity={"foo": ["bar"]})],
        filters=[(UU, REASON_NODE_CONFLICT, REASON_BIND_CONFLICT)]),
    "pv not found": BindingCase(
        ["pvc-a"], _hostname_nodes("node-a"), [pvc("pvc-a", WAIT, volume="pv-a", bound=True)],
        filters=[(UU, REASON_PV_NOT_EXIST)]),
    "pv not found claim lost": BindingCase(
        ["pvc-a"], _hostname_nodes("node-a"),
        [pvc("pvc-a", WAIT, volume="pv-a", bound=True, phase="Lost")],
        prefilter=(UU, 'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume '
                       '"pv-a"')),
    "local volumes with close capacity are preferred": BindingCase(
        ["pvc-a"], _hostname_nodes("node-a", "node-b", "node-c"),
        [pvc("pvc-a", WAIT, request="50Gi"),
         _local("pv-a-0", WAIT, "200Gi", "node-a"), _local("pv-a-1", WAIT, "200Gi", "node-a"),
         _local("pv-b-0", WAIT, "100Gi", "node-b"), _local("pv-b-1", WAIT, "100Gi", "node-b")],
        filters=[OK, OK, BIND], scores=[25, 50, 0], shape=SHAPE_UP),
    "local volumes with close capacity are preferred (multiple pvcs)": BindingCase(
        ["pvc-0", "pvc-1"], _hostname_nodes("node-a", "node-b", "node-c"),
        [pvc("pvc-0", WAIT, request="50Gi"), pvc("pvc-1", WAIT_HDD, request="100Gi"),
         _local("pv-a-0", WAIT, "200Gi", "node-a"), _local("pv-a-1", WAIT, "200Gi", "node-a"),
         _local("pv-a-2", WAIT_HDD, "200Gi", "node-a"),
         _local("pv-a-3", WAIT_HDD, "200Gi", "node-a"),
         _local("pv-b-0", WAIT, "100Gi", "node-b"), _local("pv-b-1", WAIT, "100Gi", "node-b"),
         _local("pv-b-2", WAIT_HDD, "100Gi", "node-b"),
         _local("pv-b-3", WAIT_HDD, "100Gi", "node-b")],
        filters=[OK, OK, BIND], scores=[38, 75, 0], shape=SHAPE_UP),
    "zonal volumes with close capacity are preferred": BindingCase(
        ["pvc-a"], _zonal_nodes(),
        [pvc("pvc-a", WAIT, request="50Gi"), _zonal("pv-a-0", "200Gi", "a"),
         _zonal("pv-a-1", "200Gi", "a"), _zonal("pv-b-0", "100Gi", "b"),
         _zonal("pv-b-1", "100Gi", "b")],
        filters=[OK, OK, OK, OK, BIND, BIND], scores=[25, 25, 50, 50, 0, 0], shape=SHAPE_UP),
    "zonal volumes with close capacity are preferred (custom shape)": BindingCase(
        ["pvc-a"], _zonal_nodes(),
        [pvc("pvc-a", WAIT, request="50Gi"), _zonal("pv-a-0", "200Gi", "a"),
         _zonal("pv-a-1", "200Gi", "a"), _zonal("pv-b-0", "100Gi", "b"),
         _zonal("pv-b-1", "100Gi", "b")],
        filters=[OK, OK, OK, OK, BIND, BIND], scores=[15, 15, 30, 30, 0, 0],
        shape=[{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3},
               {"utilization": 100, "score": 5}]),
}


@pytest.mark.parametrize("case", [pytest.param(c, id=n) for n, c in BINDING_CASES.items()])
def test_volume_binding(case: BindingCase) -> None:
    """TestVolumeBinding: PreFilter status and result, Filter per node, Score."""
    plugin = binding_plugin(case.shape, capacity_scoring=case.scores is not None)
    cluster = cluster_of(case.nodes, CLASSES + case.objects)
    run = Run.of(plugin, cluster, pod("pod-a", *case.claims))
    expect(run.prefilter, *case.prefilter)
    assert run.node_names == case.node_names
    if not run.prefilter.ok:
        return
    names = [n["metadata"]["name"] for n in case.nodes]
    for status, want in zip(run.filter(*names), case.filters, strict=True):
        expect(status, *want)
    slots = np.asarray([cluster.slot_of[n] for n in names])
    if case.scores is not None:
        assert plugin.pre_score(run.state, run.pod, cluster, slots).ok
        assert plugin.score(run.state, run.pod, cluster, slots).tolist() == case.scores
    else:
        assert plugin.pre_score(run.state, run.pod, cluster, slots).code == SKIP


def _deleting(obj: JSON) -> JSON:
    obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return obj


@pytest.mark.parametrize(("claim_objects", "claims", "want"), [
    pytest.param([storage_class("legacy")], [pvc("pvc-a", "legacy")],
                 (ERROR, 'VolumeBindingMode not set for StorageClass "legacy"'),
                 id="class without volumeBindingMode"),
    pytest.param([], [pvc("pvc-a", volume="pv-a")], (UU, REASON_UNBOUND_IMMEDIATE),
                 id="pre-bound claim not yet bound"),
    pytest.param([], [_deleting(pvc("pvc-a", WAIT, volume="pv-a", bound=True))],
                 (UU, 'persistentvolumeclaim "pvc-a" is being deleted'), id="claim being deleted"),
])
def test_volume_binding_prefilter_errors(claim_objects: list[JSON], claims: list[JSON],
                                         want: tuple[Any, ...]) -> None:
    cluster = cluster_of(_hostname_nodes("node-a"), CLASSES + claim_objects + claims)
    expect(Run.of(binding_plugin(), cluster, pod("pod-a", "pvc-a")).prefilter, *want)


def test_volume_binding_ephemeral_claims() -> None:
    nodes = _hostname_nodes("node-a")
    new = pod("abc", namespace="test", uid="12345", volumes=[_ephemeral("xyz")])
    expect(Run.of(binding_plugin(), cluster_of(nodes, CLASSES), new).prefilter, UU,
           'waiting for ephemeral volume controller to create the persistentvolumeclaim '
           '"abc-xyz"')
    stranger = pvc("abc-xyz", WAIT, namespace="test")
    expect(Run.of(binding_plugin(), cluster_of(nodes, [*CLASSES, stranger]), new).prefilter,
           UU, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)")
    owned = pvc("abc-xyz", WAIT, namespace="test", owner_uid="12345")
    provisioned = storage_class("ephemeral", "WaitForFirstConsumer", "ebs.csi.aws.com")
    owned["spec"]["storageClassName"] = "ephemeral"
    run = Run.of(binding_plugin(), cluster_of(nodes, [*CLASSES, owned, provisioned]), new)
    expect(run.prefilter, SUCCESS)
    expect(run.filter()[0], SUCCESS)


def test_dynamic_provisioning_and_allowed_topologies() -> None:
    """An unmatched WaitForFirstConsumer claim is provisioned where the class allows."""
    allowed = [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-a"]}]}]
    objects = [storage_class("fast", "WaitForFirstConsumer", "ebs.csi.aws.com", allowed),
               storage_class("none", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
               pvc("fast-claim", "fast", request="10Gi"), pvc("local-claim", "none")]
    cluster = cluster_of(_zonal_nodes(), objects)
    fast = Run.of(binding_plugin(), cluster, pod("p", "fast-claim"))
    names = [n["metadata"]["name"] for n in _zonal_nodes()]
    assert [s.code for s in fast.filter(*names)] == [SUCCESS, SUCCESS, UU, UU, UU, UU]
    expect(fast.filter("zone-b-node-a")[0], *BIND)
    local = Run.of(binding_plugin(), cluster, pod("q", "local-claim"))
    assert {s.code for s in local.filter()} == {UU}


def test_selected_node_annotation_pins_the_claim() -> None:
    objects = [storage_class("fast", "WaitForFirstConsumer", "ebs.csi.aws.com"),
               pvc("claim", "fast", annotations={
                   "volume.kubernetes.io/selected-node": "node-b"})]
    run = Run.of(binding_plugin(), cluster_of(_hostname_nodes("node-a", "node-b"), objects),
                 pod("p", "claim"))
    statuses = run.filter("node-a", "node-b")
    expect(statuses[0], *BIND)
    expect(statuses[1], SUCCESS)


def test_prebound_volume_wins_and_must_fit_the_node() -> None:
    """A PV whose claimRef names the claim is chosen first; if it does not fit the node,
    no other PV is tried there."""
    objects = [pvc("claim", WAIT, request="1Gi"),
               _local("small", WAIT, "1Gi", "node-a"), _local("other", WAIT, "1Gi", "node-b"),
               pv("reserved", WAIT, capacity="5Gi", affinity={HOSTNAME: ["node-a"]},
                  claim="claim")]
    plugin = binding_plugin()
    cluster = cluster_of(_hostname_nodes("node-a", "node-b"), CLASSES + objects)
    run = Run.of(plugin, cluster, pod("p", "claim"))
    expect(run.prefilter, SUCCESS)
    statuses = run.filter("node-a", "node-b")
    expect(statuses[0], SUCCESS)
    expect(statuses[1], *BIND)
    assert plugin.reserve(run.state, run.pod, "node-a").ok
    # GetBindVolumeToClaim fills in the claim's UID; the user pre-bound it, so the PV does
    # not get pv.kubernetes.io/bound-by-controller.
    assumed = plugin.assumed.volumes["reserved"].obj
    assert assumed["spec"]["claimRef"]["uid"] == "uid-default-claim"
    assert "annotations" not in assumed["metadata"]


def test_two_claims_do_not_share_a_volume_on_a_node() -> None:
    objects = [pvc("c1", WAIT, request="1Gi"), pvc("c2", WAIT, request="2Gi"),
               _local("v1", WAIT, "2Gi", "node-a"), _local("v2", WAIT, "5Gi", "node-b"),
               _local("v3", WAIT, "2Gi", "node-b")]
    run = Run.of(binding_plugin(),
                 cluster_of(_hostname_nodes("node-a", "node-b"), CLASSES + objects),
                 pod("p", "c1", "c2"))
    node_a, node_b = run.filter("node-a", "node-b")
    expect(node_a, *BIND)  # one PV for two claims
    expect(node_b, SUCCESS)


def _reserve_cluster() -> tuple[ClusterState, list[JSON]]:
    objects = [pvc("c1", WAIT, request="1Gi"), pvc("c2", WAIT, request="1Gi"),
               _local("only", WAIT, "1Gi", "node-a")]
    return cluster_of(_hostname_nodes("node-a", "node-b"), CLASSES + objects), objects


def test_reserve_assumes_the_binding_for_later_pods() -> None:
    """Two pods of one replay do not get the same PV; Unreserve gives it back."""
    cluster, _ = _reserve_cluster()
    plugin = binding_plugin()
    first = Run.of(plugin, cluster, pod("first", "c1"))
    expect(first.filter("node-a")[0], SUCCESS)
    assert plugin.reserve(first.state, first.pod, "node-a").ok
    assert plugin.pre_bind(first.state, first.pod, "node-a").ok
    claim_ref = plugin.assumed.volumes["only"].obj["spec"]["claimRef"]
    assert (claim_ref["namespace"], claim_ref["name"], claim_ref["uid"]) == \
        ("default", "c1", "uid-default-c1")

    second = Run.of(plugin, cluster, pod("second", "c2"))
    expect(second.filter("node-a")[0], *BIND)
    sharer = Run.of(plugin, cluster, pod("sharer", "c1"))  # same claim: the assumed PV fits
    expect(sharer.filter("node-a")[0], SUCCESS)

    plugin.unreserve(first.state, first.pod, "node-a")
    again = Run.of(plugin, cluster, pod("second", "c2"))
    expect(again.filter("node-a")[0], SUCCESS)


def test_assumption_lapses_when_the_object_is_replaced() -> None:
    cluster, objects = _reserve_cluster()
    plugin = binding_plugin()
    first = Run.of(plugin, cluster, pod("first", "c1"))
    first.filter()
    assert plugin.reserve(first.state, first.pod, "node-a").ok
    cluster.set_object("PersistentVolume", dict(objects[-1]))  # a newer PV without claimRef
    second = Run.of(plugin, cluster, pod("second", "c2"))
    expect(second.filter("node-a")[0], SUCCESS)
    assert "only" not in plugin.assumed.volumes


def test_reserve_assumes_provisioning_on_the_node() -> None:
    objects = [storage_class("fast", "WaitForFirstConsumer", "ebs.csi.aws.com"),
               pvc("shared", "fast")]
    cluster = cluster_of(_hostname_nodes("node-a", "node-b"), objects)
    plugin = binding_plugin()
    first = Run.of(plugin, cluster, pod("first", "shared"))
    first.filter()
    assert plugin.reserve(first.state, first.pod, "node-b").ok
    second = Run.of(plugin, cluster, pod("second", "shared"))
    node_a, node_b = second.filter("node-a", "node-b")
    expect(node_a, *BIND)
    expect(node_b, SUCCESS)
    plugin.unreserve(first.state, first.pod, "node-b")
    assert plugin.assumed.claims == {}


def test_binding_state_clone_keeps_filter_records_apart() -> None:
    cluster, _ = _reserve_cluster()
    plugin = binding_plugin()
    run = Run.of(plugin, cluster, pod("first", "c1"))
    clone = run.state.clone()
    plugin.filter(clone, run.pod, cluster, np.asarray([cluster.slot_of["node-a"]]))
    assert plugin.reserve(run.state, run.pod, "node-a").ok  # nothing recorded here
    assert plugin.assumed.volumes == {}
    assert plugin.reserve(clone, run.pod, "node-a").ok
    assert "only" in plugin.assumed.volumes
