"""What-if at a moment of a run: where a new pod would go in the replayed cluster at time t.

The cluster is the one the run simulated at that instant (:func:`kaudit.queries.export.
exported_events` folded up to t: the trace's objects with kaudit's own placements), evaluated
with the run's effective configuration and feature gates exactly as ``kaudit whatif`` evaluates
a pod against a snapshot file: every filter on every node, no sampling. Read-only: nothing is
stored.
"""

from __future__ import annotations

from typing import Any

import yaml
from sqlalchemy import Engine

from kaudit.cluster.generated_claims import with_generated_claims
from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.errors import InputError
from kaudit.eventlog.codec import pack_attempt, unpack_attempt
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.export import exported_events, run_source
from kaudit.queries.instants import resolve_instant
from kaudit.queries.runs import run_configuration
from kaudit.queries.timeline import run_span
from kaudit.scheduler.build import build_scheduler, load_object_config
from kaudit.yaml_limits import BoundedSafeLoader

#: The largest manifest accepted (bytes).
MAX_MANIFEST = 256 * 1024


def parse_manifest(text: str) -> dict[str, Any]:
    """One Pod from JSON or YAML text; clear errors for anything else."""
    if len(text.encode()) > MAX_MANIFEST:
        raise InputError(f"pod manifest: larger than {MAX_MANIFEST // 1024} KiB")
    try:
        documents = [d for d in yaml.load_all(text, Loader=BoundedSafeLoader) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"pod manifest: not valid YAML or JSON{where}: {problem}") from None
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise InputError(f"pod manifest: expected one Pod object, found {len(documents)} "
                         "document(s)")
    pod = documents[0]
    if pod.get("kind") != "Pod":
        raise InputError(f"pod manifest: kind is {pod.get('kind')!r}, expected 'Pod'")
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        raise InputError("pod manifest: metadata.name is required")
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list) \
            or not spec["containers"]:
        raise InputError("pod manifest: spec.containers must list at least one container")
    metadata.setdefault("namespace", "default")
    metadata.setdefault("uid", f"whatif-{metadata['namespace']}-{metadata['name']}")
    spec.pop("nodeName", None)
    return pod


def _gates(engine: Engine, run_id: int) -> str:
    _, gates = run_configuration(engine, run_id)
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in gates.items())


def whatif_at(engine: Engine, run_ref: str, t: str | None, pod: dict[str, Any],
              seed: int = 0) -> dict[str, Any]:
    """``kaudit whatif --json``'s answer for ``pod`` in the run's cluster at ``t`` (seconds
    from the run's start or RFC 3339; the end when None)."""
    source = run_source(engine, run_ref)
    span = run_span(engine, source.run_id)
    at_us = resolve_instant(t, span, "t")
    at_us = span.end_us if at_us is None else at_us
    alive: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event in exported_events(engine, source):
        if event.ts_us > at_us:
            break
        metadata = event.object.get("metadata") or {}
        key = (event.kind, metadata.get("namespace") or "", metadata.get("name") or "")
        if event.type == "DELETED":
            alive.pop(key, None)
        else:
            alive[key] = event.object
    config, registry = load_object_config(source.config, f"run {source.name}'s configuration",
                                          _gates(engine, source.run_id))
    scheduler = build_scheduler(config, registry, seed=seed)
    cluster, _pending = cluster_from_objects(list(alive.values()))
    info = pod_info(cluster, with_generated_claims(cluster, pod))
    framework = scheduler.framework_for(info)
    if framework is None:
        raise InputError(f"pod manifest: spec.schedulerName {info.scheduler_name!r} has no "
                         f"profile in run {source.name} (profiles: "
                         f"{', '.join(config.profiles)})")
    attempt = scheduler.schedule(cluster, info, exhaustive=True)
    if attempt.error:
        raise InputError(f"evaluation failed: {attempt.error}")
    document, blob = pack_attempt(attempt, framework, cluster, cycle=1, number=1)
    names = {slot: cluster.node(slot).name for slot in range(len(cluster.live))
             if cluster.live[slot]}
    details = attempt.post_filter_result.details if attempt.post_filter_result else None
    chosen = getattr(details, "chosen", None)
    return {"run": source.name, "t": span.t(at_us), "time": format_timestamp(at_us),
            "nodes": len(cluster.order), "pod": info.key,
            "evaluation": unpack_attempt(document, blob, names),
            "preemption": None if chosen is None else {
                "node": chosen.node, "victims": [v.key for v in chosen.victims],
                "pdbViolations": chosen.pdb_violations}}
