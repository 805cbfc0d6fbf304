"""Scenarios for VolumeLimitScaling: CSI volumes on nodes whose CSINode may lack the driver.

A :func:`volume_scaling_cycle` is a volumes cycle (``generators._volumes_cycle``) whose CSI
driver has a CSIDriver object that opts in to the check (``preventPodSchedulingIfMissing:
true``), opts out, or says nothing; some CSINodes lose the driver, some nodes have no
CSINode. From v1.36 the opt-in exists; v1.37 turns the gate on, so there a pod with a CSI
volume is kept off the nodes without the driver.
"""

from __future__ import annotations

from typing import Any

from tests.oracle.generators import CSI_DRIVER, Gen, _volumes_cycle

JSON = dict[str, Any]


def volume_scaling_cycle(g: Gen) -> JSON:
    scenario = _volumes_cycle(g)
    driver: JSON = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                    "metadata": {"name": CSI_DRIVER, "uid": g.uid()},
                    "spec": {"attachRequired": True}}
    opt_in = g.r.choice([True, True, True, False, None])
    if opt_in is not None:
        driver["spec"]["preventPodSchedulingIfMissing"] = opt_in
    objects = [driver]
    for obj in scenario["objects"]:
        if obj["kind"] == "CSINode" and g.chance(0.3):
            if g.chance(0.5):
                continue  # the node has no CSINode
            obj = {**obj, "spec": {"drivers": [{"name": "other.csi.example.com",
                                                "nodeID": obj["metadata"]["name"]}]}}
        objects.append(obj)
    return {**scenario, "objects": objects}
