"""Write a trace of a GPU cluster that uses DRA's v1.36 device features.

    python -m kaudit.tracegen.dra_partitions partitions.jsonl --nodes 4 --pods 48

Each node publishes, for its GPUs, one pool of two ResourceSlices as a driver of partitionable
devices does: one with a counter set per GPU (memory 80Gi, compute 7) and one with the devices,
each GPU whole and as partitions (two ``3g`` of 40Gi and 3 compute, three ``1g`` of 10Gi and 1),
all consuming the GPU's counters; and one shareable inference GPU (``allowMultipleAllocations``)
whose 80Gi of memory claims take in 10Gi steps. One GPU of node 0 is tainted by its driver
(``NoSchedule``); a DeviceTaintRule drains node 1's pool from 30 s to 90 s. Pods arrive one a
second asking, through templates, for a ``3g`` partition, a ``1g`` partition that tolerates the
maintenance taint, a whole GPU, or 20Gi of a shared GPU; every third leaves after 40 s.

Replayed as v1.36 or v1.37 the partitions share their GPU's counters, a whole GPU takes all of
them, the shared GPU holds up to four 20Gi shares, the tainted GPU and the drained pool turn
away what does not tolerate them; as v1.34 or v1.35, where these features are off, only the
pods of the shared GPU get a device, each one whole (``kaudit compare partitions.jsonl
--kubernetes-version 1.35 --kubernetes-version 1.37`` shows the difference pod by pod).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kaudit.tracegen.builders import make_node, make_pod
from kaudit.tracegen.dra import claim_spec, claim_template, device_class, with_claims, write_events

JSON = dict[str, Any]
DRIVER = "gpu.example.com"
API = "resource.k8s.io/v1"
MAINTENANCE = "example.com/maintenance"
#: Partition profiles of an 80Gi, 7-slice GPU: (name, memory Gi, compute, how many).
PROFILES = (("whole", 80, 7, 1), ("3g", 40, 3, 2), ("1g", 10, 1, 3))


def _gpu_devices(gpu: int, tainted: bool) -> list[JSON]:
    devices = []
    for profile, memory, compute, count in PROFILES:
        for k in range(count):
            name = f"gpu-{gpu}" if profile == "whole" else f"gpu-{gpu}-{profile}-{k}"
            device: JSON = {
                "name": name,
                "attributes": {"profile": {"string": profile}, "gpu": {"int": gpu}},
                "capacity": {"memory": {"value": f"{memory}Gi"}},
                "consumesCounters": [{"counterSet": f"gpu-{gpu}", "counters": {
                    "memory": {"value": f"{memory}Gi"}, "compute": {"value": str(compute)}}}]}
            if tainted:
                device["taints"] = [{"key": "example.com/unhealthy", "value": "ecc",
                                     "effect": "NoSchedule"}]
            devices.append(device)
    return devices


def node_slices(node: str, gpus: int, tainted_gpu: int | None = None) -> list[JSON]:
    """The partitionable pool of ``node`` (a counter slice and a device slice) and its
    shareable inference GPU."""
    pool = {"name": node, "generation": 1, "resourceSliceCount": 2}
    counters = [{"name": f"gpu-{g}", "counters": {"memory": {"value": "80Gi"},
                                                   "compute": {"value": "7"}}}
                for g in range(gpus)]
    devices = [d for g in range(gpus) for d in _gpu_devices(g, g == tainted_gpu)]
    shared = {"name": "infer-0", "allowMultipleAllocations": True,
              "attributes": {"profile": {"string": "shared"}},
              "capacity": {"memory": {"value": "80Gi", "requestPolicy": {
                  "default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}}}}
    return [
        {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{node}-counters"},
         "spec": {"driver": DRIVER, "nodeName": node, "pool": pool,
                  "sharedCounters": counters}},
        {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
         "spec": {"driver": DRIVER, "nodeName": node, "pool": pool, "devices": devices}},
        {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{node}-inference"},
         "spec": {"driver": DRIVER, "nodeName": node,
                  "pool": {"name": f"{node}-inference", "generation": 1,
                           "resourceSliceCount": 1},
                  "devices": [shared]}},
    ]


def _template(name: str, profile: str, *, memory: str | None = None,
              tolerate: bool = False) -> JSON:
    exactly: JSON = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1,
                     "selectors": [{"cel": {"expression":
                                            f'device.attributes["{DRIVER}"].profile == '
                                            f'"{profile}"'}}]}
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    if tolerate:
        exactly["tolerations"] = [{"key": MAINTENANCE, "operator": "Exists"}]
    return claim_template(name, claim_spec({"name": "gpu", "exactly": exactly}))


def drain_rule(node: str) -> JSON:
    """A DeviceTaintRule tainting every device of ``node``'s partitionable pool."""
    return {"apiVersion": API, "kind": "DeviceTaintRule",
            "metadata": {"name": f"drain-{node}"},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": node},
                     "taint": {"key": MAINTENANCE, "value": "drain", "effect": "NoSchedule"}}}


def partitioned_cluster_events(nodes: int = 4, pods: int = 48, gpus_per_node: int = 2
                               ) -> list[tuple[float, str, JSON]]:
    """``(seconds, type, object)`` events of the cluster (see the module docstring)."""
    events: list[tuple[float, str, JSON]] = [
        (0.0, "ADDED", device_class("gpu", f'device.driver == "{DRIVER}"'))]
    for n in range(nodes):
        name = f"gpu-node-{n:04d}"
        events.append((0.0, "ADDED", make_node(name).capacity(cpu="64", memory="512Gi",
                                                              pods="110").obj()))
        events += [(0.0, "ADDED", piece)
                   for piece in node_slices(name, gpus_per_node, 0 if n == 0 else None)]
    templates = [_template("one-3g", "3g"), _template("one-1g-tolerant", "1g", tolerate=True),
                 _template("whole-gpu", "whole"),
                 _template("shared-20gi", "shared", memory="20Gi")]
    events += [(1.0, "ADDED", template) for template in templates]
    if nodes > 1:
        rule = drain_rule("gpu-node-0001")
        events += [(30.0, "ADDED", rule), (90.0, "DELETED", rule)]
    names = [t["metadata"]["name"] for t in templates]
    for i in range(pods):
        at = 2.0 + i
        pod = make_pod(f"job-{i:04d}").req(cpu="2", memory="8Gi").label("app", "gpu").obj()
        pod = with_claims(pod, gpu=("template", names[i % len(names)]))
        events.append((at, "ADDED", pod))
        if i % 3 == 2:
            events.append((at + 40.0, "DELETED", pod))
    events.sort(key=lambda event: event[0])
    return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--pods", type=int, default=48)
    parser.add_argument("--gpus-per-node", type=int, default=2)
    args = parser.parse_args(argv)
    write_events(args.output, partitioned_cluster_events(args.nodes, args.pods,
                                                         args.gpus_per_node))
    return 0


if __name__ == "__main__":
    sys.exit(main())
