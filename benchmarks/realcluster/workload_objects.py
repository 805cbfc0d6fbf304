"""The Kubernetes objects of kaudit's real-cluster workload (``workload.py``): namespaces,
PriorityClasses, Deployments, Jobs, a DaemonSet, bare pods and PDBs as plain JSON bodies, and
the scheduling constraints their pods use (node affinity, pod (anti-)affinity, topology spread
constraints, tolerations, host ports).

Every pod sets ``schedulerName`` and ``terminationGracePeriodSeconds`` explicitly and runs
``registry.k8s.io/pause``; Job pods carry :data:`kwok.RUN_SECONDS_ANNOTATION`, so KWOK
completes them after that time. The objects are the ones the API server of k8s.io/kubernetes
v1.34.2 accepts (``pkg/apis/core/validation/validation.go``,
``pkg/apis/apps/validation/validation.go``, ``pkg/apis/batch/validation/validation.go``).
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

from benchmarks.realcluster import kwok

ZONES = ("zone-a", "zone-b", "zone-c")
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
IMAGE = "registry.k8s.io/pause:3.10"
SCHEDULER_NAME = "default-scheduler"
APP_NAMESPACES = ("shop", "analytics")
BATCH_NAMESPACE = "batch"
INFRA_NAMESPACE = "infra"
NAMESPACES = (*APP_NAMESPACES, BATCH_NAMESPACE, INFRA_NAMESPACE)
#: name -> (value, preemptionPolicy)
PRIORITY_CLASSES = {"low": (100, "PreemptLowerPriority"), "mid": (1000, "PreemptLowerPriority"),
                    "high": (10000, "PreemptLowerPriority"),
                    "high-no-preempt": (10000, "Never")}
GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
MAINTENANCE_TAINT = {"key": "kaudit.test/maintenance", "value": "true", "effect": "NoSchedule"}
HOST_PORT = 8080

# -- object builders --------------------------------------------------------------------------

def namespace_object(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def priority_class_object(name: str, value: int, policy: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "preemptionPolicy": policy,
            "globalDefault": False, "description": f"kaudit workload: {name}"}


def container(cpu_millis: int, memory_mib: int, host_port: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "app", "image": IMAGE,
        "resources": {"requests": {"cpu": f"{cpu_millis}m", "memory": f"{memory_mib}Mi"}}}
    if host_port:
        body["ports"] = [{"containerPort": HOST_PORT, "hostPort": HOST_PORT, "protocol": "TCP"}]
    return body


@dataclass(frozen=True)
class PodShape:
    """What a workload's pods ask for; ``scheduling`` holds the pod spec's scheduling fields
    (nodeSelector, affinity, tolerations, topologySpreadConstraints)."""

    cpu_millis: int
    memory_mib: int
    priority_class: str | None
    grace_seconds: int
    host_port: bool = False
    scheduling: dict[str, Any] = field(default_factory=dict)

    def scaled(self, cpu_factor: float, memory_factor: float = 1.0) -> PodShape:
        return PodShape(max(10, round(self.cpu_millis * cpu_factor / 10) * 10),
                        max(16, round(self.memory_mib * memory_factor)), self.priority_class,
                        self.grace_seconds, self.host_port, self.scheduling)

    def pod_spec(self, restart_policy: str = "Always") -> dict[str, Any]:
        spec: dict[str, Any] = {
            "schedulerName": SCHEDULER_NAME, "terminationGracePeriodSeconds": self.grace_seconds,
            "restartPolicy": restart_policy,
            "containers": [container(self.cpu_millis, self.memory_mib, self.host_port)],
            **copy.deepcopy(self.scheduling)}
        if self.priority_class is not None:
            spec["priorityClassName"] = self.priority_class
        return spec


def template(labels: dict[str, str], spec: dict[str, Any],
             annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": spec}


def deployment_object(namespace: str, name: str, replicas: int, shape: PodShape,
                      labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": template({"app": name, **labels}, shape.pod_spec())}}


def job_object(namespace: str, name: str, completions: int, parallelism: int,
               shape: PodShape, run_seconds: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {"completions": completions, "parallelism": parallelism,
                     "backoffLimit": 2,
                     "template": template(
                         {"app": name}, shape.pod_spec("Never"),
                         {kwok.RUN_SECONDS_ANNOTATION: f"{run_seconds}s"})}}


def daemonset_object(namespace: str, name: str, shape: PodShape) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": template({"app": name}, shape.pod_spec())}}


def pod_object(namespace: str, name: str, shape: PodShape,
               labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": shape.pod_spec()}


def pdb_object(namespace: str, app: str, budget: dict[str, int | str]) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": app, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": app}}, **budget}}


def pods_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The Pod a workload object's controller would create (its template as a Pod), the Pod
    itself, or None for objects that make no pods."""
    kind = body["kind"]
    if kind == "Pod":
        return body
    if kind not in ("Deployment", "Job", "DaemonSet"):
        return None
    metadata = body["metadata"]
    pod_template = body["spec"]["template"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{metadata['name']}-x", "namespace": metadata["namespace"],
                         **pod_template["metadata"]},
            "spec": pod_template["spec"]}


# -- scheduling constraints ---------------------------------------------------------------------

def zone_affinity(zones: list[str]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE_LABEL, "operator": "In", "values": zones}]}]}}}


def prefer_ssd(weight: int) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": [
        {"key": "disktype", "operator": "In", "values": ["ssd"]}]}}


def anti_affinity(app: str, required: bool) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME_LABEL}
    if required:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}]}}


def cache_affinity() -> dict[str, Any]:
    """Required: in a zone with a cache pod; preferred: on a node with one."""
    selector = {"matchLabels": {"tier": "cache"}}
    return {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "namespaces": list(APP_NAMESPACES),
             "topologyKey": ZONE_LABEL}],
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {
                "labelSelector": selector, "namespaces": list(APP_NAMESPACES),
                "topologyKey": HOSTNAME_LABEL}}]}}


def spread(app: str, key: str, max_skew: int, when: str,
           match_label_keys: bool = False) -> dict[str, Any]:
    constraint: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key,
                                  "whenUnsatisfiable": when,
                                  "labelSelector": {"matchLabels": {"app": app}}}
    if match_label_keys:
        constraint["matchLabelKeys"] = ["pod-template-hash"]
    return constraint


def gpu_placement() -> dict[str, Any]:
    return {"nodeSelector": {"dedicated": "gpu"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                             "effect": "NoSchedule"}]}


def flavour_scheduling(flavour: str, app: str, rng: random.Random) -> dict[str, Any]:
    """The scheduling fields of a Deployment ``app`` of ``flavour`` (see :data:`FLAVOURS`)."""
    zones = sorted(rng.sample(ZONES, 2))
    zonal = zone_affinity(zones)
    zonal["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [prefer_ssd(20)]
    table: dict[str, dict[str, Any]] = {
        "cache": {},
        "plain": {},
        "ssd": {"nodeSelector": {"disktype": "ssd"}},
        "zonal": {"affinity": zonal},
        "prefer-ssd": {"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [prefer_ssd(80)]}}},
        "one-per-node": {"affinity": anti_affinity(app, required=True)},
        "spread-out": {"affinity": anti_affinity(app, required=False)},
        "near-cache": {"affinity": cache_affinity()},
        "zone-spread": {"topologySpreadConstraints": [
            spread(app, ZONE_LABEL, 1, "DoNotSchedule", match_label_keys=True),
            spread(app, HOSTNAME_LABEL, 2, "ScheduleAnyway")]},
        "host-spread": {"topologySpreadConstraints": [
            spread(app, ZONE_LABEL, 2, "ScheduleAnyway"),
            spread(app, HOSTNAME_LABEL, 3, "DoNotSchedule")]},
        "host-port": {},
        "gpu": gpu_placement(),
    }
    return table[flavour]


#: Deployment flavours; cache comes first, so the pods with affinity to it can be placed.
FLAVOURS = ("cache", "plain", "ssd", "zonal", "prefer-ssd", "one-per-node", "spread-out",
            "near-cache", "zone-spread", "host-spread", "host-port", "gpu")
#: Flavours whose replicas are capped at a share of the nodes (one a node at most).
CAPPED_FLAVOURS = {"one-per-node": 0.4, "host-port": 0.3}
