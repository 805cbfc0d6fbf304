"""Scenarios with consumable capacity: devices several claims share, each taking a part.

Each node of a :func:`dra_shared_cycle` may publish a pool of shareable GPUs
(``allowMultipleAllocations``) whose memory has a request policy (a default, a range from a
minimum in steps, or a list of valid values) and whose bandwidth is plain, beside a pool of
ordinary GPUs. Running pods hold shares (a ``shareID`` and what they consumed) and whole
devices. The incoming pod asks for one or two devices, often with capacity requests, now and
then with a ``distinctAttribute`` constraint, or with a request no device can hold.

At v1.34 and v1.35 DRAConsumableCapacity is off (devices are allocated whole, capacity
requests are ignored, ``distinctAttribute`` is an unsupported constraint); at v1.36 and v1.37
it is on, and v1.37 checks ``All`` requests and counters differently.
"""

from __future__ import annotations

import uuid
from typing import Any

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

JSON = dict[str, Any]


def _memory_policy(g: Gen) -> JSON | None:
    return g.r.choice([
        None,
        {"default": "10Gi", "validRange": {"min": "5Gi", "step": "5Gi"}},
        {"default": "10Gi", "validRange": {"min": "5Gi", "max": "40Gi", "step": "5Gi"}},
        {"default": "8Gi", "validValues": ["8Gi", "16Gi", "40Gi"]},
        {"validRange": {"min": "1Gi"}},
    ])


def _shared_pool(g: Gen, node: str) -> tuple[JSON, list[str]]:
    policy = _memory_policy(g)
    devices = []
    for k in range(g.r.choice([1, 2])):
        memory: JSON = {"value": "80Gi"}
        if policy is not None:
            memory["requestPolicy"] = policy
        bandwidth: JSON = {"value": "100"}
        if g.chance(0.5):
            bandwidth["requestPolicy"] = {"default": "10", "validRange": {"min": "10",
                                                                          "step": "10"}}
        devices.append({"name": f"shared-{k}",
                        "attributes": {"model": {"string": g.r.choice(["A100", "L4"])},
                                       "profile": {"string": "shared"},
                                       "gpu": {"int": k}},
                        "allowMultipleAllocations": g.chance(0.85),
                        "capacity": {"memory": memory, "bandwidth": bandwidth}})
    return ({"apiVersion": DRA_API, "kind": "ResourceSlice",
             "metadata": {"name": f"{node}-shared", "uid": g.uid()},
             "spec": {"driver": DRA_DRIVER, "nodeName": node,
                      "pool": {"name": f"{node}-shared", "generation": 1,
                               "resourceSliceCount": 1},
                      "devices": devices}},
            [d["name"] for d in devices])


def _whole_pool(g: Gen, node: str) -> tuple[JSON, list[str]]:
    devices = [{"name": f"gpu-{k}",
                "attributes": {"model": {"string": "A100"}, "profile": {"string": "whole"},
                               "gpu": {"int": k}},
                "capacity": {"memory": {"value": "40Gi"}}}
               for k in range(g.r.choice([1, 2]))]
    return ({"apiVersion": DRA_API, "kind": "ResourceSlice",
             "metadata": {"name": f"{node}-gpus", "uid": g.uid()},
             "spec": {"driver": DRA_DRIVER, "nodeName": node,
                      "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                      "devices": devices}},
            [d["name"] for d in devices])


def _class(g: Gen) -> JSON:
    return {"apiVersion": DRA_API, "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com", "uid": g.uid()},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]}}


def _held(g: Gen, pod: JSON, serial: int, pool: str, device: str, shared: bool) -> JSON:
    if not shared:
        return held_claim(g, pod, serial, pool, device)
    return held_claim(g, pod, serial, pool, device,
                      shareID=str(uuid.UUID(int=g.r.getrandbits(128), version=4)),
                      consumedCapacity={"memory": g.r.choice(["10Gi", "20Gi", "40Gi", "75Gi"]),
                                        "bandwidth": g.r.choice(["10", "50", "100"])})


def _wanted(g: Gen, k: int) -> JSON:
    r = g.r
    profile = r.choice(["shared", "shared", "whole", None])
    selectors = ([f'device.attributes["{DRA_DRIVER}"].profile == "{profile}"']
                 if profile else [])
    count = r.choice([1, 1, 2])
    claim = _claim(g, f"want-{k}", "default", "gpu.example.com", count, *selectors)
    exactly = claim["spec"]["devices"]["requests"][0]["exactly"]
    if g.chance(0.7):
        requests: JSON = {"memory": r.choice(["7Gi", "10Gi", "20Gi", "33Gi", "60Gi", "90Gi"])}
        if g.chance(0.3):
            requests["bandwidth"] = r.choice(["10", "25", "60"])
        if g.chance(0.05):
            requests["iops"] = "10"  # no device has it
        exactly["capacity"] = {"requests": requests}
    if count == 2 and g.chance(0.5):
        claim["spec"]["devices"]["constraints"] = [
            {"requests": ["gpu"], "distinctAttribute": f"{DRA_DRIVER}/gpu"}]
    if g.chance(0.1):
        exactly["allocationMode"] = "All"
        exactly.pop("count", None)
    return claim


def dra_shared_cycle(g: Gen) -> JSON:
    """A cycle scenario (``{"objects", "pod", "config"}``) among shareable devices."""
    r = g.r
    objects, nodes, pods, zones = _cluster(g, nmin=2, nmax=8, pmax=24)
    dra_objects = [_class(g)]
    shared_of: dict[str, list[str]] = {}
    whole_of: dict[str, list[str]] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        if g.chance(0.8):
            piece, shared_of[name] = _shared_pool(g, name)
            dra_objects.append(piece)
        if g.chance(0.4):
            piece, whole_of[name] = _whole_pool(g, name)
            dra_objects.append(piece)
    serial = 0
    for pod in pods:
        node = pod["spec"]["nodeName"]
        if g.chance(0.5) and shared_of.get(node):
            serial += 1
            device = r.choice(shared_of[node])
            dra_objects.append(_held(g, pod, serial, f"{node}-shared", device, True))
        elif g.chance(0.3) and whole_of.get(node):
            serial += 1
            device = whole_of[node].pop(0)
            dra_objects.append(_held(g, pod, serial, node, device, False))
    wanted = [_wanted(g, k) for k in range(r.choice([1, 1, 2]))]
    pod = _incoming(g, zones, nodes, big=False)
    pod["metadata"]["namespace"] = "default"
    if g.chance(0.8):
        for key in ("affinity", "nodeSelector", "topologySpreadConstraints"):
            pod["spec"].pop(key, None)
        pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    for k, claim in enumerate(wanted):
        _use_claim(pod, claim["metadata"]["name"], f"gpu-{k}")
    return {"objects": objects + dra_objects + wanted + nodes + pods, "pod": pod,
            "config": None}
