"""The upstream Kubernetes releases kaudit can mirror, and everything that differs between them.

Each supported release is one :class:`KubernetesVersion` (feature-gate table, default plugins
and the plugins gates add, configuration API defaults, ungated behaviour changes), defined in
its own module (``v1_34`` for v1.34.2). :data:`SUPPORTED` lists them oldest first;
:data:`DEFAULT` is the one named by :data:`kaudit.KUBERNETES_VERSION`; :func:`get` resolves a
name given by a user. ``docs/versions.md`` says how to add a release.
"""

from __future__ import annotations

import re

from kaudit import KUBERNETES_VERSION
from kaudit.errors import ConfigError
from kaudit.versions.types import (
    ALPHA,
    BETA,
    DEPRECATED,
    GA,
    ApiDefaults,
    DefaultPlugin,
    GatedPlugin,
    GateSpec,
    KubernetesVersion,
    UngatedChange,
)
from kaudit.versions.v1_34 import V1_34_2
from kaudit.versions.v1_35 import V1_35_4
from kaudit.versions.v1_36 import V1_36_3
from kaudit.versions.v1_37 import V1_37_2

#: Every release kaudit holds the facts of, oldest first (a change arrives in one of them).
KNOWN: tuple[KubernetesVersion, ...] = (V1_34_2, V1_35_4, V1_36_3, V1_37_2)
#: Every supported release (one a run may choose), oldest first.
SUPPORTED: tuple[KubernetesVersion, ...] = KNOWN

_NAME = re.compile(r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?")


def _supported_names() -> str:
    return ", ".join(v.name for v in SUPPORTED)


def get(name: str) -> KubernetesVersion:
    """The supported release named ``name``: ``"v1.34.2"`` or ``"1.34.2"`` exactly, or
    ``"v1.34"`` / ``"1.34"`` for the newest supported patch of that minor. Anything else is a
    :class:`~kaudit.errors.ConfigError` that lists the supported releases."""
    match = _NAME.fullmatch(name.strip())
    if match is not None:
        major, minor = int(match[1]), int(match[2])
        patch = None if match[3] is None else int(match[3])
        found = [v for v in SUPPORTED if v.release[:2] == (major, minor)
                 and (patch is None or v.release[2] == patch)]
        if found:
            return max(found, key=lambda v: v.release)
    raise ConfigError(f"unsupported Kubernetes version {name!r}: kaudit supports "
                      f"{_supported_names()} (a minor such as "
                      f"{SUPPORTED[-1].minor} names its newest supported patch)")


def carries(version: KubernetesVersion, key: str) -> bool:
    """Whether ``version`` has the ungated change ``key``: it arrived in ``version`` or in an
    older supported release."""
    releases = {id(v): v for v in (*KNOWN, *SUPPORTED, version)}.values()
    return any(change.key == key for v in releases if v.release <= version.release
               for change in v.ungated_changes)


def handle_carries(handle: object, key: str) -> bool:
    """Whether the release of ``handle``'s feature gates (a plugin's handle) has the ungated
    change ``key``; False without gates or a release (bare test handles)."""
    gates = getattr(handle, "feature_gates", None)
    version = getattr(gates, "version", None)
    return isinstance(version, KubernetesVersion) and carries(version, key)


#: The plugins a gate's state changes the decisions of, for the gates whose default moved
#: between the mirrored releases and whose features kaudit models. The DRA beta features kaudit
#: does not model (binding conditions, extended resources) are left out (kaudit schedules as
#: with them off, so they explain none of its differences), and so is Opportunistic Batching
#: (its hint is a node a cycle alone would
#: rank first, and the default profile never batches). Pod-level resize
#: (``InPlacePodLevelResourcesVerticalScaling``, on from v1.36) is left out too: it changes
#: the requests of resized pods alone (``kaudit.model.resources.StatusOptions``), and naming it
#: for every decision of the resources plugins would blame it where no pod was resized.
GATE_PLUGINS: dict[str, tuple[str, ...]] = {
    "StorageCapacityScoring": ("VolumeBinding",),
    "NodeDeclaredFeatures": ("NodeDeclaredFeatures",),
    "DRAPartitionableDevices": ("DynamicResources",),
    "DRADeviceTaints": ("DynamicResources",),
    "DRAConsumableCapacity": ("DynamicResources",),
    "DRADeviceTaintRules": ("DynamicResources",),
    "VolumeLimitScaling": ("NodeVolumeLimits",),
}


def changes_between(older: KubernetesVersion, newer: KubernetesVersion
                    ) -> list[tuple[str, str, tuple[str, ...]]]:
    """What an upgrade from ``older`` to ``newer`` changes in kaudit's replays, as (release,
    what, plugins): each ungated change kaudit models of a known release after ``older`` up to
    ``newer``, each gate of :data:`GATE_PLUGINS` whose default differs, and each plugin the
    default profile scores with another weight."""
    changes: list[tuple[str, str, tuple[str, ...]]] = []
    for release in KNOWN:
        if older.release < release.release <= newer.release:
            changes += [(release.name, change.key, change.plugins)
                        for change in release.ungated_changes if change.modelled]
    between = [r for r in KNOWN if older.release < r.release <= newer.release]

    def on(release: KubernetesVersion, gate: str) -> bool:
        spec = release.gates.get(gate)
        return spec is not None and spec.default

    for gate, plugins in GATE_PLUGINS.items():
        if on(older, gate) != on(newer, gate):
            first = next((r for r in between if on(r, gate) == on(newer, gate)), newer)
            changes.append((first.name, f"{gate} {'on' if on(newer, gate) else 'off'}",
                            plugins))
    weights = {p.plugin.name: p.plugin.weight for p in older.gated_plugins}
    for gated in newer.gated_plugins:
        name, weight = gated.plugin.name, gated.plugin.weight
        if name in weights and weights[name] != weight:
            first = next((r for r in between if any(
                p.plugin.name == name and p.plugin.weight == weight
                for p in r.gated_plugins)), newer)
            changes.append((first.name, f"{name} weight {weight}", (name,)))
    return changes


#: The release kaudit mirrors unless told otherwise.
DEFAULT: KubernetesVersion = get(KUBERNETES_VERSION)

__all__ = [
    "ALPHA",
    "BETA",
    "DEFAULT",
    "DEPRECATED",
    "GA",
    "KNOWN",
    "SUPPORTED",
    "ApiDefaults",
    "DefaultPlugin",
    "GateSpec",
    "GatedPlugin",
    "KubernetesVersion",
    "UngatedChange",
    "carries",
    "changes_between",
    "get",
    "handle_carries",
]
