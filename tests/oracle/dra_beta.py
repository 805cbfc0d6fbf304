"""Scenarios with DRA's beta device features: partitionable GPUs and tainted devices.

Each node of a :func:`dra_beta_cycle` may publish a pool of two ResourceSlices, as a driver of
partitionable GPUs does from v1.35's API: one holding the counter sets (a GPU's memory and
compute slices), one the devices, each GPU whole and as partitions (``1g``, ``3g``) consuming
its counters. Some devices are tainted (``NoSchedule``, ``NoExecute`` or ``None``), some
network-attached devices select their nodes one by one (``perDeviceNodeSelection``), a few
pools are broken (a device consuming a counter set the pool lacks); from v1.37 DeviceTaintRules
taint a pool or a device. Running pods hold claims
on whole GPUs and partitions, now and then on more than the counters allow. The incoming pod
asks for one or two devices of a profile, sometimes with tolerations.

At v1.34 and v1.35 the features are off, at v1.36 and v1.37 on: the same scenarios check
both sides against upstream.
"""

from __future__ import annotations

from typing import Any

from kaudit import versions
from tests.oracle.generators import (
    DRA_API,
    DRA_DRIVER,
    Gen,
    _claim,
    _cluster,
    _incoming,
    _use_claim,
    held_claim,
)
from tests.oracle.release import RELEASE

JSON = dict[str, Any]
TAINT_KEY = "example.com/unhealthy"
#: Partition profiles: (name, memory in Gi, compute slices) of an 80Gi, 7-slice GPU.
PROFILES = (("1g", 10, 1), ("3g", 40, 3))


def _gpu_devices(g: Gen, gpu: int, model: str) -> list[JSON]:
    counter_set = f"gpu-{gpu}"
    devices: list[JSON] = []

    def device(name: str, profile: str, memory: int, compute: int) -> JSON:
        made: JSON = {"name": name,
                      "attributes": {"model": {"string": model}, "profile": {"string": profile},
                                     "gpu": {"int": gpu}},
                      "capacity": {"memory": {"value": f"{memory}Gi"}},
                      "consumesCounters": [{"counterSet": counter_set, "counters": {
                          "memory": {"value": f"{memory}Gi"},
                          "compute": {"value": str(compute)}}}]}
        if g.chance(0.15):
            made["taints"] = [{"key": TAINT_KEY, "value": g.r.choice(["true", "ecc"]),
                               "effect": g.r.choice(["NoSchedule", "NoExecute", "None"])}]
        return made

    devices.append(device(f"gpu-{gpu}", "whole", 80, 7))
    for profile, memory, compute in PROFILES:
        for k in range(g.r.choice([1, 2])):
            devices.append(device(f"gpu-{gpu}-{profile}-{k}", profile, memory, compute))
    return devices


def _node_pool(g: Gen, node: str) -> tuple[list[JSON], list[str]]:
    gpus = g.r.choice([1, 2])
    model = g.r.choice(["A100", "H100"])
    counter_sets = [{"name": f"gpu-{i}", "counters": {"memory": {"value": "80Gi"},
                                                       "compute": {"value": "7"}}}
                    for i in range(gpus)]
    devices = [d for i in range(gpus) for d in _gpu_devices(g, i, model)]
    if g.chance(0.08):  # a broken pool: a device consumes a counter set it does not have
        devices[-1]["consumesCounters"][0]["counterSet"] = "gpu-9"
    pool = {"name": node, "generation": 1, "resourceSliceCount": 2}
    slices = [
        {"apiVersion": DRA_API, "kind": "ResourceSlice",
         "metadata": {"name": f"{node}-counters", "uid": g.uid()},
         "spec": {"driver": DRA_DRIVER, "nodeName": node, "pool": pool,
                  "sharedCounters": counter_sets}},
        {"apiVersion": DRA_API, "kind": "ResourceSlice",
         "metadata": {"name": f"{node}-gpus", "uid": g.uid()},
         "spec": {"driver": DRA_DRIVER, "nodeName": node, "pool": pool, "devices": devices}},
    ]
    return slices, [d["name"] for d in devices]


def _fabric(g: Gen, nodes: list[str]) -> JSON:
    """Network-attached devices, each reachable from one node or from all."""
    devices = []
    for k in range(g.r.randint(1, 4)):
        device: JSON = {"name": f"nic-{k}",
                        "attributes": {"model": {"string": "A100"},
                                       "profile": {"string": "whole"}, "gpu": {"int": 0}},
                        "capacity": {"memory": {"value": "80Gi"}}}
        if g.chance(0.3):
            device["allNodes"] = True
        else:
            device["nodeName"] = g.r.choice(nodes)
        devices.append(device)
    return {"apiVersion": DRA_API, "kind": "ResourceSlice",
            "metadata": {"name": "fabric", "uid": g.uid()},
            "spec": {"driver": DRA_DRIVER, "perDeviceNodeSelection": True,
                     "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def _taint_rule(g: Gen, k: int, node: str, devices_of: dict[str, list[str]]) -> JSON:
    """A DeviceTaintRule (v1.37 on) tainting a node's pool, one device of it, or nothing."""
    selector: JSON = g.r.choice([{"driver": DRA_DRIVER, "pool": node}, {"pool": node},
                                 {"pool": node, "device": g.r.choice(devices_of[node])},
                                 {"driver": "other.example.com"}])
    return {"apiVersion": DRA_API, "kind": "DeviceTaintRule",
            "metadata": {"name": f"maintenance-{k}", "uid": g.uid()},
            "spec": {"deviceSelector": selector,
                     "taint": {"key": TAINT_KEY, "value": "true",
                               "effect": g.r.choice(["NoSchedule", "NoSchedule", "NoExecute",
                                                     "None"])}}}


def _classes(g: Gen) -> list[JSON]:
    base = f'device.driver == "{DRA_DRIVER}"'
    return [
        {"apiVersion": DRA_API, "kind": "DeviceClass",
         "metadata": {"name": "gpu.example.com", "uid": g.uid()},
         "spec": {"selectors": [{"cel": {"expression": base}}]}},
        {"apiVersion": DRA_API, "kind": "DeviceClass",
         "metadata": {"name": "a100.gpu.example.com", "uid": g.uid()},
         "spec": {"selectors": [
             {"cel": {"expression": base}},
             {"cel": {"expression": f'device.attributes["{DRA_DRIVER}"].model == "A100"'}}]}},
    ]


def _toleration(g: Gen) -> JSON:
    return g.r.choice([
        {"key": TAINT_KEY, "operator": "Exists"},
        {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": TAINT_KEY, "operator": "Equal", "value": "true"},
        {"operator": "Exists"},
    ])


def dra_beta_cycle(g: Gen) -> JSON:
    """A cycle scenario (``{"objects", "pod", "config"}``) among partitionable GPUs."""
    r = g.r
    objects, nodes, pods, zones = _cluster(g, nmin=2, nmax=8, pmax=24)
    names = [n["metadata"]["name"] for n in nodes]
    dra_objects = _classes(g)
    devices_of: dict[str, list[str]] = {}
    for name in names:
        if g.chance(0.75):
            slices, devices = _node_pool(g, name)
            dra_objects += slices
            devices_of[name] = devices
    if g.chance(0.3):
        dra_objects.append(_fabric(g, names))
    if devices_of and versions.carries(RELEASE, "dra-taint-rules-select-nothing-without-selector"):
        for k, node in enumerate(sorted(devices_of)):
            if g.chance(0.35):
                dra_objects.append(_taint_rule(g, k, node, devices_of))
    serial = 0
    for pod in pods:
        node = pod["spec"]["nodeName"]
        if node not in devices_of or not g.chance(0.4):
            continue
        device = devices_of[node].pop(r.randrange(len(devices_of[node])))
        serial += 1
        dra_objects.append(held_claim(g, pod, serial, node, device))
        if not devices_of[node]:
            del devices_of[node]
    wanted: list[JSON] = []
    for k in range(r.choice([1, 1, 2])):
        cls = r.choice(["gpu.example.com", "gpu.example.com", "a100.gpu.example.com"])
        profile = r.choice(["whole", "1g", "3g", None])
        selectors = ([f'device.attributes["{DRA_DRIVER}"].profile == "{profile}"']
                     if profile else [])
        claim = _claim(g, f"want-{k}", "default", cls, r.choice([1, 1, 2]), *selectors)
        if g.chance(0.4):
            claim["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
                _toleration(g) for _ in range(r.choice([1, 1, 2]))]
        wanted.append(claim)
    pod = _incoming(g, zones, nodes, big=False)
    pod["metadata"]["namespace"] = "default"
    if g.chance(0.75):  # most incoming pods reach DynamicResources' Filter on most nodes
        for key in ("affinity", "nodeSelector", "topologySpreadConstraints"):
            pod["spec"].pop(key, None)
        pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    for k, claim in enumerate(wanted):
        _use_claim(pod, claim["metadata"]["name"], f"gpu-{k}")
    return {"objects": objects + dra_objects + wanted + nodes + pods, "pod": pod,
            "config": None}
