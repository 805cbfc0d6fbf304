"""What-if: where would this pod go, and why? One evaluation for both doors.

``kaudit whatif`` (a cluster state file) and the history page (``POST
/api/v1/runs/RUN/whatif``, the run's cluster at a moment) ask the same question, so they read
the pod manifest with the same parser (:func:`parse_pod_manifest`: the ingest validators of
:mod:`kaudit.readers.validate`, so a bad field is refused with the same message at both doors)
and evaluate it with the same function (:func:`evaluate_pod`): the configured profile's
scheduling cycle run exhaustively (every filter on every node, every feasible node scored, no
sampling), as kube-scheduler v1.34.2's ``schedulePod`` (``pkg/scheduler/schedule_one.go``) would
decide, packed and unpacked through the attempt codec so that the answer has the shape of
``kaudit explain``'s. Nothing is stored.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml
from sqlalchemy import Engine

from kaudit.cluster.generated_claims import with_generated_claims
from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.cluster.state import ClusterState
from kaudit.config.model import SchedulerConfiguration
from kaudit.errors import InputError
from kaudit.eventlog.codec import pack_attempt
from kaudit.framework.plugin import Plugin
from kaudit.input_limits import (
    TOO_DEEP,
    ValueLimitError,
    load_json,
    load_yaml_documents,
)
from kaudit.queries import verdict_text
from kaudit.queries.decision_inputs import pod_inputs
from kaudit.queries.verdict import grouped_causes, placement_reason, unpack
from kaudit.queries.whatif import run_moment
from kaudit.readers.validate import ObjectError, type_name, validate_object
from kaudit.scheduler.build import build_scheduler, load_object_config
from kaudit.services.versions import carry_gates, exact_release, resolve_version

#: The largest manifest accepted (bytes), at both doors.
MAX_MANIFEST = 256 * 1024
#: How the API names the manifest it was sent (the CLI names the file).
POD_MANIFEST = "pod manifest"


# ----------------------------------------------------------------------------- the manifest

def check_manifest_size(size: int, source: str) -> None:
    """Refuse a manifest of ``size`` bytes beyond :data:`MAX_MANIFEST` before reading it."""
    if size > MAX_MANIFEST:
        raise InputError(f"{source}: larger than {MAX_MANIFEST // 1024} KiB; a Pod manifest "
                         "is a few KiB")


def _documents(content: bytes, source: str) -> list[Any]:
    if content.lstrip()[:1] in (b"{", b"["):
        try:
            return [load_json(content)]
        except ValueLimitError as exc:
            raise InputError(f"{source}: {exc}") from None
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{source}: not valid JSON at line {exc.lineno}, column "
                             f"{exc.colno}: {exc.msg}") from None
    try:
        return load_yaml_documents(content)
    except ValueLimitError as exc:
        raise InputError(f"{source}: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: not valid YAML or JSON: {TOO_DEEP}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{source}: not valid YAML or JSON{where}: {problem}") from None


def _objects(documents: list[Any]) -> Iterator[tuple[str, Any]]:
    """(field path, object) of every object: a document, or each item of a List."""
    for number, doc in enumerate(documents):
        prefix = f"documents[{number}]." if len(documents) > 1 else ""
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") \
                and isinstance(doc.get("items"), list):
            for index, item in enumerate(doc["items"]):
                yield f"{prefix}items[{index}]", item
        else:
            yield prefix.rstrip(".") or "document", doc


def _non_string_key(value: Any, path: str) -> str | None:
    """The first mapping key that is not a string (YAML allows ``{1: x}``; the Kubernetes
    API does not), as ``path: key ...``; None when every key is a string."""
    stack = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    return f"{where}: key {key!r} must be a string, not {type_name(key)}"
                stack.append((item, f"{where}.{key}"))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{index}]") for index, item in enumerate(node))
    return None


def parse_pod_manifest(content: bytes | str, source: str) -> dict[str, Any]:
    """The one Pod of a manifest (JSON or YAML: the Pod, or a List holding only it), checked
    as ingest checks a Pod; :class:`InputError` naming ``source`` and the field otherwise.

    The pod is made a newcomer: ``default`` namespace and a uid when it has none, and no
    ``spec.nodeName`` (a what-if asks where the scheduler would put it).
    """
    data = content.encode() if isinstance(content, str) else content
    check_manifest_size(len(data), source)
    if not data.strip():
        raise InputError(f"{source}: empty; expected one Pod as JSON or YAML")
    objects = list(_objects(_documents(data, source)))
    if len(objects) != 1:
        raise InputError(f"{source}: expected one Pod, found {len(objects)} objects")
    where, pod = objects[0]
    if not isinstance(pod, dict):
        raise InputError(f"{source}: {where}: expected a Pod object, not {type_name(pod)}")
    kind = pod.get("kind")
    if isinstance(kind, str) and kind and kind != "Pod":
        raise InputError(f"{source}: {where}.kind: {kind!r}, expected 'Pod'")
    bad_key = _non_string_key(pod, where)
    if bad_key is not None:
        raise InputError(f"{source}: {bad_key}")
    try:
        validate_object(pod, "ADDED")
    except ObjectError as exc:
        raise InputError(f"{source}: {str(exc).replace('object', where, 1)}") from None
    metadata = pod["metadata"]
    metadata.setdefault("namespace", "default")
    metadata.setdefault("uid", f"whatif-{metadata['namespace']}-{metadata['name']}")
    pod["spec"].pop("nodeName", None)
    return pod


def read_pod_manifest(path: Path) -> dict[str, Any]:
    """:func:`parse_pod_manifest` of a file, named by its path."""
    check_manifest_size(path.stat().st_size, str(path))
    with path.open("rb") as stream:
        return parse_pod_manifest(stream.read(MAX_MANIFEST + 1), str(path))


# ----------------------------------------------------------------------------- the evaluation

@dataclass(frozen=True)
class WhatIfReport:
    """The evaluation of one pod against one cluster."""

    pod: str
    #: Nodes in the cluster (evaluated or not).
    node_count: int
    #: ``kaudit explain``'s shape of one attempt: verdicts, scores, selected node, message.
    evaluation: dict[str, Any]
    #: The nomination preemption would make (node, victims, PDB violations), or None.
    preemption: dict[str, Any] | None
    #: The rejected nodes grouped by concrete cause, as ``kaudit explain`` groups an
    #: attempt's (:func:`kaudit.queries.verdict.grouped_causes`).
    causes: list[dict[str, Any]]
    #: The answer in sentences of :mod:`kaudit.queries.verdict_text`, for every door.
    sentences: dict[str, str | None]
    #: The Kubernetes release whose kube-scheduler evaluated the pod.
    kubernetes_version: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"nodes": self.node_count, "pod": self.pod, "evaluation": self.evaluation,
                "preemption": self.preemption, "causes": self.causes,
                "sentences": self.sentences, "kubernetesVersion": self.kubernetes_version}


def _sentences(pod: str, evaluation: dict[str, Any], causes: list[dict[str, Any]],
               preemption: dict[str, Any] | None) -> dict[str, str | None]:
    selected = evaluation.get("selectedNode")
    return {
        "headline": verdict_text.whatif_headline(
            pod, evaluation, placement_reason(evaluation, selected) if selected else None),
        "nodeCounts": verdict_text.node_counts(evaluation),
        "causesTitle": verdict_text.causes_title(evaluation),
        "causesNote": verdict_text.causes_note(evaluation, causes),
        "selection": verdict_text.selection(selected, evaluation.get("tiedNodes") or [],
                                            evaluation.get("tieBreak")) if selected else None,
        "preemption": verdict_text.whatif_preemption(preemption) if preemption else None,
    }


def _claims(cluster: ClusterState, evaluation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The pod's ResourceClaims in the evaluated cluster, by ``namespace/name``."""
    notes = (evaluation.get("pluginNotes") or {}).get("DynamicResources") or {}
    claims = {}
    for request in notes.get("requests") or []:
        namespace, _, name = str(request.get("claim") or "").partition("/")
        found = cluster.get_object("ResourceClaim", namespace, name)
        if found is not None:
            claims[f"{namespace}/{name}"] = found
    return claims


def evaluate_pod(objects: list[dict[str, Any]], pod: dict[str, Any],
                 config: SchedulerConfiguration, registry: dict[str, type[Plugin]], *,
                 pod_source: str, seed: int = 0, candidates: Sequence[str] | None = None,
                 ) -> WhatIfReport:
    """Evaluate ``pod`` (from :func:`parse_pod_manifest`, named ``pod_source`` in errors)
    against the cluster of ``objects`` with ``config``, exhaustively. ``candidates`` limits
    the nodes evaluated; the others stay in the cluster and count as failed filtering."""
    scheduler = build_scheduler(config, registry, seed=seed)
    cluster, _pending = cluster_from_objects(objects, config.feature_gates)
    info = pod_info(cluster, with_generated_claims(cluster, pod))
    framework = scheduler.framework_for(info)
    if framework is None:
        raise InputError(f"{pod_source}: spec.schedulerName {info.scheduler_name!r} has no "
                         f"profile in {config.source or 'the default configuration'} "
                         f"(profiles: {', '.join(config.profiles)})")
    if candidates:
        unknown = [name for name in candidates if name not in cluster.slot_of]
        if unknown:
            raise InputError(f"candidate nodes: no such node(s): {', '.join(unknown)}")
    free = cluster.free_by_node()
    attempt = scheduler.schedule(cluster, info, exhaustive=True,
                                 candidates=list(candidates) if candidates else None)
    if attempt.error:
        raise InputError(f"evaluation failed: {attempt.error}")
    document, blob = pack_attempt(attempt, framework, cluster, cycle=1, number=1)
    names = {slot: cluster.node(slot).name for slot in range(len(cluster.live))
             if cluster.live[slot]}
    details = attempt.post_filter_result.details if attempt.post_filter_result else None
    chosen = getattr(details, "chosen", None)
    evaluation = unpack(document, blob, names)
    preemption = None if chosen is None else {
        "node": chosen.node, "victims": [victim.key for victim in chosen.victims],
        "pdbViolations": chosen.pdb_violations}
    causes = grouped_causes(
        evaluation, pod_inputs(pod, info.priority),
        lambda wanted: {n: cluster.node(cluster.slot_of[n]).obj for n in wanted
                        if n in cluster.slot_of},
        free, claims=_claims(cluster, evaluation))
    return WhatIfReport(pod=info.key, node_count=len(cluster.order), evaluation=evaluation,
                        preemption=preemption, causes=causes,
                        sentences=_sentences(info.key, evaluation, causes, preemption),
                        kubernetes_version=config.feature_gates.version.name)


#: How the what-if API names the release it is asked for.
VERSION_FIELD = "kubernetesVersion"


def evaluate_pod_at(engine: Engine, run_ref: str, t: str | None, pod: dict[str, Any], *,
                    pod_source: str = POD_MANIFEST, seed: int = 0,
                    kubernetes_version: str | None = None) -> dict[str, Any]:
    """:func:`evaluate_pod` in the cluster run ``run_ref`` simulated at ``t`` (seconds from
    its start or RFC 3339; its end when None), with the run's configuration and gates, as
    the release ``kubernetes_version`` names, else the run's (by the rule of
    :mod:`kaudit.services.versions`: the run's release stands for the trace's). Under another
    release than the run's, the gates the run set away from its release's defaults are carried
    over; those the release cannot take are left out, and the answer's ``notices`` say so."""
    moment = run_moment(engine, run_ref, t)
    owner = f"run '{moment.run}'"
    release = resolve_version(kubernetes_version, moment.kubernetes_version,
                              field=VERSION_FIELD, subject=f"{owner} was replayed as")
    gates, carried = carry_gates(moment.gate_values, exact_release(moment.kubernetes_version),
                                 release.version, owner)
    config, registry = load_object_config(moment.config, f"run {moment.run}'s configuration",
                                          gates)
    report = evaluate_pod(moment.objects, pod, config, registry, pod_source=pod_source,
                          seed=seed)
    return {"run": moment.run, "t": moment.t, "time": moment.time, **report.as_json(),
            "notices": [*release.notices, *carried]}
