"""Each node's GPUs as individual devices, each holding GPU-milli (0–1000) free.

The device-level state of the FGD authors' simulator (hkust-adsl/kubernetes-scheduler-simulator,
``pkg/type/open-gpu-share/cache/`` and ``pkg/simulator/plugin/open_gpu_share.go``): a node of
``nvidia.com/gpu: n`` has devices ``0 … n-1`` of its model; a pod that shares a GPU holds
``milli`` of one device, a pod of whole GPUs holds all 1000 of ``count`` devices. The table is a
slot × device array of free milli (-1 where a node has no such device), so a filter answers
for every node at once; assignments are kept per pod so that a deletion, an Unreserve or a
preemption's dry run gives back exactly what was taken.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from kaudit.model.gpu import MILLI_PER_GPU, GpuDemand

#: Devices a node may have (the table widens beyond it when a node has more).
_INITIAL_DEVICES = 8
#: Devices modelled per node at most: a node that advertises more gets this many (real GPU
#: nodes have 8 or 16), so an absurd ``nvidia.com/gpu`` cannot blow up the table.
MAX_DEVICES = 64


def fitting_devices(row: np.ndarray, demand: GpuDemand) -> list[int]:
    """The devices of one node (its free milli, -1 where absent) that could hold (a part of)
    the demand: any with enough milli for a share, the wholly free ones otherwise."""
    if demand.shares:
        return [d for d in range(len(row)) if row[d] >= demand.milli]
    return [d for d in range(len(row)) if row[d] == MILLI_PER_GPU]


def lowest_devices(row: np.ndarray, demand: GpuDemand) -> tuple[int, ...] | None:
    """The lowest-numbered devices that hold the demand (``AllocateExclusiveGpuId`` for whole
    GPUs), or None."""
    found = fitting_devices(row, demand)
    needed = 1 if demand.shares else demand.count
    return tuple(found[:needed]) if len(found) >= needed else None


def _kind(devices: tuple[int, ...], milli: int) -> int:
    """The column of :attr:`GpuDevices.kinds` a pod holding ``milli`` of ``devices`` counts in."""
    return 0 if len(devices) == 1 and milli < MILLI_PER_GPU else min(len(devices), MAX_DEVICES)


@dataclass(frozen=True, slots=True)
class GpuAssignment:
    """The devices a pod holds on its node, and the milli it holds on each."""

    slot: int
    devices: tuple[int, ...]
    milli: int


class GpuOvercommit(ValueError):
    """An assignment that asks a device for more milli than it has free."""


class GpuDevices:
    """The GPU devices of every node slot and the pods that hold them."""

    def __init__(self, capacity: int = 0) -> None:
        self.free = np.full((capacity, _INITIAL_DEVICES), -1, dtype=np.int32)
        self.models: list[str] = [""] * capacity
        self.assigned: dict[str, GpuAssignment] = {}
        #: Per slot, how many pods hold GPUs in each way: column 0 shares one GPU, column n
        #: holds n whole GPUs (the FGD simulator's "GPU affinity" of a node).
        self.kinds = np.zeros((capacity, MAX_DEVICES + 1), dtype=np.int32)
        #: False in a fork until its first write, which copies the shared tables first
        #: (preemption forks the cluster per candidate node; most forks never touch a GPU).
        self._owned = True

    def _own(self) -> None:
        if not self._owned:
            self.free = self.free.copy()
            self.kinds = self.kinds.copy()
            self.models = list(self.models)
            self.assigned = dict(self.assigned)
            self._owned = True

    # ------------------------------------------------------------------ nodes

    def grow(self, capacity: int) -> None:
        if capacity > len(self.free):
            self._own()
            extra = np.full((capacity - len(self.free), self.free.shape[1]), -1, np.int32)
            self.free = np.vstack([self.free, extra])
            self.kinds = np.vstack([self.kinds, np.zeros((capacity - len(self.kinds),
                                                          self.kinds.shape[1]), np.int32)])
            self.models.extend([""] * (capacity - len(self.models)))

    def set_node(self, slot: int, count: int, model: str) -> None:
        """The node at ``slot`` has ``count`` devices of ``model``. Devices its pods hold keep
        what they hold (also across a removal and re-addition of the node)."""
        self.grow(slot + 1)
        self._own()
        count = min(count, MAX_DEVICES)
        self.models[slot] = model
        if count == self.count(slot):
            return  # the common update: same devices (status, labels or taints changed)
        if count > self.free.shape[1]:
            pad = np.full((len(self.free), count - self.free.shape[1]), -1, np.int32)
            self.free = np.hstack([self.free, pad])
        held = self._held_on(slot)
        row = self.free[slot]
        for device in range(self.free.shape[1]):
            if device < count or device in held:
                row[device] = MILLI_PER_GPU - held.get(device, 0)
            else:
                row[device] = -1

    def clear_node(self, slot: int) -> None:
        """The node is gone: its devices with it (pods still held there keep their record)."""
        if slot < len(self.free):
            self._own()
            self.free[slot] = -1
            self.models[slot] = ""

    def _held_on(self, slot: int) -> dict[int, int]:
        held: dict[int, int] = {}
        for assignment in self.assigned.values():
            if assignment.slot == slot:
                for device in assignment.devices:
                    held[device] = held.get(device, 0) + assignment.milli
        return held

    def count(self, slot: int) -> int:
        return int((self.free[slot] >= 0).sum()) if slot < len(self.free) else 0

    # ------------------------------------------------------------------ fitting

    def fits(self, slots: np.ndarray, demand: GpuDemand) -> np.ndarray:
        """For each slot, whether its devices can hold the demand (model included)."""
        slots = np.asarray(slots, dtype=np.int64)
        if len(self.free) == 0 or len(slots) == 0:
            return np.zeros(len(slots), dtype=bool)
        inside = slots < len(self.free)
        rows = self.free[np.where(inside, slots, 0)]
        if demand.shares:
            enough = (rows >= demand.milli).any(axis=1)
        else:
            enough = (rows == MILLI_PER_GPU).sum(axis=1) >= demand.count
        if demand.models:
            accepted = np.fromiter((self.models[s] in demand.models if i else False
                                    for s, i in zip(slots.tolist(), inside.tolist(),
                                                    strict=True)),
                                   dtype=bool, count=len(slots))
            enough &= accepted
        return enough & inside

    def first_fit(self, slot: int, demand: GpuDemand) -> tuple[int, ...] | None:
        """The lowest-numbered devices that hold the demand (the rule for pods placed without
        a policy's choice, such as pods a trace binds itself)."""
        return lowest_devices(self.free[slot], demand)

    # ------------------------------------------------------------------ pods

    def assign(self, uid: str, slot: int, devices: tuple[int, ...], milli: int) -> None:
        """Pod ``uid`` takes ``milli`` of each of ``devices`` on ``slot``."""
        self.release(uid)
        self._own()
        row = self.free[slot]
        for device in devices:
            if device >= len(row) or row[device] < milli:
                have = int(row[device]) if device < len(row) else -1
                raise GpuOvercommit(f"pod {uid}: GPU {device} of slot {slot} has {have} milli "
                                    f"free, asked {milli}")
        for device in devices:
            row[device] -= milli
        self.assigned[uid] = GpuAssignment(slot, tuple(devices), milli)
        self.kinds[slot, _kind(devices, milli)] += 1

    def release(self, uid: str) -> GpuAssignment | None:
        if uid not in self.assigned:
            return None
        self._own()
        assignment = self.assigned.pop(uid)
        if assignment is not None:
            self.kinds[assignment.slot, _kind(assignment.devices, assignment.milli)] -= 1
            row = self.free[assignment.slot]
            for device in assignment.devices:
                if row[device] >= 0:
                    row[device] += assignment.milli
        return assignment

    def fork(self) -> GpuDevices:
        """A copy a preemption dry run may change without touching this one."""
        clone = copy.copy(self)
        # The clone copies on its first write; this state keeps writing in place, so a fork
        # reads as of the moment it was made only while this state is left alone, which is
        # how preemption's dry runs use it (as ``ClusterState.fork``'s callers do).
        clone._owned = False
        return clone

    def check(self) -> None:
        """Raise :class:`GpuOvercommit` unless every device's free milli equals 1000 less the
        milli its pods hold, within 0–1000 (pods left on a removed node hold nothing that
        exists)."""
        held = np.zeros_like(self.free)
        for assignment in self.assigned.values():
            for device in assignment.devices:
                if self.free[assignment.slot, device] >= 0:  # else its node is gone
                    held[assignment.slot, device] += assignment.milli
        present = self.free >= 0
        expected = np.where(present, MILLI_PER_GPU - held, -1)
        wrong = np.argwhere((expected != self.free) | (present & (held > MILLI_PER_GPU)))
        if len(wrong):
            slot, device = (int(v) for v in wrong[0])
            raise GpuOvercommit(f"GPU {device} of slot {slot}: {int(self.free[slot, device])} "
                                f"milli free, but its pods hold {int(held[slot, device])}")
