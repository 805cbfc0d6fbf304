"""The Kubernetes kinds kaudit replays: resource name, kind, API version and scope (what
``kaudit record`` lists and watches, and what audit logs are read for)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class KindSpec:
    """One recordable collection, named by its plural resource name (``pods``)."""

    resource: str
    kind: str
    api_version: str
    namespaced: bool

    def path(self, namespace: str | None = None) -> str:
        """The collection's URL path, restricted to ``namespace`` when the kind has one."""
        prefix = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if namespace and self.namespaced:
            return f"{prefix}/namespaces/{namespace}/{self.resource}"
        return f"{prefix}/{self.resource}"


# Table order is the order of the first lists: what pods refer to (namespaces, priority classes,
# nodes, volumes, owners) comes before the pods, so a trace's initial state reads top-down.
KINDS: tuple[KindSpec, ...] = (
    KindSpec("namespaces", "Namespace", "v1", False),
    KindSpec("priorityclasses", "PriorityClass", "scheduling.k8s.io/v1", False),
    KindSpec("storageclasses", "StorageClass", "storage.k8s.io/v1", False),
    KindSpec("nodes", "Node", "v1", False),
    KindSpec("csidrivers", "CSIDriver", "storage.k8s.io/v1", False),
    KindSpec("csinodes", "CSINode", "storage.k8s.io/v1", False),
    KindSpec("persistentvolumes", "PersistentVolume", "v1", False),
    KindSpec("persistentvolumeclaims", "PersistentVolumeClaim", "v1", True),
    KindSpec("services", "Service", "v1", True),
    KindSpec("replicationcontrollers", "ReplicationController", "v1", True),
    KindSpec("replicasets", "ReplicaSet", "apps/v1", True),
    KindSpec("statefulsets", "StatefulSet", "apps/v1", True),
    KindSpec("poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", True),
    KindSpec("deviceclasses", "DeviceClass", "resource.k8s.io/v1", False),
    KindSpec("resourceslices", "ResourceSlice", "resource.k8s.io/v1", False),
    KindSpec("devicetaintrules", "DeviceTaintRule", "resource.k8s.io/v1", False),
    KindSpec("resourceclaimtemplates", "ResourceClaimTemplate", "resource.k8s.io/v1", True),
    KindSpec("resourceclaims", "ResourceClaim", "resource.k8s.io/v1", True),
    KindSpec("pods", "Pod", "v1", True),
)

BY_RESOURCE = {spec.resource: spec for spec in KINDS}
#: The kinds the replay engine uses; any other kind in a trace is kept and counted, not used.
REPLAY_KINDS = frozenset(spec.kind for spec in KINDS)
#: The kinds the cluster state keeps as objects by kind (nodes and pods have their own model).
STORED_KINDS = REPLAY_KINDS - {"Node", "Pod"}


def parse_kinds(text: str | None) -> list[KindSpec]:
    """The kinds named in a comma-separated list of resource names (all of them for ``None``).

    Raises ``ValueError`` naming the unknown names and listing the valid ones.
    """
    if text is None:
        return list(KINDS)
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if not names:
        raise ValueError(f"no kind given; valid kinds: {', '.join(BY_RESOURCE)}")
    unknown = [name for name in names if name not in BY_RESOURCE]
    if unknown:
        raise ValueError(f"unknown kind{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(repr(n) for n in unknown)}; valid kinds: "
                         f"{', '.join(BY_RESOURCE)}")
    return select(names)


def select(names: Sequence[str]) -> list[KindSpec]:
    """The kinds of ``names`` in table order, each once."""
    wanted = set(names)
    return [spec for spec in KINDS if spec.resource in wanted]
