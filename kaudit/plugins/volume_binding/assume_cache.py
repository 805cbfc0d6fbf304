"""VolumeBinding's assume cache: bindings chosen at Reserve, seen by later pods of the replay.

Mirrors ``volumebinding/assume_cache.go`` (Kubernetes v1.34): Reserve assumes the PV's
``claimRef`` and the claim's ``volume.kubernetes.io/selected-node`` on the plugin instance;
Unreserve reverts them; an assumption lapses when the PV or claim object is replaced in the
cluster state (the informer's newer version).
"""

from __future__ import annotations

from dataclasses import dataclass

from kaudit.cluster.state import ClusterState
from kaudit.plugins.storage_objects import JSON, PV_KIND, PVC_KIND, objects_of, volume_class
from kaudit.plugins.volume_binding.common import Volume

# --------------------------------------------------------------------------- assume cache

@dataclass
class Assumed:
    """An assumed object and the stored object it was derived from."""

    base: JSON
    obj: JSON


class AssumeCache:
    """The PV and PVC assume caches of ``binder.go``: assumed versions shadow the stored
    objects until Unreserve restores them or the stored object is replaced."""

    def __init__(self) -> None:
        self.volumes: dict[str, Assumed] = {}
        self.claims: dict[str, Assumed] = {}

    @staticmethod
    def _view(cache: dict[str, Assumed], key: str, base: JSON | None) -> JSON | None:
        assumed = cache.get(key)
        if assumed is None:
            return base
        if base is not None and assumed.base is base:
            return assumed.obj
        del cache[key]  # a newer object arrived (or it was deleted)
        return base

    def volume(self, cluster: ClusterState, name: str) -> tuple[JSON | None, JSON | None]:
        """``(effective PV, stored PV)``."""
        base = objects_of(cluster, PV_KIND).get(name)
        return self._view(self.volumes, name, base), base

    def claim(self, cluster: ClusterState, key: str) -> tuple[JSON | None, JSON | None]:
        base = objects_of(cluster, PVC_KIND).get(key)
        return self._view(self.claims, key, base), base

    def volumes_of_class(self, cluster: ClusterState, class_name: str) -> list[Volume]:
        """``PVAssumeCache.ListPVs``: every PV of the class, assumed versions included."""
        result = []
        for name in list(objects_of(cluster, PV_KIND)):
            obj, base = self.volume(cluster, name)
            if obj is not None and base is not None and volume_class(obj) == class_name:
                result.append(Volume.of(obj, base))
        return result
