"""Dynamic resource allocation objects, and a GPU cluster trace that uses them.

Builders for ``resource.k8s.io/v1`` DeviceClasses, ResourceSlices, ResourceClaims and
ResourceClaimTemplates, and :func:`gpu_cluster_events`: a cluster whose nodes publish GPUs
through a DRA driver (``gpu.example.com``, one slice per node, devices with ``model``,
``index``, ``pcieRoot`` and ``driverVersion`` attributes and a ``memory`` capacity), two
DeviceClasses (any GPU; A100s only), network-attached fabric devices that a node selector makes
reachable from one rack, and pods that ask for devices through templates (one GPU; two GPUs on
one PCIe root; an A100 if any is free, else any GPU) and through a shared claim (every tenth
of the first 80 pods).

``python -m kaudit.tracegen.dra traces/dra-gpu.jsonl`` writes the trace kept in ``traces/``;
``--nodes`` and ``--pods`` scale it (the benchmark uses 1,000 nodes of 8 GPUs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from kaudit.tracegen.builders import make_node, make_pod, stable_uid

JSON = dict[str, Any]
API_VERSION = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"
FABRIC_DRIVER = "fabric.example.com"


def device_class(name: str, *expressions: str) -> JSON:
    return {"apiVersion": API_VERSION, "kind": "DeviceClass",
            "metadata": {"name": name, "uid": stable_uid("deviceclass", name)},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}}


def gpu(index: int, model: str, memory: str, pcie_root: str, version: str = "1.2.0") -> JSON:
    return {"name": f"gpu-{index}",
            "attributes": {"model": {"string": model}, "index": {"int": index},
                           "pcieRoot": {"string": pcie_root},
                           "driverVersion": {"version": version}},
            "capacity": {"memory": {"value": memory}}}


def resource_slice(name: str, driver: str, pool: str, devices: list[JSON], *,
                   node: str | None = None, node_selector: JSON | None = None,
                   all_nodes: bool = False, generation: int = 1, count: int = 1) -> JSON:
    spec: JSON = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                             "resourceSliceCount": count},
                  "devices": devices}
    if node is not None:
        spec["nodeName"] = node
    elif node_selector is not None:
        spec["nodeSelector"] = node_selector
    elif all_nodes:
        spec["allNodes"] = True
    return {"apiVersion": API_VERSION, "kind": "ResourceSlice",
            "metadata": {"name": name, "uid": stable_uid("resourceslice", name)}, "spec": spec}


def exact_request(name: str, device_class_name: str, count: int = 1, *selectors: str,
                  mode: str = "ExactCount", admin_access: bool | None = None) -> JSON:
    exactly: JSON = {"deviceClassName": device_class_name, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if admin_access is not None:
        exactly["adminAccess"] = admin_access
    return {"name": name, "exactly": exactly}


def first_available(name: str, *alternatives: tuple[str, str, int]) -> JSON:
    """A request with subrequests ``(name, class, count)``, in order of preference."""
    return {"name": name, "firstAvailable": [
        {"name": sub, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
        for sub, cls, count in alternatives]}


def claim_spec(*requests: JSON, match_attribute: str | None = None) -> JSON:
    devices: JSON = {"requests": list(requests)}
    if match_attribute is not None:
        devices["constraints"] = [{"matchAttribute": match_attribute}]
    return {"devices": devices}


def claim(name: str, spec: JSON, namespace: str = "default") -> JSON:
    return {"apiVersion": API_VERSION, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace,
                         "uid": stable_uid("resourceclaim", namespace, name)},
            "spec": spec}


def claim_template(name: str, spec: JSON, namespace: str = "default") -> JSON:
    return {"apiVersion": API_VERSION, "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace,
                         "uid": stable_uid("resourceclaimtemplate", namespace, name)},
            "spec": {"spec": spec}}


def with_claims(pod: JSON, **claims: tuple[str, str]) -> JSON:
    """``pod`` with ``spec.resourceClaims``: entry name → (``"template"`` or ``"claim"``,
    the object's name); containers use them all."""
    entries = []
    for entry, (kind, name) in claims.items():
        key = "resourceClaimTemplateName" if kind == "template" else "resourceClaimName"
        entries.append({"name": entry, key: name})
    pod["spec"]["resourceClaims"] = entries
    for container in pod["spec"]["containers"]:
        container.setdefault("resources", {})["claims"] = [{"name": e} for e in claims]
    return pod


def _stamp(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"2026-03-02T{9 + hours:02d}:{minutes:02d}:{rest:06.3f}Z"


def gpu_cluster_events(nodes: int = 6, pods: int = 40, gpus_per_node: int = 8
                       ) -> list[tuple[float, str, JSON]]:
    """``(seconds, type, object)`` events of the GPU cluster: classes, nodes and their slices
    at 0 s, the shared claim and the templates, then pods arriving one per second (every
    fifth of the template pods deleted 20 s after it arrived)."""
    events: list[tuple[float, str, JSON]] = [
        (0.0, "ADDED", device_class("gpu.example.com", f'device.driver == "{DRIVER}"')),
        (0.0, "ADDED", device_class(
            "a100.gpu.example.com", f'device.driver == "{DRIVER}"',
            f'device.attributes["{DRIVER}"].model == "A100"')),
        (0.0, "ADDED", device_class("fabric.example.com",
                                    f'device.driver == "{FABRIC_DRIVER}"')),
    ]
    for n in range(nodes):
        name = f"gpu-node-{n:04d}"
        rack = f"rack-{n % 3}"
        model = "A100" if n % 2 == 0 else "L4"
        memory = "80Gi" if model == "A100" else "24Gi"
        events.append((0.0, "ADDED", make_node(name).capacity(cpu="64", memory="512Gi",
                                                               pods="110")
                       .label("example.com/rack", rack).obj()))
        devices = [gpu(i, model, memory, f"pci-{i // 4}") for i in range(gpus_per_node)]
        events.append((0.0, "ADDED", resource_slice(f"{name}-gpus", DRIVER, name, devices,
                                                    node=name)))
    rack_selector = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "example.com/rack", "operator": "In", "values": ["rack-0"]}]}]}
    events.append((0.0, "ADDED", resource_slice(
        "rack-0-fabric", FABRIC_DRIVER, "rack-0",
        [{"name": f"link-{i}", "attributes": {"bandwidth": {"int": 400}}} for i in range(4)],
        node_selector=rack_selector)))
    events += [
        (1.0, "ADDED", claim("shared-gpu", claim_spec(exact_request("gpu", "gpu.example.com")))),
        (1.0, "ADDED", claim_template("one-gpu", claim_spec(
            exact_request("gpu", "gpu.example.com")))),
        (1.0, "ADDED", claim_template("two-gpus-one-root", claim_spec(
            exact_request("gpus", "gpu.example.com", 2),
            match_attribute=f"{DRIVER}/pcieRoot"))),
        (1.0, "ADDED", claim_template("a100-else-any", claim_spec(first_available(
            "gpu", ("a100", "a100.gpu.example.com", 1), ("any", "gpu.example.com", 1))))),
        (1.0, "ADDED", claim_template("big-memory", claim_spec(exact_request(
            "gpu", "gpu.example.com", 1,
            f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0')))),
        (1.0, "ADDED", claim_template("gpu-and-fabric", claim_spec(
            exact_request("gpu", "gpu.example.com"),
            exact_request("link", "fabric.example.com")))),
    ]
    templates = ["one-gpu", "two-gpus-one-root", "a100-else-any", "big-memory",
                 "gpu-and-fabric"]
    for i in range(pods):
        at = 2.0 + i
        name = f"train-{i:04d}"
        pod = make_pod(name).req(cpu="4", memory="16Gi").label("app", "train").obj()
        if i % 10 == 9 and i < 80:
            pod = with_claims(pod, gpu=("claim", "shared-gpu"))
        else:
            pod = with_claims(pod, gpu=("template", templates[i % len(templates)]))
        events.append((at, "ADDED", pod))
        if i % 5 == 4 and not (i % 10 == 9 and i < 80):
            events.append((at + 20.0, "DELETED", pod))
    events.sort(key=lambda event: event[0])
    return events


def write_events(path: Path, events: list[tuple[float, str, JSON]]) -> None:
    with path.open("wb") as out:
        for seconds, kind, obj in events:
            out.write(orjson.dumps({"ts": _stamp(seconds), "type": kind, "object": obj}))
            out.write(b"\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--nodes", type=int, default=6)
    parser.add_argument("--pods", type=int, default=40)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    args = parser.parse_args(argv)
    write_events(args.output, gpu_cluster_events(args.nodes, args.pods, args.gpus_per_node))
    return 0


if __name__ == "__main__":
    sys.exit(main())
