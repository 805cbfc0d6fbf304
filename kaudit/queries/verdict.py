"""A pod's verdict: one line that answers "where did it go and why", computed from the event log.

Every pod view (``kaudit explain`` text and JSON, the pod page) leads with the same verdict:

* ``Placed on node-b1 at 12 s: NodeResourcesFit +56 over node-b2`` (kaudit's own choice);
* ``Bound to node-c3 at 241 s by evicting batch/sweep-r2 and 2 more (lower priority 100)``;
* ``Preempted at 300 s by web/payments-0 on node-c3``;
* ``Pending 9m40s: no node fits — 9 lack cpu (needs 2 cores, the largest free is 1.4 cores),
  1 cordoned, 1 tainted dedicated=ml:NoSchedule``;

and names its **decisive attempt**: the preempting one for a pod that evicted others, the
binding one for a pod placed outright, the last failure for a pod that never got a node.

The causes come from the decisive attempt's per-node filter verdicts, grouped by cause (the
plugin, its reasons, and the concrete fact behind them: the untolerated taint, the unmatched
selector, free against requested), so a 5,000-node cluster gives a handful of groups with counts
and ranges instead of a row per node. Upstream's own reasons stay beside each group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.errors import UnknownObjectError
from kaudit.eventlog.codec import preemption_json, rejects, unpack_attempt
from kaudit.model.pod import Taint, Toleration, tolerated
from kaudit.queries import units
from kaudit.queries.decision_inputs import (
    PodInputs,
    describe_pod,
    free_capacity,
    node_objects_at,
    taint_text,
    trace_id_of,
)
from kaudit.queries.diff import explain_move
from kaudit.queries.runs import RunSummary, get_run, node_names, pod_key
from kaudit.queries.timeline import Span, run_span
from kaudit.store.models import RunEvent, RunPlacement

#: Nodes named per cause group (the rest are counted).
NAMED_NODES = 8
_INSUFFICIENT = "Insufficient "
_DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class PodRecord:
    """One record of the pod's event log, decoded."""

    seq: int
    ts_us: int
    kind: str
    node: str | None
    document: dict[str, Any]
    blob: bytes | None


def _short_list(names: Sequence[str], limit: int = 2) -> str:
    if len(names) <= limit:
        return " and ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more"


def decisive_index(attempts: Sequence[PodRecord], bound_by_kaudit: bool) -> int | None:
    """The attempt that decided the pod's fate (0-based among its attempts)."""
    if not attempts:
        return None
    if bound_by_kaudit:
        binding = max((i for i, a in enumerate(attempts) if a.document.get("selectedNode")),
                      default=len(attempts) - 1)
        # The last preemption before the binding attempt decided where the pod went.
        preempting = [i for i, a in enumerate(attempts[:binding + 1])
                      if (preemption_json(a.document) or {}).get("nominatedNode")]
        return preempting[-1] if preempting else binding
    return len(attempts) - 1


# --- causes ------------------------------------------------------------------------------


def _range(values: list[int], resource: str) -> str:
    low, high = min(values), max(values)
    if low == high:
        return units.amount(resource, high)
    low_text, high_text = units.amount(resource, low), units.amount(resource, high)
    low_value, _, low_unit = low_text.partition(" ")
    high_unit = high_text.partition(" ")[2]
    if low_unit and low_unit.rstrip("s") == high_unit.rstrip("s"):
        return f"{low_value}–{high_text}"
    return f"{low_text}–{high_text}"


def _resource_detail(resource: str, nodes: list[str], inputs: PodInputs,
                     free: dict[str, dict[str, int]]) -> tuple[str, str, dict[str, Any]]:
    """(headline phrase, detail, facts) for ``Insufficient <resource>``."""
    needed = inputs.requests.get(resource)
    frees = [max(free[n].get(resource, 0), 0) for n in nodes if n in free]
    facts: dict[str, Any] = {"resource": resource, "requested": needed}
    if frees:
        facts.update(freeMin=min(frees), freeMax=max(frees))
    need = f"needs {units.amount(resource, needed)}" if needed is not None else ""
    if not frees:
        return f"lack {resource}" + (f" ({need})" if need else ""), need, facts
    largest = f"the largest free is {units.amount(resource, max(frees))}"
    phrase = f"lack {resource} ({need + ', ' if need else ''}{largest})"
    detail = f"{need + '; ' if need else ''}free {_range(frees, resource)}"
    return phrase, detail, facts


def _untolerated(node: dict[str, Any], tolerations: tuple[Toleration, ...]) -> str | None:
    for raw in (node.get("spec") or {}).get("taints") or []:
        taint = Taint.parse(raw)
        if taint.effect in _DO_NOT_SCHEDULE and not tolerated(taint, tolerations):
            return taint_text(raw)
    return None


def _selector_miss(node: dict[str, Any], inputs: PodInputs) -> str | None:
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in inputs.document.get("nodeSelector", {}).items():
        have = labels.get(key)
        if have != value:
            return (f"nodeSelector {key}={value} (node has "
                    f"{f'{key}={have}' if have is not None else f'no {key}'})")
    terms = inputs.document.get("requiredNodeAffinity") or []
    if terms:
        return "required node affinity: " + " or ".join(terms)
    return None


@dataclass
class _Group:
    plugin: str
    reasons: tuple[str, ...]
    fact: str | None
    nodes: list[str]


def group_rejections(nodes: dict[str, Any]) -> list[_Group]:
    """Rejected nodes by their first failing plugin and its reasons (the plain grouping, before
    the concrete causes)."""
    groups: dict[tuple[str, tuple[str, ...]], _Group] = {}
    for name, verdicts in nodes.items():
        if verdicts.get("feasible"):
            continue
        failed = [(plugin, v) for plugin, v in verdicts["filter"].items()
                  if rejects(v)]
        if not failed:
            continue
        plugin, verdict = failed[0]
        reasons = tuple(verdict["reasons"]) or (verdict["code"],)
        group = groups.setdefault((plugin, reasons), _Group(plugin, reasons, None, []))
        group.nodes.append(name)
    return list(groups.values())


def rejection_causes(engine: Engine, attempt: dict[str, Any], ts_us: int, inputs: PodInputs,
                     trace_id: int, free: dict[str, dict[str, int]] | None,
                     named: int | None = NAMED_NODES) -> list[dict[str, Any]]:
    """The attempt's rejected nodes grouped by concrete cause, largest group first; each group
    says the plugin, upstream's reasons, the cause in words and the nodes (``named`` of them;
    ``None`` names all)."""
    nodes = attempt["nodes"]
    base_groups = group_rejections(nodes)
    needs_objects = [n for g in base_groups if g.plugin in ("TaintToleration", "NodeAffinity")
                     for n in g.nodes]
    objects = node_objects_at(engine, trace_id, needs_objects, ts_us) if needs_objects else {}
    tolerations = inputs.tolerations
    groups: list[_Group] = []
    for group in base_groups:
        if group.plugin not in ("TaintToleration", "NodeAffinity"):
            groups.append(group)
            continue
        split: dict[str | None, list[str]] = {}
        for name in group.nodes:
            obj = objects.get(name)
            fact = None
            if obj is not None:
                fact = (_untolerated(obj, tolerations) if group.plugin == "TaintToleration"
                        else _selector_miss(obj, inputs))
            split.setdefault(fact, []).append(name)
        groups += [_Group(group.plugin, group.reasons, fact, names)
                   for fact, names in split.items()]
    free = free or {}
    out = []
    for group in sorted(groups, key=lambda g: (-len(g.nodes), g.plugin, g.reasons)):
        count = len(group.nodes)
        facts: dict[str, Any] = {}
        phrase = ""
        detail = ""
        if group.plugin == "NodeResourcesFit" and all(
                r.startswith(_INSUFFICIENT) for r in group.reasons):
            phrases, details = [], []
            for reason in group.reasons:
                phrase, line, resource_facts = _resource_detail(
                    reason[len(_INSUFFICIENT):], group.nodes, inputs, free)
                phrases.append(phrase)
                details.append(line)
                facts.setdefault("resources", []).append(resource_facts)
            cause = "lack " + " and ".join(r[len(_INSUFFICIENT):] for r in group.reasons)
            phrase = " and ".join(phrases)
            detail = "; ".join(d for d in details if d)
        elif group.plugin == "NodeResourcesFit" and group.reasons == ("Too many pods",):
            cause = "are full (no pod slots left)"
        elif group.plugin == "NodeUnschedulable":
            cause = "cordoned"
            detail = "spec.unschedulable is true"
        elif group.plugin == "TaintToleration":
            cause = f"tainted {group.fact}" if group.fact else "have an untolerated taint"
            detail = "the pod has no toleration for it"
        elif group.plugin == "NodeAffinity":
            cause = (f"don't match {group.fact.split(' (node has')[0]}" if group.fact
                     else "don't match the pod's node selector/affinity")
            detail = group.fact or ""
        elif group.plugin == "NodePorts":
            ports = ", ".join(inputs.document.get("hostPorts") or []) or "its host ports"
            cause = f"already use host port {ports}"
        else:
            cause = f"rejected by {group.plugin}: {'; '.join(group.reasons)}"
        if not facts:
            phrase = cause
        out.append({"plugin": group.plugin, "reasons": list(group.reasons), "count": count,
                    "cause": cause, "detail": detail, "facts": facts,
                    "nodes": group.nodes if named is None else group.nodes[:named],
                    "moreNodes": 0 if named is None else max(count - named, 0),
                    "text": f"{count} {phrase}"})
    return out


# --- the verdict -------------------------------------------------------------------------


def _victim_priority(engine: Engine, run_id: int, victims: list[str]) -> int | None:
    if not victims:
        return None
    with engine.connect() as connection:
        found = connection.scalars(select(RunPlacement.priority).where(
            RunPlacement.run_id == run_id, RunPlacement.pod.in_(victims[:500]))).all()
    return max(found) if found else None


def pod_verdict(engine: Engine, run: RunSummary, key: str, records: Sequence[PodRecord],
                span: Span) -> dict[str, Any]:
    """The verdict of ``key`` in ``run`` from its records (in log order)."""
    attempts = [r for r in records if r.kind == "attempt"]
    bind = next((r for r in reversed(records) if r.kind == "bind"), None)
    preempted = next((r for r in records if r.kind == "preempt"), None)
    # A bound pod's deletion is a ``delete`` record; a waiting pod's is its queue leaving for
    # good (``PodDelete``).
    deleted = next((r for r in reversed(records) if r.kind == "delete" or (
        r.kind == "queue" and r.document.get("event") == "PodDelete")), None)
    first = next((r for r in records if r.kind == "queue"), attempts[0] if attempts else None)
    bound_by_kaudit = bind is not None and bind.document.get("by") == "kaudit"
    index = decisive_index(attempts, bound_by_kaudit)
    decisive = attempts[index] if index is not None else None
    trace_id = trace_id_of(engine, run.id)
    inputs = describe_pod(engine, trace_id, key,
                          decisive.ts_us if decisive else (records[0].ts_us if records else 0))
    verdict: dict[str, Any] = {"state": "unknown", "headline": "", "decisiveAttempt": index,
                               "causes": [], "since": None, "node": None, "at": None}
    attempt: dict[str, Any] | None = None
    if decisive is not None:
        attempt = unpack_attempt(decisive.document, decisive.blob, node_names(engine, run.id))
    end_us = deleted.ts_us if deleted is not None else span.end_us
    if preempted is not None:
        preemptor = preempted.document.get("preemptor")
        verdict.update(state="preempted", node=preempted.node, at=span.t(preempted.ts_us),
                       preemptor=preemptor)
        verdict["headline"] = (f"Preempted at {units.seconds(span.t(preempted.ts_us))} by "
                               f"{preemptor} on {preempted.node}"
                               + (" (a coin flip among equally ranked candidates: upstream"
                                  " may evict another)" if preempted.document.get("tie")
                                  else ""))
    elif bind is not None and not bound_by_kaudit:
        verdict.update(state="bound-by-trace", node=bind.node, at=span.t(bind.ts_us))
        verdict["headline"] = (f"Bound to {bind.node} at {units.seconds(span.t(bind.ts_us))} "
                               "by the recorded cluster (not a kaudit decision: "
                               f"{_not_ours(inputs)})")
    elif bind is not None and attempt is not None:
        verdict.update(state="bound", node=bind.node, at=span.t(bind.ts_us))
        preemption = preemption_json(decisive.document) if decisive else None
        when = units.seconds(span.t(bind.ts_us))
        if preemption and preemption.get("nominatedNode"):
            victims = list(preemption.get("victims") or [])
            top = _victim_priority(engine, run.id, victims)
            own = inputs.priority
            priority = (f" (preempted lower priority {top}"
                        + (f", against the pod's {own})" if own is not None else ")")
                        if top is not None else "")
            verdict["headline"] = (f"Bound to {bind.node} at {when} by evicting "
                                   f"{_short_list(victims) or 'no pod'}{priority}")
            verdict.update(victims=victims, preemptedNode=preemption["nominatedNode"])
            verdict["causes"] = _causes(engine, run, attempt, decisive, inputs, trace_id, key)
        else:
            verdict["headline"] = f"Placed on {bind.node} at {when}: " + _placement_reason(
                attempt, bind.node or "")
            verdict["causes"] = _causes(engine, run, attempt, decisive, inputs, trace_id, key)
        if len(attempts) > 1 and first is not None:
            verdict["headline"] += (f"; waited {units.duration((bind.ts_us - first.ts_us) / 1e6)}"
                                    f" over {len(attempts)} attempts")
    elif attempts and attempt is not None:
        since = first.ts_us if first is not None else attempts[0].ts_us
        waited = units.duration(max(end_us - since, 0) / 1e6)
        verdict.update(state="deleted-pending" if deleted is not None else "pending",
                       since=span.t(since))
        verdict["causes"] = causes = _causes(engine, run, attempt, decisive, inputs, trace_id, key)
        why = _pending_reason(attempt, causes)
        lead = (f"Deleted at {units.seconds(span.t(deleted.ts_us))} after pending {waited}"
                if deleted is not None else f"Pending {waited}")
        verdict["headline"] = f"{lead}: {why}"
    else:
        gates = inputs.document.get("schedulingGates") or []
        held = _held_back(engine, run.id, key)
        if gates:
            verdict["state"] = "gated"
            verdict["headline"] = f"Never attempted: held by scheduling gates {', '.join(gates)}"
        elif held is not None:
            verdict["state"] = "gated"
            verdict["headline"] = f"Never attempted: held back by {held[0]}: {held[1]}"
        else:
            verdict["state"] = "not-attempted"
            verdict["headline"] = "Never attempted by kaudit: " + _not_ours(inputs)
    gpus = bind.document.get("gpus") if bind is not None else None
    if gpus and verdict["state"] in ("bound", "bound-by-trace"):
        verdict["gpus"] = gpus
        verdict["headline"] += "; " + gpu_text(gpus["devices"], gpus["milli"])
    if deleted is not None and verdict["state"] in ("bound", "bound-by-trace"):
        verdict["deletedAt"] = span.t(deleted.ts_us)
        verdict["headline"] += f"; deleted at {units.seconds(span.t(deleted.ts_us))}"
    verdict["inputs"] = inputs.document
    return verdict


def gpu_text(devices: Sequence[int], milli: int) -> str:
    """``GPU 3 (500 milli)`` or ``GPUs 0, 1 (1000 milli each)``."""
    if len(devices) == 1:
        return f"GPU {devices[0]} ({milli} milli)"
    return f"GPUs {', '.join(str(d) for d in devices)} ({milli} milli each)"


def _pending_reason(attempt: dict[str, Any], causes: list[dict[str, Any]]) -> str:
    """Why a failed attempt found no node: PreFilter's refusal, the grouped per-node causes,
    or a later extension point's status (Reserve, Permit, PreBind)."""
    refused = [(plugin, v) for plugin, v in (attempt.get("preFilter") or {}).items()
               if v.get("code") not in ("Success", "Skip")]
    if refused:
        plugin, verdict = refused[0]
        return (f"{plugin} refused the pod before any node was tried: "
                f"{'; '.join(verdict.get('reasons') or []) or verdict.get('code')}")
    if attempt.get("feasibleNodes"):
        return attempt.get("message") or "a plugin after filtering refused the chosen node"
    if causes:
        return "no node fits — " + ", ".join(c["text"] for c in causes)
    return attempt.get("message") or "no node fits"


def _held_back(engine: Engine, run_id: int, key: str) -> tuple[str, str] | None:
    """The PreEnqueue plugin (other than SchedulingGates) that last held the pod back, and
    its message, when the pod's latest queue move was into the gated set."""
    with engine.connect() as connection:
        data = connection.execute(
            select(RunEvent.data).where(RunEvent.run_id == run_id, RunEvent.pod == key,
                                        RunEvent.kind == "queue")
            .order_by(RunEvent.seq.desc()).limit(1)).scalar()
    document = orjson.loads(data) if data else {}
    if document.get("to") != "gated" or "gate" not in document:
        return None
    return str(document["gate"]), str(document.get("reason") or "")


def _not_ours(inputs: PodInputs) -> str:
    doc = inputs.document
    if not inputs.found:
        return "the trace has no object for it"
    if doc.get("schedulerName") not in (None, "default-scheduler"):
        return f"schedulerName is {doc['schedulerName']}"
    if doc.get("nodeName"):
        return f"spec.nodeName was set to {doc['nodeName']}"
    return "it was bound before kaudit saw it pending"


#: What chose among tied nodes, by the scheduler's ``tie_break``.
TIE_BREAK_WORDS = {"random": "the seeded tie-break", "name": "the lowest node name",
                   "shuffled-name": "the seeded order of node names"}


def _placement_reason(attempt: dict[str, Any], node: str) -> str:
    feasible = attempt.get("feasibleNodes") or 0
    if attempt.get("nominatedNodeUsed") and attempt.get("evaluatedNodes") == 1:
        return "its nominated node still fits (checked first, as upstream does)"
    if feasible <= 1:
        return f"the only feasible node of {attempt.get('evaluatedNodes')} evaluated"
    scored = sorted(((n, v) for n, v in attempt["nodes"].items() if "total" in v),
                    key=lambda item: (-item[1]["total"], item[0]))
    runner = next((n for n, _ in scored if n != node), None)
    if runner is None:
        return f"best of {feasible} feasible nodes"
    if runner in (attempt.get("tiedNodes") or []):
        others = [n for n in attempt["tiedNodes"] if n != node]
        return (f"tied with {_short_list(others)} at total {attempt['nodes'][node]['total']};"
                f" {TIE_BREAK_WORDS.get(attempt.get('tieBreak', 'random'), 'a tie-break')}"
                " chose it")
    _, deltas = explain_move(attempt, node, runner, "kaudit")
    words = ", ".join(f"{p} {d:+d}" for p, d in list(deltas.items())[:3])
    return (f"{words or 'equal plugin scores'} over {runner} "
            f"(total {attempt['nodes'][node]['total']} vs {attempt['nodes'][runner]['total']})")


def _causes(engine: Engine, run: RunSummary, attempt: dict[str, Any],
            decisive: PodRecord | None, inputs: PodInputs, trace_id: int, decisive_key: str
            ) -> list[dict[str, Any]]:
    if decisive is None or all(v.get("feasible") for v in attempt["nodes"].values()):
        return []
    free = free_capacity(engine, run.id, decisive.ts_us, exclude_pod=decisive_key)
    return rejection_causes(engine, attempt, decisive.ts_us, inputs, trace_id, free)


def pod_records(engine: Engine, run_ref: str, pod_ref: str
                ) -> tuple[RunSummary, str, list[PodRecord], Span]:
    """The run, the pod's key, its records in log order and the run's span;
    :class:`UnknownObjectError` when the run has no record of the pod."""
    run = get_run(engine, run_ref)
    key = pod_key(engine, run.id, pod_ref)
    records = load_pod_records(engine, run.id, key)
    if not records:
        raise UnknownObjectError(f"no pod {key!r} in run {run.name!r}")
    return run, key, records, run_span(engine, run.id)


def load_pod_records(engine: Engine, run_id: int, key: str) -> list[PodRecord]:
    """The pod's records in log order."""
    with engine.connect() as connection:
        rows = connection.execute(
            select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.node, RunEvent.data,
                   RunEvent.blob)
            .where(RunEvent.run_id == run_id, RunEvent.pod == key).order_by(RunEvent.seq)).all()
    return [PodRecord(seq, ts, kind, node, orjson.loads(data), blob)
            for seq, ts, kind, node, data, blob in rows]
