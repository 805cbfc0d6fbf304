"""A Node, parsed once from its Kubernetes JSON into what the scheduler reads.

Mirrors what ``framework.NodeInfo`` takes from a ``v1.Node`` (Kubernetes v1.34): labels,
taints, ``spec.unschedulable``, allocatable resources (``allowedPodNumber`` from ``pods``),
images by name with their sizes, and the node-tree zone key of ``backend/cache/node_tree.go``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kaudit.k8s.well_known import (
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
)
from kaudit.model.pod import Taint
from kaudit.model.resources import node_resources

#: The zone labels ``GetZoneKey`` reads, the deprecated one first.
ZONE_LABELS = (LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_ZONE)
#: The region labels ``GetZoneKey`` reads, the deprecated one first.
REGION_LABELS = (LABEL_FAILURE_DOMAIN_BETA_REGION, LABEL_TOPOLOGY_REGION)


def _first_present(labels: dict[str, str], keys: tuple[str, str]) -> str:
    """The value of the first of ``keys`` the labels have, even empty (Go's ``v, ok :=``)."""
    return next((labels[k] for k in keys if k in labels), "")


def zone_key(labels: dict[str, str]) -> str:
    """``GetZoneKey`` (``k8s.io/component-helpers/node/topology/helpers.go``): region and
    zone, each from the deprecated label when the node has it (even empty) and from the
    ``topology.kubernetes.io`` one otherwise; "" when both are empty."""
    zone = _first_present(labels, ZONE_LABELS)
    region = _first_present(labels, REGION_LABELS)
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


@dataclass(slots=True)
class NodeInfo:
    obj: dict[str, Any]
    name: str
    uid: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: dict[str, int]
    images: dict[str, int]
    zone: str


def parse_node(obj: dict[str, Any]) -> NodeInfo:
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = dict(metadata.get("labels") or {})
    images: dict[str, int] = {}
    for image in status.get("images") or []:
        for name in image.get("names") or []:
            images[name] = int(image.get("sizeBytes") or 0)
    return NodeInfo(
        obj=obj,
        name=metadata.get("name") or "",
        uid=metadata.get("uid") or metadata.get("name") or "",
        labels=labels,
        taints=tuple(Taint.parse(t) for t in spec.get("taints") or []),
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=node_resources(status.get("allocatable") or status.get("capacity") or {}),
        images=images,
        zone=zone_key(labels),
    )
