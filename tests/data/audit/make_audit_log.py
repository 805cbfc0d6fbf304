"""Build ``audit.log``: a realistic kube-apiserver audit log (log backend, JSON Lines).

The events follow ``audit.k8s.io/v1`` as kube-apiserver writes them, recorded under the
policy of ``docs/audit-policy.md`` (pods and nodes at RequestResponse, pods/binding and the
status subresources at Request, reads and leases at Metadata or not at all), plus records
such a policy still lets through and kaudit must leave out. Run it to regenerate the file:

    python tests/data/audit/make_audit_log.py
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson

_ids = iter(uuid.UUID(int=i) for i in range(1, 10_000))


def _reset_ids() -> None:
    global _ids
    _ids = iter(uuid.UUID(int=i) for i in range(1, 10_000))


def _time(seconds: float) -> str:
    minute, second = divmod(seconds, 60)
    return f"2026-11-02T09:{int(minute):02d}:{second:09.6f}Z"


def event(t: float, verb: str, resource: str, *, name: str = "", namespace: str = "",
          group: str = "", version: str = "v1", subresource: str = "", level: str = "Request",
          code: int = 200, request: Any = None, response: Any = None, user: str = "admin",
          agent: str = "kubectl/v1.34.1 (linux/amd64) kubernetes/abc1234",
          stage: str = "ResponseComplete", uri: str | None = None) -> dict[str, Any]:
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    path = prefix + (f"/namespaces/{namespace}" if namespace else "") + f"/{resource}"
    if name and verb not in ("create",):
        path += f"/{name}"
    if subresource:
        path += f"/{subresource}" if name else ""
    ref: dict[str, Any] = {"resource": resource, "apiVersion": version}
    if namespace:
        ref["namespace"] = namespace
    if name:
        ref["name"] = name
    if group:
        ref["apiGroup"] = group
    if subresource:
        ref["subresource"] = subresource
    status: dict[str, Any] = {"metadata": {}, "code": code}
    if code >= 400:
        status.update(status="Failure", reason="AlreadyExists" if code == 409 else "Invalid",
                      message=f"{resource} \"{name}\" already exists" if code == 409
                      else "invalid")
    doc: dict[str, Any] = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
        "auditID": str(next(_ids)), "stage": stage, "requestURI": uri or path, "verb": verb,
        "user": {"username": user, "groups": ["system:masters", "system:authenticated"]},
        "sourceIPs": ["10.0.0.15"], "userAgent": agent, "objectRef": ref,
    }
    if stage != "RequestReceived":
        doc["responseStatus"] = status
    if request is not None and level in ("Request", "RequestResponse"):
        doc["requestObject"] = request
    if response is not None and level == "RequestResponse" and stage != "RequestReceived":
        doc["responseObject"] = response
    doc["requestReceivedTimestamp"] = _time(t - 0.004)
    doc["stageTimestamp"] = _time(t)
    doc["annotations"] = {"authorization.k8s.io/decision": "allow",
                          "authorization.k8s.io/reason": ""}
    return doc


def node(name: str, zone: str, cpu: str = "4", memory: str = "16Gi", rv: int = 100,
         heartbeat: str = "2026-11-02T09:00:00Z") -> dict[str, Any]:
    return {
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": str(rv),
                     "creationTimestamp": "2026-11-02T09:00:00Z",
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "topology.kubernetes.io/zone": zone}},
        "spec": {"podCIDR": "10.244.1.0/24", "providerID": f"aws:///{zone}/i-{name}"},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110",
                         "ephemeral-storage": "100Gi"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110",
                            "ephemeral-storage": "95Gi"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": heartbeat,
                 "lastTransitionTime": "2026-11-02T09:00:00Z", "reason":
                 "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory"},
                {"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat,
                 "lastTransitionTime": "2026-11-02T09:00:00Z", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"}],
            "nodeInfo": {"kubeletVersion": "v1.34.1", "operatingSystem": "linux",
                         "architecture": "amd64", "containerRuntimeVersion": "containerd://2.1"},
        },
    }


def pod(name: str, cpu: str, memory: str, *, uid: str, rv: int = 200,
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "shop", "uid": uid, "resourceVersion": str(rv),
                     "creationTimestamp": "2026-11-02T09:00:10Z",
                     "labels": labels or {"app": "web"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": "web-7d4b9c", "uid": "uid-rs-web",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {
            "containers": [{"name": "app", "image": "nginx:1.27",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                            "terminationMessagePath": "/dev/termination-log",
                            "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "schedulerName": "default-scheduler", "priority": 0,
            "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def build() -> list[dict[str, Any]]:
    kubelet = "kubelet/v1.34.1 (linux/amd64) kubernetes/abc1234"
    scheduler = "kube-scheduler/v1.34.1 (linux/amd64) kubernetes/abc1234/scheduler"
    rs_controller = ("kube-controller-manager/v1.34.1 (linux/amd64) kubernetes/abc1234/"
                     "system:serviceaccount:kube-system:replicaset-controller")
    _reset_ids()
    events: list[dict[str, Any]] = []
    add = events.append
    # Nodes register (kubelet creates its Node at RequestResponse).
    for i, zone in enumerate(("eu-west-1a", "eu-west-1b")):
        n = node(f"node-{i}", zone)
        add(event(1 + i * 0.1, "create", "nodes", name=f"node-{i}", level="RequestResponse",
                  request={k: v for k, v in n.items() if k != "status"} | {
                      "metadata": {"name": f"node-{i}", "labels": n["metadata"]["labels"]}},
                  response=n, user=f"system:node:node-{i}", agent=kubelet))
    # A priority class and a PDB, created by an operator.
    add(event(2, "create", "priorityclasses", name="batch-low", group="scheduling.k8s.io",
              level="RequestResponse",
              request={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "batch-low"}, "value": -10},
              response={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": "batch-low", "uid": "uid-pc",
                                     "resourceVersion": "150",
                                     "creationTimestamp": "2026-11-02T09:00:02Z"},
                        "value": -10, "preemptionPolicy": "PreemptLowerPriority"}))
    add(event(2.5, "create", "poddisruptionbudgets", name="web", namespace="shop",
              group="policy", level="RequestResponse",
              request={"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                       "metadata": {"name": "web", "namespace": "shop"},
                       "spec": {"minAvailable": 1,
                                "selector": {"matchLabels": {"app": "web"}}}},
              response={"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-pdb",
                                     "resourceVersion": "160"},
                        "spec": {"minAvailable": 1,
                                 "selector": {"matchLabels": {"app": "web"}}},
                        "status": {"currentHealthy": 0, "desiredHealthy": 1,
                                   "disruptionsAllowed": 0, "expectedPods": 0}}))
    # Reads and leases: level Metadata, left out.
    add(event(3, "get", "nodes", name="node-0", level="Metadata", user="system:node:node-0",
              agent=kubelet))
    add(event(3.1, "list", "pods", level="Metadata", uri="/api/v1/pods?limit=500",
              agent=scheduler, user="system:kube-scheduler"))
    add(event(3.2, "watch", "pods", level="Metadata", agent=scheduler,
              user="system:kube-scheduler",
              uri="/api/v1/pods?allowWatchBookmarks=true&resourceVersion=150&watch=true"))
    add(event(3.3, "update", "leases", name="kube-scheduler", namespace="kube-system",
              group="coordination.k8s.io", level="Metadata", agent=scheduler,
              user="system:kube-scheduler"))
    # The ReplicaSet controller creates two pods with generateName: RequestResponse.
    for i, (cpu, memory) in enumerate((("500m", "256Mi"), ("1500m", "1Gi"))):
        name = f"web-7d4b9c-{'xk2pq' if i == 0 else 'm9z7d'}"
        created = pod(name, cpu, memory, uid=f"uid-web-{i}", rv=201 + i)
        request = {k: v for k, v in created.items() if k != "status"}
        request["metadata"] = {"generateName": "web-7d4b9c-", "namespace": "shop",
                               "labels": {"app": "web"},
                               "ownerReferences": created["metadata"]["ownerReferences"]}
        add(event(10 + i * 0.25, "create", "pods", namespace="shop", level="RequestResponse",
                  request=request, response=created, user="system:serviceaccount:kube-system:"
                  "replicaset-controller", agent=rs_controller))
    # A stage RequestReceived record (the policy should omit the stage; kaudit skips it).
    add(event(10.6, "create", "pods", namespace="shop", stage="RequestReceived",
              level="Metadata"))
    # The scheduler binds both (pods/binding at level Request: the node is in the request).
    for i, node_name in enumerate(("node-1", "node-0")):
        name = f"web-7d4b9c-{'xk2pq' if i == 0 else 'm9z7d'}"
        add(event(10.9 + i * 0.1, "create", "pods", name=name, namespace="shop",
                  subresource="binding", level="Request", user="system:kube-scheduler",
                  agent=scheduler,
                  request={"kind": "Binding", "apiVersion": "v1",
                           "metadata": {"name": name, "namespace": "shop",
                                        "uid": f"uid-web-{i}"},
                           "target": {"kind": "Node", "name": node_name}},
                  code=201))
    # The kubelet reports the first pod Running: a strategic merge patch at level Request.
    add(event(12, "patch", "pods", name="web-7d4b9c-xk2pq", namespace="shop",
              subresource="status", level="Request", user="system:node:node-1", agent=kubelet,
              request={"metadata": {"uid": "uid-web-0"},
                       "status": {"$setElementOrder/conditions": [
                           {"type": "PodReadyToStartContainers"}, {"type": "Initialized"},
                           {"type": "Ready"}, {"type": "ContainersReady"},
                           {"type": "PodScheduled"}],
                           "conditions": [
                               {"type": "PodReadyToStartContainers", "status": "True",
                                "lastTransitionTime": "2026-11-02T09:00:12Z"},
                               {"type": "Initialized", "status": "True",
                                "lastTransitionTime": "2026-11-02T09:00:11Z"},
                               {"type": "Ready", "status": "True",
                                "lastTransitionTime": "2026-11-02T09:00:12Z"},
                               {"type": "ContainersReady", "status": "True",
                                "lastTransitionTime": "2026-11-02T09:00:12Z"}],
                           "hostIP": "10.0.1.11", "phase": "Running", "podIP": "10.244.1.7",
                           "podIPs": [{"ip": "10.244.1.7"}],
                           "startTime": "2026-11-02T09:00:11Z"}}))
    # Node heartbeats: the first changes nothing the scheduler reads, the second the
    # allocatable memory.
    add(event(14, "patch", "nodes", name="node-0", subresource="status", level="Request",
              user="system:node:node-0", agent=kubelet,
              request={"status": {"$setElementOrder/conditions": [
                  {"type": "MemoryPressure"}, {"type": "Ready"}],
                  "conditions": [{"type": "MemoryPressure",
                                  "lastHeartbeatTime": "2026-11-02T09:00:14Z"},
                                 {"type": "Ready",
                                  "lastHeartbeatTime": "2026-11-02T09:00:14Z"}]}}))
    add(event(15, "patch", "nodes", name="node-0", subresource="status", level="Request",
              user="system:node:node-0", agent=kubelet,
              request={"status": {"allocatable": {"memory": "15Gi"}}}))
    # An operator cordons node-1 (kubectl cordon: a strategic merge patch on the node).
    add(event(16, "patch", "nodes", name="node-1", level="RequestResponse",
              request={"spec": {"unschedulable": True}},
              response=node("node-1", "eu-west-1b", rv=300) | {
                  "spec": {"podCIDR": "10.244.1.0/24", "unschedulable": True,
                           "providerID": "aws:///eu-west-1b/i-node-1",
                           "taints": [{"key": "node.kubernetes.io/unschedulable",
                                       "effect": "NoSchedule",
                                       "timeAdded": "2026-11-02T09:00:16Z"}]}}))
    # A failed create (409), a dry run, a configmap: left out.
    add(event(17, "create", "pods", namespace="shop", name="web-7d4b9c-xk2pq", code=409,
              level="RequestResponse"))
    add(event(17.5, "create", "pods", namespace="shop", level="RequestResponse",
              uri="/api/v1/namespaces/shop/pods?dryRun=All",
              request=pod("dry", "1", "1Gi", uid="x"), response=pod("dry", "1", "1Gi", uid="x")))
    add(event(18, "create", "configmaps", namespace="shop", name="web-config",
              level="RequestResponse", request={"kind": "ConfigMap", "apiVersion": "v1",
                                                "metadata": {"name": "web-config"}}))
    # A patch logged at level Metadata: its object cannot be rebuilt.
    add(event(19, "patch", "pods", name="web-7d4b9c-m9z7d", namespace="shop",
              level="Metadata"))
    # Graceful deletion of the first pod (kubectl delete), then the kubelet's final delete.
    terminating = pod("web-7d4b9c-xk2pq", "500m", "256Mi", uid="uid-web-0", rv=400)
    terminating["spec"]["nodeName"] = "node-1"
    terminating["metadata"].update(deletionTimestamp="2026-11-02T09:00:50Z",
                                   deletionGracePeriodSeconds=30)
    terminating["status"] = {"phase": "Running", "qosClass": "Burstable"}
    add(event(20, "delete", "pods", name="web-7d4b9c-xk2pq", namespace="shop",
              level="RequestResponse",
              request={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal",
                       "propagationPolicy": "Background"}, response=terminating))
    final = dict(terminating, metadata=dict(terminating["metadata"],
                                            deletionGracePeriodSeconds=0))
    add(event(45, "delete", "pods", name="web-7d4b9c-xk2pq", namespace="shop",
              level="RequestResponse", user="system:node:node-1", agent=kubelet,
              request={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal",
                       "gracePeriodSeconds": 0,
                       "preconditions": {"uid": "uid-web-0"}}, response=final))
    return events


def main() -> None:
    target = Path(__file__).with_name("audit.log")
    target.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in build()))
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
