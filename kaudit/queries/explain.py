"""A pod's whole story in a run, verdict first (the ``kaudit explain`` shape).

The verdict (:mod:`kaudit.queries.verdict`) is computed once here and carried unchanged by the
CLI text, ``--json`` and the pod page's API, so every view states the same answer.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from kaudit.model.timestamps import format_timestamp
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
    verdicts and scores) and other records. Attempt ``shown_attempt`` (when the pod has it)
    also gets its rejected nodes grouped by cause (``causes``), as the decisive one has them
    in the verdict."""
    run, key, records, span = pod_records(engine, run_ref, pod_ref)
    names = node_names(engine, run.id)
    claims = claim_objects(records)
    story: dict[str, Any] = {"run": run.name, "pod": key, "uid": None,
                             "verdict": pod_verdict(engine, run, key, records, span),
                             "recordedNode": None, "boundNode": None, "boundTime": None,
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
            story["attempts"].append({"pod": key, **attempt, "result": document.get("result"),
                                      "time": when, "t": span.t(record.ts_us),
                                      **attempt_sentences(attempt, claims)})
        elif kind == "recorded":
            story["recordedNode"] = node
        elif kind == "bind":
            story["boundNode"], story["boundTime"] = node, when
            if document.get("by") != "kaudit":  # the recorded cluster bound it itself
                story["recordedNode"] = node
        if kind not in ("queue", "attempt"):
            story["events"].append(story_event(record, span))
    decisive = story["verdict"]["decisiveAttempt"]
    attempts = [r for r in records if r.kind == "attempt"]
    if shown_attempt is not None and 0 <= shown_attempt < len(attempts):
        story["attempts"][shown_attempt]["causes"] = (
            story["verdict"]["causes"] if shown_attempt == decisive else attempt_causes(
                engine, run, key, attempts[shown_attempt], story["attempts"][shown_attempt],
                claims))
    if decisive is not None:
        evaluated = story["attempts"][decisive]["nodes"]
        free = free_capacity(engine, run.id, attempts[decisive].ts_us, exclude_pod=key)
        story["decisiveFreeCapacity"] = {name: free[name] for name in evaluated if name in free}
    return story
