"""Pod resource requests exactly as kube-scheduler computes them.

Mirrors ``resourcehelper.PodRequests`` (``k8s.io/component-helpers/resource/helpers.go``) and
``PodInfo.CalculateResource`` (``pkg/scheduler/framework/types.go``), Kubernetes v1.34 (the
resize status below: v1.34.2, v1.35.4, v1.36.3 and v1.37.2):

* the sum of the containers' requests;
* init containers in order, with ``sidecar`` the running sum of restartable init containers
  (``restartPolicy: Always``): a sidecar adds to the containers' sum and to ``sidecar`` and is
  itself a candidate as ``sidecar``; a regular init container is a candidate as
  ``itself + sidecar``; the result is the per-resource maximum of the sum and the candidates;
* pod-level ``spec.resources.requests`` (``PodLevelResources``, on by default) replace cpu,
  memory and hugepages;
* ``spec.overhead`` is added.

The non-zero variant used for scoring applies 100m CPU and 200Mi memory to every container
whose requests lack those keys (an explicit ``0`` is kept). Sums are exact (in nano-units) and
converted at the end: cpu to millicores, everything else to whole units, rounding up.

The pods already on a node are accounted with their in-place resize status
(:func:`pod_requests_with_status`, ``UseStatusResources`` under ``InPlacePodVerticalScaling``
and, from v1.35, ``InPlacePodLevelResourcesVerticalScalingEnabled`` under
``InPlacePodLevelResourcesVerticalScaling``), as ``calculateResource`` does; upstream's
computation has two generations:

* component-helpers v0.34.2, v0.35.4 and v0.36.3 (``AggregateContainerRequests`` with
  ``determineContainerReqs`` / ``determineEffectiveRequests``): a container, or a sidecar, whose
  status (by name in ``status.containerStatuses`` and ``status.initContainerStatuses``, filled
  into a map in that order, so the last of a name wins) has ``resources`` counts
  ``max(spec, resources.requests, allocatedResources)``, or
  ``max(resources.requests, allocatedResources)`` when the ``PodResizePending`` condition's
  reason is ``Infeasible``; regular init containers and
  containers without such a status count their spec. From v0.35.4 ``PodRequests`` replaces
  each pod-level spec request (the names of ``spec.resources.requests``) by the same maximum
  over ``status.resources.requests`` and ``status.allocatedResources`` when the pod-level gate
  is on and ``status.resources`` is set (a name missing from that maximum counts zero);
* component-helpers v0.37.2 (``aggregateContainerResourcesByFn``): spec, allocated and actuated
  requests are each aggregated over all containers as above (allocated: the container status's
  ``allocatedResources``, else nothing when infeasible, else the spec; actuated: its
  ``resources.requests``, else its ``allocatedResources``, else nothing when infeasible, else
  the spec; the status is the first of its name in ``containerStatuses``, then
  ``initContainerStatuses``);
  with the pod-level gate on and ``status.allocatedResources`` and ``status.resources.requests``
  both set, those pod-level maps stand for the allocated and actuated aggregations; the result
  is ``max(spec, actuated, allocated)``, or ``max(actuated, allocated)`` when infeasible. The
  pod-level spec requests are replaced by ``max(spec, status.resources.requests,
  status.allocatedResources)`` (spec left out when infeasible), every supported name of that
  maximum applied.

In both, the non-zero defaults are applied to each container's list of each aggregation (to
the names missing from that list), before sidecars and init containers are combined. A
resource name present with a zero quantity counts as present, as in a Go map.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kaudit.quantity import parse_quantity

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
STORAGE = "storage"

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_NANO = 10**9
_DEFAULT_NANOS = {CPU: DEFAULT_MILLI_CPU_REQUEST * 10**6, MEMORY: DEFAULT_MEMORY_REQUEST * _NANO}


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or is_hugepages(name)


def is_extended(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: prefixed, not ``*kubernetes.io/``, not ``requests.``."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.")


def to_units(name: str, nanos: int) -> int:
    """cpu in millicores, everything else in whole units, rounded up like MilliValue/Value."""
    divisor = 10**6 if name == CPU else _NANO
    quotient, remainder = divmod(nanos, divisor)
    return quotient + (1 if remainder else 0)


def _nanos(resources: Any) -> dict[str, int]:
    if not isinstance(resources, Mapping):
        return {}
    return {name: parse_quantity(str(text)).nanos for name, text in resources.items()}


def _add(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, value in extra.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > total.get(name, 0):
            total[name] = value


#: What ``non_zero`` may be: False (none), True (the scoring defaults of cpu and memory), or
#: the defaults to apply, by name (``NonMissingContainerRequests``).
NonZero = bool | Mapping[str, int]


def _defaults(non_zero: NonZero) -> Mapping[str, int]:
    if isinstance(non_zero, bool):
        return _DEFAULT_NANOS if non_zero else {}
    return non_zero


def _container_requests(container: Any, defaults: Mapping[str, int]) -> dict[str, int]:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    requests = _nanos(resources.get("requests") if isinstance(resources, Mapping) else None)
    for name, default in defaults.items():
        requests.setdefault(name, default)
    return requests


def pod_level_requests_set(spec: Mapping[str, Any]) -> bool:
    """``IsPodLevelRequestsSet``: the pod-level requests name cpu, memory or hugepages."""
    pod_resources = spec.get("resources")
    requests = pod_resources.get("requests") if isinstance(pod_resources, Mapping) else None
    return isinstance(requests, Mapping) and any(is_pod_level_resource(n) for n in requests)


def node_non_zero_defaults(requests: Mapping[str, int]) -> Mapping[str, int]:
    """``getNonMissingContainerRequests`` (``pkg/scheduler/framework/types.go``) for a pod with
    pod-level requests: the defaults it counts towards its node's non-zero requests are those
    of cpu and memory missing from its ``requests``, none when neither is missing (a pod
    without pod-level requests counts both, per container)."""
    return {name: value for name, value in _DEFAULT_NANOS.items() if name not in requests}


def pod_requests(spec: Mapping[str, Any], *, non_zero: NonZero = False,
                 pod_level_resources: bool = True) -> dict[str, int]:
    """The pod's requests in nano-units per resource (``non_zero`` adds scoring defaults)."""
    defaults = _defaults(non_zero)
    total: dict[str, int] = {}
    for container in _iter(spec.get("containers")):
        _add(total, _container_requests(container, defaults))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for container in _iter(spec.get("initContainers")):
        requests = _container_requests(container, defaults)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            candidate = dict(sidecars)
        else:
            candidate = dict(requests)
            _add(candidate, sidecars)
        _max(init_max, candidate)
    _max(total, init_max)
    if pod_level_resources:
        pod_resources = spec.get("resources")
        if isinstance(pod_resources, Mapping) and pod_resources.get("requests"):
            for name, value in _nanos(pod_resources["requests"]).items():
                if is_pod_level_resource(name):
                    total[name] = value
    _add(total, _nanos(spec.get("overhead")))
    return total


def _iter(containers: Any) -> Iterable[Mapping[str, Any]]:
    return [c for c in containers if isinstance(c, Mapping)] if isinstance(containers, list) else []


# -- in-place resize status: the requests of the pods already on a node -----------------------

#: ``v1.PodResizePending``, the condition whose reason ``Infeasible`` drops the spec.
POD_RESIZE_PENDING = "PodResizePending"
POD_REASON_INFEASIBLE = "Infeasible"
GATE_IN_PLACE_SCALING = "InPlacePodVerticalScaling"
GATE_POD_LEVEL_SCALING = "InPlacePodLevelResourcesVerticalScaling"


@dataclass(frozen=True, slots=True)
class StatusOptions:
    """What ``calculateResource`` reads of a pod's status when it accounts the pod on a node.

    ``use_status_resources`` is ``UseStatusResources`` (gate ``InPlacePodVerticalScaling``);
    ``pod_level_status`` is ``InPlacePodLevelResourcesVerticalScalingEnabled`` (gate
    ``InPlacePodLevelResourcesVerticalScaling``, from v1.35; upstream reads it only with
    ``use_status_resources``); ``aggregate_status`` selects component-helpers v0.37.2's
    computation (Kubernetes v1.37 on) instead of v0.34.2-v0.36.3's.
    """

    use_status_resources: bool = False
    pod_level_status: bool = False
    aggregate_status: bool = False


#: Requests from the spec alone (the options off): what :func:`pod_requests` computes.
SPEC_ONLY = StatusOptions()


def _list(resources: Any) -> dict[str, int] | None:
    """A resource list as Go decodes it: None for an absent (nil) list."""
    return _nanos(resources) if isinstance(resources, Mapping) else None


def _go_max(first: Mapping[str, int] | None, *others: Mapping[str, int] | None
            ) -> dict[str, int]:
    """``max(a, b...)``: a copy of the first list with every name of the others at its
    largest (a name present only in a later list is added, even at zero)."""
    result = dict(first or {})
    for other in others:
        _max_into(result, other)
    return result


def _max_into(total: dict[str, int], other: Mapping[str, int] | None) -> None:
    """``maxResourceList``: a name missing from ``total`` is added whatever its value."""
    for name, value in (other or {}).items():
        if name not in total or value > total[name]:
            total[name] = value


def _apply_non_missing(requests: Mapping[str, int] | None, defaults: Mapping[str, int]
                       ) -> dict[str, int]:
    """``applyNonMissing``: the defaults of the names missing from the container's list."""
    result = dict(requests or {})
    for name, value in defaults.items():
        result.setdefault(name, value)
    return result


def is_resize_infeasible(status: Mapping[str, Any]) -> bool:
    """``IsPodResizeInfeasible``: the first ``PodResizePending`` condition says Infeasible."""
    for condition in _iter(status.get("conditions")):
        if condition.get("type") == POD_RESIZE_PENDING:
            return bool(condition.get("reason") == POD_REASON_INFEASIBLE)
    return False


def carries_resize_status(status: Any) -> bool:
    """Whether the status holds anything the status-aware requests read: a container status
    with ``resources`` or ``allocatedResources``, pod-level ``resources`` or
    ``allocatedResources``, or a ``PodResizePending`` condition. Without any, they are the
    spec's requests (:func:`pod_requests`, the same numbers) at every release."""
    if not isinstance(status, Mapping):
        return False
    if "resources" in status or "allocatedResources" in status:
        return True
    for key in ("containerStatuses", "initContainerStatuses"):
        for container_status in _iter(status.get(key)):
            if "resources" in container_status or "allocatedResources" in container_status:
                return True
    return any(c.get("type") == POD_RESIZE_PENDING for c in _iter(status.get("conditions")))


def _spec_list(container: Mapping[str, Any]) -> dict[str, int] | None:
    resources = container.get("resources")
    return _list(resources.get("requests")) if isinstance(resources, Mapping) else None


#: The kinds of container an aggregation visits.
CONTAINER, SIDECAR, INIT = "container", "sidecar", "init"
#: A container's list in one aggregation: (container, its status or None, its kind).
_Picker = Callable[[Mapping[str, Any], "Mapping[str, Any] | None", str], "dict[str, int] | None"]


def _aggregate(spec: Mapping[str, Any], pick: _Picker,
               find: Callable[[str], Mapping[str, Any] | None] | None,
               non_missing: Mapping[str, int] | None) -> dict[str, int]:
    """``AggregateContainerRequests`` (v0.34.2-v0.36.3) / ``aggregateContainerResourcesByFn``
    (v0.37.2): containers add up; init containers take the maximum, sidecars add to both."""
    result: dict[str, int] = {}

    def listed(container: Mapping[str, Any], kind: str) -> dict[str, int]:
        status = find(container.get("name") or "") if find is not None else None
        requests = pick(container, status, kind)
        if non_missing:
            return _apply_non_missing(requests, non_missing)
        return dict(requests or {})

    for container in _iter(spec.get("containers")):
        _add(result, listed(container, CONTAINER))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for container in _iter(spec.get("initContainers")):
        sidecar = container.get("restartPolicy") == "Always"
        requests = listed(container, SIDECAR if sidecar else INIT)
        if sidecar:
            _add(result, requests)
            _add(sidecars, requests)
            _max_into(init_max, sidecars)
        else:
            _add(requests, sidecars)
            _max_into(init_max, requests)
    _max_into(result, init_max)
    return result


def _status_finder(status: Mapping[str, Any], first_wins: bool
                   ) -> Callable[[str], Mapping[str, Any] | None]:
    """Container statuses by name: ``containerStatuses``, then ``initContainerStatuses``.
    v0.37.2's ``findContainerStatus`` takes the first of a name; v0.34.2-v0.36.3 fill a map,
    so the last one wins."""
    listed = [*_iter(status.get("containerStatuses")), *_iter(status.get("initContainerStatuses"))]
    by_name: dict[str, Mapping[str, Any]] = {}
    for container_status in reversed(listed) if first_wins else listed:
        by_name[container_status.get("name") or ""] = container_status
    return by_name.get


def _per_container_requests(spec: Mapping[str, Any], status: Mapping[str, Any],
                            infeasible: bool, non_missing: Mapping[str, int] | None
                            ) -> dict[str, int]:
    """v0.34.2-v0.36.3: ``max(spec, resources.requests, allocatedResources)`` of each
    container or sidecar whose status has ``resources`` (without the spec when infeasible)."""
    def pick(container: Mapping[str, Any], found: Mapping[str, Any] | None, kind: str
             ) -> dict[str, int] | None:
        requests = _spec_list(container)
        if kind == INIT or found is None:
            return requests
        resources = found.get("resources")
        if not isinstance(resources, Mapping):
            return requests
        actuated = _list(resources.get("requests"))
        allocated = _list(found.get("allocatedResources"))
        return _go_max(actuated, allocated) if infeasible else _go_max(requests, actuated,
                                                                       allocated)

    return _aggregate(spec, pick, _status_finder(status, first_wins=False), non_missing)


def _aggregated_status_requests(spec: Mapping[str, Any], status: Mapping[str, Any],
                                infeasible: bool, pod_level_status: bool,
                                non_missing: Mapping[str, int] | None) -> dict[str, int]:
    """v0.37.2: spec, allocated and actuated aggregated apart (or the pod-level status maps)."""
    def spec_pick(container: Mapping[str, Any], _found: Mapping[str, Any] | None, _kind: str
                  ) -> dict[str, int] | None:
        return _spec_list(container)

    def allocated_pick(container: Mapping[str, Any], found: Mapping[str, Any] | None,
                       _kind: str) -> dict[str, int] | None:
        if found is not None and isinstance(found.get("allocatedResources"), Mapping):
            return _nanos(found["allocatedResources"])
        return None if infeasible else _spec_list(container)

    def actuated_pick(container: Mapping[str, Any], found: Mapping[str, Any] | None,
                      _kind: str) -> dict[str, int] | None:
        if found is not None:
            resources = found.get("resources")
            if isinstance(resources, Mapping) and isinstance(resources.get("requests"), Mapping):
                return _nanos(resources["requests"])
            if isinstance(found.get("allocatedResources"), Mapping):
                return _nanos(found["allocatedResources"])
        return None if infeasible else _spec_list(container)

    find = _status_finder(status, first_wins=True)
    spec_requests = _aggregate(spec, spec_pick, find, non_missing)
    pod_resources = status.get("resources")
    if (pod_level_status and isinstance(status.get("allocatedResources"), Mapping)
            and isinstance(pod_resources, Mapping)
            and isinstance(pod_resources.get("requests"), Mapping)):
        allocated = _nanos(status["allocatedResources"])
        actuated = _nanos(pod_resources["requests"])
    else:
        allocated = _aggregate(spec, allocated_pick, find, non_missing)
        actuated = _aggregate(spec, actuated_pick, find, non_missing)
    if infeasible:
        return _go_max(actuated, allocated)
    return _go_max(spec_requests, actuated, allocated)


def pod_requests_with_status(obj: Mapping[str, Any], options: StatusOptions, *,
                             non_zero: NonZero = False, pod_level_resources: bool = True
                             ) -> dict[str, int]:
    """``PodRequests`` of a pod object with its status read as ``options`` say, in nano-units
    per resource (``non_zero`` adds the scoring defaults per container, as
    ``NonMissingContainerRequests`` does). With ``use_status_resources`` off it is
    :func:`pod_requests` of the spec."""
    spec = obj.get("spec") or {}
    if not options.use_status_resources:
        return pod_requests(spec, non_zero=non_zero, pod_level_resources=pod_level_resources)
    status = obj.get("status")
    if not isinstance(status, Mapping):
        status = {}
    infeasible = is_resize_infeasible(status)
    non_missing = _defaults(non_zero) or None
    if options.aggregate_status:
        total = _aggregated_status_requests(spec, status, infeasible, options.pod_level_status,
                                            non_missing)
    else:
        total = _per_container_requests(spec, status, infeasible, non_missing)
    pod_resources = spec.get("resources")
    pod_spec = _nanos(pod_resources.get("requests")) if isinstance(pod_resources,
                                                                   Mapping) else {}
    if pod_level_resources and any(is_pod_level_resource(name) for name in pod_spec):
        # IsPodLevelRequestsSet
        pod_status = status.get("resources")
        if options.pod_level_status and isinstance(pod_status, Mapping):
            actuated = _list(pod_status.get("requests"))
            allocated = _list(status.get("allocatedResources"))
            if options.aggregate_status:
                # effectivePodLevelResources, then applyPodLevelResources over its names.
                effective = _go_max(None if infeasible else pod_spec, actuated, allocated)
                names: Iterable[str] = effective
            else:
                # determineEffectiveRequests; the spec's names take its values (zero if absent).
                effective = (_go_max(actuated, allocated) if infeasible
                             else _go_max(pod_spec, actuated, allocated))
                names = pod_spec
            for name in names:
                if is_pod_level_resource(name):
                    total[name] = effective.get(name, 0)
        else:
            for name, value in pod_spec.items():
                if is_pod_level_resource(name):
                    total[name] = value
    _add(total, _nanos(spec.get("overhead")))
    return total


def resource_units(nanos: Mapping[str, int]) -> dict[str, int]:
    return {name: to_units(name, value) for name, value in nanos.items()}


def node_resources(resources: Any) -> dict[str, int]:
    """A node's capacity or allocatable list in scheduler units."""
    return resource_units(_nanos(resources))


def is_scalar(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed native, attachable."""
    return (is_extended(name) or is_hugepages(name) or "kubernetes.io/" in name
            or name.startswith("attachable-volumes-"))
