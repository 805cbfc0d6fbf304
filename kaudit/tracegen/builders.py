"""Fluent builders for Kubernetes objects, in the style of upstream's ``st.MakePod()``.

``make_pod("web-1").req(cpu="500m", memory="1Gi").label("app", "web").obj()`` returns the
plain JSON dict the API server would serve. Used by the trace generators, benchmarks and tests.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Self

from kaudit.k8s.well_known import (
    LABEL_ARCH_STABLE,
    LABEL_HOSTNAME,
    LABEL_OS_STABLE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
    TAINT_NODE_UNSCHEDULABLE,
)

JSON = dict[str, Any]


def stable_uid(*parts: str) -> str:
    """A deterministic UUID-shaped uid from ``parts``."""
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


class _Builder:
    def __init__(self, body: JSON) -> None:
        self._body = body

    def obj(self) -> JSON:
        return copy.deepcopy(self._body)

    @property
    def _meta(self) -> JSON:
        return self._body["metadata"]

    def label(self, key: str, value: str) -> Self:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, **labels: str) -> Self:
        for key, value in labels.items():
            self.label(key, value)
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def created(self, timestamp: str) -> Self:
        self._meta["creationTimestamp"] = timestamp
        return self


class NodeBuilder(_Builder):
    def __init__(self, name: str) -> None:
        super().__init__({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": stable_uid("node", name),
                         "labels": {LABEL_HOSTNAME: name, LABEL_OS_STABLE: "linux",
                                    LABEL_ARCH_STABLE: "amd64"}},
            "spec": {},
            "status": {"capacity": {}, "allocatable": {},
                       "conditions": [{"type": "Ready", "status": "True"}]},
        })

    def capacity(self, **resources: str) -> Self:
        """Set capacity and allocatable alike (``pods`` defaults to 110)."""
        values = {"pods": "110", **{k.replace("_", "-"): v for k, v in resources.items()}}
        self._body["status"]["capacity"].update(values)
        self._body["status"]["allocatable"].update(values)
        return self

    def extended(self, name: str, amount: str) -> Self:
        self._body["status"]["capacity"][name] = amount
        self._body["status"]["allocatable"][name] = amount
        return self

    def allocatable(self, **resources: str) -> Self:
        self._body["status"]["allocatable"].update(
            {k.replace("_", "-"): v for k, v in resources.items()})
        return self

    def zone(self, zone: str, region: str | None = None) -> Self:
        self.label(LABEL_TOPOLOGY_ZONE, zone)
        if region is not None:
            self.label(LABEL_TOPOLOGY_REGION, region)
        return self

    def taint(self, key: str, value: str | None, effect: str) -> Self:
        taint: JSON = {"key": key, "effect": effect}
        if value is not None:
            taint["value"] = value
        self._body["spec"].setdefault("taints", []).append(taint)
        return self

    def unschedulable(self) -> Self:
        self._body["spec"]["unschedulable"] = True
        return self.taint(TAINT_NODE_UNSCHEDULABLE, None, "NoSchedule")

    def image(self, size_bytes: int, *names: str) -> Self:
        self._body["status"].setdefault("images", []).append(
            {"names": list(names), "sizeBytes": size_bytes})
        return self


class PodBuilder(_Builder):
    def __init__(self, name: str, namespace: str = "default") -> None:
        super().__init__({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "uid": stable_uid("pod", namespace, name)},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {}}],
                     "schedulerName": "default-scheduler", "restartPolicy": "Always",
                     "terminationGracePeriodSeconds": 30},
            "status": {"phase": "Pending"},
        })

    @property
    def _spec(self) -> JSON:
        return self._body["spec"]

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def image(self, image: str) -> Self:
        self._spec["containers"][0]["image"] = image
        return self

    def req(self, **resources: str) -> Self:
        """Requests of the first container; ``ephemeral_storage`` means ephemeral-storage."""
        requests = self._spec["containers"][0]["resources"].setdefault("requests", {})
        requests.update({k.replace("_", "-"): v for k, v in resources.items()})
        return self

    def extended(self, name: str, amount: str) -> Self:
        resources = self._spec["containers"][0]["resources"]
        resources.setdefault("requests", {})[name] = amount
        resources.setdefault("limits", {})[name] = amount
        return self

    def container(self, name: str, image: str, **requests: str) -> Self:
        self._spec["containers"].append({
            "name": name, "image": image,
            "resources": {"requests": {k.replace("_", "-"): v for k, v in requests.items()}}})
        return self

    def init_container(self, name: str, image: str, *, sidecar: bool = False,
                       **requests: str) -> Self:
        container: JSON = {"name": name, "image": image, "resources": {
            "requests": {k.replace("_", "-"): v for k, v in requests.items()}}}
        if sidecar:
            container["restartPolicy"] = "Always"
        self._spec.setdefault("initContainers", []).append(container)
        return self

    def priority(self, value: int, class_name: str | None = None) -> Self:
        self._spec["priority"] = value
        if class_name is not None:
            self._spec["priorityClassName"] = class_name
        return self

    def node(self, name: str) -> Self:
        self._spec["nodeName"] = name
        return self

    def scheduler(self, name: str) -> Self:
        self._spec["schedulerName"] = name
        return self

    def node_selector(self, **selector: str) -> Self:
        self._spec.setdefault("nodeSelector", {}).update(selector)
        return self

    def toleration(self, key: str, operator: str = "Exists", value: str | None = None,
                   effect: str | None = None) -> Self:
        toleration: JSON = {"key": key, "operator": operator}
        if value is not None:
            toleration["value"] = value
        if effect is not None:
            toleration["effect"] = effect
        self._spec.setdefault("tolerations", []).append(toleration)
        return self

    def _affinity(self, kind: str) -> JSON:
        return self._spec.setdefault("affinity", {}).setdefault(kind, {})

    def required_node_affinity(self, key: str, operator: str, values: list[str]) -> Self:
        required = self._affinity("nodeAffinity").setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        required["nodeSelectorTerms"].append(
            {"matchExpressions": [{"key": key, "operator": operator, "values": values}]})
        return self

    def preferred_node_affinity(self, weight: int, key: str, operator: str,
                                values: list[str]) -> Self:
        self._affinity("nodeAffinity").setdefault(
            "preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "preference": {
                "matchExpressions": [{"key": key, "operator": operator, "values": values}]}})
        return self

    def pod_affinity(self, kind: str, topology_key: str, match_labels: dict[str, str], *,
                     weight: int | None = None) -> Self:
        """``kind`` is podAffinity or podAntiAffinity; a ``weight`` makes the term preferred."""
        term: JSON = {"labelSelector": {"matchLabels": dict(match_labels)},
                      "topologyKey": topology_key}
        affinity = self._affinity(kind)
        if weight is None:
            affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term})
        return self

    def spread(self, topology_key: str, max_skew: int, when: str,
               match_labels: dict[str, str], **extra: Any) -> Self:
        constraint: JSON = {"maxSkew": max_skew, "topologyKey": topology_key,
                            "whenUnsatisfiable": when,
                            "labelSelector": {"matchLabels": dict(match_labels)}, **extra}
        self._spec.setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def host_port(self, port: int, protocol: str = "TCP") -> Self:
        self._spec["containers"][0].setdefault("ports", []).append(
            {"containerPort": port, "hostPort": port, "protocol": protocol})
        return self

    def pvc(self, volume: str, claim: str) -> Self:
        self._spec.setdefault("volumes", []).append(
            {"name": volume, "persistentVolumeClaim": {"claimName": claim}})
        return self

    def gate(self, name: str) -> Self:
        self._spec.setdefault("schedulingGates", []).append({"name": name})
        return self

    def owner(self, kind: str, name: str, api_version: str = "apps/v1") -> Self:
        self._meta["ownerReferences"] = [{
            "apiVersion": api_version, "kind": kind, "name": name,
            "uid": stable_uid(kind, self._meta["namespace"], name),
            "controller": True, "blockOwnerDeletion": True}]
        return self

    def phase(self, phase: str) -> Self:
        self._body["status"]["phase"] = phase
        return self


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)
