"""A Pod, parsed once from its Kubernetes JSON into what the scheduler reads.

Mirrors the fields of ``framework.PodInfo`` and ``framework.AffinityTerm``
(``pkg/scheduler/framework/types.go``, Kubernetes v1.34): requests and non-zero requests,
tolerations, node selector and affinity, pod (anti-)affinity terms with their namespaces and
namespace selectors, topology spread constraints, host ports, images, claims, gates, priority.

The requests of an assigned pod (``spec.nodeName`` set: what upstream keeps in a NodeInfo) are
``calculateResource``'s (``PodInfo.CalculateResource`` in ``types.go`` of v1.34.2, v1.35.4,
v1.36.3 and v1.37.2): with ``status_options`` (:class:`~kaudit.model.resources.StatusOptions`, from
the run's feature gates) they read the pod's in-place resize status
(:func:`~kaudit.model.resources.pod_requests_with_status`). A pending pod's are the spec's, as
the incoming pod's are for NodeResourcesFit's PreFilter (``computePodResourceRequest``) and,
its status holding no resize, for scoring (``calculatePodResourceRequest``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaudit.model.gpu import GpuDemand, gpu_demand
from kaudit.model.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    SPEC_ONLY,
    NonZero,
    StatusOptions,
    carries_resize_status,
    node_non_zero_defaults,
    pod_level_requests_set,
    pod_requests,
    pod_requests_with_status,
    resource_units,
)
from kaudit.model.selectors import (
    LabelSelector,
    NodeSelector,
    Requirement,
    SelectorError,
    parse_term,
)

JSON = dict[str, Any]

#: Phases of a pod that has finished: the scheduler's informer leaves such pods out.
FINISHED_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Toleration:
        return cls(raw.get("key") or "", raw.get("operator") or "Equal",
                   str(raw.get("value") or ""), raw.get("effect") or "")

    def tolerates(self, taint: Taint) -> bool:
        """``v1.Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Taint:
        return cls(raw.get("key") or "", str(raw.get("value") or ""), raw.get("effect") or "")


def tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod (anti-)affinity term; ``weight`` is 0 for required terms.

    Parsed terms are interned (the pods of a workload share one object per term) and keep
    their hash: InterPodAffinity groups existing pods by term on every cluster change.
    """

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    topology_key: str
    weight: int = 0
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.selector, self.namespaces,
                                                self.namespace_selector, self.topology_key,
                                                self.weight)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        # Built again on unpickling: a string's hash differs from one process to another.
        return (AffinityTerm, (self.selector, self.namespaces, self.namespace_selector,
                               self.topology_key, self.weight))

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        """``AffinityTerm.Matches``: the namespace is listed or selected, and labels match."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(pod.labels)
        return False


def _affinity_term(owner_namespace: str, raw: Mapping[str, Any], where: str,
                   weight: int = 0) -> AffinityTerm:
    namespaces = raw.get("namespaces") or []
    namespace_selector = raw.get("namespaceSelector")
    if not namespaces and namespace_selector is None:
        namespaces = [owner_namespace]
    term = AffinityTerm(
        selector=LabelSelector.parse(raw.get("labelSelector"), f"{where}.labelSelector"),
        namespaces=frozenset(namespaces),
        namespace_selector=LabelSelector.parse(namespace_selector, f"{where}.namespaceSelector"),
        topology_key=raw.get("topologyKey") or "",
        weight=weight,
    )
    if len(_TERMS) >= _MAX_TERMS:
        _TERMS.clear()
    return _TERMS.setdefault(term, term)


#: Interned affinity terms (cleared when it grows past :data:`_MAX_TERMS`: a trace has few
#: distinct terms, one per workload and term, and a long-lived server many traces).
_TERMS: dict[AffinityTerm, AffinityTerm] = {}
_MAX_TERMS = 50_000


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


_BASE_REQUESTS = frozenset((CPU, MEMORY, EPHEMERAL_STORAGE))


@dataclass(slots=True)
class PodInfo:
    """Everything the scheduler needs from one Pod object."""

    obj: JSON
    namespace: str
    name: str
    uid: str
    labels: dict[str, str]
    priority: int
    scheduler_name: str
    node_name: str
    nominated_node_name: str
    requests: dict[str, int]
    non_zero_cpu: int
    non_zero_memory: int
    tolerations: tuple[Toleration, ...]
    node_selector: dict[str, str]
    required_node_affinity: NodeSelector | None
    preferred_node_affinity: tuple[tuple[int, Any], ...]
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti_affinity: tuple[AffinityTerm, ...]
    spread_constraints: tuple[SpreadConstraint, ...]
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    claim_names: tuple[str, ...]
    volumes: tuple[JSON, ...]
    scheduling_gates: tuple[str, ...]
    preemption_policy: str
    terminating: bool
    phase: str
    start_time: str | None
    owner: tuple[str, str] | None
    #: Selector errors of terms left out while parsing (upstream's NewPodInfo errors).
    parse_errors: tuple[str, ...] = ()
    #: What it asks of GPU devices (``model/gpu.py``); None for a pod that asks no GPU.
    gpu: GpuDemand | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: (cpu, memory, ephemeral-storage, node non-zero cpu, node non-zero memory) when the pod
    #: requests nothing else, so the cluster state can account many such pods in one vector
    #: step.
    base_row: tuple[int, int, int, int, int] | None = None
    #: ``namespace/name``.
    key: str = ""
    #: The (cpu, memory) the pod adds to its node's non-zero requests, when not those it is
    #: scored with (``non_zero_cpu``, ``non_zero_memory``): ``calculateResource`` applies the
    #: defaults only to what a pod with pod-level requests lacks
    #: (``getNonMissingContainerRequests``), where scoring an incoming pod applies them to
    #: every container.
    node_non_zero: tuple[int, int] | None = None

    @property
    def node_non_zero_cpu(self) -> int:
        return self.non_zero_cpu if self.node_non_zero is None else self.node_non_zero[0]

    @property
    def node_non_zero_memory(self) -> int:
        return self.non_zero_memory if self.node_non_zero is None else self.node_non_zero[1]

    @property
    def has_affinity(self) -> bool:
        return bool(self.required_affinity or self.preferred_affinity
                    or self.preferred_anti_affinity or self.required_anti_affinity)


def parse_spread_constraint(pod_labels: Mapping[str, str], raw: Mapping[str, Any], where: str,
                            match_label_keys: bool) -> SpreadConstraint:
    """One ``topologySpreadConstraints`` entry: ``labelSelector`` ANDed with ``key In [value]``
    for each ``matchLabelKeys`` key the pod has (when enabled); raises SelectorError."""
    selector = LabelSelector.parse(raw.get("labelSelector"), f"{where}.labelSelector")
    if match_label_keys:
        for key in raw.get("matchLabelKeys") or []:
            if key in pod_labels:
                selector = selector.with_requirement(
                    Requirement(key, "In", frozenset([pod_labels[key]])))
    return SpreadConstraint(
        max_skew=int(raw.get("maxSkew") or 0),
        topology_key=raw.get("topologyKey") or "",
        when_unsatisfiable=raw.get("whenUnsatisfiable") or "DoNotSchedule",
        selector=selector,
        min_domains=int(raw.get("minDomains") or 1),
        node_affinity_policy=raw.get("nodeAffinityPolicy") or "Honor",
        node_taints_policy=raw.get("nodeTaintsPolicy") or "Ignore",
    )


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """Host ports of containers and restartable init containers (``GetContainerPorts``)."""
    containers = list(spec.get("containers") or [])
    containers += [c for c in spec.get("initContainers") or []
                   if c.get("restartPolicy") == "Always"]
    ports = []
    for container in containers:
        for port in container.get("ports") or []:
            host_port = int(port.get("hostPort") or 0)
            if host_port > 0:
                ports.append(HostPort(port.get("hostIP") or "0.0.0.0",
                                      port.get("protocol") or "TCP", host_port))
    return tuple(ports)


def parse_pod(obj: JSON, *, priority: int | None = None, pod_level_resources: bool = True,
              match_label_keys_in_spread: bool = True,
              status_options: StatusOptions = SPEC_ONLY) -> PodInfo:
    """Parse a Pod object. ``priority`` overrides a missing ``spec.priority``;
    ``status_options`` says what an assigned pod's requests read of its resize status
    (nothing by default)."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    namespace = metadata.get("namespace") or ""
    labels = dict(metadata.get("labels") or {})
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = tuple(
        (int(p.get("weight") or 0),
         parse_term(p.get("preference") or {},
                    f"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
                    ".preference"))
        for i, p in enumerate(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
                              or []))

    errors: list[str] = []

    def parsed(build: Any) -> Any:
        # Like upstream's NewPodInfo, a malformed term is kept out and its error remembered;
        # the plugins that read the term (InterPodAffinity) report it as the pod's status.
        try:
            return build()
        except SelectorError as exc:
            errors.append(str(exc))
            return None

    def terms(kind: str) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]:
        section = affinity.get(kind) or {}
        where = f"spec.affinity.{kind}"
        required_key = "requiredDuringSchedulingIgnoredDuringExecution"
        preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
        hard = [parsed(lambda t=t, i=i: _affinity_term(namespace, t,
                                                       f"{where}.{required_key}[{i}]"))
                for i, t in enumerate(section.get(required_key) or [])]
        soft = [parsed(lambda t=t, i=i: _affinity_term(
                    namespace, t.get("podAffinityTerm") or {},
                    f"{where}.{preferred_key}[{i}].podAffinityTerm", int(t.get("weight") or 0)))
                for i, t in enumerate(section.get(preferred_key) or [])]
        return (tuple(t for t in hard if t is not None),
                tuple(t for t in soft if t is not None))

    required_affinity, preferred_affinity = terms("podAffinity")
    required_anti, preferred_anti = terms("podAntiAffinity")
    requests, non_zero, node_non_zero = _requests(obj, spec, pod_level_resources,
                                                  status_options)
    volumes = tuple(v for v in spec.get("volumes") or [] if isinstance(v, dict))
    owners = [o for o in metadata.get("ownerReferences") or [] if o.get("controller")]
    spec_priority = spec.get("priority")
    base_row = None
    if requests.keys() <= _BASE_REQUESTS:
        on_node = node_non_zero or (non_zero.get(CPU, 0), non_zero.get(MEMORY, 0))
        base_row = (requests.get(CPU, 0), requests.get(MEMORY, 0),
                    requests.get(EPHEMERAL_STORAGE, 0), *on_node)
    name = metadata.get("name") or ""
    return PodInfo(
        obj=obj,
        namespace=namespace,
        name=name,
        key=f"{namespace}/{name}",
        uid=metadata.get("uid") or f"{namespace}/{metadata.get('name')}",
        labels=labels,
        priority=int(spec_priority) if spec_priority is not None else (priority or 0),
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        node_name=spec.get("nodeName") or "",
        nominated_node_name=status.get("nominatedNodeName") or "",
        requests=requests,
        non_zero_cpu=non_zero.get(CPU, 0),
        non_zero_memory=non_zero.get(MEMORY, 0),
        node_non_zero=node_non_zero,
        base_row=base_row,
        tolerations=tuple(Toleration.parse(t) for t in spec.get("tolerations") or []),
        node_selector=dict(spec.get("nodeSelector") or {}),
        required_node_affinity=(NodeSelector.parse(
            required, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
            if required is not None else None),
        preferred_node_affinity=preferred,
        required_affinity=required_affinity,
        required_anti_affinity=required_anti,
        preferred_affinity=preferred_affinity,
        preferred_anti_affinity=preferred_anti,
        spread_constraints=tuple(c for c in (
            parsed(lambda c=c, i=i: parse_spread_constraint(
                labels, c, f"spec.topologySpreadConstraints[{i}]", match_label_keys_in_spread))
            for i, c in enumerate(spec.get("topologySpreadConstraints") or [])) if c is not None),
        host_ports=_host_ports(spec),
        images=tuple(c.get("image") or "" for c in
                     [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]),
        claim_names=tuple(v["persistentVolumeClaim"].get("claimName") or "" for v in volumes
                          if isinstance(v.get("persistentVolumeClaim"), dict)),
        volumes=volumes,
        scheduling_gates=tuple(g.get("name") or "" for g in spec.get("schedulingGates") or []),
        preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
        terminating=metadata.get("deletionTimestamp") is not None,
        phase=status.get("phase") or "",
        start_time=status.get("startTime"),
        owner=(owners[0].get("kind") or "", owners[0].get("name") or "") if owners else None,
        parse_errors=tuple(errors),
        gpu=_gpu_demand(metadata),
    )


def _requests(obj: JSON, spec: Mapping[str, Any], pod_level_resources: bool,
              options: StatusOptions
              ) -> tuple[dict[str, int], dict[str, int], tuple[int, int] | None]:
    """The pod's requests, its non-zero requests (as scoring an incoming pod computes them)
    and, when they differ in kind, the non-zero (cpu, memory) it adds to its node (as
    ``calculateResource`` computes them), in scheduler units: with its resize status when it
    is assigned and ``options`` read status, else from the spec. A status without anything a
    resize writes gives the spec's requests at every release, so it takes the spec's
    (cheaper) path."""
    with_status = (options.use_status_resources and bool(spec.get("nodeName"))
                   and carries_resize_status(obj.get("status")))

    def compute(non_zero: NonZero) -> dict[str, int]:
        if with_status:
            return resource_units(pod_requests_with_status(
                obj, options, non_zero=non_zero, pod_level_resources=pod_level_resources))
        return resource_units(pod_requests(spec, non_zero=non_zero,
                                           pod_level_resources=pod_level_resources))

    requests, non_zero = compute(False), compute(True)
    node_non_zero = None
    if pod_level_resources and pod_level_requests_set(spec):
        defaults = node_non_zero_defaults(requests)
        on_node = compute(defaults) if defaults else requests
        node_non_zero = (on_node.get(CPU, 0), on_node.get(MEMORY, 0))
    return requests, non_zero, node_non_zero


def _gpu_demand(metadata: Mapping[str, Any]) -> GpuDemand | None:
    try:
        return gpu_demand(metadata.get("annotations"))
    except ValueError:
        return None  # ingest refuses such annotations; objects built in memory get no GPUs


def terminating_object(obj: JSON, deletion_timestamp: str) -> JSON:
    """A pod preempted by the scheduler as its status patch and graceful deletion leave it:
    ``deletionTimestamp`` set and the ``DisruptionTarget`` condition
    (``PreemptionByScheduler``)."""
    terminating = copy.deepcopy(obj)
    terminating.setdefault("metadata", {})["deletionTimestamp"] = deletion_timestamp
    status = terminating.setdefault("status", {})
    status["conditions"] = [*(c for c in status.get("conditions") or []
                              if c.get("type") != "DisruptionTarget"),
                            {"type": "DisruptionTarget", "status": "True",
                             "reason": "PreemptionByScheduler",
                             "message": "kaudit: preempting to accommodate a higher priority pod"}]
    return terminating
