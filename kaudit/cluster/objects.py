"""Apply Kubernetes objects to a :class:`ClusterState`, as the scheduler's informers would.

Nodes become slots; pods bound to a node (``spec.nodeName``) and not terminal (phase
Succeeded or Failed, which the scheduler's informer excludes) are accounted on it; other kinds
the plugins read (namespaces, priority classes, volumes, owners, PodDisruptionBudgets) are
stored by kind (DRA objects of older ``resource.k8s.io`` versions in the v1 shape). Pod
priority is resolved as the Priority admission plugin does: ``spec.priority``
if set, else the value of ``priorityClassName``, else the global default class, else 0.
A pod on a node is accounted with the cluster's :class:`~kaudit.model.resources.StatusOptions`
(its resize status, as ``calculateResource`` in ``pkg/scheduler/framework/types.go`` reads it).
"""

from __future__ import annotations

from typing import Any

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.config import FeatureGates
from kaudit.model import dra
from kaudit.model.kinds import STORED_KINDS
from kaudit.model.pod import FINISHED_PHASES, PodInfo, parse_pod
from kaudit.model.resources import GATE_IN_PLACE_SCALING, GATE_POD_LEVEL_SCALING, StatusOptions


def resolve_priority(cluster: ClusterState, obj: dict[str, Any]) -> int:
    spec = obj.get("spec") or {}
    if spec.get("priority") is not None:
        return int(spec["priority"])
    class_name = spec.get("priorityClassName")
    classes = cluster.objects["PriorityClass"]
    if class_name and class_name in classes:
        return int(classes[class_name].get("value") or 0)
    for priority_class in classes.values():
        if priority_class.get("globalDefault"):
            return int(priority_class.get("value") or 0)
    return 0


def status_options(gates: FeatureGates) -> StatusOptions:
    """What kube-scheduler of ``gates``' release reads of a pod's resize status when it
    accounts the pod on a node (``calculateResource``'s options)."""
    def on(name: str) -> bool:
        return name in gates and gates.enabled(name)

    return StatusOptions(
        use_status_resources=on(GATE_IN_PLACE_SCALING),
        pod_level_status=on(GATE_POD_LEVEL_SCALING),
        aggregate_status=versions.carries(gates.version, "pod-requests-aggregate-status"))


def pod_info(cluster: ClusterState, obj: dict[str, Any]) -> PodInfo:
    return parse_pod(obj, priority=resolve_priority(cluster, obj),
                     status_options=cluster.status_options)


def apply_pod(cluster: ClusterState, obj: dict[str, Any], deleted: bool = False
              ) -> PodInfo | None:
    """Account (or release) an assigned pod; returns the accounted PodInfo, if any."""
    pod = pod_info(cluster, obj)
    existing = cluster.pods.get(pod.uid)
    if existing is not None:
        cluster.remove_pod(existing.uid)
    if deleted or not pod.node_name or pod.phase in FINISHED_PHASES:
        return None
    cluster.add_pod(pod)
    return pod


def apply_object(cluster: ClusterState, obj: dict[str, Any], deleted: bool = False) -> None:
    """Apply one object of any kind (Pods only when bound: pending pods belong to the queue)."""
    kind = obj.get("kind")
    if kind == "Node":
        if deleted:
            cluster.remove_node((obj.get("metadata") or {}).get("name") or "")
        else:
            cluster.add_node(obj)
    elif kind == "Pod":
        apply_pod(cluster, obj, deleted)
    elif kind in STORED_KINDS:
        if kind in dra.DRA_KINDS:
            obj = dra.normalize(obj)
        if deleted:
            cluster.delete_object(kind, obj)
        else:
            cluster.set_object(kind, obj)


def cluster_from_objects(objects: list[dict[str, Any]], gates: FeatureGates | None = None
                         ) -> tuple[ClusterState, list[PodInfo]]:
    """Build a cluster from a list of objects; returns it and the pods not bound to a node.
    Pods come last, in the API server's list order (by storage key, namespace/name), as a
    scheduler starting on that state lists them: that order is its nodes' pod order, which
    breaks preemption's ties between equally important victims. With ``gates``, the pods on
    nodes are accounted as that release's scheduler accounts them (:func:`status_options`);
    without, from their spec alone."""
    cluster = ClusterState()
    if gates is not None:
        cluster.status_options = status_options(gates)
    ordered = sorted(objects, key=_listed_order)
    pending: list[PodInfo] = []
    for obj in ordered:
        if obj.get("kind") == "Pod" and not (obj.get("spec") or {}).get("nodeName"):
            pending.append(pod_info(cluster, obj))
            continue
        apply_object(cluster, obj)
    return cluster, pending


def _listed_order(obj: dict[str, Any]) -> tuple[bool, bool, str]:
    """Other kinds first, then nodes, each as given; then pods by ``namespace/name``."""
    kind = obj.get("kind")
    if kind != "Pod":
        return False, kind == "Node", ""
    metadata = obj.get("metadata") or {}
    return True, False, f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
