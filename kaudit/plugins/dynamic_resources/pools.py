"""ResourceSlices as the DRA allocator reads them: devices, slices and resource pools.

Mirrors ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
pools_stable.go`` (Kubernetes v1.34): the slices a node can reach are those published for it
(``nodeName``), for all nodes (``allNodes``) or for nodes matching a ``nodeSelector``
(network-attached devices); slices of a pool with an older generation are ignored, one with a
newer generation replaces the older ones; a pool is *incomplete* while it has fewer slices
than ``resourceSliceCount`` and *invalid* when a device name repeats. Slices that select nodes
per device (``perDeviceNodeSelection``, the DRAPartitionableDevices gate) are left out while
that gate is off, and so, from v1.36 (component-helpers v0.36.3), are slices with shared
counters; from v1.37, slices whose devices name compatibility groups are left out while the
alpha DRADeviceCompatibilityGroups gate is off, which makes their pool incomplete
(:class:`SliceRules`).

Upstream collects pools in a Go map, so their order is random; kaudit orders them by driver and
pool name so that a replay is reproducible.

:class:`SliceIndex` keeps the parsed slices of a cluster between scheduling cycles and, for
each device, the CEL selector results already known (a selector's answer for a device only
depends on the expression and the device).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kaudit.model.node import NodeInfo
from kaudit.model.selectors import NodeSelector, SelectorError
from kaudit.plugins.dynamic_resources.cel_env import device_activation

JSON = dict[str, Any]
DeviceID = tuple[str, str, str]


def device_id_text(device_id: DeviceID) -> str:
    return "/".join(device_id)


@dataclass(eq=False)
class Device:
    name: str
    obj: JSON
    slice: Slice
    id: DeviceID
    #: CEL expression → whether this device satisfies it (errors are not kept).
    matches: dict[str, bool] = field(default_factory=dict)
    #: A request's selector signature (class, expressions) → whether the device is selectable.
    selectable: dict[Any, bool] = field(default_factory=dict)
    _activation: dict[str, Any] | None = None
    _content: bytes | None = None

    def activation(self) -> dict[str, Any]:
        if self._activation is None:
            self._activation = device_activation(self.slice.driver, self.obj)
        return self._activation

    @property
    def content(self) -> bytes:
        """What a CEL selector can see of the device (devices alike in it match alike)."""
        if self._content is None:
            self._content = orjson.dumps(
                [self.slice.driver, self.obj.get("attributes"), self.obj.get("capacity"),
                 bool(self.obj.get("allowMultipleAllocations"))], option=orjson.OPT_SORT_KEYS)
        return self._content


@dataclass(eq=False)
class Slice:
    obj: JSON
    name: str
    driver: str
    pool: str
    generation: int
    count: int
    node_name: str
    all_nodes: bool
    node_selector: NodeSelector | None
    node_selector_error: str | None
    #: ``perDeviceNodeSelection`` is present (``per_device``) and true (``per_device_selection``).
    per_device: bool
    per_device_selection: bool
    #: The slice has ``sharedCounters``.
    shared_counters: bool = False
    #: A device's ``consumesCounters`` names ``compatibilityGroups``.
    compatibility_groups: bool = False
    devices: list[Device] = field(default_factory=list)

    @classmethod
    def of(cls, obj: JSON) -> Slice:
        spec = obj.get("spec") or {}
        pool = spec.get("pool") or {}
        selector, error = None, None
        if spec.get("nodeSelector") is not None:
            try:
                selector = NodeSelector.parse(spec["nodeSelector"], "spec.nodeSelector")
            except SelectorError as exc:
                error = str(exc)
        made = cls(obj=obj, name=str((obj.get("metadata") or {}).get("name") or ""),
                   driver=str(spec.get("driver") or ""), pool=str(pool.get("name") or ""),
                   generation=int(pool.get("generation") or 0),
                   count=int(pool.get("resourceSliceCount") or 0),
                   node_name=str(spec.get("nodeName") or ""),
                   all_nodes=bool(spec.get("allNodes")), node_selector=selector,
                   node_selector_error=error,
                   per_device=spec.get("perDeviceNodeSelection") is not None,
                   per_device_selection=bool(spec.get("perDeviceNodeSelection")),
                   shared_counters=bool(spec.get("sharedCounters")),
                   compatibility_groups=any(
                       isinstance(consumption, dict) and consumption.get("compatibilityGroups")
                       for device in spec.get("devices") or [] if isinstance(device, dict)
                       for consumption in device.get("consumesCounters") or []))
        for device in spec.get("devices") or []:
            name = str(device.get("name") or "")
            made.devices.append(Device(name, device, made, (made.driver, made.pool, name)))
        return made


@dataclass
class Pool:
    driver: str
    name: str
    slices: list[Slice]
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""

    @property
    def id_text(self) -> str:
        return f"{self.driver}/{self.name}"


class PoolError(Exception):
    """GatherPools failed (a node selector that cannot be parsed)."""


def node_matches(node: NodeInfo | None, node_name: str, all_nodes: bool,
                 selector: NodeSelector | None, selector_error: str | None = None) -> bool:
    """``nodeMatches``."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if selector_error is not None:
        raise PoolError(selector_error)
    if selector is not None:
        return node is not None and selector.matches(node.labels, node.name)
    return False


@dataclass(frozen=True)
class SliceRules:
    """Which slices ``GatherPools`` leaves out, by the allocator's features."""

    #: DRAPartitionableDevices (kaudit allocates as with it off).
    partitionable_devices: bool = False
    #: v1.36 on: without partitionable devices, a slice with shared counters is left out too.
    shared_counters_need_partitionable: bool = False
    #: DRADeviceCompatibilityGroups; False (its gate off, v1.37) leaves out the slices whose
    #: devices name compatibility groups.
    compatibility_groups: bool = True

    def ignores(self, piece: Slice) -> bool:
        if not self.partitionable_devices and (piece.per_device or (
                self.shared_counters_need_partitionable and piece.shared_counters)):
            return True
        return not self.compatibility_groups and piece.compatibility_groups


def gather_pools(slices: Iterable[Slice], node: NodeInfo | None,
                 rules: SliceRules = SliceRules(),
                 every_slice: list[Slice] | None = None) -> list[Pool]:
    """``GatherPools``: the pools of the slices ``node`` can reach, sorted by id.

    As in v1.34, a pool's completeness and validity count only the slices the node reaches:
    a pool spread over several nodes' slices is incomplete on each. Given ``every_slice``
    (the cluster's, v1.35 on: upstream PR #134466, ``checkSlicesInPool``), a pool that looks
    incomplete counts all the slices of its generation instead, and is left out when a newer
    generation exists."""
    pools: dict[tuple[str, str], Pool] = {}
    for piece in slices:
        if rules.ignores(piece):
            continue
        if piece.node_name or piece.all_nodes or piece.node_selector is not None or \
                piece.node_selector_error is not None:
            try:
                matched = node_matches(node, piece.node_name, piece.all_nodes,
                                       piece.node_selector, piece.node_selector_error)
            except PoolError as exc:
                raise PoolError(f"failed to perform node selection for slice {piece.name}: "
                                f"{exc}") from exc
        elif piece.per_device_selection:
            matched = any(device_on_node(device.obj, node) for device in piece.devices)
        else:
            continue  # an unknown future way of selecting nodes
        if matched:
            _add_slice(pools, piece)
    result = []
    for key in sorted(pools):
        pool = pools[key]
        pool.incomplete = len(pool.slices) != pool.slices[0].count
        if pool.incomplete and every_slice is not None:
            generation = pool.slices[0].generation
            same = [p for p in every_slice if (p.driver, p.pool) == key]
            if any(p.generation > generation for p in same):
                continue  # obsolete: the driver is replacing this generation
            pool.incomplete = sum(p.generation == generation for p in same) \
                != pool.slices[0].count
        seen: set[str] = set()
        for piece in pool.slices:
            for device in piece.devices:
                if device.name in seen and not pool.invalid:
                    pool.invalid, pool.invalid_reason = True, f"duplicate device name {device.name}"
                seen.add(device.name)
        result.append(pool)
    return result


def pool_problems(slices: Iterable[Slice]) -> dict[tuple[str, str], str]:
    """Pools (by driver and name) whose devices no node can get, and why, as the cluster's
    slices stand: fewer slices of the newest generation than ``resourceSliceCount``, a device
    name repeated, or slices published for different nodes (v1.34 counts only the slices a
    node reaches, so such a pool is incomplete on each node)."""
    newest: dict[tuple[str, str], list[Slice]] = {}
    for piece in slices:
        key = (piece.driver, piece.pool)
        current = newest.get(key)
        if current is None or piece.generation > current[0].generation:
            newest[key] = [piece]
        elif piece.generation == current[0].generation:
            current.append(piece)
    problems: dict[tuple[str, str], str] = {}
    for key, pieces in newest.items():
        expected = pieces[0].count
        names = [device.name for piece in pieces for device in piece.devices]
        targets = {(piece.node_name, piece.all_nodes, piece.node_selector is not None)
                   for piece in pieces}
        if len(pieces) != expected:
            problems[key] = f"incomplete: {len(pieces)} of {expected} slices published"
        elif len(names) != len(set(names)):
            duplicate = next(n for n in names if names.count(n) > 1)
            problems[key] = f"invalid: duplicate device name {duplicate}"
        elif len(targets) > 1 and any(piece.node_name for piece in pieces):
            problems[key] = ("its slices are published for different nodes, so no node "
                             "reaches all of them (incomplete on each node in v1.34)")
    return problems


def device_on_node(device: JSON, node: NodeInfo | None) -> bool:
    """``nodeMatches`` for one device of a slice that selects nodes per device."""
    selector = None
    if device.get("nodeSelector") is not None:
        try:
            selector = NodeSelector.parse(device["nodeSelector"], "nodeSelector")
        except SelectorError as exc:
            raise PoolError(str(exc)) from exc
    return node_matches(node, str(device.get("nodeName") or ""), bool(device.get("allNodes")),
                        selector)


def _add_slice(pools: dict[tuple[str, str], Pool], piece: Slice) -> None:
    key = (piece.driver, piece.pool)
    pool = pools.get(key)
    if pool is None:
        pools[key] = Pool(piece.driver, piece.pool, [piece])
        return
    current = pool.slices[0].generation
    if piece.generation < current:
        return
    if piece.generation > current:
        pool.slices = []
    pool.slices.append(piece)


class SliceIndex:
    """The cluster's ResourceSlices, parsed once per object and grouped by the node they are
    published for; ``pools_for(node)`` answers GatherPools from the group of that node and
    the slices that select nodes (network-attached devices)."""

    def __init__(self) -> None:
        self._parsed: dict[int, Slice] = {}
        self._source: dict[str, JSON] | None = None
        self._version: int | None = None
        self.by_node: dict[str, list[Slice]] = {}
        self.selecting: list[Slice] = []
        self._pools: dict[str, tuple[Any, list[Pool]]] = {}

    def refresh(self, objects: dict[str, JSON], version: int) -> None:
        if version == self._version and objects is self._source:
            return
        parsed: dict[int, Slice] = {}
        by_node: dict[str, list[Slice]] = {}
        selecting: list[Slice] = []
        for name in sorted(objects):
            obj = objects[name]
            piece = self._parsed.get(id(obj))
            if piece is None or piece.obj is not obj:
                piece = Slice.of(obj)
            parsed[id(obj)] = piece
            if piece.node_name:
                by_node.setdefault(piece.node_name, []).append(piece)
            else:
                selecting.append(piece)
        self._parsed, self.by_node, self.selecting = parsed, by_node, selecting
        self._source, self._version = objects, version
        self._pools = {}

    @property
    def slices(self) -> list[Slice]:
        return list(self._parsed.values())

    def pools_for(self, node: NodeInfo, rules: SliceRules = SliceRules(),
                  pools_span_nodes: bool = False) -> list[Pool]:
        """The node's pools; ``pools_span_nodes`` (v1.35 on) judges completeness over every
        slice of a pool, other nodes' included."""
        cached = self._pools.get(node.name)
        if cached is not None and cached[0] is node.obj:
            return cached[1]
        reachable = [*self.by_node.get(node.name, ()), *self.selecting]
        pools = gather_pools(reachable, node, rules, self.slices if pools_span_nodes else None)
        self._pools[node.name] = (node.obj, pools)
        return pools
