"""Which of upstream's three allocator implementations a release runs with its gates.

``staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go`` (``NewAllocator``)
takes the most stable of *stable*, *incubating* and *experimental* whose supported features
include every feature the scheduler enables (``AllocatorFeatures`` in
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``). The supported sets
below are each release's ``SupportedFeatures`` (``structured/internal/*/allocator_*.go`` of
``k8s.io/dynamic-resource-allocation`` v0.34.2, v0.35.4, v0.36.3, v0.37.2), by the gate each
feature follows. The choice shows where the implementations differ for the same objects: at
v1.34 the resource-claim device status (beta, on) already selects the experimental one, which
refuses capacity requests while consumable capacity is off.
"""

from __future__ import annotations

from collections.abc import Callable

STABLE, INCUBATING, EXPERIMENTAL = "stable", "incubating", "experimental"

_BASE = frozenset({"DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices",
                   "DRADeviceTaints"})
_STATUS_1_34 = frozenset({"DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"})
#: v1.35 on: binding conditions and device status count as one feature, on when both are.
BINDING_AND_STATUS = "DRADeviceBindingConditions+DRAResourceClaimDeviceStatus"
_LATER_1_37 = frozenset({"DRAListTypeAttributes", "DRAOptionalNodeOperations",
                         "DRADerivedAttributes", "DRADeviceCompatibilityGroups"})

SUPPORTED: dict[tuple[int, int], dict[str, frozenset[str]]] = {
    (1, 34): {STABLE: frozenset(), INCUBATING: _BASE,
              EXPERIMENTAL: _BASE | _STATUS_1_34 | {"DRAConsumableCapacity"}},
    (1, 35): {STABLE: frozenset(), INCUBATING: _BASE,
              EXPERIMENTAL: _BASE | {BINDING_AND_STATUS, "DRAConsumableCapacity"}},
    (1, 36): {STABLE: _BASE, INCUBATING: _BASE | {BINDING_AND_STATUS, "DRAConsumableCapacity"},
              EXPERIMENTAL: _BASE | {BINDING_AND_STATUS, "DRAConsumableCapacity",
                                     "DRAListTypeAttributes"}},
    (1, 37): {STABLE: _BASE,
              INCUBATING: _BASE | {BINDING_AND_STATUS, "DRAConsumableCapacity",
                                   "DRAFractionalCapacityRange"},
              EXPERIMENTAL: _BASE | {BINDING_AND_STATUS, "DRAConsumableCapacity",
                                     "DRAFractionalCapacityRange"} | _LATER_1_37},
}

_FOLLOWED = ("DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices",
             "DRADeviceTaints", "DRAConsumableCapacity", "DRAFractionalCapacityRange",
             "DRAListTypeAttributes", "DRAOptionalNodeOperations", "DRADerivedAttributes",
             "DRADeviceCompatibilityGroups")


def enabled_features(release: tuple[int, int], gate: Callable[[str], bool]) -> frozenset[str]:
    """The allocator features the scheduler of ``release`` enables (``gate(name)`` is the
    gate's value, False for a gate the release lacks)."""
    found = {name for name in _FOLLOWED if gate(name)}
    if release < (1, 35):
        found |= {name for name in _STATUS_1_34 if gate(name)}
    elif gate("DRADeviceBindingConditions") and gate("DRAResourceClaimDeviceStatus"):
        found.add(BINDING_AND_STATUS)
    return frozenset(found)


def upstream_allocator(release: tuple[int, int], gate: Callable[[str], bool]) -> str:
    """The implementation upstream's scheduler of ``release`` runs."""
    table = SUPPORTED[min(max(release, (1, 34)), (1, 37))]
    features = enabled_features(release, gate)
    for name in (STABLE, INCUBATING, EXPERIMENTAL):
        if features <= table[name]:
            return name
    return EXPERIMENTAL
