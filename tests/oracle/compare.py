"""kaudit's side of the differential tests: the same scenarios as the upstream oracle, decided
by kaudit, in the oracle's shape, and compared field by field.

*Cycles.* :func:`whatif_report` evaluates a cycle scenario as ``kaudit whatif --json`` does
(:func:`kaudit.services.whatif.evaluate_pod`, in-process: the objects checked as ingest checks
them, the pod parsed as the what-if door parses it); a scenario with pending pods nominated to
a node evaluates the pod with those nominations known to the scheduler and its
DefaultPreemption, as upstream's queue would hold them (``pkg/scheduler/schedule_one.go``,
``framework.go``'s ``RunFilterPluginsWithNominatedPods``). :func:`node_verdict` and
:func:`expect_of` map the report to the oracle's ``expect`` (the shape of the upstream-oracle
README: the first failing filter per node or the weighted scores, the top-scoring nodes, the
FitError message, PostFilter and DefaultPreemption's outcome); :func:`compare_cycle` lists,
per field, what differs.

*Sequences.* :func:`replay_sequence` replays a sequence scenario with kaudit's replay engine
(the cluster and every pending pod at one instant, in creation order, into an in-memory event
log) and reads each pod's fate: its node, its last failure message, its nomination, whether
preemption deleted it, and the nodes tied at the top when it was placed.
:func:`compare_sequence` compares that with the oracle's answer exactly and modulo ties.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
import yaml

from kaudit.cluster.generated_claims import with_generated_claims
from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.config import parse_feature_gates
from kaudit.config.model import SchedulerConfiguration
from kaudit.eventlog.codec import pack_attempt
from kaudit.eventlog.records import RecordKind
from kaudit.eventlog.sink import MemorySink
from kaudit.framework.plugin import Plugin
from kaudit.framework.ports import HandlePorts
from kaudit.queries.verdict import unpack
from kaudit.readers.validate import validate_object
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.scheduler.build import build_scheduler, load, load_object_config, scheduler_factory
from kaudit.scheduler.nominator import Nominator
from kaudit.services.whatif import evaluate_pod, parse_pod_manifest
from kaudit.store.traces import StoredEvent
from tests.oracle.release import RELEASE, release_gate

JSON = dict[str, Any]

#: Fields of a cycle comparison, in report order (the summary counts agreement per field).
CYCLE_FIELDS = ("nodes.verdict", "nodes.scores", "preFilter", "maxNodes", "maxScore",
                "selectedNode", "message", "postFilterCode", "nominatedNode",
                "preemption.eligible", "preemption.nominatedNode", "preemption.victims",
                "preemption.numPDBViolations", "preemption.candidates",
                "preemption.tiedNodes")
#: Fields of a sequence comparison (per pod).
SEQUENCE_FIELDS = ("node", "message", "nominated", "deleted")


# ----------------------------------------------------------------------------- configuration

@functools.lru_cache(maxsize=32)
def _config(text: str | None, feature_gates: str | None = None
            ) -> tuple[SchedulerConfiguration, dict[str, type[Plugin]]]:
    gates = parse_feature_gates(feature_gates or "", RELEASE)
    if text is None:
        return load(None, gates)
    return load_object_config(yaml.safe_load(text), "scenario configuration", gates)


def config_for(text: str | None, feature_gates: str | None = None
               ) -> tuple[SchedulerConfiguration, dict[str, type[Plugin]]]:
    """The configuration (YAML text, None for the defaults) and registry, loaded once."""
    return _config(text, feature_gates)


def checked(objects: Iterable[JSON]) -> list[JSON]:
    """``objects`` as a snapshot is read: each validated as ingest validates it (what the
    API server would refuse is refused here too, naming the object)."""
    out = []
    for obj in objects:
        validate_object(obj, "ADDED")
        out.append(obj)
    return out


# ----------------------------------------------------------------------------- cycles

def whatif_report(scenario: JSON, *, seed: int = 0) -> JSON:
    """kaudit's evaluation of a cycle scenario in ``kaudit whatif --json``'s shape (the
    evaluation: ``nodes``, ``preFilter``, ``tiedNodes``, ``selectedNode``, ``message``,
    ``postFilter``, ``preemption``...)."""
    gates = scenario.get("featureGates") or {}
    config, registry = config_for(scenario.get("config"), ",".join(
        f"{name}={str(on).lower()}" for name, on in sorted(gates.items())) or None)
    objects = checked(orjson.loads(orjson.dumps(scenario["objects"])))
    pod = parse_pod_manifest(orjson.dumps(scenario["pod"]), "pod")
    nominated = [o for o in objects if o.get("kind") == "Pod"
                 and not (o.get("spec") or {}).get("nodeName")
                 and (o.get("status") or {}).get("nominatedNodeName")]
    if not nominated:
        report = evaluate_pod(objects, pod, config, registry, pod_source="pod",
                              seed=seed).evaluation
    else:
        report = _evaluate_with_nominations(objects, pod, config, registry, seed)
    own = (pod.get("status") or {}).get("nominatedNodeName")
    if own:
        # ``whatif`` filters and scores every node; a cycle would try this node first and,
        # when it passes, take it without scoring (``evaluateNominatedNode``).
        report["incomingNominatedNode"] = own
    return report


def _evaluate_with_nominations(objects: list[JSON], pod: JSON, config: SchedulerConfiguration,
                               registry: dict[str, type[Plugin]], seed: int) -> JSON:
    """:func:`evaluate_pod`'s evaluation with the pending pods' nominations in the
    scheduler's nominator (upstream's queue adds a pod with ``status.nominatedNodeName`` to
    its nominator when the informer delivers it)."""
    cluster, pending = cluster_from_objects(objects, config.feature_gates)
    nominator = Nominator()
    for waiting in pending:
        if waiting.nominated_node_name and waiting.nominated_node_name in cluster.slot_of:
            nominator.add(waiting, waiting.nominated_node_name, cluster)
    scheduler = build_scheduler(config, registry, seed=seed,
                                ports=HandlePorts(cluster=cluster, nominator=nominator))
    info = pod_info(cluster, with_generated_claims(cluster, pod))
    framework = scheduler.framework_for(info)
    assert framework is not None, f"no profile for {info.scheduler_name}"
    attempt = scheduler.schedule(cluster, info, exhaustive=True, nominator=nominator)
    assert not attempt.error, attempt.error
    document, blob = pack_attempt(attempt, framework, cluster, cycle=1, number=1)
    names = {slot: cluster.node(slot).name for slot in range(len(cluster.live))
             if cluster.live[slot]}
    return unpack(document, blob, names)


def rejecting_pre_filter(report: JSON) -> tuple[str, JSON] | None:
    """The PreFilter status that rejected the pod, as upstream's ``RunPreFilterPlugins``
    returns it: the first ``UnschedulableAndUnresolvable`` (it stops there), else the last
    ``Unschedulable`` (every PreFilter runs then); None when none rejected."""
    rejected = [(plugin, status) for plugin, status in report["preFilter"].items()
                if status["code"] not in ("Success", "Skip")]
    unresolvable = [r for r in rejected if r[1]["code"] == "UnschedulableAndUnresolvable"]
    if unresolvable:
        return unresolvable[0]
    return rejected[-1] if rejected else None


def node_verdict(report: JSON, name: str) -> JSON:
    """kaudit's answer for one node in the oracle's shape: the first failing filter in the
    profile's order, or the scores of a feasible node."""
    node = report["nodes"].get(name)
    if node is None:
        rejection = rejecting_pre_filter(report)
        if rejection is not None:
            plugin, status = rejection
            return {"feasible": False, "plugin": plugin, "code": status["code"],
                    "reasons": status["reasons"]}
        restricting = sorted(p for p, s in report["preFilter"].items() if "nodeNames" in s)
        return {"feasible": False, "plugin": "<PreFilterResult>",
                "code": "UnschedulableAndUnresolvable",
                "reasons": [f"node(s) didn't satisfy plugin(s) [{' '.join(restricting)}]"]}
    if not node["feasible"]:
        plugin, status = next((p, s) for p, s in node["filter"].items()
                              if s["code"] not in ("Success", "Skip"))
        return {"feasible": False, "plugin": plugin, "code": status["code"],
                "reasons": status["reasons"]}
    verdict: JSON = {"feasible": True}
    if "total" in node:
        verdict["scores"] = {p: v["weighted"] for p, v in node["score"].items()}
        verdict["total"] = node["total"]
    return verdict


def pre_filter_of(report: JSON) -> JSON | None:
    """The oracle's ``preFilter``: the rejecting status (``plugin``, ``code``, ``reasons``),
    or the nodes the PreFilterResults kept and the plugins that restricted them (``nodes``,
    ``plugins``); None when PreFilter neither rejected nor restricted."""
    rejection = rejecting_pre_filter(report)
    if rejection is not None:
        plugin, status = rejection
        return {"plugin": plugin, "code": status["code"], "reasons": status["reasons"]}
    restricting = {p: set(s["nodeNames"]) for p, s in report["preFilter"].items()
                   if "nodeNames" in s}
    if not restricting:
        return None
    kept = set.intersection(*restricting.values())
    return {"nodes": sorted(kept), "plugins": sorted(restricting)}


def expect_of(report: JSON, node_names: Iterable[str]) -> JSON:
    """kaudit's report in the oracle's ``expect`` shape, for the nodes ``node_names``."""
    nodes = {name: node_verdict(report, name) for name in node_names}
    feasible = {n: v["total"] for n, v in nodes.items() if v["feasible"] and "total" in v}
    top = max(feasible.values()) if feasible else None
    expect: JSON = {"nodes": nodes,
                    "maxNodes": sorted(n for n, t in feasible.items() if t == top),
                    "maxScore": top, "message": report["message"]}
    own = report.get("incomingNominatedNode")
    if own in feasible:
        expect.update(nominatedNodeFits=own, maxNodes=[own], maxScore=feasible[own])
    pre_filter = pre_filter_of(report)
    if pre_filter is not None:
        expect["preFilter"] = pre_filter
    if "postFilter" in report:
        expect["postFilterCode"] = report["postFilter"]["code"]
        got = report.get("preemption")
        if got is not None:
            if got.get("nominatedNode"):
                expect["nominatedNode"] = got["nominatedNode"]
            expect["preemption"] = {
                "eligible": got["eligible"], "nominatedNode": got["nominatedNode"],
                "victims": got["victims"], "numPDBViolations": got["pdbViolations"],
                "tiedNodes": sorted(got["tiedNodes"]),
                "candidates": {c["node"]: {"victims": c["victims"],
                                           "numPDBViolations": c["pdbViolations"]}
                               for c in got["candidateNodes"]}}
    return expect


def _node_diff(name: str, want: JSON, got: JSON) -> tuple[list[str], list[str]]:
    """(verdict differences, score differences) of one node."""
    verdict, scores = [], []
    if want.get("feasible") != got.get("feasible"):
        verdict.append(f"{name}: feasible upstream={want.get('feasible')} "
                       f"kaudit={got.get('feasible')} (upstream {_short(want)}; "
                       f"kaudit {_short(got)})")
    elif not want.get("feasible"):
        for key in ("plugin", "code", "reasons"):
            if want.get(key) != got.get(key):
                verdict.append(f"{name}: {key} upstream={want.get(key)!r} "
                               f"kaudit={got.get(key)!r}")
    else:
        ws, gs = want.get("scores") or {}, got.get("scores") or {}
        for plugin in sorted(set(ws) | set(gs)):
            if ws.get(plugin) != gs.get(plugin):
                scores.append(f"{name}: {plugin} upstream={ws.get(plugin)} "
                              f"kaudit={gs.get(plugin)}")
        if want.get("total") != got.get("total"):
            scores.append(f"{name}: total upstream={want.get('total')} "
                          f"kaudit={got.get('total')}")
    return verdict, scores


def _short(verdict: JSON) -> str:
    if verdict.get("feasible"):
        return f"feasible, total {verdict.get('total')}"
    return f"{verdict.get('plugin')} {verdict.get('code')} {verdict.get('reasons')}"


def compare_cycle(want: JSON, report: JSON) -> dict[str, list[str]]:
    """Every field of :data:`CYCLE_FIELDS` mapped to its differences between upstream's
    ``expect`` and kaudit's ``report`` (an empty list: the field agrees)."""
    got = expect_of(report, want["nodes"])
    diff: dict[str, list[str]] = {name: [] for name in CYCLE_FIELDS}
    extra = sorted(set(report["nodes"]) - set(want["nodes"]))
    if extra:
        diff["nodes.verdict"].append(f"kaudit evaluated nodes upstream does not know: {extra}")
    for name in want["nodes"]:
        verdict, scores = _node_diff(name, want["nodes"][name], got["nodes"][name])
        diff["nodes.verdict"] += verdict
        diff["nodes.scores"] += scores
    if want.get("preFilter") != got.get("preFilter"):
        diff["preFilter"].append(f"upstream={want.get('preFilter')} "
                                 f"kaudit={got.get('preFilter')}")
    if sorted(want.get("maxNodes") or []) != got["maxNodes"]:
        diff["maxNodes"].append(f"upstream={sorted(want.get('maxNodes') or [])} "
                                f"kaudit={got['maxNodes']}")
    if (want.get("maxScore") if want.get("maxNodes") else None) != got["maxScore"]:
        diff["maxScore"].append(f"upstream={want.get('maxScore')} kaudit={got['maxScore']}")
    selected = got.get("nominatedNodeFits") or report.get("selectedNode")
    if "selectedNode" in want and not want.get("nominatedNodeFits") \
            and want["selectedNode"] != selected:
        # From v1.35 upstream's choice among tied nodes is its score heap's root, no coin.
        diff["selectedNode"].append(f"upstream selects {want['selectedNode']}, kaudit "
                                    f"{selected}")
    if want.get("nominatedNodeFits") != got.get("nominatedNodeFits"):
        diff["selectedNode"].append(f"nominated node passing first: upstream="
                                    f"{want.get('nominatedNodeFits')} kaudit="
                                    f"{got.get('nominatedNodeFits')}")
    if want.get("maxNodes"):
        if selected not in want["maxNodes"]:
            diff["selectedNode"].append(f"kaudit selected {selected}, not among upstream's "
                                        f"top nodes {want['maxNodes']}")
    elif selected is not None:
        diff["selectedNode"].append(f"kaudit selected {selected}; upstream finds no node")
    if want.get("message") != got["message"]:
        diff["message"].append(f"upstream={want.get('message')!r} kaudit={got['message']!r}")
    if want.get("postFilterCode") != got.get("postFilterCode"):
        diff["postFilterCode"].append(f"upstream={want.get('postFilterCode')} "
                                      f"kaudit={got.get('postFilterCode')}")
    w, g = want.get("preemption"), got.get("preemption")
    tied = sorted((w or {}).get("tiedNodes") or [])
    if want.get("nominatedNode") != got.get("nominatedNode") and not (
            got.get("nominatedNode") in tied and len(tied) > 1):
        # Upstream nominates one of its tied candidates at random.
        diff["nominatedNode"].append(f"upstream={want.get('nominatedNode')} "
                                     f"kaudit={got.get('nominatedNode')}")
    if "preemptionError" in want:
        pass  # upstream's dry run failed: no detail to compare (PostFilter's message says it)
    elif (w is None) != (g is None):
        diff["preemption.eligible"].append(f"preemption upstream={w} kaudit={g}")
    elif w is not None and g is not None:
        ties = sorted(w.get("tiedNodes") or [])
        chosen = w
        if g.get("nominatedNode") != w.get("nominatedNode") and g.get("nominatedNode") in ties:
            # kaudit took another of upstream's tied candidates: its victims are upstream's
            # victims there.
            chosen = {**w, **((w.get("candidates") or {}).get(g["nominatedNode"]) or {})}
        for key in ("eligible", "victims", "numPDBViolations"):
            if chosen.get(key) != g.get(key):
                diff[f"preemption.{key}"].append(
                    f"upstream={chosen.get(key)} kaudit={g.get(key)}")
        if w.get("nominatedNode") != g.get("nominatedNode") and not (
                g.get("nominatedNode") in ties and len(ties) > 1):
            diff["preemption.nominatedNode"].append(
                f"upstream={w.get('nominatedNode')} kaudit={g.get('nominatedNode')} "
                f"(upstream's ties {ties})")
        if ties != g["tiedNodes"]:
            diff["preemption.tiedNodes"].append(f"upstream={ties} kaudit={g['tiedNodes']}")
        wc, gc = w.get("candidates") or {}, g.get("candidates") or {}
        for node in sorted(set(wc) | set(gc)):
            if wc.get(node) != gc.get(node):
                diff["preemption.candidates"].append(
                    f"{node}: upstream={wc.get(node)} kaudit={gc.get(node)}")
    return diff


def differences(diff: dict[str, list[str]]) -> str:
    """The differing fields of a comparison, one line each (empty when all agree)."""
    return "\n".join(f"  {name}: {line}" for name, lines in diff.items() for line in lines)


# ----------------------------------------------------------------------------- sequences

@dataclass
class PodFate:
    """What became of one pod of a sequence."""

    node: str | None = None
    message: str | None = None
    nominated: str | None = None
    deleted: bool = False
    #: The nodes tied at the top score when kaudit placed (or nominated) the pod.
    ties: list[str] = field(default_factory=list)
    #: The nominations a higher-priority preemptor cleared (``ClearNominatedNodeName``).
    cleared: list[str] = field(default_factory=list)

    def as_oracle(self) -> JSON:
        return {"node": self.node, "message": self.message, "nominated": self.nominated,
                "deleted": self.deleted}


@dataclass
class SequenceRun:
    """kaudit's replay of a sequence: each pod's fate, by ``namespace/name``."""

    pods: dict[str, PodFate]
    attempts: int

    def prefer(self) -> dict[str, str]:
        """kaudit's placements, for the oracle's ``prefer``."""
        return {key: fate.node for key, fate in self.pods.items() if fate.node}


def _event(seq: int, ts_us: int, obj: JSON) -> StoredEvent:
    kind, namespace, name, _uid = validate_object(obj, "ADDED")
    return StoredEvent(seq, ts_us, "ADDED", kind, namespace, name, obj)


def sequence_events(scenario: JSON, spacing_us: int = 0) -> list[StoredEvent]:
    """The trace of a sequence: every object at 0 (other kinds, then nodes, then bound
    pods), then the pending pods in creation order, ``spacing_us`` apart (0: all at the
    same instant, so they are all queued before the first is scheduled)."""
    objects = orjson.loads(orjson.dumps(scenario["objects"]))
    ordered = sorted(objects, key=lambda o: (o.get("kind") == "Pod", o.get("kind") == "Node"))
    ordered = [o for o in ordered if not (o.get("kind") == "Pod"
                                          and not (o.get("spec") or {}).get("nodeName"))]
    events = [_event(i, 0, obj) for i, obj in enumerate(ordered)]
    for k, pod in enumerate(orjson.loads(orjson.dumps(scenario["pending"]))):
        events.append(_event(len(events), k * spacing_us, pod))
    return events


#: The replay timing that matches upstream's scheduler over the oracle's fake API server:
#: a cycle takes a millisecond and a binding (upstream's binding goroutine) finishes during
#: the next pod's cycle, so its events reach the queue while that pod is in flight; API calls
#: and victims' termination take no time (nothing runs the victims).
CYCLE_DURATION_US = 1000
BIND_LATENCY_US = 500


def replay_sequence(scenario: JSON, *, sync_preemption: bool = False, seed: int = 0,
                    spacing_us: int = 0, api_latency_us: int = 0,
                    victim_termination_us: int = 0, tie_break: str = "random",
                    bind_latency_us: int = BIND_LATENCY_US,
                    cycle_duration_us: int = CYCLE_DURATION_US) -> SequenceRun:
    """Replay a sequence scenario with kaudit. ``sync_preemption`` turns
    ``SchedulerAsyncPreemption`` off (victims go before the next pod is scheduled);
    ``bind_latency_us`` and ``cycle_duration_us`` let a binding finish during the next
    pod's cycle, as upstream's binding goroutine does."""
    gates = "SchedulerAsyncPreemption=false" if sync_preemption else None
    config, registry = config_for(scenario.get("config"), gates)
    sink = MemorySink()
    options = options_for(config, seed=seed, recreate_preempted=False,
                          api_latency_us=api_latency_us,
                          victim_termination_us=victim_termination_us, tie_break=tie_break,
                          bind_latency_us=bind_latency_us, cycle_duration_us=cycle_duration_us)
    replay = Replay(scheduler_factory(config, registry, seed=seed, tie_break=tie_break),
                    sink, options)
    nominations, cleared = _watch_nominations(replay)
    summary = replay.run(sequence_events(scenario, spacing_us))
    bound = {_key(p): p["spec"]["nodeName"] for p in scenario["objects"]
             if p.get("kind") == "Pod" and (p.get("spec") or {}).get("nodeName")}
    fates = _fates(sink, bound, [_key(p) for p in scenario["pending"]], nominations)
    for key, nodes in cleared.items():
        fates[key].cleared = nodes
    if release_gate("ClearingNominatedNodeNameAfterBinding"):
        # The API server clears a pod's nomination when it binds it (v1.35 on).
        for key, fate in fates.items():
            if key not in bound and fate.node:
                fate.nominated = None
    return SequenceRun(fates, summary.attempts)


def _watch_nominations(replay: Replay) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each pod's ``status.nominatedNodeName`` as the replay writes it ("" once cleared):
    set or cleared by its own PostFilter's status patch, cleared when a higher-priority
    preemptor takes its node. A binding keeps it, as upstream's does (the
    ``ClearingNominatedNodeNameAfterBinding`` gate is off in v1.34)."""
    nominations: dict[str, str] = {}
    cleared_by_others: dict[str, list[str]] = {}
    calls = replay.preemption
    nominate, clear_lower = calls.nominate, calls._clear_lower_nominations

    def nominated(queued: Any, node: str, details: Any) -> None:
        nominations[queued.pod.key] = node
        nominate(queued, node, details)

    def cleared(node: str, uids: list[str]) -> None:
        for uid in uids:
            queued = replay.informer.queue.pods.get(uid)
            if queued is not None and replay.nominator.node_of(uid) == node:
                nominations[queued.pod.key] = ""
                cleared_by_others.setdefault(queued.pod.key, []).append(node)
        clear_lower(node, uids)

    setattr(calls, "nominate", nominated)  # noqa: B010 (an instance's method replaced)
    setattr(calls, "_clear_lower_nominations", cleared)  # noqa: B010
    return nominations, cleared_by_others


def _key(pod: JSON) -> str:
    return f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"


def _fates(sink: MemorySink, bound: dict[str, str], pending: list[str],
           nominations: dict[str, str]) -> dict[str, PodFate]:
    """Each pod's fate as the oracle reports it: its node (a deleted pod keeps the node it
    had), the message of its last failed attempt (the PodScheduled condition a binding
    leaves as it was), its ``status.nominatedNodeName`` at the end (kept by a binding) unless
    deleted, and whether it was deleted."""
    fates = {key: PodFate(node=node) for key, node in bound.items()}
    fates.update((key, PodFate()) for key in pending)
    names: dict[int, str] = {}
    for _seq, _ts, kind, pod, node, data, blob in sink.records:
        if kind == RecordKind.NODE:
            names[orjson.loads(data)["slot"]] = node or ""
        if pod not in fates:
            continue
        fate = fates[pod]
        if kind == RecordKind.ATTEMPT:
            attempt = unpack(orjson.loads(data), blob, names)
            if attempt.get("message"):
                fate.message = attempt["message"]
            if attempt.get("selectedNode"):
                fate.ties = sorted(attempt.get("tiedNodes") or [attempt["selectedNode"]])
        elif kind == RecordKind.BIND:
            fate.node = node
        elif kind == RecordKind.NOMINATE:
            ties = orjson.loads(data).get("tiedNodes")
            fate.ties = sorted({node or "", *(ties or [])})
        elif kind == RecordKind.DELETE:
            fate.deleted = True
    for key, fate in fates.items():
        fate.nominated = None if fate.deleted else nominations.get(key) or None
    return fates


#: Why a difference is the oracle harness's, not kaudit's (see :func:`harness_excuse`).
FAKE_CLIENTSET = ("the oracle's fake clientset keeps every resourceVersion empty, so upstream's "
                  "scheduler drops every update of a pending pod (updatePodInSchedulingQueue "
                  "returns on equal resourceVersions): a pod's own nominatedNodeName never "
                  "reaches its nominator entry, and ClearNominatedNodeName skips it when a "
                  "higher-priority preemptor takes its node")


def harness_excuse(name: str, want: JSON, fate: PodFate) -> str | None:
    """Why upstream's ``want`` for field ``name`` of a pod differs from kaudit's for a
    reason of the oracle harness (None when no such reason applies)."""
    if (name == "nominated" and fate.as_oracle()["nominated"] is None
            and want.get("nominated") in fate.cleared):
        return FAKE_CLIENTSET
    return None


def compare_sequence(want: dict[str, JSON], run: SequenceRun, *, modulo_ties: bool = False,
                     excused: list[str] | None = None) -> dict[str, list[str]]:
    """Every field of :data:`SEQUENCE_FIELDS` mapped to the pods where upstream's answer
    (``want``: the oracle's ``pods``) and kaudit's differ. ``modulo_ties``: a pod placed on
    another node counts as agreeing when kaudit had upstream's node tied at the top.
    Differences the harness explains (:func:`harness_excuse`) go to ``excused`` when it is
    given, instead."""
    diff: dict[str, list[str]] = {name: [] for name in SEQUENCE_FIELDS}
    for key in sorted(set(want) | set(run.pods)):
        w = want.get(key)
        fate = run.pods.get(key)
        if w is None or fate is None:
            diff["node"].append(f"{key}: upstream={w} kaudit={fate and fate.as_oracle()}")
            continue
        got = fate.as_oracle()
        for name in SEQUENCE_FIELDS:
            if w.get(name) == got[name]:
                continue
            if (modulo_ties and name in ("node", "nominated") and w.get(name) is not None
                    and got[name] is not None and w.get(name) in fate.ties):
                continue
            line = f"{key}: upstream={w.get(name)!r} kaudit={got[name]!r}"
            excuse = harness_excuse(name, w, fate)
            if excuse is not None and excused is not None:
                excused.append(f"{name}: {line}")
                continue
            diff[name].append(line)
    return diff


def tie_free(run: SequenceRun) -> SequenceRun:
    """``run`` with every pod's ties dropped (for comparisons that must be exact)."""
    return SequenceRun({k: replace(f, ties=[]) for k, f in run.pods.items()}, run.attempts)
