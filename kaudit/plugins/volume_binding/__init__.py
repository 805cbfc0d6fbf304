"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, bindable or provisionable on
the node.

Mirrors ``pkg/scheduler/framework/plugins/volumebinding/`` of Kubernetes v1.34, file for file:
``plugin`` (``volume_binding.go``: the plugin, its args, events and queueing hints),
``binder`` (``binder.go``: PreFilter, Filter, Reserve, Unreserve and PreBind, finding and
assuming bindings), ``assume_cache`` (``assume_cache.go``), ``scorer`` (``scorer.go``) and
``common`` (its storage helpers; reading the storage objects is
:mod:`kaudit.plugins.storage_objects`, shared with the other volume plugins).

Not modelled: CSI storage capacity (``CSIStorageCapacity``/``CSIDriver`` are not stored, so
``node(s) did not have enough free storage`` never appears and dynamic provisions score 0),
and translating in-tree PVs to CSI before checking their node affinity.
"""

from kaudit.plugins.volume_binding.assume_cache import AssumeCache
from kaudit.plugins.volume_binding.binder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    STATE_KEY,
    BindingState,
)
from kaudit.plugins.volume_binding.plugin import VolumeBinding

__all__ = [
    "REASON_BIND_CONFLICT",
    "REASON_NODE_CONFLICT",
    "REASON_NOT_ENOUGH_SPACE",
    "REASON_PV_NOT_EXIST",
    "REASON_UNBOUND_IMMEDIATE",
    "STATE_KEY",
    "AssumeCache",
    "BindingState",
    "VolumeBinding",
]
