"""A seeded workload for the real control plane: the plan of what to create, change and delete,
and the driver that applies it through the official Kubernetes client and waits until the
cluster settles.

:func:`plan` turns a :class:`WorkloadSpec` into time-ordered :class:`Step` s from its seed
alone (no API access; the same spec gives the same plan): namespaces, PriorityClasses, nodes of
three shapes over three zones (some ``disktype=ssd``, a few tainted ``dedicated=gpu:NoSchedule``
for the GPU workload), a DaemonSet, Deployments (some with PDBs) and Jobs using requests,
priorities, node selectors, node affinity, pod (anti-)affinity, topology spread constraints,
tolerations and host ports, bare pods, then churn: scale-ups and scale-downs, pod deletions
(grace 0 and a few seconds), preemption waves (high-priority Deployments and Jobs sized not to
fit without evicting lower-priority pods, one of them ``preemptionPolicy: Never``), nodes
cordoned, tainted, added and drained and removed, and pods that fit nowhere. CPU requests are
scaled so the base workload requests ~65-80 % of the schedulable cpu before the waves.

:class:`Driver` applies the steps at their offsets with a small thread pool (namespaces and
PriorityClasses first; the steps on one object keep their order), then polls the pods until
every live pod is bound or ``PodScheduled=False`` (``Unschedulable``) and none changed for a
few seconds. Bodies are sent as plain JSON through ``ApiClient.call_api``: the client's typed
methods would turn them into its models first, dropping any field the models lack.

The objects themselves are built in :mod:`benchmarks.realcluster.workload_objects`. KWOK
deletes a pod being deleted at its ``deletionTimestamp`` (``benchmarks/realcluster/kwok.py``),
so every grace period here is real; a drained node's pods are deleted as ``kubectl drain``
deletes them (DaemonSet pods left), and a removed Node's remaining pods are force-deleted
with it, as the pod GC controller (``pkg/controller/podgc/gc_controller.go``) would later.
"""

from __future__ import annotations

import enum
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.realcluster import kwok
from benchmarks.realcluster.workload_objects import (
    APP_NAMESPACES,
    BATCH_NAMESPACE,
    CAPPED_FLAVOURS,
    FLAVOURS,
    GPU_TAINT,
    INFRA_NAMESPACE,
    MAINTENANCE_TAINT,
    NAMESPACES,
    PRIORITY_CLASSES,
    ZONE_LABEL,
    ZONES,
    PodShape,
    anti_affinity,
    daemonset_object,
    deployment_object,
    flavour_scheduling,
    job_object,
    namespace_object,
    pdb_object,
    pod_object,
    priority_class_object,
    zone_affinity,
)

#: Wall seconds of plan per pod: 300 pods are applied over 60 s.
SECONDS_PER_POD = 0.2
MIN_DURATION_SECONDS = 20.0
#: Pods besides the DaemonSet's a plan needs to hold every kind of workload.
MIN_WORKLOAD_PODS = 20
#: Share of the schedulable memory the base workload requests.
MEMORY_UTILISATION = 0.5


@dataclass(frozen=True)
class NodeShape:
    """A kind of node: its allocatable cpu, memory and pods, and how often the plan draws it."""

    name: str
    cpu_millis: int
    memory_mib: int
    pods: int
    weight: float


NODE_SHAPES = (NodeShape("small", 4000, 16384, 40, 0.3),
               NodeShape("medium", 8000, 32768, 110, 0.5),
               NodeShape("large", 16000, 65536, 110, 0.2))
LARGE = NODE_SHAPES[-1]


@dataclass(frozen=True)
class WorkloadSpec:
    """What to run: ``nodes`` at the start, about ``pods`` pods created in all (by the
    controllers and directly), drawn from ``seed``. ``duration_seconds`` is the span of the
    plan's offsets (default: :data:`SECONDS_PER_POD` per pod, at least 20 s);
    ``target_utilisation`` the share of schedulable cpu the base workload requests."""

    nodes: int
    pods: int
    seed: int
    duration_seconds: float | None = None
    target_utilisation: tuple[float, float] = (0.65, 0.8)

    def __post_init__(self) -> None:
        if self.nodes < 3:
            raise ValueError(f"nodes: at least 3 (one a zone), not {self.nodes}")
        if self.pods < self.nodes + MIN_WORKLOAD_PODS:
            raise ValueError(f"pods: at least {self.nodes + MIN_WORKLOAD_PODS} for {self.nodes} "
                             f"nodes (the DaemonSet has one a node, the rest at least "
                             f"{MIN_WORKLOAD_PODS}), not {self.pods}")
        if self.duration_seconds is not None and self.duration_seconds <= 0:
            raise ValueError(f"duration_seconds: must be positive, not {self.duration_seconds}")
        low, high = self.target_utilisation
        if not 0 < low <= high < 1:
            raise ValueError(f"target_utilisation: need 0 < low <= high < 1, not "
                             f"{self.target_utilisation}")

    @property
    def duration(self) -> float:
        if self.duration_seconds is not None:
            return self.duration_seconds
        return max(MIN_DURATION_SECONDS, self.pods * SECONDS_PER_POD)


class Action(enum.StrEnum):
    """What a step does to its object."""

    CREATE = "create"
    DELETE = "delete"            # by name; a pod with ``grace_seconds``
    SCALE = "scale"              # a Deployment's replicas
    DELETE_POD_OF = "delete-pod-of"  # one live pod of a Deployment, picked when applied
    CORDON = "cordon"
    UNCORDON = "uncordon"
    TAINT = "taint"
    UNTAINT = "untaint"
    DRAIN = "drain"              # delete the node's pods but DaemonSet pods, with their grace


@dataclass(frozen=True, order=True)
class ObjectKey:
    """The object a step acts on."""

    kind: str
    namespace: str
    name: str


@dataclass(frozen=True)
class Step:
    """One action at ``at`` seconds from the start. ``body`` is the object to create;
    ``replicas`` a scale's target; ``grace_seconds`` a deletion's grace period (None: the
    pod's own); ``pick`` chooses the pod of a DELETE_POD_OF; ``taint`` a (un)taint's taint;
    ``purpose`` says why the plan has the step (``preemption-wave``, ``unschedulable``, ...)."""

    at: float
    action: Action
    target: ObjectKey
    purpose: str
    body: dict[str, Any] | None = None
    replicas: int | None = None
    grace_seconds: int | None = None
    pick: int = 0
    taint: dict[str, str] | None = None

    def describe(self) -> str:
        where = f"{self.target.namespace}/" if self.target.namespace else ""
        return f"{self.action} {self.target.kind} {where}{self.target.name}"


# -- the plan ---------------------------------------------------------------------------------

@dataclass
class _Deployment:
    namespace: str
    name: str
    flavour: str
    replicas: int
    shape: PodShape
    cap: int | None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey("Deployment", self.namespace, self.name)


@dataclass
class _Nodes:
    """The planned nodes: name -> (shape, gpu)."""

    shapes: dict[str, NodeShape] = field(default_factory=dict)
    gpu: set[str] = field(default_factory=set)

    def general(self) -> list[str]:
        return [name for name in self.shapes if name not in self.gpu]

    def cpu(self, names: list[str]) -> int:
        return sum(self.shapes[name].cpu_millis for name in names)

    def memory(self, names: list[str]) -> int:
        return sum(self.shapes[name].memory_mib for name in names)


class _Planner:
    """Builds one plan; every draw comes from ``rng`` in a fixed order."""

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.duration = spec.duration
        self.steps: list[Step] = []
        self.nodes = _Nodes()
        self.deployments: list[_Deployment] = []
        self.daemon_pods = spec.nodes
        self.budget = spec.pods - spec.nodes  # pods left after the DaemonSet's

    def at(self, low: float, high: float) -> float:
        """A time between the fractions ``low`` and ``high`` of the duration."""
        return round(self.rng.uniform(low, high) * self.duration, 3)

    def add(self, at: float, action: Action, target: ObjectKey, purpose: str,
            **fields: Any) -> None:
        self.steps.append(Step(at, action, target, purpose, **fields))

    def create(self, at: float, body: dict[str, Any], purpose: str) -> None:
        metadata = body["metadata"]
        self.add(at, Action.CREATE, ObjectKey(body["kind"], metadata.get("namespace", ""),
                                              metadata["name"]), purpose, body=body)

    def build(self) -> list[Step]:
        self.setup()
        self.initial_nodes()
        self.daemonset()
        self.base_workload()
        self.churn()
        return sorted(self.steps, key=lambda step: step.at)

    # -- setup and nodes --------------------------------------------------------------
    def setup(self) -> None:
        for name in NAMESPACES:
            self.create(0.0, namespace_object(name), "setup")
        for name, (value, policy) in PRIORITY_CLASSES.items():
            self.create(0.0, priority_class_object(name, value, policy), "setup")

    def node_body(self, index: int, gpu: bool) -> dict[str, Any]:
        name = f"node-{index:04d}"
        shape = LARGE if gpu else self.rng.choices(
            NODE_SHAPES, weights=[s.weight for s in NODE_SHAPES])[0]
        labels = {ZONE_LABEL: ZONES[index % len(ZONES)],
                  "topology.kubernetes.io/region": "region-1", "node.kaudit.test/shape":
                  shape.name}
        if self.rng.random() < 0.4:
            labels["disktype"] = "ssd"
        taints = None
        if gpu:
            labels["dedicated"] = "gpu"
            taints = [dict(GPU_TAINT)]
            self.nodes.gpu.add(name)
        self.nodes.shapes[name] = shape
        return kwok.node_object(name, f"{shape.cpu_millis}m", f"{shape.memory_mib}Mi",
                                shape.pods, labels=labels, taints=taints)

    def initial_nodes(self) -> None:
        gpu_count = max(1, self.spec.nodes // 10)
        gpu_indexes = set(self.rng.sample(range(self.spec.nodes), gpu_count))
        for index in range(self.spec.nodes):
            self.create(0.0, self.node_body(index, index in gpu_indexes), "initial-node")

    def daemonset(self) -> None:
        shape = PodShape(50, 64, "high", 1,
                         scheduling={"tolerations": [{"operator": "Exists",
                                                      "effect": "NoSchedule"}]})
        self.create(0.02 * self.duration, daemonset_object(INFRA_NAMESPACE, "node-agent",
                                                           shape), "daemonset")

    # -- the base workload --------------------------------------------------------------
    def pod_shape(self, scheduling: dict[str, Any], host_port: bool = False,
                  priority: str | None = None) -> PodShape:
        factor = self.rng.choice((0.25, 0.5, 0.5, 1.0, 1.0, 1.0, 1.5, 2.0, 3.0))
        cpu = round(1000 * factor)
        memory = round(cpu * self.rng.choice((1.0, 2.0, 2.0, 4.0)))
        if priority is None:
            priority = self.rng.choice(("low", "low", "mid", None))
        return PodShape(cpu, memory, priority, self.rng.choice((0, 1, 2, 3, 5)), host_port,
                        scheduling)

    def base_workload(self) -> None:
        """Deployments, their PDBs, Jobs and bare pods, requests scaled to the target load."""
        deploy_pods = round(self.budget * 0.55)
        job_pods = round(self.budget * 0.12)
        bare_pods = max(2, round(self.budget * 0.05))
        gpu_cpu = self.nodes.cpu(sorted(self.nodes.gpu))
        general_nodes = len(self.nodes.general())
        count = max(len(FLAVOURS), deploy_pods // 12)
        flavours = list(FLAVOURS) + [self.rng.choice(FLAVOURS[1:]) for _ in
                                     range(count - len(FLAVOURS))]
        per_deployment = self.split(deploy_pods, len(flavours))
        for index, (flavour, replicas) in enumerate(zip(flavours, per_deployment, strict=True)):
            namespace = self.rng.choice(APP_NAMESPACES)
            name = f"{flavour}-{index:03d}"
            cap_share = CAPPED_FLAVOURS.get(flavour)
            cap = max(1, int(general_nodes * cap_share)) if cap_share else None
            if flavour == "gpu":
                cap = max(1, len(self.nodes.gpu) * 3)
            replicas = min(replicas, cap) if cap else replicas
            shape = self.pod_shape(flavour_scheduling(flavour, name, self.rng),
                                   host_port=flavour == "host-port")
            self.deployments.append(_Deployment(namespace, name, flavour, max(1, replicas),
                                                shape, cap))
        jobs = self.jobs(job_pods)
        bare = [(f"bare-{i:03d}", self.pod_shape({})) for i in range(bare_pods)]
        # Scale every request so the base workload asks for the target share of the cpu
        # (and half the memory) of the nodes it may use (the DaemonSet's 50m a node aside).
        general = self.nodes.general()
        shapes = ([(d.replicas, d.shape) for d in self.deployments if d.flavour != "gpu"]
                  + [(parallel, shape) for _, _, parallel, shape, _ in jobs]
                  + [(1, shape) for _, shape in bare])
        cpu_factor = (self.rng.uniform(*self.spec.target_utilisation)
                      * (self.nodes.cpu(general) - 50 * len(general))
                      / sum(n * shape.cpu_millis for n, shape in shapes))
        memory_factor = (MEMORY_UTILISATION * self.nodes.memory(general)
                         / sum(n * shape.memory_mib for n, shape in shapes))
        for deployment in self.deployments:
            if deployment.flavour == "gpu":
                share = 0.7 * (gpu_cpu - 50 * len(self.nodes.gpu)) / deployment.replicas
                deployment.shape = deployment.shape.scaled(share / deployment.shape.cpu_millis,
                                                           memory_factor)
            else:
                deployment.shape = deployment.shape.scaled(cpu_factor, memory_factor)
        jobs = [(name, completions, parallel, shape.scaled(cpu_factor, memory_factor), run)
                for name, completions, parallel, shape, run in jobs]
        bare = [(name, shape.scaled(cpu_factor, memory_factor)) for name, shape in bare]
        self.emit_base(jobs, bare)

    def split(self, total: int, parts: int) -> list[int]:
        """``total`` over ``parts`` unevenly (each at least 1)."""
        weights = [self.rng.uniform(0.3, 1.7) for _ in range(parts)]
        scale = sum(weights)
        return [max(1, round(total * w / scale)) for w in weights]

    def jobs(self, pods: int) -> list[tuple[str, int, int, PodShape, int]]:
        count = max(2, pods // 10)
        result = []
        for index, completions in enumerate(self.split(pods, count)):
            parallelism = max(1, min(completions, self.rng.choice((1, 2, 4, completions))))
            scheduling = self.rng.choice(({}, {"nodeSelector": {"disktype": "ssd"}},
                                          {"affinity": zone_affinity([self.rng.choice(ZONES)])}))
            result.append((f"job-{index:03d}", completions, parallelism,
                           self.pod_shape(scheduling), self.rng.randint(5, 15)))
        return result

    def emit_base(self, jobs: list[tuple[str, int, int, PodShape, int]],
                  bare: list[tuple[str, PodShape]]) -> None:
        for deployment in self.deployments:
            at = self.at(0.03, 0.3) if deployment.flavour != "cache" else 0.03 * self.duration
            self.create(at, deployment_object(deployment.namespace, deployment.name,
                                              deployment.replicas, deployment.shape,
                                              {"tier": "cache"} if deployment.flavour == "cache"
                                              else {}), "deployment")
            if deployment.replicas >= 3 and self.rng.random() < 0.4:
                budgets: list[dict[str, int | str]] = [
                    {"minAvailable": deployment.replicas - 1}, {"maxUnavailable": 1},
                    {"maxUnavailable": "50%"}]
                budget = self.rng.choice(budgets)
                self.create(at + 0.5, pdb_object(deployment.namespace, deployment.name, budget),
                            "pdb")
        for name, completions, parallelism, shape, run_seconds in jobs:
            self.create(self.at(0.05, 0.6), job_object(
                BATCH_NAMESPACE, name, completions, parallelism, shape, run_seconds), "job")
        for name, shape in bare:
            self.create(self.at(0.05, 0.3), pod_object(
                APP_NAMESPACES[1], name, shape, {"app": "bare"}), "bare-pod")

    # -- churn ----------------------------------------------------------------------------
    def churn(self) -> None:
        self.scaling()
        self.pod_deletions()
        self.preemption_waves()
        self.node_churn()
        self.unschedulable()

    def scalable(self) -> list[_Deployment]:
        return [d for d in self.deployments if d.flavour not in ("gpu", "cache")]

    def scaling(self) -> None:
        """Scale-ups adding ~8 % of the pods, and as many scale-downs."""
        events = max(2, round(self.budget * 0.08 / 3))
        times = sorted(self.at(0.35, 0.85) for _ in range(2 * events))
        for index, at in enumerate(times):
            deployment = self.rng.choice(self.scalable())
            if index % 2 == 0:
                step = self.rng.randint(1, 5)
                if deployment.cap is not None:
                    step = min(step, max(0, deployment.cap - deployment.replicas))
                target, purpose = deployment.replicas + step, "scale-up"
            else:
                target = max(0, deployment.replicas - self.rng.randint(1, 4))
                purpose = "scale-down"
            if target == deployment.replicas:
                continue
            deployment.replicas = target
            self.add(at, Action.SCALE, deployment.key, purpose, replicas=target)

    def pod_deletions(self) -> None:
        """~5 % of the pods deleted directly: a Deployment's pod (its ReplicaSet makes
        another) or a bare pod, with a grace period of 0 or a few seconds."""
        events = max(2, round(self.budget * 0.05))
        bare = sorted(step.target for step in self.steps if step.purpose == "bare-pod")
        for index in range(events):
            grace = self.rng.choice((0, 0, 1, 3, 5))
            at = self.at(0.35, 0.85)
            if index % 3 == 2 and bare:
                target = bare.pop(self.rng.randrange(len(bare)))
                self.add(at, Action.DELETE, target, "pod-deletion", grace_seconds=grace)
            else:
                deployment = self.rng.choice(self.scalable())
                self.add(at, Action.DELETE_POD_OF, deployment.key, "pod-deletion",
                         grace_seconds=grace, pick=self.rng.randrange(1 << 16))

    def preemption_waves(self) -> None:
        """High-priority workloads with pods of half a medium node's cpu or more, which the
        cluster at its target load cannot hold without evicting lower-priority pods; each
        is removed a while later, so the pods it evicted can come back. One wave's class has
        ``preemptionPolicy: Never``: its pods wait instead."""
        waves = max(2, self.spec.pods // 1000)
        pods_per_wave = max(2, round(self.budget * 0.10 / waves))
        for index in range(waves):
            start = (0.4 + 0.4 * index / waves) * self.duration
            cpu_millis = round(NODE_SHAPES[1].cpu_millis * self.rng.uniform(0.5, 0.7) / 10) * 10
            priority = "high-no-preempt" if index == 1 else "high"
            shape = PodShape(cpu_millis, cpu_millis, priority, self.rng.choice((1, 3)),
                             scheduling={"affinity": anti_affinity(f"wave-{index:02d}",
                                                                   required=False)})
            if index % 2 == 0:
                body = deployment_object(APP_NAMESPACES[0], f"wave-{index:02d}",
                                         pods_per_wave, shape, {"wave": str(index)})
            else:
                body = job_object(BATCH_NAMESPACE, f"wave-{index:02d}", pods_per_wave,
                                  pods_per_wave, shape, self.rng.randint(8, 15))
            self.create(start, body, "preemption-wave")
            if body["kind"] == "Deployment":
                self.add(start + 0.12 * self.duration, Action.DELETE,
                         ObjectKey("Deployment", APP_NAMESPACES[0], body["metadata"]["name"]),
                         "preemption-wave-end")

    def node_churn(self) -> None:
        """A tenth of the nodes each (at least one): cordoned then uncordoned, tainted then
        untainted, drained and removed; as many new nodes added."""
        count = max(1, self.spec.nodes // 10)
        general = self.nodes.general()
        chosen = self.rng.sample(general, min(len(general) - 1, 3 * count))
        cordoned, tainted, removed = (chosen[i * count:(i + 1) * count] for i in range(3))
        for name in cordoned:
            at = self.at(0.35, 0.6)
            key = ObjectKey("Node", "", name)
            self.add(at, Action.CORDON, key, "cordon")
            self.add(at + self.at(0.05, 0.2), Action.UNCORDON, key, "uncordon")
        for name in tainted:
            at = self.at(0.35, 0.6)
            key = ObjectKey("Node", "", name)
            self.add(at, Action.TAINT, key, "taint", taint=dict(MAINTENANCE_TAINT))
            self.add(at + self.at(0.05, 0.2), Action.UNTAINT, key, "untaint",
                     taint=dict(MAINTENANCE_TAINT))
        for name in removed:
            at = self.at(0.4, 0.7)
            key = ObjectKey("Node", "", name)
            self.add(at, Action.CORDON, key, "node-removal")
            self.add(at + 1.0, Action.DRAIN, key, "node-removal")
            # After the longest grace period (5 s): what is left is the DaemonSet's pod.
            self.add(at + 7.0, Action.DELETE, key, "node-removal")
        for offset in range(count):
            index = self.spec.nodes + offset
            self.create(self.at(0.35, 0.75), self.node_body(index, gpu=False), "node-added")
            self.daemon_pods += 1

    def unschedulable(self) -> None:
        """Pods that fit nowhere: more cpu than any node has, or a label no node carries."""
        count = max(2, round(self.budget * 0.01))
        for index in range(count):
            if index % 2 == 0:
                shape = PodShape(2 * LARGE.cpu_millis, 1024, "mid", 0)
            else:
                shape = PodShape(100, 128, "low", 0,
                                 scheduling={"nodeSelector": {"disktype": "nvme"}})
            self.create(self.at(0.3, 0.8), pod_object(APP_NAMESPACES[1], f"unfit-{index:03d}",
                                                      shape, {"app": "unfit"}), "unschedulable")


def plan(spec: WorkloadSpec) -> list[Step]:
    """The workload of ``spec`` as steps in time order, drawn from its seed alone."""
    return _Planner(spec).build()


def composition(steps: list[Step]) -> Counter[str]:
    """How many steps of each action and kind (``create Deployment``) and purpose
    (``purpose preemption-wave``)."""
    counts: Counter[str] = Counter()
    for step in steps:
        counts[f"{step.action} {step.target.kind}"] += 1
        counts[f"purpose {step.purpose}"] += 1
    return counts


def planned_pods(steps: list[Step]) -> int:
    """The pods the plan's creations and scale-ups make if every pod ran once: replicas
    created and added, Job completions, bare pods and the DaemonSet's pod on each node."""
    replicas: dict[ObjectKey, int] = {}
    total = nodes = 0
    daemonsets = 0
    for step in steps:
        body = step.body or {}
        if step.action == Action.CREATE:
            kind = step.target.kind
            if kind == "Node":
                nodes += 1
            elif kind == "DaemonSet":
                daemonsets += 1
            elif kind == "Deployment":
                replicas[step.target] = body["spec"]["replicas"]
                total += body["spec"]["replicas"]
            elif kind == "Job":
                total += body["spec"]["completions"]
            elif kind == "Pod":
                total += 1
        elif step.action == Action.SCALE and step.replicas is not None:
            total += max(0, step.replicas - replicas[step.target])
            replicas[step.target] = step.replicas
        elif step.action == Action.DELETE_POD_OF:
            total += 1  # the ReplicaSet's replacement
    return total + daemonsets * nodes


# -- the driver ---------------------------------------------------------------------------------

#: kind -> (API prefix, resource, namespaced)
RESOURCES = {
    "Namespace": ("/api/v1", "namespaces", False),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
}
MERGE_PATCH = "application/merge-patch+json"
#: How long the controller manager may take to give a new namespace its ServiceAccount.
SERVICE_ACCOUNT_TIMEOUT = 60.0


def resource_path(kind: str, namespace: str = "", name: str = "") -> str:
    prefix, resource, namespaced = RESOURCES[kind]
    path = f"{prefix}/namespaces/{namespace}/{resource}" if namespaced else \
        f"{prefix}/{resource}"
    return f"{path}/{name}" if name else path


class ApiError(RuntimeError):
    """A request the API server refused: its status and message."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path}: {status} {message}")
        self.status = status


class Rest:
    """Plain JSON requests through the official client's connection (its TLS and auth)."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    def request(self, method: str, path: str, body: Any = None,
                query: list[tuple[str, str]] | None = None,
                content_type: str = "application/json") -> Any:
        serialized = self.api_client.param_serialize(
            method=method, resource_path=path, query_params=query,
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body, auth_settings=["BearerToken"])
        response = self.api_client.call_api(*serialized, _request_timeout=60)
        data = response.read()
        if not 200 <= response.status < 300:
            try:
                message = json.loads(data).get("message", "")
            except ValueError:
                message = data[:300].decode(errors="replace")
            raise ApiError(method, path, response.status, message)
        return json.loads(data) if data else None


def api_client(kubeconfig: Path, pool_size: int = 32) -> Any:
    """An ``ApiClient`` for ``kubeconfig`` with room for ``pool_size`` connections at once."""
    from kubernetes import client, config

    configuration = client.Configuration()
    load: Callable[..., None] = config.load_kube_config
    load(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = pool_size
    return client.ApiClient(configuration)


@dataclass
class PodCensus:
    """The pods at one moment: how many are bound, unschedulable, waiting, done."""

    bound: int = 0
    unschedulable: int = 0
    waiting: int = 0
    succeeded: int = 0
    signature: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of(cls, pods: list[dict[str, Any]]) -> PodCensus:
        census = cls(signature=frozenset((p["metadata"]["uid"], p["metadata"]["resourceVersion"])
                                         for p in pods))
        for pod in pods:
            status = pod.get("status") or {}
            if status.get("phase") == "Succeeded":
                census.succeeded += 1
            if (pod.get("spec") or {}).get("nodeName"):
                census.bound += 1
            elif any(c.get("type") == "PodScheduled" and c.get("status") == "False"
                     and c.get("reason") == "Unschedulable"
                     for c in status.get("conditions") or []):
                census.unschedulable += 1
            else:
                census.waiting += 1
        return census


@dataclass
class WorkloadSummary:
    """What a run did: steps applied by action and kind, deletions of objects already gone,
    failed steps (with the API server's message), the pods at the end, whether the cluster
    settled, and the wall time of applying the plan and of the whole run."""

    applied: dict[str, int]
    already_gone: int
    failures: list[str]
    pods_bound: int
    pods_unschedulable: int
    pods_waiting: int
    pods_succeeded: int
    settled: bool
    apply_seconds: float
    wall_seconds: float


Progress = Callable[[str], None]


class Driver:
    """Applies a :class:`WorkloadSpec`'s plan to the cluster ``api_client`` reaches."""

    def __init__(self, api_client: Any, spec: WorkloadSpec, workers: int = 16,
                 quiet_seconds: float = 5.0, settle_timeout: float | None = None,
                 time_scale: float = 1.0, poll_seconds: float = 1.0) -> None:
        self.rest = Rest(api_client)
        self.spec = spec
        self.steps = plan(spec)
        self.workers = workers
        self.quiet_seconds = quiet_seconds
        self.time_scale = time_scale  # wall seconds a plan second
        self.poll_seconds = poll_seconds
        self.settle_timeout = settle_timeout if settle_timeout is not None else \
            max(120.0, spec.duration)
        self._lock = threading.Lock()
        self._applied: Counter[str] = Counter()
        self._already_gone = 0
        self._failures: list[str] = []

    def run(self, progress: Progress | None = None) -> WorkloadSummary:
        say = progress or (lambda message: None)
        started = time.monotonic()
        self.apply(say)
        applied_at = time.monotonic()
        settled, census = self.settle(say)
        return WorkloadSummary(
            dict(self._applied), self._already_gone, list(self._failures), census.bound,
            census.unschedulable, census.waiting, census.succeeded, settled,
            round(applied_at - started, 3), round(time.monotonic() - started, 3))

    # -- applying the plan -------------------------------------------------------------
    def apply(self, say: Progress) -> None:
        setup = [step for step in self.steps if step.purpose == "setup"]
        for step in setup:  # namespaces and classes before anything refers to them
            self.apply_step(step)
        self.wait_for_service_accounts([step.target.name for step in setup
                                        if step.target.kind == "Namespace"])
        pending: dict[ObjectKey, Future[None]] = {}
        started = time.monotonic()
        last_report = started
        with ThreadPoolExecutor(self.workers, thread_name_prefix="workload") as pool:
            for index, step in enumerate(s for s in self.steps if s.purpose != "setup"):
                delay = started + step.at * self.time_scale - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                earlier = pending.get(step.target)
                if earlier is not None:
                    earlier.result()  # steps on one object keep their order
                pending[step.target] = pool.submit(self.apply_step, step)
                if time.monotonic() - last_report >= 5.0:
                    last_report = time.monotonic()
                    say(f"t={last_report - started:.0f}s: {index + 1 + len(setup)}/"
                        f"{len(self.steps)} steps submitted")
        say(f"applied {len(self.steps)} steps in {time.monotonic() - started:.1f}s "
            f"({len(self._failures)} failed)")

    def wait_for_service_accounts(self, namespaces: list[str]) -> None:
        """Wait until each namespace has its ``default`` ServiceAccount: until then the
        ServiceAccount admission plugin refuses the namespace's pods."""
        deadline = time.monotonic() + SERVICE_ACCOUNT_TIMEOUT
        for namespace in namespaces:
            path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
            while True:
                try:
                    self.rest.request("GET", path)
                    break
                except ApiError as error:
                    if error.status != 404 or time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

    def apply_step(self, step: Step) -> None:
        try:
            self.perform(step)
        except ApiError as error:
            with self._lock:
                if error.status == 404 and step.action != Action.CREATE:
                    self._already_gone += 1
                else:
                    self._failures.append(f"{step.describe()} at {step.at}s: {error}")
            return
        except Exception as error:  # a broken connection fails the step, not the run
            with self._lock:
                self._failures.append(f"{step.describe()} at {step.at}s: "
                                      f"{type(error).__name__}: {error}")
            return
        with self._lock:
            self._applied[f"{step.action} {step.target.kind}"] += 1

    def perform(self, step: Step) -> None:
        key, rest = step.target, self.rest
        path = resource_path(key.kind, key.namespace, key.name)
        if step.action == Action.CREATE:
            rest.request("POST", resource_path(key.kind, key.namespace), step.body)
        elif step.action == Action.DELETE:
            self.delete(path, step.grace_seconds)
            if key.kind == "Node":
                self.delete_pods_on(key.name, grace=0, daemon_pods=True)
        elif step.action == Action.SCALE:
            rest.request("PATCH", path, {"spec": {"replicas": step.replicas}},
                         content_type=MERGE_PATCH)
        elif step.action == Action.DELETE_POD_OF:
            pods = self.live_pods(key.namespace, f"app={key.name}")
            if pods:
                name = sorted(p["metadata"]["name"] for p in pods)[step.pick % len(pods)]
                self.delete(resource_path("Pod", key.namespace, name), step.grace_seconds)
        elif step.action in (Action.CORDON, Action.UNCORDON):
            rest.request("PATCH", path, {"spec": {"unschedulable":
                                                  step.action == Action.CORDON}},
                         content_type=MERGE_PATCH)
        elif step.action in (Action.TAINT, Action.UNTAINT):
            self.set_taint(path, step.taint or {}, step.action == Action.TAINT)
        elif step.action == Action.DRAIN:
            self.delete_pods_on(key.name, grace=None, daemon_pods=False)

    def delete(self, path: str, grace: int | None) -> None:
        query = [("gracePeriodSeconds", str(grace))] if grace is not None else None
        self.rest.request("DELETE", path, query=query)

    def set_taint(self, path: str, taint: dict[str, str], present: bool) -> None:
        # Node.spec.taints has no patch merge key: the whole list is written back.
        node = self.rest.request("GET", path)
        taints = [t for t in node["spec"].get("taints") or []
                  if (t.get("key"), t.get("effect")) != (taint["key"], taint["effect"])]
        if present:
            taints.append(taint)
        self.rest.request("PATCH", path, {"metadata": {"resourceVersion":
                                                       node["metadata"]["resourceVersion"]},
                                          "spec": {"taints": taints}},
                          content_type=MERGE_PATCH)

    def live_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        answer = self.rest.request("GET", resource_path("Pod", namespace),
                                   query=[("labelSelector", selector)])
        return [p for p in answer["items"] if not p["metadata"].get("deletionTimestamp")]

    def delete_pods_on(self, node: str, grace: int | None, daemon_pods: bool) -> None:
        answer = self.rest.request("GET", "/api/v1/pods",
                                   query=[("fieldSelector", f"spec.nodeName={node}")])
        for pod in answer["items"]:
            owners = pod["metadata"].get("ownerReferences") or []
            if not daemon_pods and any(o.get("kind") == "DaemonSet" for o in owners):
                continue
            metadata = pod["metadata"]
            try:
                self.delete(resource_path("Pod", metadata["namespace"], metadata["name"]),
                            grace)
            except ApiError as error:
                if error.status != 404:
                    raise

    # -- settling ----------------------------------------------------------------------
    def census(self) -> PodCensus:
        return PodCensus.of(self.rest.request("GET", "/api/v1/pods")["items"])

    def settle(self, say: Progress) -> tuple[bool, PodCensus]:
        """Wait until every pod is bound or unschedulable and none changed for
        ``quiet_seconds``, or ``settle_timeout`` passed; the last census."""
        deadline = time.monotonic() + self.settle_timeout
        census = self.census()
        quiet_since = time.monotonic()
        listing = 0.0
        while True:
            # Listing 20,000 pods takes a while: poll no more than half the time.
            time.sleep(max(self.poll_seconds, 2 * listing))
            listed = time.monotonic()
            latest = self.census()
            now = time.monotonic()
            listing = now - listed
            if latest.signature != census.signature or latest.waiting:
                quiet_since = now
            census = latest
            if now - quiet_since >= self.quiet_seconds:
                say(f"settled: {census.bound} pods bound, {census.unschedulable} unschedulable")
                return True, census
            if now > deadline:
                say(f"not settled within {self.settle_timeout:.0f}s: {census.waiting} pods "
                    "waiting")
                return False, census
