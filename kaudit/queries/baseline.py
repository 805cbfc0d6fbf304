"""Self-contained run summaries (``--summary-out``), for CI without a database.

A summary holds the trace's identity, the per-pod outcomes and the aggregates of one run, so
``kaudit check`` can replay a new configuration and compare against it with nothing but the
trace, the configuration and this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.errors import InputError
from kaudit.queries.diff import aggregates
from kaudit.queries.outcomes import Outcomes, PodOutcome, run_outcomes
from kaudit.queries.runs import get_run
from kaudit.queries.traces import trace_content_hash
from kaudit.store.traces import get_trace

FORMAT_VERSION = 1


def summary_document(engine: Engine, run_ref: str) -> dict[str, Any]:
    run = get_run(engine, run_ref)
    outcomes = run_outcomes(engine, run.name)
    trace = get_trace(engine, run.trace)
    return {
        "kauditSummary": FORMAT_VERSION, "kaudit": __version__, "kubernetes": KUBERNETES_VERSION,
        "run": run.name, "seed": run.seed,
        "trace": {"name": trace.name, "contentHash": trace_content_hash(engine, trace.id)},
        "configuration": orjson.loads(outcomes.config or "null"),
        "aggregates": aggregates(outcomes),
        "pods": {key: {"node": p.node, "attempts": p.attempts, "preempted": p.preempted,
                       "createdUs": p.created_us, "boundUs": p.bound_us}
                 for key, p in sorted(outcomes.pods.items())},
    }


def write_summary(engine: Engine, run_ref: str, path: Path) -> None:
    path.write_bytes(orjson.dumps(summary_document(engine, run_ref),
                                  option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def load_summary(path: Path) -> tuple[Outcomes, dict[str, Any]]:
    """The baseline's outcomes (a pseudo-run named ``baseline``) and its document."""
    try:
        document = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("kauditSummary") != FORMAT_VERSION:
        raise InputError(f"{path}: not a kaudit run summary (write one with "
                         "`kaudit replay ... --summary-out FILE`)")
    pods = {}
    for key, value in (document.get("pods") or {}).items():
        pods[key] = PodOutcome(key, created_us=value.get("createdUs"), node=value.get("node"),
                               bound_us=value.get("boundUs"),
                               attempts=int(value.get("attempts") or 0),
                               preempted=bool(value.get("preempted")))
    config = orjson.dumps(document.get("configuration"), option=orjson.OPT_SORT_KEYS).decode()
    return Outcomes("baseline", -1, None, pods, config), document
