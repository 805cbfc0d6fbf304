"""Generate a large, realistic kube-apiserver audit log for ``benchmarks.ingest --audit``.

The mix resembles a busy cluster logged under ``docs/audit-policy.md``, with some reads and
leases let through: for every pod, its creation (RequestResponse), binding (Request), the
kubelet's status patch (Request) and deletion; a node heartbeat patch every few lines
(most change nothing the scheduler reads); lease renewals and reads at level Metadata.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import IO, Any

import orjson

_USER = {"username": "system:serviceaccount:kube-system:replicaset-controller",
         "groups": ["system:serviceaccounts", "system:authenticated"]}


def _time(us: int) -> str:
    seconds, micro = divmod(us, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"2026-11-02T{hours % 24:02d}:{minute:02d}:{second:02d}.{micro:06d}Z"


def _event(us: int, verb: str, resource: str, level: str, name: str = "",
           namespace: str = "", subresource: str = "", group: str = "",
           request: Any = None, response: Any = None, code: int = 200) -> dict[str, Any]:
    ref: dict[str, Any] = {"resource": resource, "apiVersion": "v1"}
    if namespace:
        ref["namespace"] = namespace
    if name:
        ref["name"] = name
    if group:
        ref["apiGroup"] = group
    if subresource:
        ref["subresource"] = subresource
    doc: dict[str, Any] = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
                           "auditID": f"{us:032x}", "stage": "ResponseComplete",
                           "requestURI": f"/api/v1/{resource}/{name}", "verb": verb,
                           "user": _USER, "sourceIPs": ["10.0.0.15"],
                           "userAgent": "kube-controller-manager/v1.34.1", "objectRef": ref,
                           "responseStatus": {"metadata": {}, "code": code}}
    if request is not None:
        doc["requestObject"] = request
    if response is not None:
        doc["responseObject"] = response
    doc["requestReceivedTimestamp"] = _time(us - 3000)
    doc["stageTimestamp"] = _time(us)
    return doc


def _node(name: str) -> dict[str, Any]:
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "uid": f"uid-{name}",
                         "labels": {"kubernetes.io/hostname": name,
                                    "topology.kubernetes.io/zone": f"zone-{hash(name) % 3}"}},
            "spec": {},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                       "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastHeartbeatTime": _time(0)}]}}


def _pod(name: str, cpu: str) -> dict[str, Any]:
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}",
                         "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                     "resources": {"requests": {"cpu": cpu,
                                                                "memory": "256Mi"}}}],
                     "schedulerName": "default-scheduler", "priority": 0},
            "status": {"phase": "Pending", "qosClass": "Burstable"}}


def write_audit_log(path: Path, lines: int, nodes: int = 500, seed: int = 0) -> int:
    """Write about ``lines`` audit events to ``path`` (gzip for ``.gz``); returns bytes."""
    rng = random.Random(seed)
    out: IO[bytes] = (gzip.open(path, "wb") if path.suffix == ".gz"  # noqa: SIM115
                      else path.open("wb"))
    written = 0
    us = 1_000_000
    names = [f"node-{i:05d}" for i in range(nodes)]
    live: list[str] = []
    pod_number = 0
    with out:
        def emit(doc: dict[str, Any]) -> None:
            nonlocal written
            out.write(orjson.dumps(doc) + b"\n")
            written += 1

        for name in names:
            us += 1000
            emit(_event(us, "create", "nodes", "RequestResponse", name, response=_node(name)))
        while written < lines:
            us += rng.randint(200, 4000)
            roll = rng.random()
            if roll < 0.25:
                emit(_event(us, "update", "leases", "Metadata", f"node-{rng.randrange(nodes)}",
                            "kube-node-lease", group="coordination.k8s.io"))
            elif roll < 0.40:
                emit(_event(us, "get", "pods", "Metadata", "web", "shop"))
            elif roll < 0.65:
                name = names[rng.randrange(nodes)]
                changes = {"conditions": [{"type": "Ready", "lastHeartbeatTime": _time(us)}]}
                if rng.random() < 0.02:
                    changes["allocatable"] = {"memory": f"{rng.randint(60, 64)}Gi"}
                emit(_event(us, "patch", "nodes", "Request", name, subresource="status",
                            request={"status": changes}))
            elif roll < 0.80 or not live:
                pod_number += 1
                name = f"web-{pod_number:07d}"
                created = _pod(name, f"{rng.choice((100, 250, 500, 1000))}m")
                emit(_event(us, "create", "pods", "RequestResponse", name, "shop",
                            request=created, response=created, code=201))
                emit(_event(us + 500, "create", "pods", "Request", name, "shop", "binding",
                            request={"kind": "Binding", "apiVersion": "v1",
                                     "metadata": {"name": name},
                                     "target": {"name": names[rng.randrange(nodes)]}},
                            code=201))
                emit(_event(us + 900, "patch", "pods", "Request", name, "shop", "status",
                            request={"status": {"phase": "Running",
                                                "podIP": f"10.1.{pod_number % 250}.7"}}))
                live.append(name)
                us += 1000
            else:
                name = live.pop(rng.randrange(len(live)))
                emit(_event(us, "delete", "pods", "Request", name, "shop",
                            request={"kind": "DeleteOptions", "apiVersion": "v1",
                                     "gracePeriodSeconds": 0}))
    return path.stat().st_size
