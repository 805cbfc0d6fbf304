"""Which features an object uses that a release turns on and kaudit does not model.

Some feature gates that a Kubernetes release turns on change what kube-scheduler does with
fields kaudit does not read: the DRA gates of ``UNMODELLED_GATES`` in
:mod:`kaudit.config.load` (DynamicResources allocates as with them off, see ``docs/dra.md``),
and ``VolumeLimitScaling`` (``UNMODELLED_OTHER_GATES``). Loading a configuration warns only
about those the user turns on; those a release turns on by default are reported
here, where an object of a trace uses one: :func:`unmodelled_feature_uses` names the enabled
unmodelled features an object (the JSON of a watch event) uses, each with what of the object
uses it, and :class:`FeatureDetector` looks for them over a whole replay, each until it is
found (``kaudit.replay.unmodelled`` turns the first use of each into the run's warning).

A feature counts as used only where a field belonging to its gate is set to something the
scheduler acts on (a device taint whose effect is ``None`` or unknown is ignored upstream, so
it is ignored here; ``bindsToNode: false`` is the default). Which field belongs to which gate
is upstream's, read at v1.37.2 in the ``+featureGate=`` comments of the API types (the line
given is the comment's, or the definition's where there is no such comment):

``k8s.io/api@v0.37.2/resource/v1/types.go``:

* DRAPartitionableDevices: ResourceSlice ``spec.perDeviceNodeSelection`` (194),
  ``spec.sharedCounters`` (212); device ``consumesCounters`` (416), ``nodeName`` (427),
  ``nodeSelector`` (439), ``allNodes`` (449);
* DRADeviceTaints: device ``taints`` (463); request and subrequest ``tolerations`` (1430,
  1575); allocation result ``tolerations`` (2271);
* DRADeviceBindingConditions (with DRAResourceClaimDeviceStatus): device ``bindsToNode``
  (476), ``bindingConditions`` (493), ``bindingFailureConditions`` (511); allocation result
  ``bindingConditions`` (2283), ``bindingFailureConditions`` (2296);
* DRAConsumableCapacity: device ``allowMultipleAllocations`` (522), device capacity
  ``requestPolicy`` (713); request and subrequest ``capacity`` (1448, 1593); constraint
  ``distinctAttribute`` (1930); allocation result ``shareID`` (2307), ``consumedCapacity``
  (2322);
* DRAExtendedResource: DeviceClass ``spec.extendedResourceName`` (2458); a ResourceClaim with
  the annotation ``resource.kubernetes.io/extended-resource-claim`` (37), which the scheduler
  creates for such resources;
* DRADeviceTaintRules: the kind DeviceTaintRule (1030; served by ``resource.k8s.io/v1`` from
  v1.37, by ``v1beta2`` and ``v1alpha3`` before).

Not reported: allocation ``allocationTimestamp`` (2174), which the scheduler of v1.36 on
writes on every claim it binds, and the fields of gates kaudit refuses to turn on
(``REFUSED_GATES``) or that are off by default (``partitionTypeAttribute``,
DRAPartitionableDevicesType, alpha in v1.37).

``k8s.io/api@v0.37.2/core/v1/types.go``: Pod ``status.extendedResourceClaimStatus`` (5733,
DRAExtendedResource). ``k8s.io/api@v0.37.2/storage/v1/types.go``: CSIDriver
``spec.preventPodSchedulingIfMissing`` (506, VolumeLimitScaling: the opt-in of v1.36 on; in
v1.35, where the gate is alpha, every CSIDriver is checked for, ``csi.go:356`` there).

The scheduler side, which says what kaudit's behaviour (the gate off) misses:
``k8s.io/dynamic-resource-allocation@v0.37.2/structured/internal/stable/pools_stable.go:62``
(with DRAPartitionableDevices off, slices with per-device node selection or shared counters are
left out) and ``allocator_stable.go:1029`` (devices with binding conditions are not
selectable), ``:1149`` (devices that consume counters are not allocated), ``:1196`` (taints are
checked only with DRADeviceTaints); ``structured/internal/incubating/allocator_incubating.go``
(the allocator with the beta features: capacity requests ``:223``, ``distinctAttribute``
``:292``, binding conditions in the results ``:387``, ``allowMultipleAllocations`` ``:1335``);
``k8s.io/kubernetes@v1.37.2/pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources.go:839`` (the allocator's features from the gates; binding conditions need
DRAResourceClaimDeviceStatus too), ``extendeddynamicresources.go:147`` and
``pkg/scheduler/util/utils.go:208`` (extended resources backed by a DeviceClass, explicitly or
as ``deviceclass.resource.kubernetes.io/<class>``), ``pkg/scheduler/scheduler.go:344``
(DeviceTaintRules patched into the slices), ``nodevolumelimits/csi.go:296,376``
(VolumeLimitScaling: a driver that opts in must be installed on the node).

Partitionable devices, device taints and consumable capacity are modelled from v1.36,
DeviceTaintRules from v1.37 (:attr:`UnmodelledFeature.modelled_from`): at those releases their
uses are not reported; at an earlier one, where a user may turn their alpha gates on, kaudit's
allocator keeps them off and they are. Binding conditions and extended resources are not
modelled at any release: kaudit allocates as upstream does with those gates off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from kaudit.model.dra import normalize

JSON = dict[str, Any]

DRA = "DynamicResourceAllocation"
PARTITIONABLE = "DRAPartitionableDevices"
DEVICE_TAINTS = "DRADeviceTaints"
CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
BINDING_CONDITIONS = "DRADeviceBindingConditions"
EXTENDED_RESOURCE = "DRAExtendedResource"
DEVICE_TAINT_RULES = "DRADeviceTaintRules"
VOLUME_LIMIT_SCALING = "VolumeLimitScaling"

#: ``ExtendedResourceClaimAnnotation`` (resource/v1/types.go:37).
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: ``ResourceDeviceClassPrefix`` (resource/v1/types.go:49): the implicit extended resource
#: name of every DeviceClass.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
#: The taint effects that keep a device from a claim that does not tolerate them; the others
#: (``None``, unknown ones) are ignored (``taintPreventsAllocation``).
_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


class Gates(Protocol):
    """What is read of the run's feature gates (:class:`kaudit.config.FeatureGates`):
    ``enabled`` raises ``KeyError`` for a gate the release does not know."""

    def enabled(self, name: str) -> bool: ...


@dataclass(frozen=True)
class UnmodelledFeature:
    """A gate whose feature kaudit does not model, what it needs on besides, and what kaudit
    does instead."""

    gate: str
    #: The gates the feature needs on too (upstream's gate dependencies, and what the
    #: scheduler checks with it).
    requires: tuple[str, ...]
    #: What kaudit does instead, as a sentence.
    instead: str
    #: The kinds whose objects can use it.
    kinds: frozenset[str]
    #: The minor release from which kaudit models it after all (None: none yet).
    modelled_from: tuple[int, int] | None = None


def _feature(gate: str, requires: tuple[str, ...], kinds: Iterable[str],
             instead: str, modelled_from: tuple[int, int] | None = None) -> UnmodelledFeature:
    return UnmodelledFeature(gate, requires, instead, frozenset(kinds), modelled_from)


#: Every unmodelled feature this module detects, by gate.
FEATURES: Mapping[str, UnmodelledFeature] = MappingProxyType({f.gate: f for f in (
    _feature(PARTITIONABLE, (DRA,), ("ResourceSlice",),
             "DynamicResources allocates no device that consumes shared counters and leaves "
             "out ResourceSlices that select nodes per device", modelled_from=(1, 36)),
    _feature(DEVICE_TAINTS, (DRA,), ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"),
             "DynamicResources ignores device taints and request tolerations, so a tainted "
             "device is allocated like any other", modelled_from=(1, 36)),
    _feature(CONSUMABLE_CAPACITY, (DRA,),
             ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"),
             "DynamicResources allocates a device whole, to one request: "
             "allowMultipleAllocations, capacity request policies and capacity requests are "
             "ignored, and a distinctAttribute constraint is refused as unsupported",
             modelled_from=(1, 36)),
    _feature(BINDING_CONDITIONS, (DRA, "DRAResourceClaimDeviceStatus"),
             ("ResourceSlice", "ResourceClaim"),
             "DynamicResources allocates no device that has binding conditions, and binding "
             "never waits for them"),
    _feature(EXTENDED_RESOURCE, (DRA,), ("DeviceClass", "ResourceClaim", "Pod"),
             "no extended resource is backed by a DeviceClass: NodeResourcesFit checks it "
             "against the node's allocatable only"),
    _feature(DEVICE_TAINT_RULES, (DRA, DEVICE_TAINTS), ("DeviceTaintRule",),
             "DeviceTaintRules taint no device", modelled_from=(1, 37)),
    _feature(VOLUME_LIMIT_SCALING, (), ("CSIDriver",),
             "NodeVolumeLimits does not check that an opted-in CSI driver is installed on "
             "the node", modelled_from=(1, 36)),
)})


@dataclass(frozen=True)
class FeatureUse:
    """An object's use of an unmodelled feature: the gate and what of the object uses it."""

    gate: str
    uses: str

    @property
    def instead(self) -> str:
        """What kaudit does instead."""
        return FEATURES[self.gate].instead


def _on(gates: Gates, name: str) -> bool:
    try:
        return bool(gates.enabled(name))
    except KeyError:  # a gate this release does not have
        return False


def enabled_features(gates: Gates) -> frozenset[str]:
    """The gates of :data:`FEATURES` that ``gates`` turn on, with the gates they need, and
    that kaudit does not model at their release."""
    version = getattr(gates, "version", None)
    release = tuple(version.release[:2]) if version is not None else None
    return frozenset(gate for gate, feature in FEATURES.items()
                     if _on(gates, gate) and all(_on(gates, r) for r in feature.requires)
                     and (feature.modelled_from is None or release is None
                          or release < feature.modelled_from))


# --------------------------------------------------------------------------- the checks

_Found = dict[str, str]
#: The gates looked for.
Wanted = AbstractSet[str]


def _dicts(value: Any) -> list[JSON]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _looking(gate: str, wanted: Wanted, found: _Found) -> bool:
    return gate in wanted and gate not in found


def _first_set(obj: JSON, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` that ``obj`` sets to a non-empty value."""
    return next((name for name in names if obj.get(name)), None)


_BINDING_FIELDS = ("bindingConditions", "bindingFailureConditions")


def _device(device: JSON, wanted: Wanted, found: _Found) -> None:
    if _looking(PARTITIONABLE, wanted, found):
        if device.get("consumesCounters"):
            found[PARTITIONABLE] = "device consumesCounters"
        else:
            for name in ("nodeName", "nodeSelector"):
                if device.get(name) is not None:
                    found[PARTITIONABLE] = f"device {name}"
                    break
            else:
                if device.get("allNodes"):
                    found[PARTITIONABLE] = "device allNodes"
    if _looking(DEVICE_TAINTS, wanted, found):
        for taint in _dicts(device.get("taints")):
            if taint.get("effect") in _TAINT_EFFECTS:
                found[DEVICE_TAINTS] = f"device taint {taint['effect']}"
                break
    if _looking(BINDING_CONDITIONS, wanted, found):
        binding = _first_set(device, (*_BINDING_FIELDS, "bindsToNode"))
        if binding is not None:
            found[BINDING_CONDITIONS] = f"device {binding}"
    if _looking(CONSUMABLE_CAPACITY, wanted, found):
        if device.get("allowMultipleAllocations"):
            found[CONSUMABLE_CAPACITY] = "device allowMultipleAllocations"
        else:
            capacity = device.get("capacity")
            if isinstance(capacity, dict) and any(
                    isinstance(value, dict) and value.get("requestPolicy") is not None
                    for value in capacity.values()):
                found[CONSUMABLE_CAPACITY] = "device capacity requestPolicy"


#: The gates a ResourceSlice's devices can use.
_SLICE_GATES = (PARTITIONABLE, DEVICE_TAINTS, BINDING_CONDITIONS, CONSUMABLE_CAPACITY)


def _resource_slice(obj: JSON, wanted: Wanted, found: _Found) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if PARTITIONABLE in wanted:
        if spec.get("perDeviceNodeSelection") is not None:
            found[PARTITIONABLE] = "spec.perDeviceNodeSelection"
        elif spec.get("sharedCounters"):
            found[PARTITIONABLE] = "spec.sharedCounters"
    looked_for = [gate for gate in _SLICE_GATES if gate in wanted]
    for device in _dicts(spec.get("devices")):
        _device(device, wanted, found)
        if all(gate in found for gate in looked_for):
            break


def _claim_spec(spec: Any, wanted: Wanted, found: _Found) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict):
        return
    for request in _dicts(devices.get("requests")):
        exactly = request.get("exactly")
        for one in ([exactly] if isinstance(exactly, dict) else []) + \
                _dicts(request.get("firstAvailable")):
            if _looking(DEVICE_TAINTS, wanted, found) and one.get("tolerations"):
                found[DEVICE_TAINTS] = "request tolerations"
            if _looking(CONSUMABLE_CAPACITY, wanted, found) and \
                    one.get("capacity") is not None:
                found[CONSUMABLE_CAPACITY] = "request capacity"
    if _looking(CONSUMABLE_CAPACITY, wanted, found):
        for constraint in _dicts(devices.get("constraints")):
            if constraint.get("distinctAttribute") is not None:
                found[CONSUMABLE_CAPACITY] = "constraint distinctAttribute"
                break


def _resource_claim(obj: JSON, wanted: Wanted, found: _Found) -> None:
    if EXTENDED_RESOURCE in wanted:
        annotations = (obj.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict) and \
                annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true":
            found[EXTENDED_RESOURCE] = f"annotation {EXTENDED_RESOURCE_CLAIM_ANNOTATION}"
    _claim_spec(obj.get("spec"), wanted, found)
    status = obj.get("status")
    allocation = status.get("allocation") if isinstance(status, dict) else None
    devices = allocation.get("devices") if isinstance(allocation, dict) else None
    if not isinstance(devices, dict):
        return
    for result in _dicts(devices.get("results")):
        if _looking(DEVICE_TAINTS, wanted, found) and result.get("tolerations"):
            found[DEVICE_TAINTS] = "allocation result tolerations"
        for gate, names in ((BINDING_CONDITIONS, _BINDING_FIELDS),
                            (CONSUMABLE_CAPACITY, ("shareID", "consumedCapacity"))):
            name = _first_set(result, names) if _looking(gate, wanted, found) else None
            if name is not None:
                found[gate] = f"allocation result {name}"


def _claim_template(obj: JSON, wanted: Wanted, found: _Found) -> None:
    spec = obj.get("spec")
    _claim_spec(spec.get("spec") if isinstance(spec, dict) else None, wanted, found)


def _device_class(obj: JSON, wanted: Wanted, found: _Found) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("extendedResourceName"):
        found[EXTENDED_RESOURCE] = "spec.extendedResourceName"


def _device_taint_rule(obj: JSON, wanted: Wanted, found: _Found) -> None:
    spec = obj.get("spec")
    taint = spec.get("taint") if isinstance(spec, dict) else None
    if isinstance(taint, dict) and taint.get("effect") in _TAINT_EFFECTS:
        found[DEVICE_TAINT_RULES] = f"a {taint['effect']} taint"


def _csi_driver(obj: JSON, wanted: Wanted, found: _Found) -> None:
    """VolumeLimitScaling is unmodelled before v1.36 only, where every CSIDriver is checked
    for (there is no opt-in field; kaudit models the opt-in of v1.36 on)."""
    found[VOLUME_LIMIT_SCALING] = "a CSIDriver (before v1.36 every driver is checked for)"


def _device_class_request(spec: JSON) -> str | None:
    """The first ``deviceclass.resource.kubernetes.io/`` resource a container asks for."""
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        for container in containers:
            resources = container.get("resources") if isinstance(container, dict) else None
            if not isinstance(resources, dict):
                continue
            for field in ("requests", "limits"):
                listed = resources.get(field)
                if listed and isinstance(listed, dict):
                    for name in listed:
                        if name.startswith(DEVICE_CLASS_PREFIX):  # keys of JSON: strings
                            return str(name)
    return None


def _pod(obj: JSON, wanted: Wanted, found: _Found) -> None:
    spec = obj.get("spec")
    if EXTENDED_RESOURCE not in wanted or not isinstance(spec, dict):
        return
    status = obj.get("status")
    if isinstance(status, dict) and status.get("extendedResourceClaimStatus"):
        found[EXTENDED_RESOURCE] = "status.extendedResourceClaimStatus"
    else:
        name = _device_class_request(spec)
        if name is not None:
            found[EXTENDED_RESOURCE] = f"a container request of {name}"


_Check = Callable[[JSON, Wanted, _Found], None]
_CHECKS: Mapping[str, _Check] = MappingProxyType({
    "ResourceSlice": _resource_slice, "ResourceClaim": _resource_claim,
    "ResourceClaimTemplate": _claim_template, "DeviceClass": _device_class,
    "DeviceTaintRule": _device_taint_rule, "CSIDriver": _csi_driver, "Pod": _pod,
})
#: The kinds whose objects go through ``normalize`` (older ``resource.k8s.io`` versions).
_DRA_KINDS = frozenset({"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                        "DeviceClass"})


def _uses(kind: str, obj: Any, wanted: Wanted) -> list[FeatureUse]:
    check = _CHECKS.get(kind)
    if check is None or not wanted or not isinstance(obj, dict):
        return []
    if kind in _DRA_KINDS:
        obj = normalize(obj)
    found: _Found = {}
    check(obj, wanted, found)
    if not found:
        return []
    return [FeatureUse(gate, found[gate]) for gate in FEATURES
            if gate in found and gate in wanted]


def unmodelled_feature_uses(obj: Mapping[str, Any], gates: Gates) -> list[FeatureUse]:
    """The unmodelled features that ``gates`` turn on and ``obj`` (a Kubernetes object, the
    JSON of a watch event) uses, in :data:`FEATURES` order, each with the first field found
    that uses it."""
    return _uses(str(obj.get("kind") or ""), obj, enabled_features(gates))


class FeatureDetector:
    """Looks for the unmodelled features ``gates`` turn on, each until :meth:`found`: a
    replay checks only objects of :attr:`kinds`, and fewer of them as features are found."""

    def __init__(self, gates: Gates) -> None:
        self.wanted: set[str] = set(enabled_features(gates))
        #: The kinds that can use a feature still looked for.
        self.kinds: frozenset[str] = self._kinds()

    def _kinds(self) -> frozenset[str]:
        return frozenset(kind for gate in self.wanted for kind in FEATURES[gate].kinds)

    def uses(self, kind: str, obj: Any) -> list[FeatureUse]:
        """The features still looked for that ``obj``, of ``kind``, uses."""
        if kind not in self.kinds:
            return []
        return _uses(kind, obj, self.wanted)

    def found(self, gate: str) -> None:
        """Stop looking for ``gate``."""
        self.wanted.discard(gate)
        self.kinds = self._kinds()


def object_ref(kind: str, namespace: str | None, name: str | None) -> str:
    """``Kind namespace/name`` (``Kind name`` for a cluster-scoped object)."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name or '?'}"


def warning_message(use: FeatureUse, subject: str, *, release: str, explicit: bool = False,
                    where: str | None = None) -> str:
    """The warning for the first use of a feature in a run: ``subject`` (``ResourceSlice
    node-0``) uses it, found at ``where`` (``FILE:LINE``); ``explicit`` when the user turned
    the gate on (else ``release`` turns it on by default)."""
    on = (f"feature gate {use.gate}=true" if explicit
          else f"Kubernetes {release} turns on {use.gate}")
    at = f", at {where}" if where else ""
    return (f"{on}, which kaudit does not model: {subject} uses it ({use.uses}{at}); kaudit "
            f"schedules as with the gate off: {use.instead}")
