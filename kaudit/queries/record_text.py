"""A pod's records and devices in words: every record of its event log (other than queue
moves and attempts) as a sentence with long objects summarised, DynamicResources' claims and
the devices they could use, scheduler extenders' calls; and any record as one line of the log
(:func:`log_line`).

``kaudit explain``, the pod page, ``kaudit whatif``, the event log page and the history page
word them through these functions only; the verdict and its causes are
:mod:`kaudit.queries.verdict_text`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kaudit.queries.verdict_text import (
    LISTED,
    gpu_text,
    node_counts,
    nomination_chance,
    plural,
    short_list,
)

_DELETE_REASONS = {"trace": "the trace deleted it", "completed": "it completed",
                   "preempted": "it was preempted", "lifetime": "its recorded run time ended"}


# --- devices (DynamicResources) ----------------------------------------------------------


def claim_selectors(claim: Mapping[str, Any] | None, request: str) -> list[str]:
    """The CEL selectors of ``request`` (``gpu`` or a subrequest ``gpu/a100``) in a
    ResourceClaim object."""
    if not claim:
        return []
    name, _, sub = request.partition("/")
    for entry in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if entry.get("name") != name:
            continue
        chosen = entry.get("exactly") or {}
        if sub:
            chosen = next((a for a in entry.get("firstAvailable") or []
                           if a.get("name") == sub), {})
        return [str((s.get("cel") or {}).get("expression")) for s in chosen.get("selectors") or []
                if (s.get("cel") or {}).get("expression")]
    return []


def device_supply(request: Mapping[str, Any], selectors: Sequence[str] = ()) -> str:
    """``request gpu: 1 of class gpu.example.com, 16 match, 0 free (selector …)``."""
    if "error" in request:
        return f"request {request['request']}: {request['error']}"
    text = f"request {request['request']}: {request['count']} of class {request['deviceClass']}"
    if "matching" in request:
        text += f", {request['matching']} match, {request['free']} free"
    if selectors:
        text += f", selector {' && '.join(selectors)}"
    return text


def device_lines(notes: Mapping[str, Any] | None,
                 claims: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """DynamicResources' notes on an attempt: the devices the pod's claims got, or, when it
    fit nowhere, the devices each request could use; ``claims`` (by ``namespace/name``) adds
    each request's selectors."""
    if not notes:
        return []
    lines = []
    listed = ", ".join(f"{c['claim']} ({'allocated already' if c['allocated'] else 'to allocate'})"
                       for c in notes.get("claims") or [])
    lines.append(f"ResourceClaims: {listed}")
    for device in notes.get("devices") or []:
        lines.append(f"{device['claim']} request {device['request']}: {device['driver']} "
                     f"pool {device['pool']} device {device['device']}")
    for request in notes.get("requests") or []:
        selectors = claim_selectors((claims or {}).get(request["claim"]), request["request"])
        lines.append(f"{request['claim']} {device_supply(request, selectors)}")
        for pool in request.get("unusablePools") or []:
            lines.append(f"pool {pool['pool']} cannot be allocated from: {pool['problem']}")
    return lines


def claim_requests(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A ResourceClaim's requests as the supply notes name them (``request``, ``count``,
    ``deviceClass``; a request with alternatives names each subrequest ``gpu/a100``)."""
    found = []
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        name = str(request.get("name"))
        alternatives = request.get("firstAvailable") or []
        chosen = [(f"{name}/{a.get('name')}", a) for a in alternatives] or [
            (name, request.get("exactly") or request)]
        for label, spec in chosen:
            count = (spec.get("count", 1)
                     if spec.get("allocationMode", "ExactCount") == "ExactCount" else "All")
            found.append({"request": label, "count": count,
                          "deviceClass": spec.get("deviceClassName")})
    return found


def claim_summaries(notes: Mapping[str, Any] | None,
                    claims: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Each request's supply, for a cause's detail and the verdict's summary: as the attempt's
    notes counted it, or, where they did not (a placed pod's attempt in runs stored before
    the notes counted it), the request and its selectors from the pod's ResourceClaims."""
    if not notes:
        return []
    if notes.get("requests"):
        return [device_supply(r, claim_selectors((claims or {}).get(r["claim"]),
                                                 r["request"]))
                for r in notes.get("requests") or []]
    summaries = []
    for entry in notes.get("claims") or []:
        claim = (claims or {}).get(entry.get("claim"))
        if claim is None or entry.get("allocated"):
            continue
        summaries += [device_supply(r, claim_selectors(claim, r["request"]))
                      for r in claim_requests(claim)]
    return summaries


def claim_inputs(claims: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The pod's ResourceClaims as inputs of its decisions: one (claim, requests) pair each,
    its requests worded as the supply is (class, count, selectors)."""
    return [(ref, "; ".join(device_supply(r, claim_selectors(claim, r["request"]))
                            for r in claim_requests(claim)) or "no requests")
            for ref, claim in sorted(claims.items())]


# --- extenders ---------------------------------------------------------------------------


def extender_call(call: Mapping[str, Any]) -> str:
    """One extender call: step, extender, nodes sent, latency and how it ended."""
    if call.get("error"):
        outcome = (f"failed ({'ignored' if call.get('ignorable') else 'not ignorable'}): "
                   f"{call['error']}")
    elif call.get("step") == "filter":
        outcome = f"{len(call.get('passing') or ())} passed"
    else:
        outcome = "answered"
    return (f"extender {call['step']} {call['extender']} ({len(call.get('nodes') or ())} "
            f"node(s), {(call.get('latencyUs') or 0) / 1000:.1f} ms): {outcome}")


# --- other events ------------------------------------------------------------------------


def _claim_event(document: Mapping[str, Any]) -> str:
    claim = document.get("object") or {}
    meta = claim.get("metadata") or {}
    name = f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
    kind = document.get("type")
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
    asks = []
    for request in requests:
        chosen = request.get("exactly")
        if chosen is None and request.get("firstAvailable"):
            classes = " or ".join(str(a.get("deviceClassName"))
                                  for a in request["firstAvailable"])
            asks.append(f"{request.get('name')}: first available of {classes}")
            continue
        chosen = chosen or {}
        count = chosen.get("count", 1) if chosen.get("allocationMode", "ExactCount") == \
            "ExactCount" else "all"
        ask = f"{request.get('name')}: {count} of {chosen.get('deviceClassName')}"
        selectors = claim_selectors(claim, str(request.get("name")))
        if selectors:
            ask += f" where {' && '.join(selectors)}"
        asks.append(ask)
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}
               ).get("results") or []
    if kind == "DELETED":
        text = f"ResourceClaim {name} deleted"
    elif results:
        got = ", ".join(f"{r.get('device')} (pool {r.get('pool')}) for {r.get('request')}"
                        for r in results[:LISTED])
        more = len(results) - LISTED
        text = f"ResourceClaim {name} allocated {got}" + (f" and {more} more" if more > 0
                                                           else "")
    elif kind == "ADDED":
        owner = "generated for the pod" if meta.get("ownerReferences") else "added"
        text = f"ResourceClaim {name} {owner}"
    else:
        text = f"ResourceClaim {name} updated (no allocation)"
    return text + (f"; requests {'; '.join(asks)}" if asks and kind != "DELETED" else "")


def _value_words(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        items = [_value_words(v) for v in value]
        return short_list(items, LISTED) if items else "none"
    if isinstance(value, Mapping):
        return plural(len(value), "field")
    return str(value)


#: How an audit record names the recorded decision, by its kind.
_AUDITED = {"bind": "The recorded scheduler bound it to {node}",
            "unschedulable": "The recorded scheduler found it unschedulable",
            "preemption": "The recorded scheduler nominated {node} by preemption",
            "nodeName": "It was created bound to {node}"}


def _audit_event(node: str | None, document: Mapping[str, Any]) -> str:
    """An ``audit`` record: the recorded decision, kaudit's class and its reason."""
    recorded = document.get("recorded") or {}
    what = _AUDITED.get(str(recorded.get("kind")), "The recorded scheduler decided")
    verdict = str(document.get("class", "")).replace("notJudged", "not judged")
    reason = str(document.get("reason") or "")
    if len(reason) > 240:
        reason = reason[:239] + "…"
    return f"{what.format(node=node or '-')}; the audit: {verdict}" + (
        f", {reason}" if reason else "")


def event_text(kind: str, node: str | None, document: Mapping[str, Any]) -> str:
    """One record of the pod's event log (other than queue moves and attempts) as a sentence,
    long objects summarised."""
    on = f" on {node}" if node else ""
    if kind == "bind":
        by = "kaudit" if document.get("by") == "kaudit" else "the recorded cluster"
        text = f"Bound to {node} by {by}"
        if document.get("binder"):
            text += f" through extender {document['binder']}"
        gpus = document.get("gpus")
        if gpus:
            text += f"; {gpu_text(gpus['devices'], gpus['milli'])}"
        devices = document.get("claims") or []
        if devices:
            text += "; devices " + short_list(
                [f"{d.get('device')} (pool {d.get('pool')}) for "
                 f"{d.get('podClaim') or d.get('claim')}" for d in devices], LISTED)
    elif kind == "bindfail":
        reasons = "; ".join(document.get("reasons") or []) or document.get("code", "")
        text = f"Binding to {node} failed: {reasons}"
    elif kind == "recorded":
        text = f"The recorded cluster placed it{on}"
    elif kind == "nominate":
        text = f"Preemption nominated {node}"
        chance = nomination_chance(node, document)
        if chance:
            text += f". {chance}"
    elif kind == "preempt":
        text = f"Evicted{on} by {document.get('preemptor')}"
        if document.get("tie"):
            text += " (a coin flip among equally ranked victims: upstream may evict another)"
    elif kind == "terminate":
        text = f"Its deletion was accepted; it terminates{on}, still counted there"
    elif kind == "delete":
        reason = document.get("reason")
        text = f"Deleted{on}: {_DELETE_REASONS.get(str(reason), str(reason))}"
    elif kind == "create":
        text = (f"Created by kaudit to replace {document.get('replaces')} (as its controller "
                "would)")
    elif kind == "extender":
        text = f"Extender call{on}: {document.get('reason', '')}".rstrip(": ")
    elif kind == "claim":
        text = _claim_event(document)
    elif kind == "audit":
        text = _audit_event(node, document)
    elif kind == "node":
        text = f"Node {node} got slot {document.get('slot')}"
    elif kind == "watch":
        text = (f"The trace's {str(document.get('type', '')).lower()} "
                f"{document.get('resource', 'object')} applied (trace event "
                f"{document.get('traceSeq')})")
    else:
        words = ", ".join(f"{key} {_value_words(value)}" for key, value in document.items()
                          if key != "extenders")
        text = f"{kind.capitalize()}{on}" + (f": {words}" if words else "")
    for call in document.get("extenders") or ():
        text += f"; {extender_call(call)}"
    return text


def log_line(kind: str, node: str | None, document: Mapping[str, Any]) -> str:
    """Any record of the event log in one line, for the event log page, the history page's
    events around a moment and ``kaudit events``: queue moves and attempts briefly (the pod
    page tells an attempt in full), every other kind as :func:`event_text` words it."""
    if kind == "queue":
        return f"{document.get('from')} → {document.get('to')} ({document.get('event')})"
    if kind == "attempt":
        selected = document.get("selectedNode") or (
            node if document.get("result") == "scheduled" else None)
        if selected:
            return f"Scheduled on {selected}: {node_counts(document)}"
        rejected = ", ".join(f"{plugin} {count:,}" for plugin, count in
                             (document.get("rejectedBy") or {}).items())
        message = str(document.get("message") or document.get("result") or "")
        return message + (f" (rejected by {rejected})" if rejected else "")
    return event_text(kind, node, document)
