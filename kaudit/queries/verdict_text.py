"""The one renderer of verdict sentences and cause lines (the records of a pod's event log and
its devices are worded in :mod:`kaudit.queries.record_text`).

``kaudit explain`` (text and ``--json``), the pod page and its API, and ``kaudit whatif`` word a
decision through these functions only, so a cause, a node count or a wait reads the same in
every door. The sentences are built from the facts the queries computed (counts, exact
quantities, tie sets, queue spans); callers carry the sentences in their JSON beside the facts,
and the page shows the sentences it is given instead of composing its own.

Amounts are exact Kubernetes quantities (:func:`kaudit.queries.units.quantity`), spans of time
are :func:`kaudit.queries.units.duration`, moments since the run's start
:func:`kaudit.queries.units.seconds`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaudit.plugins import names as plugin_names
from kaudit.plugins.node_resources_fit import INSUFFICIENT as INSUFFICIENT
from kaudit.plugins.node_resources_fit import TOO_MANY_PODS
from kaudit.queries import units

#: Nodes shown as examples in a cause line (the rest are counted).
EXAMPLES = 3
#: Items of a long list named in a sentence (the rest are counted).
LISTED = 3

#: What chose among tied nodes, by the scheduler's ``tie_break``.
TIE_BREAK_WORDS = {"random": "the seeded tie-break", "name": "the lowest node name",
                   "heap": "kube-scheduler's score heap (filter order)",
                   "shuffled-name": "the seeded order of node names"}

def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 node``, ``5,000 nodes``."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def sentence(clause: str) -> str:
    """A clause as a sentence: its first letter raised, a full stop at the end."""
    return clause[:1].upper() + clause[1:] + ("" if clause.endswith(".") else ".")


def short_list(names: Sequence[str], limit: int = 2) -> str:
    """``a and b``, ``a, b and c`` or ``a, b and 3 more``."""
    if len(names) <= limit:
        return " and ".join(names) if len(names) < 3 else \
            f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{', '.join(names[:limit])} and {len(names) - limit} more"


def examples(nodes: Sequence[str], count: int, shown: int = EXAMPLES) -> str:
    """A cause group's example nodes: ``node-a1, node-b1, node-c1 and 6 more``."""
    named = list(nodes[:shown])
    more = count - len(named)
    return ", ".join(named) + (f" and {more} more" if more > 0 else "")


# --- causes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CauseWords:
    """A cause group in words: ``cause`` (the table's column), ``detail`` (the facts behind
    it) and ``phrase`` (what follows the count in a headline: ``9 <phrase>``)."""

    cause: str
    detail: str
    phrase: str


def resource_words(resource: str, requested: int | None, free: Sequence[int]
                   ) -> tuple[str, str]:
    """(phrase, detail) for nodes lacking ``resource``: exact amounts, never rounded."""
    need = f"needs {units.quantity(resource, requested)}" if requested is not None else ""
    if not free:
        return f"lack {resource}" + (f" ({need})" if need else ""), need
    largest = f"the largest free is {units.quantity(resource, max(free))}"
    phrase = f"lack {resource} ({need + ', ' if need else ''}{largest})"
    detail = f"{need + ', ' if need else ''}free {units.quantity_range(resource, free)}"
    return phrase, detail


def pod_slot_words(facts: Mapping[str, Any]) -> tuple[str, str]:
    """(phrase, detail) for nodes without a free pod slot (``Too many pods``): the pods they
    hold against their slots, exactly (``110 of 110 pods``)."""
    if "slotsMin" not in facts:
        return "lack pod slots (all in use)", "all pod slots in use"
    low, high = int(facts["slotsMin"]), int(facts["slotsMax"])
    free_low, free_high = int(facts.get("freeMin", 0)), int(facts.get("freeMax", 0))
    if low == high and free_low == free_high:
        held = f"{low - free_low:,} of {plural(low, 'pod')} in use"
    else:
        held = f"{free_low:,}–{free_high:,} free of {low:,}–{high:,} pod slots"
    return f"lack pod slots ({held})", held


def cause_words(plugin: str, reasons: Sequence[str], fact: str | None = None,
                resources: Sequence[Mapping[str, Any]] = (), host_ports: Sequence[str] = (),
                devices: Sequence[str] = ()) -> CauseWords:
    """A group of nodes rejected by ``plugin`` for ``reasons``, in words. ``fact`` is the
    concrete fact found on the nodes (the untolerated taint, the unmatched selector),
    ``resources`` the free-against-requested facts of ``Insufficient …`` reasons,
    ``devices`` the claims' supply (DynamicResources); without them the words are generic."""
    reasons = tuple(reasons)
    if plugin == plugin_names.NODE_RESOURCES_FIT and reasons and all(
            r.startswith(INSUFFICIENT) or r == TOO_MANY_PODS for r in reasons):
        by_name = {str(f["resource"]): f for f in resources}
        names, phrases, details = [], [], []
        for reason in reasons:
            name = "pods" if reason == TOO_MANY_PODS else reason[len(INSUFFICIENT):]
            facts = by_name.get(name, {})
            free = [facts["freeMin"], facts["freeMax"]] if "freeMin" in facts else []
            if "free" in facts:
                free = list(facts["free"])
            if name == "pods":
                names.append("pod slots")
                phrase, detail = pod_slot_words(facts)
            else:
                names.append(name)
                phrase, detail = resource_words(name, facts.get("requested"), free)
            phrases.append(phrase)
            if detail:
                details.append(f"{names[-1]} {detail}" if len(reasons) > 1 else detail)
        return CauseWords("lack " + " and ".join(names), "; ".join(details),
                          " and ".join(phrases))
    if plugin == plugin_names.NODE_UNSCHEDULABLE:
        return CauseWords("cordoned", "spec.unschedulable is true", "cordoned")
    if plugin == plugin_names.TAINT_TOLERATION:
        cause = f"tainted {fact}" if fact else "have an untolerated taint"
        return CauseWords(cause, "the pod has no toleration for it", cause)
    if plugin == plugin_names.NODE_AFFINITY:
        cause = (f"don't match {fact.split(' (node has')[0]}" if fact
                 else "don't match the pod's node selector/affinity")
        return CauseWords(cause, fact or "", cause)
    if plugin == plugin_names.NODE_PORTS:
        cause = f"already use host port {', '.join(host_ports) or 'its host ports'}"
        return CauseWords(cause, "", cause)
    if plugin == plugin_names.DYNAMIC_RESOURCES:
        cause = "; ".join(reasons)
        detail = "; ".join(devices)
        return CauseWords(cause, detail, f"{cause} ({detail})" if detail else cause)
    cause = f"rejected by {plugin}: {'; '.join(reasons)}"
    return CauseWords(cause, "", cause)


def left_out_words(plugins: Sequence[str], reasons: Sequence[str]) -> CauseWords:
    """Nodes a PreFilterResult left out (upstream's absent-nodes status): never filtered."""
    cause = f"not in {' and '.join(plugins)}'s PreFilter result"
    return CauseWords(cause, "; ".join(reasons) + " (UnschedulableAndUnresolvable; not "
                      "filtered)", cause)


def cause_line(count: int, phrase: str) -> str:
    """``9 lack cpu (needs 500m, the largest free is 400m)``."""
    return f"{count:,} {phrase}"


def input_lines(inputs: Mapping[str, Any], gpus: str | None = None,
                claims: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The pod as the scheduler saw it, one (label, text) line per input: requests exactly
    with the amounts scored, priority, selectors and affinity, tolerations, spread, host
    ports, GPU devices (``gpus``: the devices it holds), its ResourceClaims (``claims``:
    (claim, its requests) pairs; the spec's names where kaudit saw none), gates,
    scheduler."""
    if not inputs.get("found"):
        return [("pod", "the trace holds no object for it (created by the replay)")]
    priority = inputs.get("priority")
    lines = [("requests", inputs["requestsSummary"]),
             ("priority", f"{priority if priority is not None else 0}"
              + (f" (class {inputs['priorityClassName']})" if inputs.get("priorityClassName")
                 else "") + f", preemptionPolicy {inputs['preemptionPolicy']}")]
    if inputs.get("nodeSelector"):
        lines.append(("nodeSelector", ", ".join(f"{k}={v}"
                                                for k, v in inputs["nodeSelector"].items())))
    for i, term in enumerate(inputs.get("requiredNodeAffinity") or []):
        lines.append(("node affinity" if i == 0 else "  or", term))
    for i, term in enumerate(inputs.get("preferredNodeAffinity") or []):
        lines.append(("preferred" if i == 0 else "", term))
    lines.append(("tolerations", ", ".join(inputs.get("tolerations") or []) or "none"))
    for kind, label in (("requiredPodAffinityTerms", "pod affinity"),
                        ("requiredPodAntiAffinityTerms", "pod anti-affinity")):
        if inputs.get(kind):
            lines.append((label, f"{inputs[kind]} required term(s)"))
    for i, constraint in enumerate(inputs.get("spreadConstraints") or []):
        lines.append(("spread" if i == 0 else "", constraint))
    if not inputs.get("spreadConstraints"):
        lines.append(("spread", "none in the spec (the profile's default constraints apply "
                                "to pods of a Service or controller)"))
    if inputs.get("hostPorts"):
        lines.append(("host ports", ", ".join(inputs["hostPorts"])))
    if inputs.get("gpu"):
        lines.append(("GPU devices", inputs["gpu"] + (f"; holds {gpus}" if gpus else "")))
    for i, (claim, requests) in enumerate(claims):
        lines.append(("ResourceClaims" if i == 0 else "", f"{claim}: {requests}"))
    if not claims and inputs.get("resourceClaims"):
        lines.append(("ResourceClaims", ", ".join(inputs["resourceClaims"])))
    if inputs.get("schedulingGates"):
        lines.append(("gates", ", ".join(inputs["schedulingGates"])))
    if inputs.get("schedulerName") != "default-scheduler":
        lines.append(("scheduler", inputs["schedulerName"]))
    return lines


# --- node counts -------------------------------------------------------------------------


def node_counts(attempt: Mapping[str, Any]) -> str:
    """How many nodes an attempt evaluated, found feasible and rejected, and why it evaluated
    fewer than the cluster has (its nominated node first, PreFilter, percentageOfNodesToScore)."""
    evaluated = int(attempt.get("evaluatedNodes") or 0)
    feasible = int(attempt.get("feasibleNodes") or 0)
    total = int(attempt.get("allNodes") or evaluated)
    rejected = max(evaluated - feasible, 0)
    head = (f"{evaluated:,} of {plural(total, 'node')} evaluated" if evaluated < total
            else f"{plural(evaluated, 'node')} evaluated")
    text = f"{head}, {feasible:,} feasible, {rejected:,} rejected"
    why = _fewer_evaluated(attempt, evaluated, feasible, total)
    return f"{text} ({why})" if why else text


def _fewer_evaluated(attempt: Mapping[str, Any], evaluated: int, feasible: int,
                     total: int) -> str | None:
    if evaluated >= total:
        return None
    if attempt.get("nominatedNodeUsed") and evaluated == 1:
        return "its nominated node, checked first as upstream does"
    if attempt.get("hintUsed") and evaluated == 1:
        return "Opportunistic Batching's hint, checked first as upstream does"
    if attempt.get("result") == "error":
        # Upstream's Filter phase ends at the first Error; the attempt is an error.
        return "an error ended the attempt before every node was tried"
    narrowed = [set(v["nodeNames"]) for v in (attempt.get("preFilter") or {}).values()
                if isinstance(v, Mapping) and v.get("nodeNames") is not None]
    if evaluated == 0:
        if narrowed and not any(_rejected(v) for v in (attempt.get("preFilter") or {}).values()):
            # Every node a PreFilterResult names that exists is evaluated: none does.
            named = sorted(set.intersection(*narrowed))
            return ("PreFilter narrowed the candidates to "
                    + (f"{short_list(named, LISTED)}, "
                       + ("not a node of the cluster" if len(named) == 1
                          else "none of them a node of the cluster") if named
                       else "no node"))
        return "PreFilter refused the pod before any node was tried"
    if narrowed:
        allowed = set.intersection(*narrowed)
        left_out = attempt.get("leftOutByPreFilter") or {}
        if "absent" in left_out and evaluated + int(left_out["nodes"]) >= total:
            # Every node the results kept was evaluated (no sample).
            absent = sorted(left_out["absent"])
            present = sorted(allowed - set(absent))
            return ("PreFilter narrowed the candidates to " + short_list(present, LISTED)
                    + (f" ({short_list(absent, LISTED)} "
                       + ("is not a node" if len(absent) == 1 else "are not nodes")
                       + " of the cluster)" if absent else ""))
        if len(allowed) <= evaluated:
            return f"PreFilter narrowed the candidates to {plural(len(allowed), 'node')}"
    return (f"percentageOfNodesToScore: filtering stopped once {plural(feasible, 'feasible node')}"
            f" {'was' if feasible == 1 else 'were'} found")


def _rejected(status: Any) -> bool:
    return isinstance(status, Mapping) and status.get("code") in (
        "Unschedulable", "UnschedulableAndUnresolvable", "Error")


def causes_note(attempt: Mapping[str, Any] | None, causes: Sequence[Mapping[str, Any]]
                ) -> str | None:
    """The sentence shown where cause groups would be when there are none, from the same
    counts as :func:`node_counts` (never "every node passed" while some were rejected)."""
    if attempt is None:
        return "kaudit made no attempt for this pod."
    if causes:
        return None
    evaluated = int(attempt.get("evaluatedNodes") or 0)
    feasible = int(attempt.get("feasibleNodes") or 0)
    if evaluated == 0:
        return "No node was evaluated."
    if feasible >= evaluated:
        return ("The one evaluated node passed the filters." if evaluated == 1
                else f"All {evaluated:,} evaluated nodes passed the filters.")
    return f"{evaluated - feasible:,} of {plural(evaluated, 'evaluated node')} were rejected."


def causes_title(attempt: Mapping[str, Any] | None) -> str:
    """The heading over the cause groups: the other nodes of a decision that found a node,
    or why none fit (a pod kaudit never tried has neither)."""
    if attempt is None:
        return "Rejected nodes"
    if int(attempt.get("feasibleNodes") or 0) > 0:
        return "Why not the other nodes"
    return "Why no node fits"


# --- waiting -----------------------------------------------------------------------------


def wait_words(gated_s: float, waiting_s: float, attempts: int) -> str:
    """``gated 2m30s, then waited 1s over 3 attempts`` (the gated time is not the
    scheduler's: a pod held by schedulingGates or a PreEnqueue plugin is not in its queue)."""
    over = f" over {plural(attempts, 'attempt')}" if attempts > 1 else ""
    waited = f"waited {units.duration(waiting_s)}{over}"
    if gated_s > 0:
        return f"gated {units.duration(gated_s)}, then {waited}"
    return waited


def wait_label(gated_s: float) -> str:
    """The label of the wait card: what the pod did (held back and waited, or waited)."""
    return "gated, then waited" if gated_s > 0 else "waited for the scheduler"


def never_attempted_note(reason: str) -> str:
    """What stands where a pod's attempts would be when kaudit never tried it."""
    text = f"kaudit never tried to schedule this pod: {reason}"
    return text if text.endswith(".") else text + "."


def wait_sentence(gated_s: float, waiting_s: float, attempts: int, pending: bool) -> str:
    """The verdict block's line on time: gated against waiting for the scheduler."""
    waiting = (f"{'has been waiting' if pending else 'waited'} for the scheduler "
               f"{units.duration(waiting_s)}"
               + (f" over {plural(attempts, 'attempt')}" if attempts else ""))
    if gated_s > 0:
        return (f"Held back (schedulingGates or a PreEnqueue plugin) for "
                f"{units.duration(gated_s)}, not waiting for the scheduler; then {waiting}.")
    return waiting[0].upper() + waiting[1:] + "."


# --- choices and chance ------------------------------------------------------------------


def selection(selected: str, tied: Sequence[str], tie_break: str | None = None) -> str:
    """``node-a`` or ``node-a, tied with node-b and node-c; the seeded tie-break chose it``."""
    others = [n for n in tied if n != selected]
    if not others:
        return selected
    shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    return (f"{selected} (tied with {shown}; "
            f"{TIE_BREAK_WORDS.get(tie_break or 'random', 'a tie-break')} chose it)")


def nomination_chance(node: str | None, facts: Mapping[str, Any] | None) -> str | None:
    """What chance decided in a preemption's nomination (its ``nominate`` record), or None."""
    if not facts:
        return None
    parts = []
    tied = [n for n in facts.get("tiedNodes") or [] if n != node]
    if tied:
        parts.append(f"{node} was one of {len(tied) + 1} candidate nodes tied on every "
                     f"criterion ({short_list([str(node), *tied], LISTED + 1)}): upstream may "
                     "nominate another")
    victims = list(facts.get("tiedVictims") or [])
    if victims:
        parts.append(f"which pods were evicted was decided among "
                     f"{plural(len(victims), 'equally ranked pod')} "
                     f"({short_list(victims, LISTED)})")
    if facts.get("partialDryRun"):
        parts.append("the dry run examined only part of the nodes from a random start, so "
                     "another start could find other candidates")
    if not parts:
        return None
    return "Coin flip: " + "; ".join(parts) + "."


def whatif_headline(pod: str, attempt: Mapping[str, Any], reason: str | None) -> str:
    """A what-if's answer in one sentence: ``web/a would go to node-b1: NodeResourcesFit +5
    over node-b2 (total 180 vs 175)``, or upstream's message when nothing fits."""
    selected = attempt.get("selectedNode")
    if selected:
        return f"{pod} would go to {selected}" + (f": {reason}" if reason else "")
    return f"{pod} would not fit: {attempt.get('message') or attempt.get('result') or ''}"


def whatif_preemption(preemption: Mapping[str, Any]) -> str:
    """What preemption would do for a what-if pod that fits nowhere."""
    pdb = int(preemption.get("pdbViolations") or 0)
    victims = list(preemption.get("victims") or [])
    return (f"Preemption would nominate {preemption['node']}, evicting "
            f"{short_list(victims, LISTED) or 'no pod'}"
            + (f", violating {plural(pdb, 'PodDisruptionBudget')}" if pdb else "") + ".")


def preemption_text(preemption: Mapping[str, Any]) -> str:
    """``preemption nominated node-c3, evicting a and b (best of 8 candidate nodes)``."""
    pdb = int(preemption.get("pdbViolations") or 0)
    victims = list(preemption.get("victims") or [])
    return (f"preemption nominated {preemption['nominatedNode']}, evicting "
            f"{short_list(victims, LISTED) or 'no pod'}"
            + (f", violating {plural(pdb, 'PodDisruptionBudget')}" if pdb else "")
            + f" (best of {plural(int(preemption.get('candidates') or 0), 'candidate node')})")


def attempt_outcome(attempt: Mapping[str, Any]) -> str:
    """An attempt's outcome in one line: the node it selected, or upstream's message."""
    if attempt.get("selectedNode"):
        return "Selected " + selection(attempt["selectedNode"], attempt.get("tiedNodes") or [],
                                       attempt.get("tieBreak"))
    return str(attempt.get("message") or attempt.get("result") or "")


def decision_note(winner_total: int, runner_up_total: int, tie: bool,
                  tie_break: str | None = None) -> str:
    """The line under the winner-against-runner-up table."""
    chance = (f" (tied: {TIE_BREAK_WORDS.get(tie_break or 'random', 'a tie-break')} decided)"
              if tie else "")
    return f"total {winner_total} against {runner_up_total}{chance}"


def scores_note(attempt: Mapping[str, Any]) -> str:
    """What stands where no score table is: one feasible node is not scored."""
    if int(attempt.get("feasibleNodes") or 0) == 1:
        return "One feasible node: kube-scheduler binds it without scoring."
    return "No node was scored in this attempt."


def gpu_text(devices: Sequence[int], milli: int) -> str:
    """``GPU 3 (500 milli)`` or ``GPUs 0, 1 (1000 milli each)``."""
    if len(devices) == 1:
        return f"GPU {devices[0]} ({milli} milli)"
    return f"GPUs {', '.join(str(d) for d in devices)} ({milli} milli each)"
