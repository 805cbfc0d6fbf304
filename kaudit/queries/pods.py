"""One pod of a run for the dashboard: its lifecycle, its attempts, one attempt in full.

The facts are those of :func:`kaudit.queries.runs.explain_pod` (``kaudit explain --json``), in
shapes that stay small at 5,000 nodes: the story lists attempts without their per-node tables,
and one attempt's filter verdicts and scores come as columns (nodes × plugins) rather than one
object per node.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.errors import UnknownObjectError
from kaudit.eventlog.codec import preemption_json
from kaudit.model.timestamps import format_timestamp
from kaudit.queries import units, verdict_text
from kaudit.queries.decision_inputs import describe_pod, free_capacity, trace_id_of
from kaudit.queries.diff import explain_move
from kaudit.queries.runs import RunSummary, get_run, node_names, pod_key
from kaudit.queries.timeline import Span, run_span
from kaudit.queries.verdict import (
    NAMED_NODES,
    attempt_sentences,
    claim_objects,
    load_pod_records,
    pod_records,
    pod_verdict,
    rejection_causes,
    scored_winner_first,
    story_event,
    unpack,
)
from kaudit.store.models import RunEvent

FILTER_CODES = ["Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait",
                "Skip", "Pending"]
#: Queue states drawn on the lifecycle chart (in-flight only when it lasted).
_WAITING = ("active", "backoff", "unschedulable", "gated", "in-flight")


def _lifecycle(records: list[tuple[int, str, str | None, dict[str, Any]]], span: Span
               ) -> list[dict[str, Any]]:
    """Spans ``{state, start, end}`` (seconds since the run's start) from the queue
    transitions and the binding and removal records."""
    spans: list[dict[str, Any]] = []
    current: tuple[str, int, str | None] | None = None

    def close(at: int) -> None:
        nonlocal current
        if current is not None and at > current[1]:
            state, start, node = current
            spans.append({"state": state, "start": span.t(start), "end": span.t(at),
                          "node": node})
        current = None

    for ts_us, kind, node, data in records:
        if kind == "queue":
            close(ts_us)
            if data["to"] in _WAITING:
                current = (data["to"], ts_us, None)
        elif kind == "bind":
            close(ts_us)
            current = ("bound", ts_us, node)
        elif kind in ("delete", "preempt") and current is not None and current[0] == "bound":
            close(ts_us)
    if current is not None:
        state, start, node = current
        spans.append({"state": state, "start": span.t(start), "end": None, "node": node})
    return spans


def require_pod(engine: Engine, run: RunSummary, pod_ref: str) -> str:
    """The pod's ``NAMESPACE/NAME`` key; :class:`UnknownObjectError` when the run has no
    record of it (one indexed look-up, for pages that only need to know it exists)."""
    key = pod_key(engine, run.id, pod_ref)
    with engine.connect() as connection:
        found = connection.scalar(select(RunEvent.seq).where(
            RunEvent.run_id == run.id, RunEvent.pod == key).limit(1))
    if found is None:
        raise UnknownObjectError(f"no pod {key!r} in run {run.name!r}")
    return key


def pod_story(engine: Engine, run_ref: str, pod_ref: str) -> dict[str, Any]:
    """The pod's story without per-node tables: its verdict (the same as ``kaudit explain``),
    lifecycle, queue, attempts, other events."""
    run, key, records, span = pod_records(engine, run_ref, pod_ref)
    claims = claim_objects(records)
    story: dict[str, Any] = {"run": run.name, "runId": run.id, "pod": key,
                             "verdict": pod_verdict(engine, run, key, records, span),
                             "recordedNode": None, "boundNode": None, "boundTime": None,
                             "boundMoment": None, "span": span.as_json(), "queue": [],
                             "attempts": [],
                             "events": []}
    for record in records:
        seq, ts_us, kind, node, document = (record.seq, record.ts_us, record.kind,
                                            record.node, record.document)
        when = format_timestamp(ts_us)
        if kind == "queue":
            story["queue"].append({"time": when, "t": span.t(ts_us), "from": document["from"],
                                   "to": document["to"], "event": document["event"]})
        elif kind == "attempt":
            preemption = preemption_json(document) or {}
            story["attempts"].append({
                "attempt": len(story["attempts"]) + 1, "seq": seq, "time": when, "t": span.t(ts_us),
                "momentText": units.moment(span.t(ts_us), ts_us),
                "cycle": document.get("cycle"), "result": document.get("result"),
                "selectedNode": document.get("selectedNode"),
                "message": None if document.get("selectedNode") else document.get("message"),
                "evaluatedNodes": document.get("evaluatedNodes"),
                "feasibleNodes": document.get("feasibleNodes"),
                "rejectedBy": document.get("rejectedBy") or {},
                "nominatedNode": preemption.get("nominatedNode"),
                "victims": preemption.get("victims") or [],
                "preemption": preemption or None,
                # the outcome's tie words need the unpacked attempt: the detail carries them
                **{k: v for k, v in attempt_sentences(document, claims).items()
                   if k != "outcomeText"},
            })
        else:
            if kind == "recorded":
                story["recordedNode"] = node
            elif kind == "bind":
                story["boundNode"], story["boundTime"] = node, when
                story["boundMoment"] = units.moment(span.t(ts_us), ts_us)
                if document.get("by") != "kaudit":  # the recorded cluster bound it itself
                    story["recordedNode"] = node
            story["events"].append(story_event(record, span))
    story["lifecycle"] = _lifecycle(
        [(r.ts_us, r.kind, r.node, r.document) for r in records], span)
    return story


def _attempt_row(engine: Engine, run: RunSummary, key: str, number: int) -> Any:
    if number < 1:
        raise UnknownObjectError(f"no attempt {number} of pod {key!r}: attempts are numbered "
                                 "from 1")
    if number > 2**62:  # an OFFSET beyond int64 is an error on PostgreSQL
        raise UnknownObjectError(f"no attempt {number} of pod {key!r}")
    with engine.connect() as connection:
        row = connection.execute(
            select(RunEvent.seq, RunEvent.ts_us, RunEvent.data, RunEvent.blob)
            .where(RunEvent.run_id == run.id, RunEvent.pod == key, RunEvent.kind == "attempt")
            .order_by(RunEvent.seq).offset(number - 1).limit(1)).first()
    if row is None:
        raise UnknownObjectError(f"pod {key!r} has no attempt {number} in run {run.name!r}")
    return row


def attempt_detail(engine: Engine, run_ref: str, pod_ref: str, number: int) -> dict[str, Any]:
    """Attempt ``number`` (from 1, as the records and ``kaudit explain`` number them) of the
    pod in full: filter verdicts as a nodes × plugins
    matrix with reasons, scores per plugin for every scored node (best first), and the winner
    against the runner-up with the plugins that decided."""
    run = get_run(engine, run_ref)
    key = pod_key(engine, run.id, pod_ref)
    row = _attempt_row(engine, run, key, number)
    attempt = unpack(orjson.loads(row.data), row.blob, node_names(engine, run.id))
    span = run_span(engine, run.id)
    nodes = attempt.pop("nodes")
    plugins: list[str] = []
    for verdicts in nodes.values():
        for plugin in verdicts["filter"]:
            if plugin not in plugins:
                plugins.append(plugin)
    codes: list[list[int]] = []
    reasons: list[dict[str, list[str]]] = []
    for verdicts in nodes.values():
        filters = verdicts["filter"]
        codes.append([FILTER_CODES.index(filters[p]["code"]) if p in filters else -1
                      for p in plugins])
        reasons.append({str(i): filters[p]["reasons"] for i, p in enumerate(plugins)
                        if p in filters and filters[p]["reasons"]})
    scored = scored_winner_first({**attempt, "nodes": nodes})
    score_plugins = list(scored[0][1]["score"]) if scored else []
    trace_id = trace_id_of(engine, run.id)
    inputs = describe_pod(engine, trace_id, key, row.ts_us)
    free = free_capacity(engine, run.id, row.ts_us, exclude_pod=key)
    claims = claim_objects(load_pod_records(engine, run.id, key, kind="claim"))
    groups = rejection_causes(engine, {**attempt, "nodes": nodes}, row.ts_us, inputs, trace_id,
                              free, named=None, claims=claims)
    cause_of = {name: i for i, group in enumerate(groups) for name in group["nodes"]}
    for group in groups:
        group["nodes"] = group["nodes"][:NAMED_NODES]
        group["moreNodes"] = group["count"] - len(group["nodes"])
    detail: dict[str, Any] = {
        **attempt, "pod": key, "run": run.name, "attempt": number, "seq": row.seq,
        "time": format_timestamp(row.ts_us), "t": span.t(row.ts_us),
        "momentText": units.moment(span.t(row.ts_us), row.ts_us),
        "feasible": [name for name, v in nodes.items() if v["feasible"]],
        "filter": {"plugins": plugins, "codes": FILTER_CODES, "nodes": list(nodes),
                   "verdicts": codes, "reasons": reasons,
                   "cause": [cause_of.get(name, -1) for name in nodes]},
        "causes": groups,
        **attempt_sentences(attempt, claims),
        "causesNote": verdict_text.causes_note(attempt, groups),
        "scoresNote": None if scored else verdict_text.scores_note(attempt),
        "scores": {
            "plugins": score_plugins,
            "weights": {p: scored[0][1]["score"][p]["weight"] for p in score_plugins},
            "nodes": [name for name, _ in scored],
            "total": [v["total"] for _, v in scored],
            "raw": [[v["score"][p]["raw"] for p in score_plugins] for _, v in scored],
            "normalized": [[v["score"][p]["normalized"] for p in score_plugins]
                           for _, v in scored],
            "weighted": [[v["score"][p]["weighted"] for p in score_plugins] for _, v in scored],
            "freeCpu": [free.get(name, {}).get("cpu") for name, _ in scored],
            "freeMemory": [free.get(name, {}).get("memory") for name, _ in scored],
            "freeCpuText": [_free_text(free, name, "cpu") for name, _ in scored],
            "freeMemoryText": [_free_text(free, name, "memory") for name, _ in scored],
        },
        "decision": None,
    }
    selected = attempt.get("selectedNode")
    if selected is not None and len(scored) > 1:
        winner = selected
        runner_up = next(name for name, _ in scored if name != winner)
        why, deltas = explain_move({**attempt, "nodes": nodes}, winner, runner_up, "kaudit")
        tie = runner_up in attempt.get("tiedNodes", [])
        detail["decision"] = {
            "winner": winner, "runnerUp": runner_up, "winnerTotal": nodes[winner]["total"],
            "runnerUpTotal": nodes[runner_up]["total"], "deltas": deltas, "summary": why,
            "tie": tie,
            "note": verdict_text.decision_note(nodes[winner]["total"], nodes[runner_up]["total"],
                                               tie, attempt.get("tieBreak")),
        }
    return detail


def _free_text(free: dict[str, dict[str, int]], node: str, resource: str) -> str:
    amount = free.get(node, {}).get(resource)
    return "–" if amount is None else units.quantity(resource, max(amount, 0))


def nodes_from_detail(detail: dict[str, Any]) -> dict[str, Any]:
    """The explain shape (``nodes`` of ``kaudit explain --json``) back from a detail's columns;
    what the tests compare."""
    nodes: dict[str, Any] = {}
    matrix = detail["filter"]
    for name, verdicts, reasons in zip(matrix["nodes"], matrix["verdicts"], matrix["reasons"],
                                       strict=True):
        filters = {plugin: {"code": FILTER_CODES[code],
                            "reasons": reasons.get(str(i), [])}
                   for i, (plugin, code) in enumerate(zip(matrix["plugins"], verdicts,
                                                          strict=True)) if code >= 0}
        nodes[name] = {"filter": filters, "feasible": name in detail["feasible"]}
    scores = detail["scores"]
    for position, name in enumerate(scores["nodes"]):
        entry = nodes.setdefault(name, {"filter": {}, "feasible": True})
        entry["score"] = {plugin: {"raw": scores["raw"][position][i],
                                   "normalized": scores["normalized"][position][i],
                                   "weight": scores["weights"][plugin],
                                   "weighted": scores["weighted"][position][i]}
                          for i, plugin in enumerate(scores["plugins"])}
        entry["total"] = scores["total"][position]
    return nodes
