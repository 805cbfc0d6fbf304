"""The API server's ``PodTopologyLabels`` admission: a pod it binds carries its node's zone
and region labels.

Mirrors ``plugin/pkg/admission/podtopologylabels/admission.go`` (``admitBinding``; gate
``PodTopologyLabelsAdmission``, beta and on from v1.35): the node's
``topology.kubernetes.io/zone`` and ``topology.kubernetes.io/region`` labels are copied onto the
binding, and from it onto the pod, overwriting the pod's own.
"""

from __future__ import annotations

from typing import Any

#: The node labels the API server's ``PodTopologyLabels`` admission copies onto a pod it binds
#: (``plugin/pkg/admission/podtopologylabels``, gate ``PodTopologyLabelsAdmission``, on from
#: v1.35).
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def with_topology_labels(obj: dict[str, Any], node_labels: dict[str, str]
                         ) -> dict[str, Any] | None:
    """The bound pod's object after the admission copied the node's topology labels onto it
    (overwriting the pod's own), or None when that changes nothing."""
    copied = {key: node_labels[key] for key in TOPOLOGY_LABELS if key in node_labels}
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    if all(labels.get(key) == value for key, value in copied.items()):
        return None
    return {**obj, "metadata": {**metadata, "labels": {**labels, **copied}}}
