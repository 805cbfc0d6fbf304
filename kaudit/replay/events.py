"""Which cluster events can make a rejected pod schedulable, by plugin.

Mirrors the ``EventsToRegister`` of each in-tree plugin (Kubernetes v1.34,
``pkg/scheduler/framework/plugins/*``), coarsened to (resource, action): an unschedulable pod
moves on an event when one of the plugins that rejected it registered the event. Upstream's
queueing hints then decide per event; kaudit does not model them, so it moves pods at least as
often as upstream (never fewer).
"""

from __future__ import annotations

from functools import lru_cache

_NODE_CHANGES = {("Node", "Add"), ("Node", "Update")}
_POD_DELETE = {("Pod", "Delete")}
_ALL_PODS = {("Pod", "Add"), ("Pod", "Update"), ("Pod", "Delete")}
_VOLUMES = {(kind, action) for kind in ("PersistentVolume", "PersistentVolumeClaim",
                                        "StorageClass", "CSINode")
            for action in ("Add", "Update", "Delete")}

PLUGIN_EVENTS: dict[str, set[tuple[str, str]]] = {
    "NodeUnschedulable": set(_NODE_CHANGES),
    "NodeName": {("Node", "Add")},
    "TaintToleration": set(_NODE_CHANGES),
    "NodeAffinity": set(_NODE_CHANGES),
    "NodePorts": _POD_DELETE | {("Node", "Add")},
    "NodeResourcesFit": _POD_DELETE | _NODE_CHANGES,
    "VolumeRestrictions": _POD_DELETE | {("PersistentVolumeClaim", "Add")},
    "NodeVolumeLimits": _POD_DELETE | {("CSINode", "Add"), ("PersistentVolumeClaim", "Add"),
                                       ("PersistentVolume", "Add"), ("Node", "Add")},
    "VolumeBinding": _VOLUMES | _NODE_CHANGES,
    "VolumeZone": _VOLUMES | _NODE_CHANGES,
    "PodTopologySpread": _ALL_PODS | _NODE_CHANGES | {("Node", "Delete")},
    "InterPodAffinity": _ALL_PODS | _NODE_CHANGES,
    "DynamicResources": set(),
}


@lru_cache(maxsize=64)
def interested_plugins(resource: str, action: str) -> frozenset[str]:
    """The plugins that registered ``resource``/``action``; unknown plugins always listen."""
    return frozenset(name for name, events in PLUGIN_EVENTS.items()
                     if (resource, action) in events)
