"""One pod's audit verdicts: each recorded decision about the pod beside kaudit's ranking then.

An audit run (:mod:`kaudit.replay.audit`) writes, per recorded decision, an ``attempt`` record
(kaudit's exhaustive evaluation at the decision's moment, upstream's ``schedulePod`` in
``pkg/scheduler/schedule_one.go``) and right after it an ``audit`` record (the class, the
reason, the recorded and kaudit's answers). This reads both for one pod and says where the
recorded node stands in that ranking: its rank and score against the top, or the filter that
rejects it; for a recorded failure or nomination, kaudit's own answer. The pod page and its
API (``/api/v1/runs/RUN/pods/NS/NAME/audit``) show these words as they are.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.model.timestamps import format_timestamp
from kaudit.queries import units
from kaudit.queries.audit import AGREEING, CLASS_LABELS, DISAGREEING
from kaudit.queries.runs import get_run, node_names, pod_key
from kaudit.queries.timeline import Span, run_span
from kaudit.queries.verdict import unpack
from kaudit.store.models import RunEvent

_FILTER_PASSES = ("Success", "Skip")


def pod_audit(engine: Engine, run_ref: str, pod_ref: str) -> list[dict[str, Any]]:
    """The pod's audit verdicts in the run, in the order they were judged (empty for a run
    that is not an audit or a pod it judged no decision of). Each carries the number of the
    pod's attempt that holds kaudit's ranking at that moment (``attempt``, from 1 as the pod
    page numbers attempts; None when kaudit did not evaluate the pod: not judged)."""
    run = get_run(engine, run_ref)
    key = pod_key(engine, run.id, pod_ref)
    mine = (RunEvent.run_id == run.id, RunEvent.pod == key)
    with engine.connect() as connection:
        audits = connection.execute(
            select(RunEvent.seq, RunEvent.ts_us, RunEvent.node, RunEvent.data)
            .where(*mine, RunEvent.kind == "audit").order_by(RunEvent.seq)).all()
        if not audits:
            return []
        attempt_seqs = list(connection.scalars(
            select(RunEvent.seq).where(*mine, RunEvent.kind == "attempt")
            .order_by(RunEvent.seq)))
        # An audit record follows its evaluation's attempt record directly.
        paired = {row.seq: row for row in connection.execute(
            select(RunEvent.seq, RunEvent.data, RunEvent.blob)
            .where(*mine, RunEvent.kind == "attempt",
                   RunEvent.seq.in_([audit.seq - 1 for audit in audits])))}
    span = run_span(engine, run.id)
    names = node_names(engine, run.id)
    number = {seq: i + 1 for i, seq in enumerate(attempt_seqs)}
    verdicts = []
    for audit in audits:
        attempt = paired.get(audit.seq - 1)
        ranking = (unpack(orjson.loads(attempt.data), attempt.blob, names)
                   if attempt is not None else None)
        verdicts.append(_verdict(orjson.loads(audit.data), audit.node, audit.ts_us, span,
                                 number[attempt.seq] if attempt is not None else None,
                                 ranking))
    return verdicts


def _verdict(judged: dict[str, Any], node: str | None, ts_us: int, span: Span,
             attempt: int | None, ranking: dict[str, Any] | None) -> dict[str, Any]:
    recorded = judged.get("recorded") or {}
    name = judged["class"]
    standing = _standing(judged, recorded, ranking)
    return {
        "attempt": attempt, "t": span.t(ts_us), "time": format_timestamp(ts_us),
        "momentText": units.moment(span.t(ts_us), ts_us),
        "class": name, "classLabel": CLASS_LABELS.get(name, name),
        "agrees": name in AGREEING, "disagrees": name in DISAGREEING,
        "reason": judged.get("reason", ""), "cause": judged.get("cause", ""),
        "recordedNode": node, "recorded": recorded, "recordedText": recorded_text(recorded),
        "kaudit": judged.get("kaudit") or {}, "standing": standing,
        "standingText": standing_text(judged, recorded, standing),
        "nearby": judged.get("nearby") or [],
    }


def recorded_text(recorded: dict[str, Any]) -> str:
    """What the recorded scheduler decided, in a few words."""
    kind, node = recorded.get("kind"), recorded.get("node")
    if kind == "bind":
        return f"bound to {node}"
    if kind == "preemption":
        victims = recorded.get("victims") or []
        return f"nominated {node}" + (f", preempting {', '.join(victims)}" if victims else "")
    if kind == "unschedulable":
        message = recorded.get("message")
        return f"unschedulable: {message}" if message else "unschedulable (no message recorded)"
    if kind == "nodeName":
        return f"created with spec.nodeName {node}"
    return kind or "–"


def _standing(judged: dict[str, Any], recorded: dict[str, Any],
              ranking: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where the recorded binding's node stands in kaudit's ranking: ``{"node", "rank",
    "scored", "score", "topScore", "topNodes"}`` when kaudit scored it, ``{"node",
    "rejectedBy"}`` when a filter rejects it; None for other decisions (a nomination's node
    fails the filters by definition: preemption is what makes room there) or when kaudit did
    not evaluate the pod."""
    node = recorded.get("node")
    if not node or recorded.get("kind") != "bind" or ranking is None:
        return None
    rejected = judged.get("rejectedBy")
    nodes: dict[str, Any] = ranking.get("nodes") or {}
    if rejected is None and node in nodes and not nodes[node].get("feasible"):
        rejected = next(({"plugin": plugin, "code": verdict["code"],
                          "reasons": verdict["reasons"]}
                         for plugin, verdict in nodes[node]["filter"].items()
                         if verdict["code"] not in _FILTER_PASSES), None)
    if rejected is not None:
        return {"node": node, "rejectedBy": rejected}
    totals = {name: entry["total"] for name, entry in nodes.items() if "total" in entry}
    if node not in totals:
        return None
    top = max(totals.values())
    mine = totals[node]
    return {"node": node, "rank": 1 + sum(total > mine for total in totals.values()),
            "scored": len(totals), "score": mine, "topScore": top,
            "topNodes": sorted(name for name, total in totals.items() if total == top)}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def standing_text(judged: dict[str, Any], recorded: dict[str, Any],
                  standing: dict[str, Any] | None) -> str:
    """The recorded node's place in kaudit's ranking as a sentence; for a recorded failure,
    kaudit's own answer; for a nomination kaudit did not evaluate the node of, its choice."""
    kaudit = judged.get("kaudit") or {}
    if standing is not None and "rejectedBy" in standing:
        rejected = standing["rejectedBy"]
        reasons = "; ".join(rejected.get("reasons") or []) or rejected.get("code", "")
        return (f"{standing['node']} is rejected by {rejected.get('plugin') or 'a filter'}: "
                f"{reasons}")
    if standing is not None:
        node, top = standing["node"], standing["topScore"]
        others = [name for name in standing["topNodes"] if name != node]
        if standing["rank"] == 1:
            if not others:
                return f"{node} is kaudit's only top-scoring node ({top})"
            return (f"{node} is one of kaudit's {len(standing['topNodes'])} top-scoring nodes "
                    f"({top})")
        return (f"{node} ranks {_ordinal(standing['rank'])} of {standing['scored']} scored "
                f"nodes: {standing['score']} against kaudit's top {top} "
                f"({', '.join(standing['topNodes'])})")
    if recorded.get("kind") == "unschedulable":
        if kaudit.get("node"):
            return f"kaudit places the pod on {kaudit['node']}"
        return f"kaudit: {kaudit.get('message') or 'unschedulable'}"
    if recorded.get("kind") == "preemption" and kaudit:
        if kaudit.get("nominatedNode"):
            victims = kaudit.get("victims") or []
            return (f"kaudit nominates {kaudit['nominatedNode']}"
                    + (f", preempting {', '.join(victims)}" if victims else ""))
        if kaudit.get("node"):
            return f"kaudit places the pod on {kaudit['node']} without preemption"
        return f"kaudit finds no preemption: {kaudit.get('message') or ''}".rstrip(": ")
    return judged.get("reason", "") if judged["class"] == "notJudged" else ""
