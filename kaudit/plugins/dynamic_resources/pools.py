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

With DRAPartitionableDevices on (beta, on by default from v1.36), ``buildPool`` at v1.37.2
(the stable allocator's and, where they differ as :class:`SliceRules` says, the incubating
one's of ``pools_incubating.go``, which upstream runs while consumable capacity or binding
conditions are on, as by default): the pool keeps its counter sets (a name given twice makes
it invalid, ``duplicate counter set name``), every device's ``consumesCounters`` must name a
counter set and counters the pool has (``counter set X not found``, ``counter X not found in
counter set Y``), and when the pool was found complete only by counting the slices of other
nodes (``checkSlicesInPool``), those slices are kept too (:attr:`Pool.other_slices`): their
allocated devices consume the pool's counters.

With DRADeviceTaintRules (GA in v1.37), :class:`SliceIndex` parses the slices as the
scheduler's slice tracker serves them, each DeviceTaintRule's taint appended to the devices
it selects (:func:`kaudit.model.dra.with_taint_rules`).

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

from kaudit.model.dra import with_taint_rules
from kaudit.model.node import NodeInfo
from kaudit.model.selectors import NodeSelector, SelectorError
from kaudit.plugins.dynamic_resources.cel_env import device_activation
from kaudit.quantity import parse_quantity

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
    #: ``capacity``, parsed on first use (the allocator's consumable-capacity checks), and
    #: whether the device takes a request that names no capacity when nothing is taken.
    capacities: Any = None
    fits_alone: bool | None = None
    #: Why CEL cannot read the device's attributes ("" when it can), found on first use.
    unsupported: str | None = None
    #: ``consumesCounters``, parsed on first use (:func:`device_consumption`).
    consumption: list[tuple[str, dict[str, int]]] | None = None

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
    #: Its counter sets: name → counter → quantity in nano-units, in the slice's order.
    counter_sets: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    #: A device's ``consumesCounters`` names ``compatibilityGroups``.
    compatibility_groups: bool = False
    devices: list[Device] = field(default_factory=list)
    #: The cluster's object this slice was parsed from (``obj`` is it with DeviceTaintRules'
    #: taints patched in), and the rules' version it was patched at.
    source: JSON | None = None
    rules_version: int | None = None

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
        for counter_set in spec.get("sharedCounters") or []:
            made.counter_sets.append((str(counter_set.get("name") or ""),
                                      counter_values(counter_set.get("counters"))))
        for device in spec.get("devices") or []:
            name = str(device.get("name") or "")
            made.devices.append(Device(name, device, made, (made.driver, made.pool, name)))
        return made


def counter_values(counters: Any) -> dict[str, int]:
    """``{"name": {"value": "80Gi"}}`` as counter name → nano-units (validated at ingest)."""
    return {str(name): parse_quantity(str((counter or {}).get("value") or "0")).nanos
            for name, counter in (counters or {}).items()}


def device_consumption(device: Device) -> list[tuple[str, dict[str, int]]]:
    """A device's ``consumesCounters``: (counter set, counter → nano-units) pairs."""
    consumption = device.consumption
    if consumption is None:
        consumption = device.consumption = [
            (str(entry.get("counterSet") or ""), counter_values(entry.get("counters")))
            for entry in device.obj.get("consumesCounters") or [] if isinstance(entry, dict)]
    return consumption


@dataclass
class Pool:
    driver: str
    name: str
    slices: list[Slice]
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    #: With partitionable devices: the pool's counter sets (name → counter → nano-units) and
    #: the slices of its generation the node does not reach (their devices consume them).
    counter_sets: dict[str, dict[str, int]] = field(default_factory=dict)
    other_slices: list[Slice] = field(default_factory=list)

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
    #: With partitionable devices, a slice with shared counters belongs to its pool on every
    #: node (the stable allocator; the incubating one of v1.36). The incubating allocator of
    #: v1.37 (run while consumable capacity or binding conditions are on) selects it by its
    #: node like any other; a pool whose counters are elsewhere is then incomplete on the
    #: node and completed from all slices (``pools_incubating.go``).
    counters_everywhere: bool = False
    #: The incubating allocator sorts a pool's slices by name (``buildPool``).
    slices_by_name: bool = False

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
        if rules.partitionable_devices and rules.counters_everywhere and piece.shared_counters:
            matched = True
        elif piece.node_name or piece.all_nodes or piece.node_selector is not None or \
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
        if rules.slices_by_name:
            pool.slices.sort(key=lambda piece: piece.name)
        pool.incomplete = len(pool.slices) != pool.slices[0].count
        whole: list[Slice] | None = None
        if pool.incomplete and every_slice is not None:
            generation = pool.slices[0].generation
            same = [p for p in every_slice if (p.driver, p.pool) == key]
            if any(p.generation > generation for p in same):
                continue  # obsolete: the driver is replacing this generation
            whole = [p for p in same if p.generation == generation
                     and (rules.compatibility_groups or not p.compatibility_groups)]
            pool.incomplete = len(whole) != pool.slices[0].count
        if rules.partitionable_devices:
            if not pool.incomplete:
                _build_partitionable(pool, whole)
        else:
            _check_device_names(pool, pool.slices)
        result.append(pool)
    return result


def _check_device_names(pool: Pool, slices: Iterable[Slice]) -> bool:
    """``validateDeviceNames``: marks the pool invalid when a device name repeats."""
    seen: set[str] = set()
    for piece in slices:
        for device in piece.devices:
            if device.name in seen:
                pool.invalid, pool.invalid_reason = True, f"duplicate device name {device.name}"
                return False
            seen.add(device.name)
    return True


def _build_partitionable(pool: Pool, whole: list[Slice] | None) -> None:
    """``buildPool`` with partitionable devices: device names, counter sets (the node's
    slices', then the other slices'), and the counters every device consumes, over the node's
    slices and then over the pool's other slices."""
    others: list[Slice] = []
    if whole is not None and len(whole) != len(pool.slices):
        reached = {piece.name for piece in pool.slices}
        others = [piece for piece in whole if piece.name not in reached]
    if not _check_device_names(pool, (p for p in pool.slices if not p.shared_counters)):
        return
    for piece in (*pool.slices, *others):
        for name, counters in piece.counter_sets:
            if name in pool.counter_sets:
                pool.invalid, pool.invalid_reason = True, f"duplicate counter set name {name}"
                return
            pool.counter_sets[name] = counters
    devices_elsewhere = [piece for piece in others if not piece.shared_counters]
    if _check_consumption(pool, pool.slices) and _check_consumption(pool, devices_elsewhere):
        pool.other_slices = devices_elsewhere


def _check_consumption(pool: Pool, slices: Iterable[Slice]) -> bool:
    """``validateDeviceCounterConsumption``."""
    for piece in slices:
        for device in piece.devices:
            for counter_set, counters in device_consumption(device):
                available = pool.counter_sets.get(counter_set)
                if available is None:
                    pool.invalid = True
                    pool.invalid_reason = f"counter set {counter_set} not found"
                    return False
                for name in counters:
                    if name not in available:
                        pool.invalid = True
                        pool.invalid_reason = (f"counter {name} not found in counter set "
                                               f"{counter_set}")
                        return False
    return True


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
        self._version: tuple[int, int | None] | None = None
        self.by_node: dict[str, list[Slice]] = {}
        self.selecting: list[Slice] = []
        self._pools: dict[str, tuple[Any, list[Pool]]] = {}

    def refresh(self, objects: dict[str, JSON], version: int,
                taint_rules: dict[str, JSON] | None = None, rules_version: int = 0) -> None:
        """Parse what changed of ``objects`` (the cluster's slices, at ``version``), with the
        taints of ``taint_rules`` (DeviceTaintRules, at ``rules_version``) patched in."""
        key = (version, rules_version if taint_rules else None)
        if key == self._version and objects is self._source:
            return
        rules = [taint_rules[name] for name in sorted(taint_rules)] if taint_rules else []
        parsed: dict[int, Slice] = {}
        by_node: dict[str, list[Slice]] = {}
        selecting: list[Slice] = []
        for name in sorted(objects):
            obj = objects[name]
            piece = self._parsed.get(id(obj))
            if piece is None or piece.source is not obj or piece.rules_version != key[1]:
                piece = Slice.of(with_taint_rules(obj, rules) if rules else obj)
                piece.source, piece.rules_version = obj, key[1]
            parsed[id(obj)] = piece
            if piece.node_name and not piece.shared_counters:
                by_node.setdefault(piece.node_name, []).append(piece)
            else:
                selecting.append(piece)
        self._parsed, self.by_node, self.selecting = parsed, by_node, selecting
        self._source, self._version = objects, key
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
