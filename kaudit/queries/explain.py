"""A pod's whole story in a run, verdict first (the ``kaudit explain`` shape).

The verdict (:mod:`kaudit.queries.verdict`) is computed once here and carried unchanged by the
CLI text, ``--json`` and the pod page's API, so every view states the same answer.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from kaudit.model.timestamps import format_timestamp
from kaudit.queries import units
from kaudit.queries.decision_inputs import free_capacity
from kaudit.queries.runs import node_names
from kaudit.queries.verdict import (
    attempt_causes,
    attempt_sentences,
    claim_objects,
    pod_records,
    pod_verdict,
    story_event,
    unpack,
)


def explain_pod(engine: Engine, run_ref: str, pod_ref: str,
                shown_attempt: int | None = None) -> dict[str, Any]:
    """A pod's whole story in a run: its verdict, queue transitions, attempts in full (per-node
    verdicts and scores) and other records. Attempts are numbered from 1 (``attempt``, as the
    records number them; the verdict's ``decisiveAttempt`` is one of those numbers). Attempt
    number ``shown_attempt`` (when the pod has it) also gets its rejected nodes grouped by
    cause (``causes``), as the decisive one has them in the verdict."""
    run, key, records, span = pod_records(engine, run_ref, pod_ref)
    names = node_names(engine, run.id)
    claims = claim_objects(records)
    story: dict[str, Any] = {"run": run.name, "pod": key, "uid": None,
                             "verdict": pod_verdict(engine, run, key, records, span),
                             "recordedNode": None, "boundNode": None, "boundTime": None,
                             "boundMoment": None,
                             "queue": [], "attempts": [], "events": []}
    for record in records:
        document, kind, node = record.document, record.kind, record.node
        when = format_timestamp(record.ts_us)
        if kind == "queue":
            story["queue"].append({"time": when, "t": span.t(record.ts_us),
                                   "from": document["from"], "to": document["to"],
                                   "event": document["event"]})
        elif kind == "attempt":
            attempt = unpack(document, record.blob, names)
            story["attempts"].append({"pod": key, "attempt": len(story["attempts"]) + 1,
                                      **attempt, "result": document.get("result"),
                                      "momentText": units.moment(span.t(record.ts_us),
                                                                 record.ts_us),
                                      "time": when, "t": span.t(record.ts_us),
                                      **attempt_sentences(attempt, claims)})
        elif kind == "recorded":
            story["recordedNode"] = node
        elif kind == "bind":
            story["boundNode"], story["boundTime"] = node, when
            story["boundMoment"] = units.moment(span.t(record.ts_us), record.ts_us)
            if document.get("by") != "kaudit":  # the recorded cluster bound it itself
                story["recordedNode"] = node
        if kind not in ("queue", "attempt"):
            story["events"].append(story_event(record, span))
    number = story["verdict"]["decisiveAttempt"]
    decisive = None if number is None else number - 1
    attempts = [r for r in records if r.kind == "attempt"]
    shown = None if shown_attempt is None else shown_attempt - 1
    if shown is not None and 0 <= shown < len(attempts):
        story["attempts"][shown]["causes"] = (
            story["verdict"]["causes"] if shown == decisive else attempt_causes(
                engine, run, key, attempts[shown], story["attempts"][shown], claims))
    if decisive is not None:
        evaluated = story["attempts"][decisive]["nodes"]
        free = free_capacity(engine, run.id, attempts[decisive].ts_us, exclude_pod=key)
        story["decisiveFreeCapacity"] = {name: free[name] for name in evaluated if name in free}
    return story
