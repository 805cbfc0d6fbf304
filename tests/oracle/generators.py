"""Random, realistic scheduling scenarios for the differential tests against upstream's code.

Every generator is a pure function of a :class:`random.Random`: the same seed gives the same
scenario, byte for byte, so a failing case is reproduced from its seed alone
(:func:`cycle_scenario`, :func:`sequence_scenario`).

A *cycle* scenario is a cluster (Nodes, bound Pods, PriorityClasses, PodDisruptionBudgets,
owners, volumes, DRA objects, pending pods nominated to a node) and one incoming pod; a
*sequence* scenario is a cluster and 5 to 40 pods created one after another. Their shapes are
the oracle's protocol (``cycle``: ``{"id", "objects", "pod", "config"}``; ``sequence``:
``{"objects", "pending", "config", "quietSeconds", "prefer", "syncPreemption"}``).

Objects are what the API server would store: each has a uid and a creation time; a pod's
``spec.priority`` is its PriorityClass's value (the Priority admission plugin); a pod's
``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into the label selector as the pod
strategy does at creation (``pkg/registry/core/pod/strategy.go``, Kubernetes v1.34:
``mutatePodAffinity``, ``mutateTopologySpreadConstraints``); limits never undercut requests and
extended resources have equal requests and limits; tolerations of ``Exists`` carry no value and
``tolerationSeconds`` only goes with ``NoExecute``; a node's taints are unique by key and effect.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from kaudit.quantity import parse_quantity

JSON = dict[str, Any]

APPS = ["web", "db", "cache", "api", "batch", "worker"]
NAMESPACES: dict[str, dict[str, str]] = {
    "default": {"team": "core"}, "team-a": {"team": "a", "env": "prod"},
    "team-b": {"team": "b", "env": "dev"}}
IMAGES = [("nginx:1.25", 70_000_000), ("redis:7", 120_000_000), ("postgres:16", 450_000_000),
          ("busybox:1.36", 4_000_000), ("python:3.12", 1_000_000_000),
          ("cuda:12.2", 3_500_000_000)]
ZONES = ["zone-a", "zone-b", "zone-c", "zone-d"]
REGIONS = ["region-1", "region-2"]
PRIORITY_CLASSES = [("low", 0), ("batch", 100), ("standard", 1000), ("high", 10000),
                    ("critical", 100000)]
TAINT_KEYS = ["dedicated", "gpu", "maintenance", "spot"]
TAINT_VALUES = ["true", "infra", "ml"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
GPU = "nvidia.com/gpu"
CSI_DRIVER = "ebs.csi.aws.com"
DRA_DRIVER = "gpu.example.com"
DRA_API = "resource.k8s.io/v1"
ZONE_KEY = "topology.kubernetes.io/zone"
REGION_KEY = "topology.kubernetes.io/region"
HOST_KEY = "kubernetes.io/hostname"

#: Scheduler configurations a cycle scenario may carry, by name (None: the defaults).
CONFIGS: dict[str, str | None] = {
    "default": None,
    "most": """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
      - name: ImageLocality
        weight: 2
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 3
        - name: memory
          weight: 1
        - name: nvidia.com/gpu
          weight: 5
""",
    "rtcr": """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources:
        - name: cpu
          weight: 2
        - name: memory
          weight: 1
        requestedToCapacityRatio:
          shape:
          - utilization: 0
            score: 0
          - utilization: 50
            score: 7
          - utilization: 100
            score: 10
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 2
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
""",
    "spread": """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: PodTopologySpread
        weight: 5
      - name: InterPodAffinity
        weight: 3
  pluginConfig:
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 5
      ignorePreferredTermsOfExistingPods: false
  - name: NodeResourcesBalancedAllocation
    args:
      resources:
      - name: cpu
        weight: 1
      - name: memory
        weight: 1
      - name: nvidia.com/gpu
        weight: 1
""",
}


def q_cpu(milli: int) -> str:
    return f"{milli}m" if milli % 1000 else str(milli // 1000)


def q_mem(mebi: int) -> str:
    return f"{mebi}Mi"


class Gen:
    """The state one scenario is generated with: the random source, a uid counter and a
    clock for distinct creation and start times."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng
        self.serial = 0
        self.seconds = 0

    # ---------------------------------------------------------------- identities and times

    def uid(self) -> str:
        self.serial += 1
        return f"{self.serial:08x}-0000-4000-8000-{self.r.getrandbits(48):012x}"

    def stamp(self, gap: int = 0) -> str:
        """A time after every earlier one (distinct times keep upstream's victim order and
        node pick free of ties that chance would decide)."""
        self.seconds += 1 + gap
        s = self.seconds
        return f"2024-01-01T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z"

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    # ---------------------------------------------------------------- cluster-wide objects

    def namespaces(self) -> list[JSON]:
        return [{"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": ns, "uid": self.uid(), "labels": {
                     "kubernetes.io/metadata.name": ns, **labels}}}
                for ns, labels in NAMESPACES.items()]

    def priority_classes(self) -> list[JSON]:
        return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                 "metadata": {"name": name, "uid": self.uid()}, "value": value,
                 "preemptionPolicy": "PreemptLowerPriority"}
                for name, value in PRIORITY_CLASSES]

    # ---------------------------------------------------------------- nodes

    def node(self, i: int, zones: list[str], *, gpu: float = 0.15, taint: float = 0.15,
             cordon: float = 0.06, images: float = 0.5, small: bool = False) -> JSON:
        r = self.r
        name = f"node-{i:04d}"
        zone = zones[i % len(zones)] if self.chance(0.7) else r.choice(zones)
        labels = {HOST_KEY: name, ZONE_KEY: zone,
                  REGION_KEY: REGIONS[ZONES.index(zone) // 2],
                  "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        if self.chance(0.5):
            labels["disktype"] = r.choice(["ssd", "hdd"])
        if self.chance(0.3):
            labels["tier"] = r.choice(["frontend", "backend", "batch"])
        if self.chance(0.6):
            labels["example.com/cores"] = str(r.choice([2, 4, 8, 16, 32]))
        cpu = r.choice([2000, 4000, 4000, 8000] if small
                       else [2000, 4000, 8000, 16000, 32000, 7800, 3920])
        mem = r.choice([4096, 8192, 16384] if small else [4096, 8192, 16384, 32768, 15400])
        pods = r.choice([110, 110, 110, 6] if small else [110, 110, 110, 30, 12])
        alloc = {"cpu": q_cpu(cpu), "memory": q_mem(mem), "pods": str(pods),
                 "ephemeral-storage": "100Gi"}
        if self.chance(gpu):
            alloc[GPU] = str(r.choice([1, 2, 4, 8]))
            labels["accelerator"] = "nvidia"
        spec: JSON = {}
        if self.chance(taint):
            taints: list[JSON] = []
            for _ in range(r.choice([1, 1, 2])):
                t: JSON = {"key": r.choice(TAINT_KEYS), "effect": r.choice(EFFECTS)}
                if self.chance(0.7):
                    t["value"] = r.choice(TAINT_VALUES)
                if all((o["key"], o["effect"]) != (t["key"], t["effect"]) for o in taints):
                    taints.append(t)
            spec["taints"] = taints
        if self.chance(cordon):
            spec["unschedulable"] = True
            spec.setdefault("taints", []).append(
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
        status: JSON = {"capacity": dict(alloc), "allocatable": alloc,
                        "conditions": [{"type": "Ready", "status": "True"}]}
        if self.chance(images):
            status["images"] = [{"names": [f"docker.io/library/{img}", img], "sizeBytes": size}
                                for img, size in r.sample(IMAGES, r.randint(1, 4))]
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": self.uid(), "labels": labels,
                             "creationTimestamp": "2023-12-31T00:00:00Z"},
                "spec": spec, "status": status}

    # ---------------------------------------------------------------- pod parts

    def requests(self, big: bool = False) -> JSON:
        r = self.r
        if self.chance(0.12):
            return {}
        req = {"cpu": q_cpu(r.choice([50, 100, 250, 500, 1000, 2000]
                                     + ([4000, 8000, 12000] if big else []))),
               "memory": q_mem(r.choice([64, 128, 256, 512, 1024, 2048]
                                        + ([8192, 16384] if big else [])))}
        if self.chance(0.25):
            del req[r.choice(["cpu", "memory"])]
        resources: JSON = {"requests": req}
        if self.chance(0.3):
            resources["limits"] = dict(req)
        return resources

    def containers(self, *, big: bool = False, gpu: int = 0, host_port: int | None = None,
                   image: str | None = None) -> JSON:
        r = self.r
        containers = []
        for k in range(r.choice([1, 1, 1, 2])):
            c: JSON = {"name": f"c{k}", "image": image or r.choice(IMAGES)[0],
                       "resources": self.requests(big)}
            if gpu and k == 0:
                c["resources"].setdefault("requests", {})[GPU] = str(gpu)
                c["resources"].setdefault("limits", {})[GPU] = str(gpu)
            if host_port and k == 0:
                port: JSON = {"containerPort": 8080, "hostPort": host_port,
                              "protocol": r.choice(["TCP", "TCP", "UDP"])}
                if self.chance(0.2):
                    port["hostIP"] = r.choice(["127.0.0.1", "10.0.0.1"])
                c["ports"] = [port]
            containers.append(c)
        spec: JSON = {"containers": containers}
        if self.chance(0.12):
            spec["initContainers"] = [{"name": "init", "image": "busybox:1.36",
                                       "resources": self.requests(big)}]
        if self.chance(0.08):
            spec.setdefault("initContainers", []).append(
                {"name": "sidecar", "image": "busybox:1.36", "restartPolicy": "Always",
                 "resources": self.requests()})
        if self.chance(0.06):
            spec["overhead"] = {"cpu": "100m", "memory": "64Mi"}
        return spec

    def label_selector(self, app: str) -> JSON:
        r = self.r
        c = r.random()
        if c < 0.6:
            return {"matchLabels": {"app": app}}
        if c < 0.85:
            return {"matchExpressions": [{"key": "app", "operator": r.choice(["In", "NotIn"]),
                                          "values": sorted(r.sample(APPS, 2))}]}
        return {"matchExpressions": [{"key": "tier", "operator": r.choice(
            ["Exists", "DoesNotExist"])}]}

    def affinity_term(self, keys: list[str], labels: dict[str, str]) -> JSON:
        r = self.r
        term: JSON = {"labelSelector": self.label_selector(r.choice(APPS)),
                      "topologyKey": r.choice(keys)}
        c = r.random()
        if c < 0.15:
            term["namespaceSelector"] = r.choice([{}, {"matchLabels": {"team": "a"}},
                                                  {"matchExpressions": [{
                                                      "key": "env", "operator": "Exists"}]}])
        elif c < 0.3:
            term["namespaces"] = sorted(r.sample(list(NAMESPACES), r.choice([1, 2])))
        uses = {e["key"] for e in term["labelSelector"].get("matchExpressions", [])}
        if "pod-template-hash" in labels and "pod-template-hash" not in uses and self.chance(0.1):
            term[r.choice(["matchLabelKeys", "mismatchLabelKeys"])] = ["pod-template-hash"]
        return term

    def pod_affinity(self, labels: dict[str, str], p: float) -> JSON:
        r = self.r
        affinity: JSON = {}
        keys = [HOST_KEY, ZONE_KEY, ZONE_KEY, REGION_KEY]
        for kind in ("podAffinity", "podAntiAffinity"):
            if not self.chance(p):
                continue
            block: JSON = {}
            if self.chance(0.5):
                block["requiredDuringSchedulingIgnoredDuringExecution"] = [
                    self.affinity_term(keys, labels) for _ in range(r.choice([1, 1, 2]))]
            if self.chance(0.7) or not block:
                block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": r.choice([1, 10, 50, 100]),
                     "podAffinityTerm": self.affinity_term(keys, labels)}
                    for _ in range(r.choice([1, 2]))]
            affinity[kind] = block
        return affinity

    def node_expression(self, zones: list[str], nodes: int) -> JSON:
        r = self.r
        c = r.random()
        if c < 0.25:
            return {"key": "disktype", "operator": r.choice(["In", "NotIn"]),
                    "values": [r.choice(["ssd", "hdd"])]}
        if c < 0.4:
            return {"key": ZONE_KEY, "operator": r.choice(["In", "In", "NotIn"]),
                    "values": sorted(r.sample(zones, r.choice([1, min(2, len(zones))])))}
        if c < 0.5:
            return {"key": "accelerator", "operator": r.choice(["Exists", "DoesNotExist"])}
        if c < 0.65:
            return {"key": "example.com/cores", "operator": r.choice(["Gt", "Lt"]),
                    "values": [str(r.choice([2, 4, 8, 16]))]}
        if c < 0.75:
            return {"key": "tier", "operator": "In",
                    "values": [r.choice(["frontend", "backend", "batch"])]}
        if c < 0.85:
            return {"key": REGION_KEY, "operator": "In", "values": [r.choice(REGIONS)]}
        if c < 0.93:
            return {"key": HOST_KEY, "operator": "NotIn",
                    "values": [f"node-{r.randrange(nodes):04d}"]}
        return {"key": "nonexistent", "operator": r.choice(["Exists", "DoesNotExist"])}

    def node_affinity(self, zones: list[str], nodes: int) -> JSON:
        r = self.r
        block: JSON = {}
        if self.chance(0.5):
            terms = []
            for _ in range(r.choice([1, 1, 2])):
                term: JSON = {"matchExpressions": [self.node_expression(zones, nodes)
                                                   for _ in range(r.choice([1, 1, 2]))]}
                if self.chance(0.1):
                    term["matchFields"] = [{"key": "metadata.name",
                                            "operator": r.choice(["In", "NotIn"]),
                                            "values": [f"node-{r.randrange(nodes):04d}"]}]
                terms.append(term)
            block["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
        if self.chance(0.7) or not block:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": r.choice([1, 5, 20, 80, 100]),
                 "preference": {"matchExpressions": [self.node_expression(zones, nodes)]}}
                for _ in range(r.choice([1, 2, 3]))]
        return block

    def tolerations(self) -> list[JSON]:
        r = self.r
        out: list[JSON] = []
        for _ in range(r.choice([1, 1, 2, 3])):
            c = r.random()
            t: JSON
            if c < 0.2:
                t = ({"operator": "Exists"} if self.chance(0.25)
                     else {"key": r.choice(TAINT_KEYS), "operator": "Exists"})
            else:
                t = {"key": r.choice(TAINT_KEYS), "operator": "Equal",
                     "value": r.choice(TAINT_VALUES)}
            if self.chance(0.6):
                t["effect"] = r.choice(EFFECTS)
                if t["effect"] == "NoExecute" and self.chance(0.3):
                    t["tolerationSeconds"] = r.choice([0, 300])
            out.append(t)
        if self.chance(0.1):
            out.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                        "effect": "NoSchedule"})
        return out

    def spread(self, labels: dict[str, str]) -> list[JSON]:
        r = self.r
        constraints = []
        for key in r.sample([ZONE_KEY, HOST_KEY, REGION_KEY], r.choice([1, 1, 2])):
            c: JSON = {"maxSkew": r.choice([1, 1, 2, 3]), "topologyKey": key,
                       "whenUnsatisfiable": r.choice(["DoNotSchedule", "ScheduleAnyway"]),
                       "labelSelector": ({"matchLabels": {"app": labels["app"]}}
                                         if self.chance(0.85) else
                                         self.label_selector(labels["app"]))}
            if c["whenUnsatisfiable"] == "DoNotSchedule" and self.chance(0.3):
                c["minDomains"] = r.choice([2, 3, 4])
            if self.chance(0.25):
                c["nodeAffinityPolicy"] = r.choice(["Honor", "Ignore"])
            if self.chance(0.25):
                c["nodeTaintsPolicy"] = r.choice(["Honor", "Ignore"])
            if self.chance(0.15) and "pod-template-hash" in labels:
                c["matchLabelKeys"] = ["pod-template-hash"]
            constraints.append(c)
        return constraints

    # ---------------------------------------------------------------- pods

    def pod(self, name: str, ns: str, app: str, *, node: str | None = None,
            incoming: bool = False, big: bool = False, zones: list[str] = ZONES[:3],
            nodes: int = 10, priority: tuple[str, int] | None = None,
            owner: str | None = None) -> JSON:
        """A pod: bound to ``node`` (running, with a start time) or pending."""
        r = self.r
        gpu = r.choice([1, 1, 2]) if self.chance(0.12 if incoming else 0.05) else 0
        host_port = r.choice([80, 443, 8080]) if self.chance(0.12 if incoming else 0.06) \
            else None
        spec = self.containers(big=big, gpu=gpu, host_port=host_port)
        spec["schedulerName"] = "default-scheduler"
        labels = {"app": app, "pod-template-hash": f"{app}-h{r.randint(1, 2)}"}
        if self.chance(0.3):
            labels["tier"] = r.choice(["frontend", "backend"])
        if priority is None:
            priority = (r.choice(PRIORITY_CLASSES) if incoming
                        else r.choice(PRIORITY_CLASSES[:3] + PRIORITY_CLASSES[:1] * 3))
        spec["priorityClassName"], spec["priority"] = priority
        if self.chance(0.3):
            spec["tolerations"] = self.tolerations()
        affinity: JSON = {}
        if self.chance(0.4 if incoming else 0.1):
            affinity["nodeAffinity"] = self.node_affinity(zones, nodes)
        affinity.update(self.pod_affinity(labels, 0.35 if incoming else 0.1))
        if affinity:
            spec["affinity"] = affinity
        if self.chance(0.35 if incoming else 0.1):
            spec["topologySpreadConstraints"] = self.spread(labels)
        if incoming:
            if self.chance(0.25):
                spec["nodeSelector"] = r.choice([
                    {"disktype": "ssd"}, {"kubernetes.io/os": "linux"},
                    {ZONE_KEY: r.choice(zones)}, {"tier": "batch"},
                    {"disktype": "hdd", "kubernetes.io/arch": "amd64"}])
            if self.chance(0.08):
                spec["preemptionPolicy"] = "Never"
        created = self.stamp(r.randint(0, 30))
        meta: JSON = {"name": name, "namespace": ns, "uid": self.uid(), "labels": labels,
                      "creationTimestamp": created}
        kind = owner or r.choice(["ReplicaSet"] * 4 + ["StatefulSet", None])
        if kind is not None:
            meta["ownerReferences"] = [{
                "apiVersion": "apps/v1", "kind": kind,
                "name": f"{app}-{'rs' if kind == 'ReplicaSet' else 'sts'}",
                "uid": f"{kind.lower()}-{ns}-{app}", "controller": True}]
        status: JSON = {"phase": "Pending"}
        if node:
            spec["nodeName"] = node
            status = {"phase": "Running", "startTime": created}
        return admit({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                      "status": status})

    def sized_pod(self, name: str, ns: str, app: str, priority: tuple[str, int], cpu: int,
                  mem: int, *, node: str | None = None, gpu: int = 0,
                  host_port: int | None = None, never: bool = False) -> JSON:
        """A one-container pod of exactly these requests (preemption scenarios)."""
        r = self.r
        req = {"cpu": q_cpu(cpu), "memory": q_mem(mem)}
        if gpu:
            req[GPU] = str(gpu)
        container: JSON = {"name": "c0", "image": r.choice(IMAGES[:4])[0],
                           "resources": {"requests": dict(req)}}
        if gpu or self.chance(0.3):
            container["resources"]["limits"] = dict(req)
        if host_port:
            container["ports"] = [{"containerPort": 8080, "hostPort": host_port,
                                   "protocol": "TCP"}]
        spec: JSON = {"containers": [container], "schedulerName": "default-scheduler",
                      "priorityClassName": priority[0], "priority": priority[1]}
        if never:
            spec["preemptionPolicy"] = "Never"
        labels = {"app": app, "pod-template-hash": f"{app}-h{r.randint(1, 2)}"}
        if self.chance(0.3):
            labels["tier"] = r.choice(["frontend", "backend"])
        created = self.stamp(r.randint(0, 200))
        meta: JSON = {"name": name, "namespace": ns, "uid": self.uid(), "labels": labels,
                      "creationTimestamp": created}
        if self.chance(0.8):
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                        "name": f"{app}-rs", "uid": f"replicaset-{ns}-{app}",
                                        "controller": True}]
        status: JSON = {"phase": "Pending"}
        if node:
            spec["nodeName"] = node
            status = {"phase": "Running", "startTime": created}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                "status": status}

    # ---------------------------------------------------------------- owners and budgets

    def owners(self) -> list[JSON]:
        """Services, ReplicaSets and StatefulSets (what the system-default spreading reads)."""
        out: list[JSON] = []
        for ns in NAMESPACES:
            for app in APPS:
                if self.chance(0.4):
                    out.append({"apiVersion": "v1", "kind": "Service",
                                "metadata": {"name": f"{app}-svc", "namespace": ns,
                                             "uid": self.uid()},
                                "spec": {"selector": {"app": app},
                                         "ports": [{"port": 80, "protocol": "TCP"}]}})
                for kind, suffix in (("ReplicaSet", "rs"), ("StatefulSet", "sts")):
                    if self.chance(0.5 if kind == "ReplicaSet" else 0.2):
                        out.append({
                            "apiVersion": "apps/v1", "kind": kind,
                            "metadata": {"name": f"{app}-{suffix}", "namespace": ns,
                                         "uid": f"{kind.lower()}-{ns}-{app}"},
                            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": app}},
                                     "template": {"metadata": {"labels": {"app": app}},
                                                  "spec": {"containers": [
                                                      {"name": "c", "image": "nginx:1.25"}]}}}})
        return out

    def pdbs(self, pods: list[JSON], count: int) -> list[JSON]:
        r = self.r
        out = []
        for j in range(count):
            if pods and self.chance(0.8):
                meta = r.choice(pods)["metadata"]
                ns, app = meta["namespace"], meta["labels"]["app"]
            else:
                ns, app = r.choice(list(NAMESPACES)), r.choice(APPS)
            spec: JSON = ({"minAvailable": r.choice([1, 2, "50%"])} if self.chance(0.5)
                          else {"maxUnavailable": r.choice([0, 1, "30%"])})
            spec["selector"] = ({"matchLabels": {"app": app}} if self.chance(0.75) else
                                {"matchExpressions": [{"key": "app", "operator": "In",
                                                       "values": sorted({app, r.choice(APPS)})}]})
            matched = sum(1 for p in pods if p["metadata"]["namespace"] == ns
                          and p["metadata"]["labels"]["app"] == app)
            allowed = r.choice([0, 0, 0, 1, 2])
            status: JSON = {"disruptionsAllowed": allowed, "currentHealthy": matched,
                            "desiredHealthy": max(0, matched - allowed),
                            "expectedPods": matched, "observedGeneration": 1}
            if allowed == 0 and pods and self.chance(0.15):
                victim = r.choice(pods)["metadata"]
                if victim["namespace"] == ns:
                    status["disruptedPods"] = {victim["name"]: "2024-01-01T00:00:00Z"}
            out.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": f"pdb-{app}-{j}", "namespace": ns,
                                     "uid": self.uid(), "generation": 1},
                        "spec": spec, "status": status})
        return out


# -------------------------------------------------------------------- admission

def _merge_label_keys(selector: JSON | None, keys: list[str], operator: str,
                      labels: dict[str, str]) -> None:
    if selector is None:
        return
    for key in keys:
        if key in labels:
            selector.setdefault("matchExpressions", []).append(
                {"key": key, "operator": operator, "values": [labels[key]]})


def admit(pod: JSON) -> JSON:
    """The pod as the API server stores it at creation: ``matchLabelKeys`` and
    ``mismatchLabelKeys`` merged into their label selectors (upstream's pod strategy)."""
    labels = pod["metadata"].get("labels") or {}
    spec = pod["spec"]
    for kind in ("podAffinity", "podAntiAffinity"):
        block = (spec.get("affinity") or {}).get(kind) or {}
        terms = list(block.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [w["podAffinityTerm"] for w in
                  block.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        for term in terms:
            _merge_label_keys(term.get("labelSelector"), term.get("matchLabelKeys") or [],
                              "In", labels)
            _merge_label_keys(term.get("labelSelector"), term.get("mismatchLabelKeys") or [],
                              "NotIn", labels)
    for constraint in spec.get("topologySpreadConstraints") or []:
        _merge_label_keys(constraint.get("labelSelector"),
                          constraint.get("matchLabelKeys") or [], "In", labels)
    return pod


def free_host_ports(pods: list[JSON]) -> list[JSON]:
    """``pods`` (bound) without host-port clashes: a pod whose host port (protocol, port) a
    pod before it on the same node holds loses its ports (no kubelet runs two such pods, and
    upstream's NodeInfo keeps used ports as a set)."""
    used: set[tuple[str, str, int]] = set()
    for pod in pods:
        node = pod["spec"].get("nodeName")
        for container in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
            ports = container.get("ports") or []
            wanted = {(node, p.get("protocol", "TCP"), p["hostPort"]) for p in ports
                      if p.get("hostPort")}
            if wanted & used:
                container.pop("ports")
            else:
                used |= wanted
    return pods


# -------------------------------------------------------------------- cluster pieces

def _cluster(g: Gen, *, nmin: int, nmax: int, pmax: int, small: bool = False
             ) -> tuple[list[JSON], list[JSON], list[JSON], list[str]]:
    """(other objects, nodes, bound pods, zones) of a random cluster."""
    r = g.r
    zones = ZONES[:r.choice([2, 3, 3, 4])]
    nodes = [g.node(i, zones, small=small) for i in range(r.randint(nmin, nmax))]
    pods = []
    for j in range(r.randint(0, pmax)):
        app = r.choice(APPS)
        pods.append(g.pod(f"{app}-{j}", r.choice(["default", "default", "team-a", "team-b"]),
                          app, node=r.choice(nodes)["metadata"]["name"], zones=zones,
                          nodes=len(nodes)))
    objects = g.namespaces() + g.priority_classes() + g.owners()
    objects += g.pdbs(pods, r.choice([0, 0, 1, 2, 3]))
    return objects, nodes, free_host_ports(pods), zones


def _full_cluster(g: Gen, nmin: int, nmax: int, fill: tuple[float, float] = (0.7, 1.0)
                  ) -> tuple[list[JSON], list[JSON], dict[str, tuple[int, int, int, int]]]:
    """Nodes filled with prioritised pods to ``fill`` of their CPU: (nodes, pods,
    free cpu/memory and capacity by node)."""
    r = g.r
    zones = ZONES[:r.choice([2, 3])]
    nodes: list[JSON] = []
    pods: list[JSON] = []
    free: dict[str, tuple[int, int, int, int]] = {}
    for i in range(r.randint(nmin, nmax)):
        node = g.node(i, zones, gpu=0.15, taint=0.08, cordon=0.05, images=0.3, small=True)
        node["spec"].get("taints", [])[:] = [
            t for t in node["spec"].get("taints", [])
            if t["key"] == "node.kubernetes.io/unschedulable" or t["effect"] != "NoExecute"]
        nodes.append(node)
        name = node["metadata"]["name"]
        alloc = node["status"]["allocatable"]
        cpu = int(alloc["cpu"]) * 1000 if alloc["cpu"].isdigit() else int(alloc["cpu"][:-1])
        mem = int(alloc["memory"][:-2])
        gpus = int(alloc.get(GPU, "0"))
        target = cpu * r.uniform(*fill)
        used_cpu = used_mem = 0
        for _ in range(int(alloc["pods"])):
            if used_cpu >= target:
                break
            c = r.choice([100, 250, 500, 500, 1000, 1000, 2000])
            m = r.choice([128, 256, 512, 1024, 2048])
            if used_cpu + c > cpu:
                c = cpu - used_cpu
                if c < 50:
                    break
            if used_mem + m > mem:
                m = max(64, (mem - used_mem) // 2)
                if used_mem + m > mem:
                    break
            app = r.choice(APPS)
            ns = r.choice(["default", "default", "team-a", "team-b"])
            gpu = 1 if gpus and g.chance(0.5) else 0
            gpus -= gpu
            prio = r.choice(PRIORITY_CLASSES[:3] if g.chance(0.7) else PRIORITY_CLASSES[:4])
            pods.append(g.sized_pod(f"{app}-{len(pods)}", ns, app, prio, c, m, node=name,
                                    gpu=gpu, host_port=r.choice([80, 443])
                                    if g.chance(0.06) else None))
            used_cpu += c
            used_mem += m
        free[name] = (cpu - used_cpu, mem - used_mem, cpu, mem)
    return nodes, free_host_ports(pods), free


# -------------------------------------------------------------------- volumes

def storage(g: Gen, nodes: list[JSON], pods: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    """StorageClasses, PersistentVolumes, PersistentVolumeClaims and CSINodes; some bound
    pods get CSI volumes (attach counts). Returns (objects, volumes the incoming pod may use:
    ``{"name", "persistentVolumeClaim": {"claimName"}}`` entries in ``default``)."""
    r = g.r
    objects: list[JSON] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "wffc", "uid": g.uid()}, "provisioner": CSI_DRIVER,
         "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "immediate", "uid": g.uid()}, "provisioner": CSI_DRIVER,
         "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "local", "uid": g.uid()},
         "provisioner": "kubernetes.io/no-provisioner",
         "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Retain"},
    ]
    for node in nodes:
        if g.chance(0.85):
            driver: JSON = {"name": CSI_DRIVER, "nodeID": node["metadata"]["name"],
                            "topologyKeys": [ZONE_KEY]}
            if g.chance(0.8):
                driver["allocatable"] = {"count": r.choice([1, 2, 3, 25])}
            objects.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                            "metadata": {"name": node["metadata"]["name"], "uid": g.uid()},
                            "spec": {"drivers": [driver]}})
    claims: list[JSON] = []
    serial = 0

    def pv(name: str, sc: str, size: int, affinity: JSON | None, zone: str | None,
           csi: bool) -> JSON:
        spec: JSON = {"capacity": {"storage": f"{size}Gi"}, "accessModes": ["ReadWriteOnce"],
                      "storageClassName": sc, "persistentVolumeReclaimPolicy": "Delete",
                      "volumeMode": "Filesystem"}
        if csi:
            spec["csi"] = {"driver": CSI_DRIVER, "volumeHandle": f"vol-{name}"}
        else:
            spec["local"] = {"path": f"/mnt/{name}"}
        if affinity is not None:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [affinity]}}
        meta: JSON = {"name": name, "uid": g.uid()}
        if zone is not None:
            meta["labels"] = {ZONE_KEY: zone}
        return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta,
                "spec": spec, "status": {"phase": "Available"}}

    def pvc(name: str, ns: str, sc: str, size: int, volume: str | None) -> JSON:
        claim: JSON = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": name, "namespace": ns, "uid": g.uid()},
                       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                                "resources": {"requests": {"storage": f"{size}Gi"}},
                                "volumeMode": "Filesystem"},
                       "status": {"phase": "Pending"}}
        if volume is not None:
            claim["spec"]["volumeName"] = volume
            claim["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
            claim["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                               "capacity": {"storage": f"{size}Gi"}}
        return claim

    zones = sorted({n["metadata"]["labels"][ZONE_KEY] for n in nodes})
    # Bound claims with zonal CSI volumes: some used by running pods (attach counts).
    for _ in range(r.randint(1, 6)):
        serial += 1
        zone = r.choice(zones)
        size = r.choice([10, 20, 50])
        volume = pv(f"pv-{serial}", "immediate", size,
                    {"matchExpressions": [{"key": ZONE_KEY, "operator": "In",
                                           "values": [zone]}]},
                    zone if g.chance(0.7) else None, csi=True)
        volume["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": "default",
                                      "name": f"data-{serial}"}
        volume["status"] = {"phase": "Bound"}
        claim = pvc(f"data-{serial}", "default", "immediate", size, volume["metadata"]["name"])
        volume["spec"]["claimRef"]["uid"] = claim["metadata"]["uid"]
        objects += [volume, claim]
        users = [p for p in pods if p["metadata"]["namespace"] == "default"
                 and p["spec"]["nodeName"] in {n["metadata"]["name"] for n in nodes
                                               if n["metadata"]["labels"][ZONE_KEY] == zone}]
        if users and g.chance(0.6):
            user = r.choice(users)
            user["spec"].setdefault("volumes", []).append(
                {"name": f"data-{serial}", "persistentVolumeClaim": {
                    "claimName": f"data-{serial}"}})
        else:
            claims.append(claim)
    # Unbound claims: dynamically provisioned (WaitForFirstConsumer) or local volumes.
    for _ in range(r.randint(0, 2)):
        serial += 1
        claims.append(pvc(f"scratch-{serial}", "default", "wffc", r.choice([5, 10]), None))
        objects.append(claims[-1])
    for _ in range(r.randint(0, 3)):
        serial += 1
        node = r.choice(nodes)["metadata"]["name"]
        objects.append(pv(f"local-{serial}", "local", r.choice([10, 100]),
                          {"matchExpressions": [{"key": HOST_KEY, "operator": "In",
                                                 "values": [node]}]}, None, csi=False))
    if g.chance(0.6):
        serial += 1
        claims.append(pvc(f"fast-{serial}", "default", "local", r.choice([10, 50]), None))
        objects.append(claims[-1])
    volumes = [{"name": c["metadata"]["name"],
                "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}}
               for c in claims]
    return objects, volumes


# -------------------------------------------------------------------- DRA

def dra(g: Gen, nodes: list[JSON], pods: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    """DeviceClasses with CEL selectors, a ResourceSlice of GPUs per node (some nodes none),
    claims allocated to running pods, and unallocated claims for the incoming pod. Returns
    (objects, claims the incoming pod may reference)."""
    r = g.r
    objects: list[JSON] = [
        {"apiVersion": DRA_API, "kind": "DeviceClass",
         "metadata": {"name": "gpu.example.com", "uid": g.uid()},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]}},
        {"apiVersion": DRA_API, "kind": "DeviceClass",
         "metadata": {"name": "a100.gpu.example.com", "uid": g.uid()},
         "spec": {"selectors": [
             {"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}},
             {"cel": {"expression": f'device.attributes["{DRA_DRIVER}"].model == "A100"'}}]}},
    ]
    devices_of: dict[str, list[str]] = {}
    for node in nodes:
        if not g.chance(0.7):
            continue
        name = node["metadata"]["name"]
        model = r.choice(["A100", "L4"])
        count = r.choice([1, 2, 4])
        devices: list[JSON] = [{"name": f"gpu-{i}",
                                 "attributes": {"model": {"string": model},
                                                "index": {"int": i},
                                                "pcieRoot": {"string": f"pci-{i // 2}"}},
                                 "capacity": {"memory": {
                                     "value": "80Gi" if model == "A100" else "24Gi"}}}
                                for i in range(count)]
        devices_of[name] = [d["name"] for d in devices]
        objects.append({"apiVersion": DRA_API, "kind": "ResourceSlice",
                        "metadata": {"name": f"{name}-gpus", "uid": g.uid()},
                        "spec": {"driver": DRA_DRIVER, "nodeName": name,
                                 "pool": {"name": name, "generation": 1,
                                          "resourceSliceCount": 1},
                                 "devices": devices}})
    serial = 0
    for pod in pods:
        node = pod["spec"]["nodeName"]
        if node not in devices_of or not devices_of[node] or not g.chance(0.3):
            continue
        device = devices_of[node].pop(0)
        serial += 1
        objects.append(held_claim(g, pod, serial, node, device))
    wanted: list[JSON] = []
    for k in range(r.choice([1, 1, 2])):
        cls = r.choice(["gpu.example.com", "gpu.example.com", "a100.gpu.example.com"])
        count = r.choice([1, 1, 2])
        selectors = ([f'device.capacity["{DRA_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0']
                     if g.chance(0.2) else [])
        claim = _claim(g, f"want-{k}", "default", cls, count, *selectors)
        if count == 2 and g.chance(0.5):
            claim["spec"]["devices"]["constraints"] = [
                {"matchAttribute": f"{DRA_DRIVER}/pcieRoot"}]
        wanted.append(claim)
    return objects + wanted, wanted


def held_claim(g: Gen, pod: JSON, serial: int, pool: str, device: str,
               **result: Any) -> JSON:
    """A claim ``held-<serial>`` allocated (``device`` of ``pool``, with the extra ``result``
    fields) and reserved for the bound ``pod``, which gets to use it."""
    node = pod["spec"]["nodeName"]
    claim = _claim(g, f"held-{serial}", pod["metadata"]["namespace"], "gpu.example.com", 1)
    claim["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRA_DRIVER,
                                     "pool": pool, "device": device, **result}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"],
                         "uid": pod["metadata"]["uid"]}]}
    _use_claim(pod, f"held-{serial}")
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu",
                                               "resourceClaimName": f"held-{serial}"}]
    return claim


def _claim(g: Gen, name: str, ns: str, cls: str, count: int, *selectors: str) -> JSON:
    exactly: JSON = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"apiVersion": DRA_API, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns, "uid": g.uid(),
                         "creationTimestamp": "2023-12-31T00:00:00Z"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def _use_claim(pod: JSON, claim: str, entry: str = "gpu") -> None:
    pod["spec"].setdefault("resourceClaims", []).append(
        {"name": entry, "resourceClaimName": claim})
    for container in pod["spec"]["containers"]:
        container.setdefault("resources", {}).setdefault("claims", []).append({"name": entry})


# -------------------------------------------------------------------- cycle scenarios

#: Cycle flavours and their relative frequency in a mixed run.
CYCLE_FLAVOURS = {"default": 4, "most": 2, "rtcr": 2, "spread": 2, "preempt": 4,
                  "volumes": 2, "dra": 2, "nominated": 2}


def _incoming(g: Gen, zones: list[str], nodes: list[JSON], *, big: bool | None = None
              ) -> JSON:
    r = g.r
    app = r.choice(APPS)
    return g.pod(f"incoming-{app}", r.choice(["default", "team-a"]), app, incoming=True,
                 big=g.chance(0.2) if big is None else big, zones=zones, nodes=len(nodes))


def _default_cycle(g: Gen, config: str) -> JSON:
    objects, nodes, pods, zones = _cluster(g, nmin=3, nmax=40, pmax=150)
    return {"objects": objects + nodes + pods, "pod": _incoming(g, zones, nodes),
            "config": CONFIGS[config]}


def _preempt_cycle(g: Gen) -> JSON:
    r = g.r
    nodes, pods, free = _full_cluster(g, 2, 12)
    objects = g.namespaces() + g.priority_classes() + g.owners()
    objects += g.pdbs(pods, r.choice([0, 1, 2, 3, 4, 5, 6]))
    c = r.random()
    prio = (PRIORITY_CLASSES[4] if c < 0.45 else PRIORITY_CLASSES[3] if c < 0.8
            else r.choice(PRIORITY_CLASSES[:3]))
    max_free = max(f[0] for f in free.values())
    max_cpu = max(f[2] for f in free.values())
    mode = r.random()
    if mode < 0.08:
        cpu = max_cpu + 1000
    elif mode < 0.2:
        cpu = r.choice([100, 250])
    else:
        cpu = min(max_cpu, max(max_free + r.choice([50, 250, 500]), r.choice([500, 1000, 2000])))
    mem = r.choice([128, 256, 512, 1024])
    if g.chance(0.15):
        mem = min(max(f[1] for f in free.values()) + r.choice([256, 1024]),
                  max(f[3] for f in free.values()))
    app = r.choice(APPS)
    has_gpu = any(GPU in n["status"]["allocatable"] for n in nodes)
    pod = g.sized_pod(f"incoming-{app}", r.choice(["default", "team-a"]), app, prio, cpu, mem,
                      gpu=1 if has_gpu and g.chance(0.1) else 0,
                      host_port=r.choice([80, 443]) if g.chance(0.1) else None,
                      never=g.chance(0.12))
    zones = sorted({n["metadata"]["labels"][ZONE_KEY] for n in nodes})
    x = r.random()
    if x < 0.15:
        pod["spec"]["nodeSelector"] = r.choice([{"disktype": "ssd"}, {ZONE_KEY: r.choice(zones)}])
    elif x < 0.25:
        pod["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": r.choice(APPS)}},
                "topologyKey": r.choice([HOST_KEY, ZONE_KEY])}]}}
    elif x < 0.32:
        pod["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    elif x < 0.4:
        pod["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}}}]
    return {"objects": objects + nodes + pods, "pod": pod, "config": None}


def _volumes_cycle(g: Gen) -> JSON:
    objects, nodes, pods, zones = _cluster(g, nmin=3, nmax=15, pmax=40)
    volume_objects, volumes = storage(g, nodes, pods)
    pod = _incoming(g, zones, nodes, big=False)
    pod["metadata"]["namespace"] = "default"
    if volumes:
        pod["spec"]["volumes"] = g.r.sample(volumes, min(len(volumes), g.r.choice([1, 1, 2])))
    if g.chance(0.05):  # created before its claim
        pod["spec"].setdefault("volumes", []).append(
            {"name": "late", "persistentVolumeClaim": {"claimName": "not-yet-created"}})
    if g.chance(0.2):
        pod["spec"].setdefault("volumes", []).append(
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "wffc",
                "resources": {"requests": {"storage": "1Gi"}}}}}})
    return {"objects": objects + volume_objects + nodes + pods, "pod": pod, "config": None}


def _dra_cycle(g: Gen) -> JSON:
    objects, nodes, pods, zones = _cluster(g, nmin=2, nmax=10, pmax=30)
    dra_objects, wanted = dra(g, nodes, pods)
    pod = _incoming(g, zones, nodes, big=False)
    pod["metadata"]["namespace"] = "default"
    for k, claim in enumerate(wanted):
        _use_claim(pod, claim["metadata"]["name"], f"gpu-{k}")
    return {"objects": objects + dra_objects + nodes + pods, "pod": pod, "config": None}


def _nominated_cycle(g: Gen) -> JSON:
    r = g.r
    scenario = _preempt_cycle(g) if g.chance(0.5) else _default_cycle(g, "default")
    nodes = [o for o in scenario["objects"] if o["kind"] == "Node"]
    for k in range(r.randint(1, 4)):
        app = r.choice(APPS)
        prio = r.choice(PRIORITY_CLASSES)
        waiting = g.sized_pod(f"nominated-{k}", r.choice(["default", "team-a"]), app, prio,
                              r.choice([250, 500, 1000, 2000]), r.choice([256, 512, 1024]),
                              host_port=r.choice([80, 443]) if g.chance(0.1) else None)
        waiting["status"]["nominatedNodeName"] = r.choice(nodes)["metadata"]["name"]
        scenario["objects"].append(waiting)
    if g.chance(0.4):  # the incoming pod is a preemptor back for its nominated node
        scenario["pod"]["status"]["nominatedNodeName"] = r.choice(nodes)["metadata"]["name"]
    return scenario


def _scaled(requests: JSON, factor: float) -> JSON:
    """``requests`` with cpu and memory scaled (a resize's other side)."""
    scaled: JSON = {}
    for name, value in requests.items():
        if name == "cpu":
            scaled[name] = q_cpu(max(10, round(parse_quantity(str(value)).milli_value()
                                                * factor)))
        elif name == "memory":
            scaled[name] = q_mem(max(16, round(parse_quantity(str(value)).value()
                                               / 1024 / 1024 * factor)))
    return scaled


def resize(g: Gen, pod: JSON) -> None:
    """Give a bound pod what an in-place resize leaves: pod-level requests (at least its
    containers' sum), container statuses whose allocated and actuated requests differ from the
    spec, an infeasible resize, pod-level status maps (kubelets of v1.36 on)."""
    r = g.r
    spec, status = pod["spec"], pod.setdefault("status", {})
    containers = spec.get("containers") or []
    if g.chance(0.4):
        cpu = sum(parse_quantity(str(c["resources"].get("requests", {}).get("cpu", "0")))
                  .milli_value() for c in containers)
        level: JSON = {}
        if g.chance(0.8):
            level["cpu"] = q_cpu(cpu + r.choice([0, 100, 500, 1000]))
        if g.chance(0.6):
            level["memory"] = q_mem(r.choice([256, 512, 1024, 4096]))
        if level:
            spec["resources"] = {"requests": level}
    statuses = []
    for c in containers:
        requests = c["resources"].get("requests") or {}
        if not requests or not g.chance(0.7):
            continue
        entry: JSON = {"name": c["name"], "ready": True, "restartCount": 0, "image": c["image"],
                       "imageID": "", "started": True, "state": {"running": {}}}
        if g.chance(0.8):
            entry["allocatedResources"] = _scaled(requests, r.choice([0.5, 1.5, 2.0]))
        if g.chance(0.6):
            entry["resources"] = {"requests": _scaled(requests, r.choice([0.5, 1.0, 1.5]))}
        statuses.append(entry)
    if statuses:
        status["containerStatuses"] = statuses
    if g.chance(0.15):
        status.setdefault("conditions", []).append(
            {"type": "PodResizePending", "status": "True", "reason": "Infeasible"})
    level = (spec.get("resources") or {}).get("requests")
    if level and g.chance(0.6):
        status["resources"] = {"requests": _scaled(level, r.choice([0.5, 1.0, 1.5]))}
        status["allocatedResources"] = _scaled(level, r.choice([0.5, 1.0, 2.0]))


def _resized_cycle(g: Gen) -> JSON:
    """A cycle among pods that were resized in place (kept out of :data:`CYCLE_FLAVOURS`, so
    the fixed cases keep their scenarios)."""
    scenario = _preempt_cycle(g) if g.chance(0.4) else _default_cycle(g, "default")
    for obj in scenario["objects"]:
        if obj["kind"] == "Pod" and obj["spec"].get("nodeName") and g.chance(0.5):
            resize(g, obj)
    return scenario


def _dra_beta_cycle(g: Gen) -> JSON:
    """A cycle among partitionable, tainted devices (kept out of :data:`CYCLE_FLAVOURS`)."""
    from tests.oracle.dra_beta import dra_beta_cycle  # it builds on this module's helpers
    return dra_beta_cycle(g)


def _volume_scaling_cycle(g: Gen) -> JSON:
    """A volumes cycle with a CSIDriver that may opt in to VolumeLimitScaling (kept out of
    :data:`CYCLE_FLAVOURS`)."""
    from tests.oracle.volume_scaling import volume_scaling_cycle  # it builds on this module
    return volume_scaling_cycle(g)


def _dra_shared_cycle(g: Gen) -> JSON:
    """A cycle among devices with consumable capacity (kept out of :data:`CYCLE_FLAVOURS`)."""
    from tests.oracle.dra_shared import dra_shared_cycle  # it builds on this module
    return dra_shared_cycle(g)


#: Gates that make upstream run another allocator implementation than by default, per minor:
#: v1.34 the incubating one (device status off), v1.35 the experimental one (binding
#: conditions on), v1.36 and v1.37 the stable one (consumable capacity and binding conditions
#: off).
OTHER_ALLOCATOR_GATES = {
    (1, 34): {"DRAResourceClaimDeviceStatus": False},
    (1, 35): {"DRADeviceBindingConditions": True},
    (1, 36): {"DRAConsumableCapacity": False, "DRADeviceBindingConditions": False},
    (1, 37): {"DRAConsumableCapacity": False, "DRADeviceBindingConditions": False},
}


def _with_other_allocator(scenario: JSON) -> JSON:
    from tests.oracle.release import RELEASE
    return {**scenario, "featureGates": OTHER_ALLOCATOR_GATES[RELEASE.release[:2]]}


def cycle_scenario(rng: random.Random, flavour: str) -> JSON:
    """A cycle scenario of ``flavour`` (:data:`CYCLE_FLAVOURS`): ``{"flavour", "objects",
    "pod", "config"}``."""
    g = Gen(rng)
    makers: dict[str, Callable[[], JSON]] = {
        "default": lambda: _default_cycle(g, "default"),
        "most": lambda: _default_cycle(g, "most"),
        "rtcr": lambda: _default_cycle(g, "rtcr"),
        "spread": lambda: _default_cycle(g, "spread"),
        "preempt": lambda: _preempt_cycle(g),
        "volumes": lambda: _volumes_cycle(g),
        "dra": lambda: _dra_cycle(g),
        "nominated": lambda: _nominated_cycle(g),
        "resized": lambda: _resized_cycle(g),
        "dra-beta": lambda: _dra_beta_cycle(g),
        "volume-scaling": lambda: _volume_scaling_cycle(g),
        "dra-shared": lambda: _dra_shared_cycle(g),
        "dra-beta+gates": lambda: _with_other_allocator(_dra_beta_cycle(g)),
        "dra-shared+gates": lambda: _with_other_allocator(_dra_shared_cycle(g)),
    }
    scenario = makers[flavour]()
    return {"flavour": flavour, **scenario}


def pick_flavour(rng: random.Random) -> str:
    names = list(CYCLE_FLAVOURS)
    return rng.choices(names, weights=[CYCLE_FLAVOURS[n] for n in names])[0]


# -------------------------------------------------------------------- sequence scenarios

def sequence_scenario(rng: random.Random) -> JSON:
    """A cluster and 5 to 40 pods created in order, some needing preemption:
    ``{"objects", "pending", "config"}``."""
    g = Gen(rng)
    r = g.r
    nodes, pods, free = _full_cluster(g, 2, 8, fill=(0.3, 0.95))
    for node in nodes:  # sequences keep nodes schedulable and without NoExecute taints
        node["spec"].pop("unschedulable", None)
        taints = [t for t in node["spec"].get("taints", [])
                  if t["key"] != "node.kubernetes.io/unschedulable"]
        if taints:
            node["spec"]["taints"] = taints
        else:
            node["spec"].pop("taints", None)
    objects = g.namespaces() + g.priority_classes() + g.owners()
    objects += g.pdbs(pods, r.choice([0, 0, 1, 2, 3]))
    zones = sorted({n["metadata"]["labels"][ZONE_KEY] for n in nodes})
    max_cpu = max(f[2] for f in free.values())
    pending = []
    for k in range(r.randint(5, 40)):
        app = r.choice(APPS)
        ns = r.choice(["default", "team-a"])
        prio = r.choice(PRIORITY_CLASSES)
        cpu = r.choice([100, 250, 500, 1000, 1500, 2000, 3000])
        cpu = min(cpu, max_cpu) if g.chance(0.95) else max_cpu + 500
        pod = g.sized_pod(f"p{k:02d}-{app}", ns, app, prio, cpu, r.choice([128, 256, 512, 1024]),
                          never=g.chance(0.08),
                          host_port=r.choice([80, 443]) if g.chance(0.05) else None)
        x = r.random()
        if x < 0.1:
            pod["spec"]["nodeSelector"] = {ZONE_KEY: r.choice(zones)}
        elif x < 0.2:
            pod["spec"]["affinity"] = {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": app}},
                    "topologyKey": HOST_KEY}]}}
        elif x < 0.3:
            pod["spec"]["topologySpreadConstraints"] = [{
                "maxSkew": 1, "topologyKey": ZONE_KEY,
                "whenUnsatisfiable": r.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": {"matchLabels": {"app": app}}}]
        elif x < 0.36:
            pod["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        elif x < 0.45:
            pod["spec"]["affinity"] = {"nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{
                    "weight": 50, "preference": {"matchExpressions": [{
                        "key": "disktype", "operator": "In", "values": ["ssd"]}]}}]}}
        pending.append(admit(pod))
    return {"objects": objects + nodes + pods, "pending": pending, "config": None}


def cycle_request(scenario_id: str, scenario: JSON) -> JSON:
    """The oracle's ``cycle`` request line of a scenario."""
    request = {"id": scenario_id, "objects": scenario["objects"], "pod": scenario["pod"],
               "config": scenario["config"]}
    if scenario.get("featureGates"):
        request["featureGates"] = scenario["featureGates"]
    return request


def sequence_request(scenario: JSON, *, prefer: dict[str, str] | None = None,
                     sync_preemption: bool = False) -> JSON:
    """The oracle's ``sequence`` request of a scenario."""
    return {"objects": scenario["objects"], "pending": copy.deepcopy(scenario["pending"]),
            "config": scenario["config"], "quietSeconds": 2, "prefer": prefer,
            "syncPreemption": sync_preemption}
