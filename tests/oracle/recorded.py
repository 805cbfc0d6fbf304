"""What upstream's scheduler did to a sequence scenario, as a kaudit native trace.

The oracle's ``sequence`` program, asked with ``"history": true``
(:func:`run_with_history`), answers with every change its fake API server made to a Pod, in
order: the pending pods' creations, the bindings (``spec.nodeName`` and ``PodScheduled=True``,
as the API server's binding storage sets them), the scheduler's status patches
(``PodScheduled=False`` with its message, ``nominatedNodeName``, the victims'
``DisruptionTarget``) and the deletions, each at its time in microseconds since the informers
were synced. :func:`recorded_trace` turns a scenario and that answer into the lines of a
native trace (``docs/trace-format.md``): the scenario's objects at 0, then the history, so the
trace's recorded placements are upstream's decisions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.oracle.compare import sequence_events
from tests.oracle.conftest import run_sequence
from tests.oracle.generators import sequence_request

JSON = dict[str, Any]


def run_with_history(oracle_program: Path, scenario: JSON, **options: Any) -> JSON:
    """One ``sequence`` run of ``scenario`` with its history: ``{"pods", "history"}`` or
    ``{"error"}``. ``options`` are :func:`sequence_request`'s (``prefer``,
    ``sync_preemption``)."""
    request = {**sequence_request(scenario, **options), "history": True}
    return run_sequence(oracle_program, request)


def _unbound_pods(objects: list[JSON]) -> list[str]:
    return [f"{(o.get('metadata') or {}).get('namespace') or 'default'}/"
            f"{(o.get('metadata') or {}).get('name')}"
            for o in objects
            if o.get("kind") == "Pod" and not (o.get("spec") or {}).get("nodeName")]


def recorded_trace(scenario: JSON, answer: JSON) -> list[JSON]:
    """The native trace lines (``{"ts", "type", "object"}``) of what the oracle did: the
    scenario's objects at 0 (other kinds, then nodes, then bound pods, as
    :func:`sequence_events` orders them), then the answer's history at ``us`` / 10⁶ seconds
    (the pending pods' creations included). Raises ``ValueError`` when the answer has no
    history, when its times go backwards, or when the scenario's objects hold an unbound pod
    (the oracle would schedule it too, but its creation is not in the history)."""
    if "error" in answer:
        raise ValueError(f"the oracle failed: {answer['error']}")
    history = answer.get("history")
    if not isinstance(history, list):
        raise ValueError("the answer has no 'history' (ask the oracle with \"history\": true)")
    unbound = _unbound_pods(scenario["objects"])
    if unbound:
        raise ValueError(f"scenario objects: pods without spec.nodeName {unbound}; pending "
                         "pods belong in 'pending'")
    lines: list[JSON] = [{"ts": 0, "type": event.type, "object": event.object}
                         for event in sequence_events({**scenario, "pending": []})]
    last_us = 0
    for index, event in enumerate(history):
        us = event["us"]
        if not isinstance(us, int) or us < last_us:
            raise ValueError(f"history[{index}].us: {us!r} is not an integer at or after the "
                             f"previous event's {last_us}")
        last_us = us
        lines.append({"ts": us / 1_000_000, "type": event["type"], "object": event["object"]})
    return lines


def write_recorded_trace(path: Path, scenario: JSON, answer: JSON) -> Path:
    """Write :func:`recorded_trace` to ``path`` as JSON Lines; returns ``path``."""
    lines = recorded_trace(scenario, answer)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path
