"""Shared counters of partitionable devices: what a pool has left while devices are allocated.

Mirrors ``checkAvailableCounters`` and ``deallocateCountersForDevice`` of
``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
allocator_stable.go`` (Kubernetes v1.37.2; the incubating allocator of v1.36.3 has the same
rule): a pool's counters are its counter sets less what its allocated devices consume (in
every slice of the pool's generation, the node's and, when the pool was judged complete over
them, the other nodes'); each device being allocated adds what it consumes, and it fits only
while no counter of the pool is below what is consumed of it. A counter driven below zero by
earlier allocations leaves no device of the pool allocatable, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from kaudit.plugins.dynamic_resources.pools import (
    Device,
    DeviceID,
    Pool,
    device_consumption,
)

PoolKey = tuple[str, str]
Counters = dict[str, dict[str, int]]


class CounterLedger:
    """The counters of one ``Allocate`` call, per pool."""

    def __init__(self, allocated: Set[DeviceID], pools: Mapping[PoolKey, Pool]) -> None:
        self.allocated = allocated
        self.pools = pools
        self._available: dict[PoolKey, Counters] = {}
        self._consumed: dict[PoolKey, Counters] = {}

    def available(self, key: PoolKey) -> Counters:
        """The pool's counters less what its allocated devices consume."""
        known = self._available.get(key)
        if known is None:
            pool = self.pools[key]
            known = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for piece in (*pool.slices, *pool.other_slices):
                for device in piece.devices:
                    if device.id not in self.allocated:
                        continue
                    for counter_set, counters in device_consumption(device):
                        left = known.get(counter_set)
                        if left is None:
                            continue
                        for name, value in counters.items():
                            if name in left:
                                left[name] -= value
            self._available[key] = known
        return known

    def reserve(self, device: Device) -> bool:
        """Count ``device``'s consumption; False (and nothing counted) when a counter of its
        pool would be exceeded."""
        key = (device.slice.driver, device.slice.pool)
        available = self.available(key)
        consumed = self._consumed.setdefault(key, {})
        for counter_set, counters in device_consumption(device):
            taken = consumed.setdefault(counter_set, {})
            for name, value in counters.items():
                taken[name] = taken.get(name, 0) + value
        for counter_set, counters in available.items():
            taken = consumed.get(counter_set, {})
            for name, value in counters.items():
                if value < taken.get(name, 0):
                    self.release(device)
                    return False
        return True

    def release(self, device: Device) -> None:
        """Take back what :meth:`reserve` counted for ``device``."""
        consumed = self._consumed[(device.slice.driver, device.slice.pool)]
        for counter_set, counters in device_consumption(device):
            taken = consumed[counter_set]
            for name, value in counters.items():
                taken[name] -= value
