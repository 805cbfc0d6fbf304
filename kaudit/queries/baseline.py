"""Self-contained run summaries (``--summary-out``), for CI without a database.

A summary holds the trace's identity, the per-pod outcomes and the aggregates of one run, so
``kaudit check`` can replay a new configuration and compare against it with nothing but the
trace, the configuration and this file. The aggregates are read back as stored: some of them
(attempts, allocation, imbalance, fragmentation) come from the run's event log and cannot be
rebuilt from the pods. Any run can be written as one (``kaudit replay --summary-out``,
``kaudit check --baseline-out``, ``kaudit runs summary``, a sweep's cell runs included); a
sweep report is refused with a message saying why (means over seeds, no pods).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit import KUBERNETES_VERSION, __version__
from kaudit.errors import InputError
from kaudit.queries.diff import aggregates
from kaudit.queries.outcomes import Outcomes, PodOutcome, run_outcomes
from kaudit.queries.runs import get_run
from kaudit.queries.traces import trace_content_hash
from kaudit.store.models import Run
from kaudit.store.traces import get_trace

FORMAT_VERSION = 1

#: The replay options a summary records (``replayOptions``), under their names in the
#: document and as :func:`kaudit.replay.run.replay_trace` takes them, with their types: a
#: check replays the candidate under the baseline's, so the two runs differ only by the
#: configuration.
REPLAY_OPTIONS: dict[str, tuple[str, type]] = {
    "lifetime": ("lifetime", str), "recreatePreempted": ("recreate_preempted", bool),
    "bindLatencyUs": ("bind_latency_us", int), "apiLatencyUs": ("api_latency_us", int),
    "victimTerminationUs": ("victim_termination_us", int),
    "cycleDurationUs": ("cycle_duration_us", int), "oneTry": ("one_try", bool),
    "gpuReport": ("gpu_report", bool), "tieBreak": ("tie_break", str),
}


def _replay_options(engine: Engine, run_id: int) -> dict[str, Any]:
    with engine.connect() as connection:
        stored = orjson.loads(connection.execute(
            select(Run.options).where(Run.id == run_id)).scalar_one())
    return {name: stored[field] for name, (field, _) in REPLAY_OPTIONS.items()
            if field in stored}


def summary_document(engine: Engine, run_ref: str) -> dict[str, Any]:
    run = get_run(engine, run_ref)
    outcomes = run_outcomes(engine, run.name)
    trace = get_trace(engine, run.trace)
    return {
        "kauditSummary": FORMAT_VERSION, "kaudit": __version__,
        # The release the run mirrored (summaries written before runs kept it: v1.34.2).
        "kubernetes": run.kubernetes_version or KUBERNETES_VERSION,
        "run": run.name, "seed": run.seed, "replayOptions": _replay_options(engine, run.id),
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


@dataclass(frozen=True)
class Baseline:
    """A run summary read back: its pods as outcomes (a pseudo-run named ``baseline``), the
    aggregates the run stored (read as they are, whatever wrote them) and the document."""

    outcomes: Outcomes
    aggregates: dict[str, Any]
    document: dict[str, Any]
    #: The run's replay options as ``replay_trace`` takes them (empty for a summary written
    #: before they were recorded: the defaults).
    replay_options: dict[str, Any]
    seed: int | None


#: What ``--baseline`` accepts, for error messages.
ACCEPTED = ("a run summary written by `kaudit replay ... --summary-out FILE`, `kaudit check "
            "... --baseline-out FILE` or `kaudit runs summary RUN FILE`")


def _not_a_summary(path: Path, document: Any) -> InputError:
    if isinstance(document, dict) and "sweep" in document and "comparisons" in document:
        return InputError(
            f"{path}: a sweep report, not a run summary: its values are means over seeds "
            "with no pods to compare a run with; check a sweep with `kaudit check --sweep "
            "SPEC`, or write one of its runs (`kaudit sweep report` lists them) as a baseline "
            "with `kaudit runs summary RUN FILE`")
    return InputError(f"{path}: not a kaudit run summary; a baseline is {ACCEPTED}")


def load_summary(path: Path) -> Baseline:
    """The baseline of ``kaudit check``; :class:`InputError` for anything but a run summary
    (naming the field that is wrong)."""
    try:
        document = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("kauditSummary") != FORMAT_VERSION:
        raise _not_a_summary(path, document)
    stored = document.get("aggregates")
    if not isinstance(stored, dict):
        raise InputError(f"{path}: aggregates: expected the run's aggregates (a mapping), got "
                         f"{type(stored).__name__}; regenerate the baseline")
    raw_pods = document.get("pods") or {}
    if not isinstance(raw_pods, dict):
        raise InputError(f"{path}: pods: expected a mapping of pod to outcome")
    pods = {}
    for key, value in raw_pods.items():
        if not isinstance(value, dict):
            raise InputError(f"{path}: pods.{key}: expected a mapping")
        pods[key] = PodOutcome(key, created_us=value.get("createdUs"), node=value.get("node"),
                               bound_us=value.get("boundUs"),
                               attempts=int(value.get("attempts") or 0),
                               preempted=bool(value.get("preempted")))
    config = orjson.dumps(document.get("configuration"), option=orjson.OPT_SORT_KEYS).decode()
    seed = document.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InputError(f"{path}: seed: expected an integer, got {seed!r}")
    release = document.get("kubernetes")
    if release is not None and not isinstance(release, str):
        raise InputError(f"{path}: kubernetes: expected a Kubernetes release, got {release!r}")
    return Baseline(Outcomes("baseline", -1, None, pods, config, kubernetes_version=release),
                    stored, document,
                    _read_replay_options(path, document.get("replayOptions") or {}), seed)


def _read_replay_options(path: Path, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InputError(f"{path}: replayOptions: expected a mapping")
    options = {}
    for name, value in raw.items():
        if name not in REPLAY_OPTIONS:
            raise InputError(f"{path}: replayOptions.{name}: unknown option; one of "
                             f"{', '.join(REPLAY_OPTIONS)}")
        field, kind = REPLAY_OPTIONS[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InputError(f"{path}: replayOptions.{name}: expected "
                             f"{'a boolean' if kind is bool else kind.__name__}, got "
                             f"{value!r}")
        options[field] = value
    return options
