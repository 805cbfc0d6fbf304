"""Pod resource requests exactly as kube-scheduler computes them.

Mirrors ``resourcehelper.PodRequests`` (``staging/src/k8s.io/component-helpers/resource/
helpers.go``) and ``calculateResource`` (``pkg/scheduler/framework/types.go``), Kubernetes v1.34:

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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def _container_requests(container: Any, non_zero: bool) -> dict[str, int]:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    requests = _nanos(resources.get("requests") if isinstance(resources, Mapping) else None)
    if non_zero:
        for name, default in _DEFAULT_NANOS.items():
            requests.setdefault(name, default)
    return requests


def pod_requests(spec: Mapping[str, Any], *, non_zero: bool = False,
                 pod_level_resources: bool = True) -> dict[str, int]:
    """The pod's requests in nano-units per resource (``non_zero`` adds scoring defaults)."""
    total: dict[str, int] = {}
    for container in _iter(spec.get("containers")):
        _add(total, _container_requests(container, non_zero))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for container in _iter(spec.get("initContainers")):
        requests = _container_requests(container, non_zero)
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


def resource_units(nanos: Mapping[str, int]) -> dict[str, int]:
    return {name: to_units(name, value) for name, value in nanos.items()}


def node_resources(resources: Any) -> dict[str, int]:
    """A node's capacity or allocatable list in scheduler units."""
    return resource_units(_nanos(resources))


def is_scalar(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed native, attachable."""
    return (is_extended(name) or is_hugepages(name) or "kubernetes.io/" in name
            or name.startswith("attachable-volumes-"))
