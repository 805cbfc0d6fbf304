"""A pod's verdict: one line that answers "where did it go and why", computed from the event log.

Every pod view (``kaudit explain`` text and JSON, the pod page) leads with the same verdict:

* ``Placed on node-b1 at 12 s: NodeResourcesFit +56 over node-b2`` (kaudit's own choice);
* ``Bound to node-c3 at 241 s by evicting batch/sweep-r2 and 2 more (lower priority 100)``;
* ``Preempted at 300 s by web/payments-0 on node-c3``;
* ``Pending 9m40s: no node fits — 9 lack cpu (needs 2, the largest free is 1400m),
  1 cordoned, 1 tainted dedicated=ml:NoSchedule``;

and names its **decisive attempt**: the preempting one for a pod that evicted others, the
binding one for a pod placed outright, the last failure for a pod that never got a node. A
summary follows: that attempt's node counts (and why it evaluated fewer nodes than the cluster
has), the time held back by scheduling gates apart from the time waiting for the scheduler,
what chance decided in a preemption, and the supply of the pod's ResourceClaims. Every
sentence is worded by :mod:`kaudit.queries.verdict_text` and :mod:`kaudit.queries.record_text`;
this module computes the facts.

The causes come from the decisive attempt's per-node filter verdicts, grouped by cause (the
plugin, its reasons, and the concrete fact behind them: the untolerated taint, the unmatched
selector, free against requested), so a 5,000-node cluster gives a handful of groups with counts
and ranges instead of a row per node. Upstream's own reasons stay beside each group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.errors import UnknownObjectError
from kaudit.eventlog.codec import preemption_json, rejects, unpack_attempt
from kaudit.model.pod import Taint, Toleration
from kaudit.model.taints import untolerated_taint
from kaudit.model.timestamps import format_timestamp
from kaudit.plugins import names as plugin_names
from kaudit.plugins.node_resources_fit import TOO_MANY_PODS
from kaudit.queries import record_text, units, verdict_text
from kaudit.queries.decision_inputs import (
    PodInputs,
    allocatable_pods,
    describe_pod,
    free_amount,
    free_capacity,
    node_objects_at,
    taint_text,
    trace_id_of,
)
from kaudit.queries.diff import explain_move
from kaudit.queries.runs import RunSummary, get_run, node_names, pod_key
from kaudit.queries.timeline import Span, run_span
from kaudit.queries.verdict_text import INSUFFICIENT
from kaudit.store.models import RunEvent, RunPlacement

#: Nodes named per cause group (the rest are counted).
NAMED_NODES = 8
#: The plugins whose cause groups split by a fact read from the nodes' objects (the
#: untolerated taint, the unmatched selector).
_NEED_NODE_OBJECTS = (plugin_names.TAINT_TOLERATION, plugin_names.NODE_AFFINITY)


@dataclass(frozen=True)
class PodRecord:
    """One record of the pod's event log, decoded."""

    seq: int
    ts_us: int
    kind: str
    node: str | None
    document: dict[str, Any]
    blob: bytes | None


def unpack(document: dict[str, Any], blob: bytes | None, names: dict[int, str]
           ) -> dict[str, Any]:
    """An attempt record unpacked (:func:`kaudit.eventlog.codec.unpack_attempt`) with the
    facts the node counts are told from: the cluster's node count, whether the nominated
    node was tried alone, and the nodes the PreFilterResults left out (newer records)."""
    unpacked = {**unpack_attempt(document, blob, names), "allNodes": document.get("allNodes"),
                "nominatedNodeUsed": bool(document.get("nominatedNodeUsed"))}
    if "nodeHint" in document:  # Opportunistic Batching (v1.35 on)
        unpacked["nodeHint"] = document["nodeHint"]
        unpacked["hintUsed"] = bool(document.get("hintUsed"))
    if "leftOutByPreFilter" in document:
        unpacked["leftOutByPreFilter"] = document["leftOutByPreFilter"]
    return unpacked


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


def _resource_facts(resource: str, nodes: list[str], inputs: PodInputs,
                    free: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Requested against free for ``Insufficient <resource>`` on ``nodes`` (a free amount the
    run did not record is left out, never taken for 0)."""
    known = [amount for n in nodes if n in free
             and (amount := free_amount(free[n], resource)) is not None]
    frees = [max(amount, 0) for amount in known]
    facts: dict[str, Any] = {"resource": resource, "requested": inputs.requests.get(resource)}
    if frees:
        facts.update(freeMin=min(frees), freeMax=max(frees))
    return facts


def _pod_slot_facts(nodes: list[str], free: dict[str, dict[str, int]],
                    objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Pods held against pod slots (``status.allocatable.pods``) for ``Too many pods`` on
    ``nodes``: the pod needs one slot."""
    facts: dict[str, Any] = {"resource": "pods", "requested": 1}
    slots = [slots for n in nodes if (slots := allocatable_pods(objects.get(n))) is not None]
    frees = [max(free[n]["pods"], 0) for n in nodes if "pods" in free.get(n, {})]
    if frees:
        facts.update(freeMin=min(frees), freeMax=max(frees))
    if slots:
        facts.update(slotsMin=min(slots), slotsMax=max(slots))
    return facts


def _fit_facts(group: _Group, inputs: PodInputs, free: dict[str, dict[str, int]],
               objects: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The exact amounts behind each of a NodeResourcesFit group's reasons."""
    facts = []
    for reason in group.reasons:
        if reason == TOO_MANY_PODS:
            facts.append(_pod_slot_facts(group.nodes, free, objects))
        elif reason.startswith(INSUFFICIENT):
            facts.append(_resource_facts(reason[len(INSUFFICIENT):], group.nodes, inputs,
                                         free))
    return facts


def _untolerated(node: dict[str, Any], tolerations: tuple[Toleration, ...]) -> str | None:
    """The node's first taint that keeps the pod off it, as text."""
    raws = (node.get("spec") or {}).get("taints") or []
    taints = [Taint.parse(raw) for raw in raws]
    taint = untolerated_taint(taints, tolerations)
    return None if taint is None else taint_text(raws[taints.index(taint)])


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


def plain_causes(nodes: dict[str, Any], named: int | None = NAMED_NODES
                 ) -> list[dict[str, Any]]:
    """The rejected nodes grouped by plugin and reasons, worded as :func:`rejection_causes`
    words them without the nodes' objects (for ``kaudit whatif`` and attempts shown without
    their decision inputs)."""
    groups = sorted(group_rejections(nodes), key=lambda g: (-len(g.nodes), g.plugin, g.reasons))
    return [_cause_entry(g, verdict_text.cause_words(g.plugin, g.reasons), {}, named)
            for g in groups]


def _cause_entry(group: _Group, words: verdict_text.CauseWords, facts: dict[str, Any],
                 named: int | None) -> dict[str, Any]:
    count = len(group.nodes)
    return {"plugin": group.plugin, "reasons": list(group.reasons), "count": count,
            "cause": words.cause, "detail": words.detail, "facts": facts,
            "nodes": group.nodes if named is None else group.nodes[:named],
            "moreNodes": 0 if named is None else max(count - named, 0),
            "examples": verdict_text.examples(group.nodes, count),
            "text": verdict_text.cause_line(count, words.phrase)}


def rejection_causes(engine: Engine, attempt: dict[str, Any], ts_us: int, inputs: PodInputs,
                     trace_id: int, free: dict[str, dict[str, int]] | None,
                     named: int | None = NAMED_NODES,
                     claims: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The attempt's rejected nodes grouped by concrete cause, largest group first; each group
    says the plugin, upstream's reasons, the cause in words and the nodes (``named`` of them;
    ``None`` names all). ``claims`` (the pod's ResourceClaims by ``namespace/name``) adds the
    requests' selectors to a DynamicResources group."""
    return grouped_causes(attempt, inputs,
                          lambda names: node_objects_at(engine, trace_id, names, ts_us),
                          free, named, claims)


def grouped_causes(attempt: dict[str, Any], inputs: PodInputs,
                   node_objects: Callable[[list[str]], dict[str, dict[str, Any]]],
                   free: dict[str, dict[str, int]] | None, named: int | None = NAMED_NODES,
                   claims: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """:func:`rejection_causes` for any source of the nodes' objects (``node_objects`` maps
    names to objects: the stored trace at the attempt's time, or a what-if's cluster) and of
    their free capacity."""
    nodes = attempt["nodes"]
    base_groups = group_rejections(nodes)
    needs_objects = [n for g in base_groups if g.plugin in _NEED_NODE_OBJECTS
                     or (g.plugin == plugin_names.NODE_RESOURCES_FIT and TOO_MANY_PODS in g.reasons)
                     for n in g.nodes]
    objects = node_objects(needs_objects) if needs_objects else {}
    tolerations = inputs.tolerations
    groups: list[_Group] = []
    for group in base_groups:
        if group.plugin not in _NEED_NODE_OBJECTS:
            groups.append(group)
            continue
        split: dict[str | None, list[str]] = {}
        for name in group.nodes:
            obj = objects.get(name)
            fact = None
            if obj is not None:
                fact = (_untolerated(obj, tolerations)
                        if group.plugin == plugin_names.TAINT_TOLERATION
                        else _selector_miss(obj, inputs))
            split.setdefault(fact, []).append(name)
        groups += [_Group(group.plugin, group.reasons, fact, names)
                   for fact, names in split.items()]
    free = free or {}
    left_out = _left_out_group(attempt, free)
    left_out_count = int(attempt["leftOutByPreFilter"]["nodes"]) if left_out else 0
    if left_out is not None:
        groups.append(left_out)
    devices = record_text.claim_summaries(
        (attempt.get("pluginNotes") or {}).get(plugin_names.DYNAMIC_RESOURCES), claims)
    out = []
    for group in sorted(groups, key=lambda g: (-len(g.nodes), g.plugin, g.reasons)):
        facts: dict[str, Any] = {}
        if group.plugin == plugin_names.NODE_RESOURCES_FIT and all(
                r.startswith(INSUFFICIENT) or r == TOO_MANY_PODS for r in group.reasons):
            facts["resources"] = _fit_facts(group, inputs, free, objects)
        if group is left_out:
            words = verdict_text.left_out_words(group.plugin.split(), group.reasons)
            facts["leftOut"] = True
            entry = _cause_entry(group, words, facts, named)
            entry["count"] = left_out_count
            entry["text"] = verdict_text.cause_line(left_out_count, words.phrase)
            entry["examples"] = verdict_text.examples(group.nodes, left_out_count)
            entry["moreNodes"] = max(left_out_count - len(entry["nodes"]), 0)
            out.append(entry)
            continue
        words = verdict_text.cause_words(
            group.plugin, group.reasons, group.fact, facts.get("resources", ()),
            inputs.document.get("hostPorts") or (), devices)
        out.append(_cause_entry(group, words, facts, named))
    return out


def _left_out_group(attempt: dict[str, Any], free: dict[str, dict[str, int]]) -> _Group | None:
    """The nodes the attempt's PreFilterResults left out, as one group (upstream's absent-nodes
    status, UnschedulableAndUnresolvable): the live nodes (``free``'s) no result names. Only
    records that count them (``leftOutByPreFilter``) have the group."""
    left_out = attempt.get("leftOutByPreFilter")
    if not left_out or not left_out.get("nodes"):
        return None
    named = [set(v["nodeNames"]) for v in (attempt.get("preFilter") or {}).values()
             if isinstance(v, dict) and v.get("nodeNames") is not None]
    allowed = set.intersection(*named) if named else set()
    plugins = [str(p) for p in left_out.get("plugins") or []]
    reason = f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]"
    nodes = sorted(n for n in free if n not in allowed and n not in attempt["nodes"])
    return _Group(" ".join(plugins), (reason,), None, nodes)


# --- the verdict -------------------------------------------------------------------------


def _victim_priority(engine: Engine, run_id: int, victims: list[str]) -> int | None:
    if not victims:
        return None
    with engine.connect() as connection:
        found = connection.scalars(select(RunPlacement.priority).where(
            RunPlacement.run_id == run_id, RunPlacement.pod.in_(victims[:500]))).all()
    return max(found) if found else None


@dataclass(frozen=True)
class WaitSplit:
    """A pod's time before its end (bound, deleted, the run's end): held back by
    schedulingGates or a PreEnqueue plugin (``gated``), and waiting for the scheduler."""

    gated_us: int
    waiting_us: int

    def as_json(self) -> dict[str, float]:
        return {"gatedSeconds": self.gated_us / 1e6, "waitingSeconds": self.waiting_us / 1e6}


def wait_split(records: Sequence[PodRecord], end_us: int) -> WaitSplit:
    """The pod's time from its first queue move to ``end_us``, split by the queue moves into
    and out of the gated set (the scheduler cannot pop a gated pod)."""
    queue = [r for r in records if r.kind == "queue" and r.ts_us <= end_us]
    if not queue:
        return WaitSplit(0, 0)
    gated = 0
    gated_since: int | None = None
    for record in queue:
        if record.document.get("to") == "gated" and gated_since is None:
            gated_since = record.ts_us
        elif record.document.get("to") != "gated" and gated_since is not None:
            gated += record.ts_us - gated_since
            gated_since = None
    if gated_since is not None:
        gated += end_us - gated_since
    total = max(end_us - queue[0].ts_us, 0)
    return WaitSplit(gated, max(total - gated, 0))


def claim_objects(records: Sequence[PodRecord]) -> dict[str, dict[str, Any]]:
    """The pod's ResourceClaims as kaudit last wrote them, by ``namespace/name``."""
    claims: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.kind != "claim":
            continue
        obj = record.document.get("object") or {}
        meta = obj.get("metadata") or {}
        claims[f"{meta.get('namespace')}/{meta.get('name')}"] = obj
    return claims


def _nomination(records: Sequence[PodRecord], decisive: PodRecord | None
                ) -> dict[str, Any] | None:
    """The ``nominate`` record the decisive attempt's preemption wrote."""
    if decisive is None:
        return None
    return next((r.document for r in records if r.kind == "nominate"
                 and r.seq > decisive.seq), None)


def pod_verdict(engine: Engine, run: RunSummary, key: str, records: Sequence[PodRecord],
                span: Span) -> dict[str, Any]:
    """The verdict of ``key`` in ``run`` from its records (in log order): the headline, the
    summary sentences of the verdict block, the decisive attempt's node counts and its
    rejected nodes grouped by cause, every sentence rendered by
    :mod:`kaudit.queries.verdict_text`."""
    attempts = [r for r in records if r.kind == "attempt"]
    bind = next((r for r in reversed(records) if r.kind == "bind"), None)
    preempted = next((r for r in records if r.kind == "preempt"), None)
    # A bound pod's deletion is a ``delete`` record; a waiting pod's is its queue leaving for
    # good (``PodDelete``).
    deleted = next((r for r in reversed(records) if r.kind == "delete" or (
        r.kind == "queue" and r.document.get("event") == "PodDelete")), None)
    bound_by_kaudit = bind is not None and bind.document.get("by") == "kaudit"
    index = decisive_index(attempts, bound_by_kaudit)
    decisive = attempts[index] if index is not None else None
    trace_id = trace_id_of(engine, run.id)
    inputs = describe_pod(engine, trace_id, key,
                          decisive.ts_us if decisive else (records[0].ts_us if records else 0))
    verdict: dict[str, Any] = {"state": "unknown", "headline": "",
                               "decisiveAttempt": None if index is None else index + 1,
                               "causes": [], "since": None, "node": None, "at": None}
    attempt: dict[str, Any] | None = None
    claims = claim_objects(records)
    causes: list[dict[str, Any]] = []
    if decisive is not None:
        attempt = unpack(decisive.document, decisive.blob, node_names(engine, run.id))
        causes = _causes(engine, run, attempt, decisive, inputs, trace_id, key, claims)
    verdict["causes"] = causes
    end_us = deleted.ts_us if deleted is not None else span.end_us
    wait = wait_split(records, bind.ts_us if bind is not None and bound_by_kaudit else end_us)
    nomination = _nomination(records, decisive)
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
                                   f"{verdict_text.short_list(victims) or 'no pod'}{priority}")
            verdict.update(victims=victims, preemptedNode=preemption["nominatedNode"])
            tied = [n for n in (nomination or {}).get("tiedNodes") or []
                    if n != preemption["nominatedNode"]]
            if tied:
                verdict["headline"] += (f"; {preemption['nominatedNode']} was a coin flip among"
                                        f" {len(tied) + 1} tied candidate nodes")
        else:
            verdict["headline"] = f"Placed on {bind.node} at {when}: " + placement_reason(
                attempt, bind.node or "")
        if len(attempts) > 1 or wait.gated_us:
            verdict["headline"] += "; " + verdict_text.wait_words(
                wait.gated_us / 1e6, wait.waiting_us / 1e6, len(attempts))
    elif attempts and attempt is not None:
        first = next((r for r in records if r.kind == "queue"), attempts[0])
        waited = units.duration(max(end_us - first.ts_us, 0) / 1e6)
        verdict.update(state="deleted-pending" if deleted is not None else "pending",
                       since=span.t(first.ts_us))
        why = _pending_reason(attempt, causes)
        gated = (f" ({units.duration(wait.gated_us / 1e6)} of it gated)" if wait.gated_us
                 else "")
        lead = (f"Deleted at {units.seconds(span.t(deleted.ts_us))} after pending {waited}"
                if deleted is not None else f"Pending {waited}")
        verdict["headline"] = f"{lead}{gated}: {why}"
    else:
        gates = inputs.document.get("schedulingGates") or []
        held = _held_back(engine, run.id, key)
        if gates:
            verdict["state"] = "gated"
            reason = f"held by scheduling gates {', '.join(gates)}"
            verdict["headline"] = f"Never attempted: {reason}"
        elif held is not None:
            verdict["state"] = "gated"
            reason = f"held back by {held[0]}: {held[1]}"
            verdict["headline"] = f"Never attempted: {reason}"
        else:
            verdict["state"] = "not-attempted"
            reason = _not_ours(inputs)
            verdict["headline"] = "Never attempted by kaudit: " + reason
        verdict["attemptsNote"] = verdict_text.never_attempted_note(reason)
    gpus = bind.document.get("gpus") if bind is not None else None
    if gpus and verdict["state"] in ("bound", "bound-by-trace"):
        verdict["gpus"] = gpus
        verdict["gpusText"] = verdict_text.gpu_text(gpus["devices"], gpus["milli"])
        verdict["headline"] += "; " + verdict["gpusText"]
    if deleted is not None and verdict["state"] in ("bound", "bound-by-trace"):
        verdict["deletedAt"] = span.t(deleted.ts_us)
        verdict["headline"] += f"; deleted at {units.seconds(span.t(deleted.ts_us))}"
    _add_summary(verdict, index, attempt, len(attempts), wait,
                 preemption_json(decisive.document) if decisive is not None else None,
                 nomination, claims)
    if not attempts and "attemptsNote" not in verdict:
        verdict["attemptsNote"] = verdict_text.never_attempted_note(_not_ours(inputs))
    verdict.setdefault("attemptsNote", None)
    verdict["causesNote"] = verdict_text.causes_note(attempt, causes)
    verdict["causesTitle"] = verdict_text.causes_title(attempt)
    verdict["inputs"] = inputs.document
    verdict["inputsLines"] = [list(line) for line in verdict_text.input_lines(
        inputs.document, verdict.get("gpusText"), record_text.claim_inputs(claims))]
    return verdict


def _add_summary(verdict: dict[str, Any], index: int | None, attempt: dict[str, Any] | None,
                 attempts: int, wait: WaitSplit, preemption: dict[str, Any] | None,
                 nomination: dict[str, Any] | None, claims: dict[str, dict[str, Any]]) -> None:
    """The verdict block's facts and sentences under the headline: the decisive attempt's node
    counts, the time gated and waiting, the preemption and its chance, the claims' supply."""
    summary: list[str] = []
    verdict["nodes"] = None
    if attempt is not None:
        evaluated = int(attempt.get("evaluatedNodes") or 0)
        feasible = int(attempt.get("feasibleNodes") or 0)
        verdict["nodes"] = {"evaluated": evaluated, "feasible": feasible,
                            "rejected": max(evaluated - feasible, 0),
                            "all": attempt.get("allNodes")}
        summary.append(f"Decisive attempt #{verdict['decisiveAttempt']}: "
                       f"{verdict_text.node_counts(attempt)}.")
    verdict["wait"] = None
    if attempts or wait.gated_us:
        gated, waiting = wait.gated_us / 1e6, wait.waiting_us / 1e6
        verdict["wait"] = {**wait.as_json(),
                           "words": verdict_text.wait_words(gated, waiting, attempts),
                           "label": verdict_text.wait_label(gated),
                           "text": verdict_text.wait_sentence(
                               gated, waiting, attempts,
                               pending=verdict["state"] in ("pending", "gated"))}
        summary.append(verdict["wait"]["text"])
    if preemption and preemption.get("nominatedNode"):
        summary.append(verdict_text.sentence(verdict_text.preemption_text(preemption)))
        chance = verdict_text.nomination_chance(preemption["nominatedNode"], nomination)
        if chance:
            summary.append(chance)
    notes = ((attempt or {}).get("pluginNotes") or {}).get(plugin_names.DYNAMIC_RESOURCES)
    supply = record_text.claim_summaries(notes, claims)
    if supply:
        summary.append("ResourceClaims: " + "; ".join(supply) + ".")
    verdict["summary"] = summary


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


def scored_winner_first(attempt: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The attempt's scored nodes, the selected node first, then by total and name (a node
    tied at the top score may sort after a page of others by name alone)."""
    selected = attempt.get("selectedNode")
    return sorted(((n, v) for n, v in attempt["nodes"].items() if "total" in v),
                  key=lambda item: (item[0] != selected, -item[1]["total"], item[0]))


def placement_reason(attempt: dict[str, Any], node: str) -> str:
    feasible = attempt.get("feasibleNodes") or 0
    if attempt.get("nominatedNodeUsed") and attempt.get("evaluatedNodes") == 1:
        return "its nominated node still fits (checked first, as upstream does)"
    if attempt.get("hintUsed") and attempt.get("evaluatedNodes") == 1:
        return ("Opportunistic Batching's hint: the next best node of the previous, identical "
                "pod's scores, and it fits (nothing was scored)")
    if feasible <= 1:
        return f"the only feasible node of {attempt.get('evaluatedNodes')} evaluated"
    scored = scored_winner_first(attempt)
    runner = next((n for n, _ in scored if n != node), None)
    if runner is None:
        return f"best of {feasible} feasible nodes"
    if runner in (attempt.get("tiedNodes") or []):
        others = [n for n in attempt["tiedNodes"] if n != node]
        chooser = verdict_text.TIE_BREAK_WORDS.get(attempt.get("tieBreak", "random"),
                                                   "a tie-break")
        return (f"tied with {verdict_text.short_list(others)} at total "
                f"{attempt['nodes'][node]['total']}; {chooser} chose it")
    _, deltas = explain_move(attempt, node, runner, "kaudit")
    words = ", ".join(f"{p} {d:+d}" for p, d in list(deltas.items())[:3])
    return (f"{words or 'equal plugin scores'} over {runner} "
            f"(total {attempt['nodes'][node]['total']} vs {attempt['nodes'][runner]['total']})")


def _causes(engine: Engine, run: RunSummary, attempt: dict[str, Any],
            decisive: PodRecord | None, inputs: PodInputs, trace_id: int, decisive_key: str,
            claims: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    if decisive is None or (all(v.get("feasible") for v in attempt["nodes"].values())
                            and not attempt.get("leftOutByPreFilter")):
        return []
    free = free_capacity(engine, run.id, decisive.ts_us, exclude_pod=decisive_key)
    return rejection_causes(engine, attempt, decisive.ts_us, inputs, trace_id, free,
                            claims=claims)


def attempt_causes(engine: Engine, run: RunSummary, key: str, record: PodRecord,
                   attempt: dict[str, Any], claims: dict[str, dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    """Any attempt's rejected nodes grouped by concrete cause, as the verdict groups its
    decisive attempt's (the pod's inputs and free capacity at that attempt)."""
    trace_id = trace_id_of(engine, run.id)
    inputs = describe_pod(engine, trace_id, key, record.ts_us)
    return _causes(engine, run, attempt, record, inputs, trace_id, key, claims)


def story_event(record: PodRecord, span: Span) -> dict[str, Any]:
    """One of the pod's other records (not a queue move or an attempt) for a story: its
    sentence (``text``) and its raw fields, the same in ``kaudit explain`` and the pod page."""
    t = span.t(record.ts_us)
    return {"time": format_timestamp(record.ts_us), "t": t,
            "kind": record.kind, "node": record.node, **record.document,
            "at": units.seconds(t),
            "text": record_text.event_text(record.kind, record.node, record.document)}


def attempt_sentences(attempt: dict[str, Any], claims: dict[str, dict[str, Any]]
                      ) -> dict[str, Any]:
    """An attempt's node counts, outcome and devices in words, for every listing of attempts
    (``claims``: :func:`claim_objects` of the pod, for the requests' selectors)."""
    preemption = preemption_json(attempt) or {}
    return {"countsText": verdict_text.node_counts(attempt),
            "outcomeText": verdict_text.attempt_outcome(attempt),
            "preemptionText": (verdict_text.preemption_text(preemption)
                               if preemption.get("nominatedNode") else None),
            "deviceLines": record_text.device_lines(
                (attempt.get("pluginNotes") or {}).get(plugin_names.DYNAMIC_RESOURCES), claims)}


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


def load_pod_records(engine: Engine, run_id: int, key: str, kind: str | None = None
                     ) -> list[PodRecord]:
    """The pod's records in log order (only those of ``kind`` when given)."""
    query = (select(RunEvent.seq, RunEvent.ts_us, RunEvent.kind, RunEvent.node, RunEvent.data,
                    RunEvent.blob)
             .where(RunEvent.run_id == run_id, RunEvent.pod == key).order_by(RunEvent.seq))
    if kind is not None:
        query = query.where(RunEvent.kind == kind)
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    return [PodRecord(seq, ts, kind, node, orjson.loads(data), blob)
            for seq, ts, kind, node, data, blob in rows]
