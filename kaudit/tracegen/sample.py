"""The sample trace shipped in ``traces/sample.jsonl``: small, but exercises every feature.

Thirteen nodes over three zones (one cordoned, one spot node with a ``PreferNoSchedule`` taint,
a tainted GPU node with ``nvidia.com/gpu``; one node leaves, one joins later), namespaces,
priority classes, storage classes, volumes and claims, services, replica sets, a stateful set
and PodDisruptionBudgets. Workloads: deployments with requests, node affinity, pod
anti-affinity and topology spread; host ports; a gated pod; pods no node can take; a pod of
another scheduler; a burst of batch pods that overfills the cluster; and a high-priority pod
that only runs by preempting.

The *recorded* placements (the later events that set ``spec.nodeName``, and the preemption of
``web/payments-0``) are the decisions of a :data:`Chooser` given the cluster as the recording
has it at that moment. The shipped sample is recorded with kube-scheduler's default
configuration as kaudit evaluates it (:mod:`kaudit.replay.sample_history`, which also
regenerates the file), so it reads like a trace of a real cluster running the default
scheduler: replaying it with the defaults agrees with the recorded placements except where
timing differs (the recording binds a burst in one pass; the replay's queue retries with
backoff). Without a chooser, :func:`first_fit` (most free CPU) stands in, for tests that need
no scheduler.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from kaudit.k8s.well_known import (
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE_STABLE,
    LABEL_METADATA_NAME,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
)
from kaudit.quantity import parse_quantity
from kaudit.tracegen.builders import JSON, make_node, make_pod, stable_uid

BASE = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
REGION = "us-east-1"
FRONTEND_IMAGE = "registry.example.com/web/frontend:1.4.2"
API_IMAGE = "registry.example.com/web/api:2.8.0"
TRAINER_IMAGE = "registry.example.com/ml/trainer:0.9"
PROXY_IMAGE = "registry.k8s.io/kube-proxy:v1.34.1"


def at(seconds: float) -> str:
    moment = BASE + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def suffix(*parts: str, length: int = 5) -> str:
    """A Kubernetes-style random-looking name suffix, derived deterministically."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    number = int(hashlib.sha256("/".join(parts).encode()).hexdigest(), 16)
    chars = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        chars.append(alphabet[index])
    return "".join(chars)


def _meta(kind: str, name: str, namespace: str | None = None, api: str = "v1",
          **extra: Any) -> JSON:
    metadata: JSON = {"name": name, "uid": stable_uid(kind, namespace or "", name)}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata.update(extra)
    return {"apiVersion": api, "kind": kind, "metadata": metadata}


# --------------------------------------------------------------------------- cluster objects

def namespaces() -> list[JSON]:
    labels = {"kube-system": {}, "default": {}, "web": {"team": "web", "env": "prod"},
              "data": {"team": "data", "env": "prod"}, "batch": {"team": "research"},
              "ml": {"team": "research"}}
    result = []
    for name, extra in labels.items():
        obj = _meta("Namespace", name)
        obj["metadata"]["labels"] = {LABEL_METADATA_NAME: name, **extra}
        obj["status"] = {"phase": "Active"}
        result.append(obj)
    return result


def priority_classes() -> list[JSON]:
    result = []
    for name, value, default, description in (
        ("system-node-critical", 2000001000, False, "Node-critical system pods"),
        ("business-critical", 100000, False, "Revenue-critical services; may preempt"),
        ("standard", 1000, True, "Default for services"),
        ("batch-low", 100, False, "Best-effort batch; preemptible"),
    ):
        obj = _meta("PriorityClass", name, api="scheduling.k8s.io/v1")
        obj.update({"value": value, "globalDefault": default, "description": description,
                    "preemptionPolicy": "PreemptLowerPriority"})
        result.append(obj)
    return result


def storage() -> list[JSON]:
    local = _meta("StorageClass", "local-wffc", api="storage.k8s.io/v1")
    local.update({"provisioner": "kubernetes.io/no-provisioner",
                  "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Retain"})
    ebs = _meta("StorageClass", "ebs-immediate", api="storage.k8s.io/v1")
    ebs.update({"provisioner": "ebs.csi.aws.com", "volumeBindingMode": "Immediate",
                "reclaimPolicy": "Delete"})

    def local_pv(name: str, node: str) -> JSON:
        pv = _meta("PersistentVolume", name)
        pv["spec"] = {
            "capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "local-wffc",
            "local": {"path": "/mnt/disks/ssd0"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": LABEL_HOSTNAME, "operator": "In", "values": [node]}]}]}},
        }
        pv["status"] = {"phase": "Available"}
        return pv

    zonal = _meta("PersistentVolume", "pvc-4f1c2a9e-ebs")
    zonal["metadata"]["labels"] = {LABEL_TOPOLOGY_ZONE: "us-east-1b",
                                   LABEL_TOPOLOGY_REGION: REGION}
    zonal["spec"] = {
        "capacity": {"storage": "200Gi"}, "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "ebs-immediate",
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0a1b2c3d4e5f"},
        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "data",
                     "name": "pgdata-postgres-0"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": LABEL_TOPOLOGY_ZONE, "operator": "In",
             "values": ["us-east-1b"]}]}]}},
    }
    zonal["status"] = {"phase": "Bound"}

    def claim(name: str, storage_class: str, size: str, volume: str | None) -> JSON:
        pvc = _meta("PersistentVolumeClaim", name, "data")
        pvc["spec"] = {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                       "resources": {"requests": {"storage": size}}, "volumeMode": "Filesystem"}
        if volume is not None:
            pvc["spec"]["volumeName"] = volume
            pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
            pvc["status"] = {"phase": "Bound", "capacity": {"storage": size}}
        else:
            pvc["status"] = {"phase": "Pending"}
        return pvc

    return [local, ebs, local_pv("local-pv-node-a1", "node-a1"),
            local_pv("local-pv-node-b3", "node-b3"), zonal,
            claim("pgdata-postgres-0", "ebs-immediate", "200Gi", "pvc-4f1c2a9e-ebs"),
            claim("pgdata-postgres-1", "local-wffc", "100Gi", None),
            claim("scratch", "ebs-immediate", "50Gi", None)]


@dataclass(frozen=True)
class NodeSpec:
    name: str
    zone: str
    instance: str
    cpu: str
    memory: str
    extra: dict[str, str] = field(default_factory=dict)


NODE_SPECS = [
    NodeSpec("node-a1", "us-east-1a", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-a2", "us-east-1a", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-a3", "us-east-1a", "r5.xlarge", "3920m", "30Gi"),
    NodeSpec("node-a4", "us-east-1a", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-b1", "us-east-1b", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-b2", "us-east-1b", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-b3", "us-east-1b", "m5.2xlarge", "7910m", "30Gi"),
    NodeSpec("node-b4", "us-east-1b", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-c1", "us-east-1c", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-c2", "us-east-1c", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("node-c3", "us-east-1c", "m5.xlarge", "3920m", "15Gi"),
    NodeSpec("gpu-c1", "us-east-1c", "p3.8xlarge", "31850m", "240Gi", {"nvidia.com/gpu": "4"}),
]
LATE_NODE = NodeSpec("node-a5", "us-east-1a", "m5.2xlarge", "7910m", "30Gi")


def build_node(spec: NodeSpec) -> JSON:
    builder = (make_node(spec.name).zone(spec.zone, REGION)
               .capacity(cpu=spec.cpu, memory=spec.memory, ephemeral_storage="95Gi", pods="58")
               .labels(**{LABEL_INSTANCE_TYPE_STABLE: spec.instance,
                          "workload-class": "memory" if spec.instance.startswith("r5")
                          else "gpu" if spec.extra else "general"})
               .image(120_000_000, f"{PROXY_IMAGE}", "registry.k8s.io/kube-proxy@sha256:9c1e")
               .image(750_000, "registry.k8s.io/pause:3.10"))
    for name, amount in spec.extra.items():
        builder.extended(name, amount)
    if spec.extra:
        builder.taint("nvidia.com/gpu", "present", "NoSchedule")
        builder.label("accelerator", "nvidia-tesla-v100")
        builder.image(4_200_000_000, TRAINER_IMAGE)
    if spec.name in ("node-a1", "node-b1", "node-c1"):
        builder.image(350_000_000, FRONTEND_IMAGE)
    if spec.name == "node-c3":
        builder.label("lifecycle", "spot").taint("lifecycle", "spot", "PreferNoSchedule")
    if spec.name == "node-b4":
        builder.unschedulable()
    return builder.obj()


def csi_node(name: str) -> JSON:
    obj = _meta("CSINode", name, api="storage.k8s.io/v1")
    obj["spec"] = {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": f"i-{suffix(name, length=8)}",
                                "allocatable": {"count": 25},
                                "topologyKeys": [LABEL_TOPOLOGY_ZONE]}]}
    return obj


def owners() -> list[JSON]:
    result = []
    for namespace, name, selector in (("web", "frontend", {"app": "frontend"}),
                                      ("web", "api", {"app": "api"}),
                                      ("data", "postgres", {"app": "postgres"})):
        service = _meta("Service", name, namespace)
        service["spec"] = {"selector": selector, "type": "ClusterIP",
                           "ports": [{"port": 80, "protocol": "TCP"}]}
        result.append(service)
    for name, app, template_hash, replicas in (("frontend-6d4cf56db6", "frontend", "6d4cf56db6", 6),
                                               ("api-7c9b8d5f4", "api", "7c9b8d5f4", 4)):
        replica_set = _meta("ReplicaSet", name, "web", api="apps/v1")
        replica_set["metadata"]["ownerReferences"] = [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": app,
            "uid": stable_uid("Deployment", "web", app), "controller": True}]
        replica_set["spec"] = {"replicas": replicas, "selector": {"matchLabels": {
            "app": app, "pod-template-hash": template_hash}}}
        result.append(replica_set)
    stateful = _meta("StatefulSet", "postgres", "data", api="apps/v1")
    stateful["spec"] = {"replicas": 2, "serviceName": "postgres",
                        "selector": {"matchLabels": {"app": "postgres"}}}
    result.append(stateful)
    for namespace, name, selector, min_available, allowed in (
            ("web", "api-pdb", {"app": "api"}, 3, 1),
            ("batch", "etl-guard", {"job-name": "etl-nightly"}, 24, 0)):
        pdb = _meta("PodDisruptionBudget", name, namespace, api="policy/v1")
        pdb["spec"] = {"minAvailable": min_available, "selector": {"matchLabels": selector}}
        pdb["status"] = {"disruptionsAllowed": allowed, "currentHealthy": min_available + allowed,
                         "desiredHealthy": min_available, "expectedPods": min_available + allowed}
        result.append(pdb)
    return result


# ----------------------------------------------------------------- recorded placement model

def _requests(pod: JSON) -> dict[str, int]:
    total: dict[str, int] = {}
    for container in pod["spec"]["containers"]:
        for name, text in container.get("resources", {}).get("requests", {}).items():
            quantity = parse_quantity(text)
            total[name] = total.get(name, 0) + (quantity.milli_value() if name == "cpu"
                                                else quantity.value())
    return total


@dataclass
class _NodeState:
    obj: JSON
    free: dict[str, int]
    pods: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Decision:
    """A recorded scheduling decision: a node, or a nomination with the pods it evicts."""

    node: str | None
    nominated: str | None = None
    victims: tuple[str, ...] = ()


#: Decides where the recorded cluster puts a pod: given every live object of the recording
#: (nodes, bound and pending pods, volumes, ...) and the pod, its node, or a nomination.
Chooser = Callable[[list[JSON], JSON], Decision]


class _Recorder:
    """Emits events and records the cluster's scheduling decisions through a chooser."""

    def __init__(self, choose: Chooser | None = None) -> None:
        self.choose = choose
        self.alive: dict[tuple[str, str, str], JSON] = {}
        self.events: list[tuple[float, str, JSON]] = []
        self.nodes: dict[str, _NodeState] = {}
        self.pods: dict[str, JSON] = {}
        self.placed: dict[str, str] = {}
        self.pending: list[str] = []
        #: Pending pods the stand-in scheduler leaves alone (gated, or placed by hand).
        self.held: set[str] = set()

    def emit(self, t: float, event_type: str, obj: JSON) -> None:
        copy = orjson.loads(orjson.dumps(obj))
        self.events.append((t, event_type, copy))
        metadata = copy.get("metadata") or {}
        key = (copy.get("kind") or "", metadata.get("namespace") or "", metadata.get("name") or "")
        if event_type == "DELETED":
            self.alive.pop(key, None)
        else:
            self.alive[key] = copy

    def decide(self, key: str) -> Decision:
        """The chooser's decision for pending pod ``key`` (first fit without one)."""
        pod = self.pods[key]
        if self.choose is None:
            candidates = [n for n in self.nodes.values() if self._fits(pod, n)]
            if not candidates:
                return Decision(None)
            best = max(candidates, key=lambda n: (n.free.get("cpu", 0),
                                                  n.obj["metadata"]["name"]))
            return Decision(best.obj["metadata"]["name"])
        return self.choose(list(self.alive.values()), orjson.loads(orjson.dumps(pod)))

    def place(self, t: float, key: str) -> bool:
        """Bind pending pod ``key`` where the chooser puts it, preempting when it nominates;
        False when it fits nowhere."""
        decision = self.decide(key)
        if decision.node is not None:
            self.bind(t, key, decision.node)
            return True
        if decision.nominated is not None and decision.victims:
            self.preempt(t, key, decision.nominated, list(decision.victims))
            return True
        return False

    def preempt(self, t: float, key: str, target: str, victims: list[str]) -> None:
        """The pod is nominated to ``target``, its victims are evicted, then it is bound."""
        pod = self.pods[key]
        pod["status"] = {"phase": "Pending", "nominatedNodeName": target, "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "lastTransitionTime": at(t + 0.1)}]}
        self.emit(t + 0.1, "MODIFIED", pod)
        for victim in victims:
            self.pods[victim]["status"]["conditions"].append({
                "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": "default-scheduler: preempting to accommodate a higher priority pod",
                "lastTransitionTime": at(t + 0.2)})
            self.emit(t + 0.2, "MODIFIED", self.pods[victim])
            self.delete(t + 0.3, victim)
        self.bind(t + 1, key, target)

    def add_node(self, t: float, obj: JSON) -> None:
        free = {}
        for name, text in obj["status"]["allocatable"].items():
            quantity = parse_quantity(text)
            free[name] = quantity.milli_value() if name == "cpu" else quantity.value()
        self.nodes[obj["metadata"]["name"]] = _NodeState(obj, free)
        self.emit(t, "ADDED", obj)

    @staticmethod
    def key(pod: JSON) -> str:
        return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"

    def create(self, t: float, pod: JSON) -> None:
        pod["metadata"]["creationTimestamp"] = at(t)
        self.pods[self.key(pod)] = pod
        self.emit(t, "ADDED", pod)
        if pod["spec"].get("nodeName"):
            self._bind(t, pod, pod["spec"]["nodeName"], emit=False)
        else:
            self.pending.append(self.key(pod))

    def _fits(self, pod: JSON, node: _NodeState) -> bool:
        spec = node.obj["spec"]
        if spec.get("unschedulable"):
            return False
        tolerated = {t.get("key") for t in pod["spec"].get("tolerations", [])}
        for taint in spec.get("taints", []):
            if taint["effect"] in ("NoSchedule", "NoExecute") and taint["key"] not in tolerated:
                return False
        labels = node.obj["metadata"]["labels"]
        for key, value in pod["spec"].get("nodeSelector", {}).items():
            if labels.get(key) != value:
                return False
        requests = _requests(pod)
        if node.free.get("pods", 0) < 1:
            return False
        return all(node.free.get(name, 0) >= amount for name, amount in requests.items())

    def _bind(self, t: float, pod: JSON, node_name: str, *, emit: bool = True) -> None:
        node = self.nodes[node_name]
        for name, amount in _requests(pod).items():
            node.free[name] = node.free.get(name, 0) - amount
        node.free["pods"] -= 1
        node.pods.append(self.key(pod))
        self.placed[self.key(pod)] = node_name
        pod["spec"]["nodeName"] = node_name
        pod["status"] = {
            "phase": "Running", "hostIP": f"10.0.{len(self.nodes)}.{len(node.pods)}",
            "podIP": f"100.64.{len(self.placed) // 250}.{len(self.placed) % 250 + 2}",
            "startTime": at(t),
            "conditions": [{"type": "PodScheduled", "status": "True",
                            "lastTransitionTime": at(t)},
                           {"type": "Ready", "status": "True", "lastTransitionTime": at(t)}],
        }
        if emit:
            self.emit(t, "MODIFIED", pod)

    def bind(self, t: float, key: str, node_name: str) -> None:
        self.pending.remove(key)
        self._bind(t, self.pods[key], node_name)

    def schedule_pending(self, t: float) -> None:
        """Place every pending pod that fits somewhere, highest priority first."""
        order = sorted(self.pending, key=lambda k: -self.pods[k]["spec"].get("priority", 0))
        for key in order:
            pod = self.pods[key]
            if pod["spec"].get("schedulingGates") or key in self.held:
                continue
            if self.place(t + 0.02, key):
                t += 0.02

    def mark_unschedulable(self, t: float, key: str) -> None:
        pod = self.pods[key]
        pod["status"] = {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "lastTransitionTime": at(t)}]}
        self.emit(t, "MODIFIED", pod)

    def release(self, key: str) -> None:
        node_name = self.placed.pop(key, None)
        if node_name is None:
            if key in self.pending:
                self.pending.remove(key)
            return
        node = self.nodes[node_name]
        for name, amount in _requests(self.pods[key]).items():
            node.free[name] = node.free.get(name, 0) + amount
        node.free["pods"] += 1
        node.pods.remove(key)

    def finish(self, t: float, key: str) -> None:
        pod = self.pods[key]
        pod["status"]["phase"] = "Succeeded"
        pod["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                        "reason": "PodCompleted", "lastTransitionTime": at(t)}]
        self.release(key)
        self.emit(t, "MODIFIED", pod)

    def delete(self, t: float, key: str) -> None:
        self.release(key)
        self.emit(t, "DELETED", self.pods.pop(key))


# ------------------------------------------------------------------------------ scenario

def _frontend(index: int) -> JSON:
    name = f"frontend-6d4cf56db6-{suffix('frontend', str(index))}"
    return (make_pod(name, "web").image(FRONTEND_IMAGE).req(cpu="250m", memory="256Mi")
            .labels(app="frontend", **{"pod-template-hash": "6d4cf56db6"})
            .priority(1000, "standard").owner("ReplicaSet", "frontend-6d4cf56db6")
            .spread(LABEL_TOPOLOGY_ZONE, 1, "DoNotSchedule", {"app": "frontend"},
                    matchLabelKeys=["pod-template-hash"])
            .pod_affinity("podAntiAffinity", LABEL_HOSTNAME, {"app": "frontend"},
                          weight=100)
            .obj())


def _api(index: int) -> JSON:
    name = f"api-7c9b8d5f4-{suffix('api', str(index))}"
    return (make_pod(name, "web").image(API_IMAGE).req(cpu="1", memory="2Gi")
            .labels(app="api", **{"pod-template-hash": "7c9b8d5f4"})
            .priority(1000, "standard").owner("ReplicaSet", "api-7c9b8d5f4")
            .pod_affinity("podAntiAffinity", LABEL_HOSTNAME, {"app": "api"})
            .required_node_affinity("workload-class", "In", ["general", "memory"])
            .preferred_node_affinity(50, LABEL_TOPOLOGY_ZONE, "In", ["us-east-1a"])
            .obj())


def _batch(job: str, index: int, cpu: str, memory: str) -> JSON:
    name = f"{job}-{suffix(job, str(index))}"
    return (make_pod(name, "batch").image("registry.example.com/batch/etl:5.1")
            .req(cpu=cpu, memory=memory).labels(**{"job-name": job, "app": "batch"})
            .priority(100, "batch-low").owner("Job", job, api_version="batch/v1")
            .obj())


def scenario(choose: Chooser | None = None) -> list[tuple[float, str, JSON]]:
    """Every event of the sample, as (seconds from start, type, object), its placements
    decided by ``choose``."""
    rec = _Recorder(choose)
    for obj in namespaces() + priority_classes():
        rec.emit(0, "ADDED", obj)
    for spec in NODE_SPECS:
        rec.add_node(0, build_node(spec))
    for spec in NODE_SPECS[:8]:
        rec.emit(0, "ADDED", csi_node(spec.name))
    for obj in storage() + owners():
        rec.emit(0, "ADDED", obj)

    # Node agents and cluster DNS, already running when the recording starts.
    for spec in NODE_SPECS:
        proxy = (make_pod(f"kube-proxy-{suffix('proxy', spec.name)}", "kube-system")
                 .image(PROXY_IMAGE).req(cpu="100m", memory="128Mi").node(spec.name)
                 .label("k8s-app", "kube-proxy").priority(2000001000, "system-node-critical")
                 .owner("DaemonSet", "kube-proxy").toleration("", "Exists").obj())
        rec.create(0, proxy)
    for index, node in enumerate(("node-a1", "node-b1")):
        dns = (make_pod(f"coredns-5d78c9869d-{suffix('dns', str(index))}", "kube-system")
               .image("registry.k8s.io/coredns/coredns:v1.11.3")
               .req(cpu="100m", memory="70Mi").label("k8s-app", "kube-dns")
               .priority(2000001000, "system-node-critical")
               .owner("ReplicaSet", "coredns-5d78c9869d").node(node).obj())
        rec.create(0, dns)

    # Deployments: spread over zones, away from each other, and preferring zone a.
    frontends = [_frontend(i) for i in range(6)]
    for i, pod in enumerate(frontends):
        rec.create(5 + i * 0.05, pod)
    for pod in frontends:
        rec.place(5.5 + len(rec.events) * 0.001, rec.key(pod))
    apis = [_api(i) for i in range(4)]
    for i, pod in enumerate(apis):
        rec.create(15 + i * 0.05, pod)
    for pod in apis:
        rec.place(15.5 + len(rec.events) * 0.001, rec.key(pod))

    # A stateful set with a zonal bound volume and a local WaitForFirstConsumer claim.
    for index in (0, 1):
        pod = (make_pod(f"postgres-{index}", "data").image("docker.io/library/postgres:16.4")
               .req(cpu="2", memory="8Gi").label("app", "postgres")
               .priority(100000, "business-critical").owner("StatefulSet", "postgres")
               .pvc("pgdata", f"pgdata-postgres-{index}").obj())
        rec.create(25 + index, pod)
        rec.place(25.6 + index, rec.key(pod))

    # A GPU training pod that tolerates the GPU taint.
    trainer = (make_pod("train-resnet-0", "ml").image(TRAINER_IMAGE)
               .req(cpu="8", memory="32Gi").extended("nvidia.com/gpu", "2")
               .node_selector(accelerator="nvidia-tesla-v100")
               .toleration("nvidia.com/gpu", "Exists", effect="NoSchedule")
               .owner("Job", "train-resnet", api_version="batch/v1")
               .label("job-name", "train-resnet").priority(1000, "standard").obj())
    rec.create(35, trainer)
    rec.place(35.8, rec.key(trainer))

    # Ingress controllers on host ports 80 and 443: one per node.
    for index in range(3):
        ingress = (make_pod(f"ingress-nginx-{suffix('ingress', str(index))}", "web")
                   .image("registry.k8s.io/ingress-nginx/controller:v1.11.2")
                   .req(cpu="100m", memory="90Mi").host_port(80).host_port(443)
                   .label("app", "ingress-nginx").priority(1000, "standard")
                   .owner("ReplicaSet", "ingress-nginx-7b9d5c").obj())
        rec.create(40 + index * 0.1, ingress)
        rec.place(40.5 + index * 0.1, rec.key(ingress))

    # A gated pod, released later; pods that can never be placed; another scheduler's pod.
    gated = (make_pod("report-gen", "batch").image("registry.example.com/batch/report:1.0")
             .req(cpu="500m", memory="1Gi").gate("kaudit.example.com/quota-check")
             .priority(1000, "standard").obj())
    rec.create(50, gated)
    ssd = (make_pod("ssd-cache", "web").image("docker.io/library/redis:7.4")
           .req(cpu="500m", memory="4Gi").node_selector(disktype="ssd")
           .priority(1000, "standard").obj())
    rec.create(60, ssd)
    rec.mark_unschedulable(60.2, rec.key(ssd))
    scratch = (make_pod("scratch-worker", "data").image("docker.io/library/busybox:1.36")
               .req(cpu="100m", memory="64Mi").pvc("scratch", "scratch").obj())
    rec.create(65, scratch)
    rec.held.add(rec.key(scratch))  # its Immediate claim is never bound
    rec.mark_unschedulable(65.2, rec.key(scratch))
    custom = (make_pod("custom-scheduled", "default").scheduler("my-custom-scheduler")
              .req(cpu="250m", memory="256Mi").obj())
    rec.create(70, custom)
    rec.bind(71.5, rec.key(custom), "node-c2")

    # A burst of batch pods that overfills the cluster.
    etl = [_batch("etl-nightly", i, "1", "2Gi") for i in range(24)]
    sweep = [_batch("sweep", i, "500m", "1Gi") for i in range(12)]
    for i, pod in enumerate(etl + sweep):
        # Each is scheduled as it arrives, as the scheduler's active queue does.
        rec.create(90 + i * 0.1, pod)
        if not rec.place(90 + i * 0.1 + 0.02, rec.key(pod)):
            rec.mark_unschedulable(90 + i * 0.1 + 0.03, rec.key(pod))

    # A node leaves: its pods go with it, and the Job controller recreates its batch pods.
    leaving = "node-a4"
    rec.emit(180, "DELETED", rec.nodes[leaving].obj)
    for key in list(rec.nodes[leaving].pods):
        pod = rec.pods[key]
        rec.delete(180.5, key)
        job = pod["metadata"].get("labels", {}).get("job-name")
        if job is not None:
            requests = pod["spec"]["containers"][0]["resources"]["requests"]
            rec.create(181, _batch(job, 100 + len(rec.events), requests["cpu"],
                                   requests["memory"]))
    del rec.nodes[leaving]
    rec.schedule_pending(181)

    # The gate is lifted: the report generator may now be scheduled.
    gated["spec"].pop("schedulingGates")
    rec.emit(200, "MODIFIED", gated)
    rec.schedule_pending(200)

    # A business-critical pod that only fits by preempting batch pods.
    critical = (make_pod("payments-0", "web").image(API_IMAGE).req(cpu="3", memory="6Gi")
                .label("app", "payments").priority(100000, "business-critical").obj())
    rec.create(240, critical)
    decision = rec.decide(rec.key(critical))

    def plan(node: _NodeState) -> list[str] | None:
        """Batch victims to evict on ``node``, sweep pods (no PDB) first; None if not enough."""
        if node.obj["spec"].get("taints"):
            return None
        cpu, memory, chosen = node.free["cpu"], node.free["memory"], []
        batch = sorted((k for k in node.pods if rec.pods[k]["spec"].get("priority") == 100),
                       key=lambda k: (not k.startswith("batch/sweep"), k))
        for key in batch:
            if cpu >= 3000 and memory >= 6 * 1024**3:
                break
            requests = _requests(rec.pods[key])
            cpu, memory = cpu + requests["cpu"], memory + requests["memory"]
            chosen.append(key)
        return chosen if cpu >= 3000 and memory >= 6 * 1024**3 else None

    if decision.nominated is not None:
        target_name, victims = decision.nominated, list(decision.victims)
    else:  # first fit has no preemption: evict batch pods by hand
        plans = {name: plan(node) for name, node in sorted(rec.nodes.items())}
        target_name, victims = min(
            ((name, v) for name, v in plans.items() if v is not None),
            key=lambda item: (sum(1 for k in item[1] if "etl" in k), len(item[1]), item[0]))
    rec.preempt(240, rec.key(critical), target_name, victims)

    # Batch pods complete, in waves; waiting pods take their place.
    running_etl = [k for k in rec.placed if k.startswith("batch/etl-nightly")]
    for wave, keys in enumerate((running_etl[:10], running_etl[10:])):
        t = 300 + wave * 60
        for i, key in enumerate(keys):
            # A finished pod frees its node at once: waiting pods take its place.
            rec.finish(t + i * 0.5, key)
            rec.schedule_pending(t + i * 0.5)
        for key in keys:
            rec.delete(t + 30, key)
        rec.schedule_pending(t + 30)

    # Scale-up: a new node joins and takes what is still waiting.
    rec.add_node(420, build_node(LATE_NODE))
    rec.schedule_pending(420)

    # Scale-down of the frontend; the sweep job finishes.
    for pod in frontends[4:]:
        rec.delete(480, rec.key(pod))
    running_sweep = [k for k in rec.placed if k.startswith("batch/sweep")]
    for i, key in enumerate(running_sweep):
        rec.finish(540 + i * 0.5, key)
        rec.schedule_pending(540 + i * 0.5)
    for key in running_sweep:
        rec.delete(570, key)
    rec.schedule_pending(570)
    rec.events.sort(key=lambda e: e[0])  # stable: same-instant events keep their order
    return rec.events


def render(choose: Chooser | None = None) -> bytes:
    lines = [orjson.dumps({"ts": at(t), "type": event_type, "object": obj})
             for t, event_type, obj in scenario(choose)]
    return b"\n".join(lines) + b"\n"
