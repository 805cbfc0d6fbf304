"""The inputs of one scheduling decision, read back for people: the pod as the scheduler saw it
at that moment, and the nodes' objects and free capacity then.

The pod and node objects come from the stored trace (the last event of each at or before the
attempt's time); free capacity comes from the run's timeline (what the replayed scheduler had
bound or assumed). The pod's effective requests are computed with the scheduler's own
:func:`kaudit.model.resources.pod_requests`, both as filtered (``requests``) and as scored
(``scoringRequests``: 100m CPU and 200 MiB for containers that request none, upstream's
``GetNonzeroRequests``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, func, or_, select

from kaudit.model.gpu import gpu_demand
from kaudit.model.pod import Toleration
from kaudit.model.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    pod_requests,
    resource_units,
)
from kaudit.queries import units
from kaudit.store.models import Run, RunNode, RunPlacement, TraceEvent

#: Upstream's ``GetNonzeroRequests`` defaults for a container requesting no cpu or memory.
NON_ZERO_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
#: Above this many nodes, node objects are read without a name filter (one range scan).
_NAME_FILTER_LIMIT = 500


def trace_id_of(engine: Engine, run_id: int) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(Run.trace_id).where(Run.id == run_id)).scalar_one())


def pod_object_at(engine: Engine, trace_id: int, key: str, ts_us: int) -> dict[str, Any] | None:
    """The pod's last stored object at or before ``ts_us`` (its first when it came later)."""
    namespace, _, name = key.partition("/")
    base = select(TraceEvent.object).where(
        TraceEvent.trace_id == trace_id, TraceEvent.kind == "Pod",
        TraceEvent.namespace == namespace, TraceEvent.name == name)
    with engine.connect() as connection:
        found = connection.scalar(base.where(TraceEvent.ts_us <= ts_us)
                                  .order_by(TraceEvent.seq.desc()).limit(1))
        if found is None:
            found = connection.scalar(base.order_by(TraceEvent.seq).limit(1))
    return orjson.loads(found) if found is not None else None


def node_objects_at(engine: Engine, trace_id: int, names: Iterable[str], ts_us: int
                    ) -> dict[str, dict[str, Any]]:
    """Each named node's last stored object at or before ``ts_us``."""
    wanted = set(names)
    if not wanted:
        return {}
    query = (select(TraceEvent.name, TraceEvent.object)
             .where(TraceEvent.trace_id == trace_id, TraceEvent.kind == "Node",
                    TraceEvent.ts_us <= ts_us).order_by(TraceEvent.seq))
    if len(wanted) <= _NAME_FILTER_LIMIT:
        query = query.where(TraceEvent.name.in_(sorted(wanted)))
    latest: dict[str, str] = {}
    with engine.connect() as connection:
        for name, obj in connection.execute(query):
            if name in wanted:
                latest[name] = obj
    return {name: orjson.loads(obj) for name, obj in latest.items()}


def _priority_class_value(engine: Engine, trace_id: int, name: str, ts_us: int) -> int | None:
    with engine.connect() as connection:
        found = connection.scalar(
            select(TraceEvent.object).where(
                TraceEvent.trace_id == trace_id, TraceEvent.kind == "PriorityClass",
                TraceEvent.name == name, TraceEvent.ts_us <= ts_us)
            .order_by(TraceEvent.seq.desc()).limit(1))
    if found is None:
        return None
    value = orjson.loads(found).get("value")
    return int(value) if isinstance(value, int | float) else None


def _requirement_text(raw: dict[str, Any]) -> str:
    key, operator = raw.get("key", ""), raw.get("operator", "")
    values = raw.get("values") or []
    if operator in ("Exists", "DoesNotExist"):
        return f"{key} {operator}"
    if operator in ("Gt", "Lt"):
        return f"{key} {'>' if operator == 'Gt' else '<'} {values[0] if values else ''}"
    return f"{key} {operator} ({', '.join(map(str, values))})"


def term_text(term: dict[str, Any]) -> str:
    """A node selector term as ``disktype In (ssd) and zone NotIn (a)``."""
    parts = [_requirement_text(r) for r in term.get("matchExpressions") or []]
    parts += [_requirement_text(r) for r in term.get("matchFields") or []]
    return " and ".join(parts) or "(empty term: matches nothing)"


def toleration_text(raw: dict[str, Any]) -> str:
    key = raw.get("key") or "*"
    value = raw.get("value")
    subject = key if raw.get("operator") == "Exists" or not value else f"{key}={value}"
    effect = raw.get("effect") or "any effect"
    return f"{subject}:{effect}"


def taint_text(raw: dict[str, Any]) -> str:
    value = raw.get("value")
    subject = f"{raw.get('key', '')}={value}" if value else raw.get("key", "")
    return f"{subject}:{raw.get('effect', '')}"


def _spread_text(raw: dict[str, Any]) -> str:
    selector = raw.get("labelSelector") or {}
    labels = ", ".join(f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items())
    labels += ", ".join(_requirement_text(r) for r in selector.get("matchExpressions") or [])
    return (f"maxSkew {raw.get('maxSkew')} over {raw.get('topologyKey')} "
            f"({raw.get('whenUnsatisfiable') or 'DoNotSchedule'}) of pods {labels or '(all)'}")


def _gpu_text(obj: dict[str, Any]) -> str | None:
    """The pod's GPU-device demand in words (``model/gpu.py``), or None."""
    try:
        demand = gpu_demand((obj.get("metadata") or {}).get("annotations"))
    except ValueError:
        return None
    if demand is None:
        return None
    ask = (f"{demand.milli} milli of one GPU (shared)" if demand.shares
           else f"{demand.count} whole GPU{'s' if demand.count > 1 else ''}")
    return ask + (f", models {'|'.join(sorted(demand.models))}" if demand.models else "")


def _amounts(requests: dict[str, int]) -> dict[str, str]:
    """Each request exactly, as Kubernetes writes it: ``cpu 500m``, ``memory 1Gi``."""
    return {name: f"{name} {units.quantity(name, value)}" for name, value in requests.items()}


def _requests_summary(requests: dict[str, int], scoring: dict[str, int]) -> str:
    """``cpu 500m, memory 1Gi; scored as …`` with upstream's non-zero defaults named."""
    defaults = [name for name in (CPU, MEMORY) if name not in requests]
    text = (f"{', '.join(_amounts(requests).values()) or 'none'}; scored as "
            f"{', '.join(_amounts(scoring).values())}")
    if defaults:
        text += (f" (upstream's non-zero defaults for {', '.join(defaults)}: "
                 f"{', '.join(_amounts(NON_ZERO_DEFAULTS).values())})")
    return text


def _pod_claim_text(raw: dict[str, Any]) -> str:
    """One of ``spec.resourceClaims``: ``gpu (from template gpu-tmpl)``, ``gpu (claim x)``."""
    if raw.get("resourceClaimTemplateName"):
        return f"{raw.get('name')} (from template {raw['resourceClaimTemplateName']})"
    return f"{raw.get('name')} (claim {raw.get('resourceClaimName')})"


@dataclass(frozen=True)
class PodInputs:
    """What the scheduler read from the pod, raw and as text."""

    found: bool
    requests: dict[str, int]
    scoring_requests: dict[str, int]
    priority: int | None
    tolerations: tuple[Toleration, ...]
    document: dict[str, Any]


def describe_pod(engine: Engine, trace_id: int, key: str, ts_us: int) -> PodInputs:
    """The pod's decision inputs at ``ts_us`` (``found`` is false when the trace has no object
    for it, as for pods a replay created: preemption victims' replacements)."""
    obj = pod_object_at(engine, trace_id, key, ts_us)
    if obj is None:
        return PodInputs(False, {}, {}, None, (), {"found": False})
    spec = obj.get("spec") or {}
    class_name = spec.get("priorityClassName") or None
    priority = spec.get("priority")
    if priority is None and class_name:
        priority = _priority_class_value(engine, trace_id, class_name, ts_us)
    return pod_inputs(obj, priority)


def pod_inputs(obj: dict[str, Any], priority: int | None) -> PodInputs:
    """The decision inputs of the Pod object ``obj`` whose priority (resolved from its
    PriorityClass where the spec has none) is ``priority``: for a replayed attempt and for a
    what-if alike."""
    spec = obj.get("spec") or {}
    requests = {k: v for k, v in resource_units(pod_requests(spec)).items() if v}
    scoring = resource_units(pod_requests(spec, non_zero=True))
    scoring = {k: scoring.get(k, 0) for k in (CPU, MEMORY)}
    class_name = spec.get("priorityClassName") or None
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
                ).get("nodeSelectorTerms") or []
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    pod_affinity = {kind: len((spec.get("affinity") or {}).get(kind, {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or [])
        for kind in ("podAffinity", "podAntiAffinity")}
    ports = [f"{p.get('hostPort')}/{p.get('protocol') or 'TCP'}"
             for c in spec.get("containers") or [] for p in c.get("ports") or []
             if p.get("hostPort")]
    document: dict[str, Any] = {
        "found": True,
        "requests": requests, "requestsText": _amounts(requests),
        "scoringRequests": scoring, "scoringRequestsText": _amounts(scoring),
        "scoringDefaults": [name for name in (CPU, MEMORY) if name not in requests],
        "requestsSummary": _requests_summary(requests, scoring),
        "priority": priority, "priorityClassName": class_name,
        "preemptionPolicy": spec.get("preemptionPolicy") or "PreemptLowerPriority",
        "schedulerName": spec.get("schedulerName") or "default-scheduler",
        "nodeName": spec.get("nodeName") or None,
        "nodeSelector": dict(spec.get("nodeSelector") or {}),
        "requiredNodeAffinity": [term_text(t) for t in required],
        "preferredNodeAffinity": [
            f"weight {p.get('weight')}: {term_text(p.get('preference') or {})}" for p in preferred],
        "tolerations": [toleration_text(t) for t in spec.get("tolerations") or []],
        "requiredPodAffinityTerms": pod_affinity["podAffinity"],
        "requiredPodAntiAffinityTerms": pod_affinity["podAntiAffinity"],
        "spreadConstraints": [_spread_text(c) for c in
                              spec.get("topologySpreadConstraints") or []],
        "hostPorts": ports,
        "schedulingGates": [g.get("name") for g in spec.get("schedulingGates") or []],
        "resourceClaims": [_pod_claim_text(c) for c in spec.get("resourceClaims") or []],
        "gpu": _gpu_text(obj),
    }
    tolerations = tuple(Toleration.parse(t) for t in spec.get("tolerations") or [])
    return PodInputs(True, requests, scoring, priority, tolerations, document)


#: Resources a run may not have recorded per node (runs stored before ephemeral-storage was
#: kept): a node without an amount for one of them has an unknown amount, not none.
_MAYBE_UNRECORDED = ("ephemeral-storage",)


def free_amount(free: dict[str, int], resource: str) -> int | None:
    """A node's free amount of ``resource`` from its :func:`free_capacity` entry: an extended
    resource the node does not have is 0 free; an amount the run did not record is None
    (unknown, so never worded as 0)."""
    if resource in free:
        return free[resource]
    return None if resource in _MAYBE_UNRECORDED else 0


def allocatable_pods(node: dict[str, Any] | None) -> int | None:
    """A Node object's pod slots (``status.allocatable.pods``), None when it has none."""
    raw = ((node or {}).get("status") or {}).get("allocatable", {}).get("pods")
    try:
        return int(str(raw)) if raw is not None else None
    except ValueError:
        return None


def free_capacity(engine: Engine, run_id: int, ts_us: int, exclude_pod: str | None = None,
                  only: Collection[str] | None = None) -> dict[str, dict[str, int]]:
    """Each live node's free cpu (millicores), memory (bytes), pod slots and extended
    resources at ``ts_us``, as the replayed scheduler accounted them; ``exclude_pod`` is left
    out (the pod being explained, once bound); ``only`` limits the answer to those nodes."""
    live_node = (RunNode.run_id == run_id) & (RunNode.start_us <= ts_us) & or_(
        RunNode.end_us.is_(None), RunNode.end_us > ts_us)
    live_pod = (RunPlacement.run_id == run_id) & (RunPlacement.start_us <= ts_us) & or_(
        RunPlacement.end_us.is_(None), RunPlacement.end_us > ts_us)
    if only is not None:
        live_node = live_node & RunNode.name.in_(sorted(only))
        live_pod = live_pod & RunPlacement.node.in_(sorted(only))
    if exclude_pod is not None:
        live_pod = live_pod & (RunPlacement.pod != exclude_pod)
    with engine.connect() as connection:
        nodes = connection.execute(select(RunNode.name, RunNode.cpu_milli, RunNode.memory_bytes,
                                          RunNode.pods, RunNode.extended).where(live_node)).all()
        used = {node: (int(cpu), int(memory), int(count)) for node, cpu, memory, count in
                connection.execute(select(RunPlacement.node, func.sum(RunPlacement.cpu_milli),
                                          func.sum(RunPlacement.memory_bytes), func.count())
                                   .where(live_pod).group_by(RunPlacement.node))}
        extended_used: dict[str, dict[str, int]] = {}
        for node, extended in connection.execute(
                select(RunPlacement.node, RunPlacement.extended)
                .where(live_pod, RunPlacement.extended != "{}")):
            for name, value in orjson.loads(extended).items():
                extended_used.setdefault(node, {})[name] = (
                    extended_used.get(node, {}).get(name, 0) + value)
    free: dict[str, dict[str, int]] = {}
    for name, cpu, memory, pods, extended in nodes:
        cpu_used, memory_used, count = used.get(name, (0, 0, 0))
        entry = {CPU: cpu - cpu_used, MEMORY: memory - memory_used, "pods": pods - count}
        for resource, value in orjson.loads(extended).items():
            entry[resource] = value - extended_used.get(name, {}).get(resource, 0)
        free[name] = entry
    return free
