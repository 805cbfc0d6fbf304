"""Explain each disagreement of a stored audit: kaudit's state, upstream's cycle on it, verdict.

``python -m benchmarks.realcluster.disagreements --db URL --run AUDIT_RUN [--trace NAME]
[--json] [--repeats N] [--window-ms MS] [--no-nearest]``

For every decision the audit run did not find agreeing, the cluster the audit judged is
rebuilt from the stored trace (every object as the trace left it just before the decision's
``momentSeq``; the pod as last recorded pending, without ``spec.nodeName``; the other pending
pods with their recorded ``status.nominatedNodeName``, which both schedulers put in their
nominator; the pods the audit judged the decision without, ``decidedAfter``, left out). On
that one state:

- kaudit decides as ``kaudit whatif`` does (:func:`tests.oracle.compare.whatif_report`);
- upstream kube-scheduler v1.34.2 decides with its own code (the oracle's ``cycle`` program,
  ``tests/oracle/k8s-v1.34/cmd/cycle``: ``pkg/scheduler/schedule_one.go``'s cycle and
  ``pkg/scheduler/framework/plugins/defaultpreemption``), ``--repeats`` times (its informers
  list the objects in a random order, so equal victims, which upstream sorts unstably in
  ``SelectVictimsOnNode``, may come out differently);
- the recorded answer is the real scheduler's.

The verdict: kaudit = upstream on that state and the recorded answer is not upstream's there:
the real scheduler saw another state (timing); kaudit = upstream and the recorded answer is one
of upstream's answers on that state: upstream's randomness (ties, unstable sorts); kaudit ≠
upstream: a kaudit bug. For the timing verdicts the tool also looks for the nearest state
that gives the recorded answer: the trace's events just after the moment taken as already
seen (the scheduler's own nominations and bindings run ahead of their records), or the
events just before it as not yet seen (informer lag), each tried by kaudit and the first that
agrees confirmed by upstream.

What is approximated: the nominator holds the nominations the trace recorded, not the ones
the real scheduler held in memory; a pod assumed by the real scheduler but not yet recorded
bound is absent; the audit's lagging views (``--window``) are not rebuilt (the audit's
answer reported is kaudit's in the recorded state, which this state is).
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from kaudit.errors import InputError, KauditError
from kaudit.queries.audit import audit_report
from kaudit.store.models import Run
from kaudit.store.schema import open_database
from kaudit.store.traces import StoredEvent, get_trace, iter_events
from tests.oracle.compare import compare_cycle, differences, whatif_report
from tests.oracle.conftest import run_cycles

JSON = dict[str, Any]

#: The verdicts, by how upstream's and kaudit's answers on kaudit's state relate.
TIMING = "kaudit = upstream on kaudit's state: the state differs (timing)"
RANDOMNESS = ("kaudit = upstream on kaudit's state, and the recorded answer is also "
              "upstream's there: upstream randomness")
BUG = "kaudit ≠ upstream: kaudit bug"
AUDIT_STATE = ("kaudit = upstream on the trace's state, which gives the recorded answer, but the "
               "audit judged another: kaudit bug (the audit's state)")
UNREBUILT = ("the rebuilt state is not the one the audit judged (kaudit answers otherwise "
             "there): not explained")
#: Kinds of objects the schedulers read (the trace's other kinds are left out of the state).
STATE_KINDS = frozenset({
    "Node", "Pod", "Namespace", "PodDisruptionBudget", "Service", "ReplicaSet", "StatefulSet",
    "ReplicationController", "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
    "CSINode", "CSIDriver", "CSIStorageCapacity", "ResourceClaim", "ResourceSlice",
    "DeviceClass", "VolumeAttachment"})
#: How many events around the moment the timing probe takes as seen or unseen, at most.
PROBE_EVENTS = 40
#: How many of those events the text report lists (the nearest to the moment).
LISTED_CHANGES = 12
#: How many disagreements are rebuilt and sent to upstream at once.
BATCH = 8


@dataclass(frozen=True)
class Answer:
    """One scheduler's decision for the pod: ``bind`` to a node (``ties``: the nodes it picks
    among at random), ``preemption`` (nominated node and victims) or ``unschedulable``."""

    kind: str
    node: str | None = None
    victims: tuple[str, ...] = ()
    ties: tuple[str, ...] = ()
    #: An unschedulable answer's message (the ``0/N nodes are available`` FitError), when known.
    message: str = ""

    def text(self) -> str:
        if self.kind == "bind":
            tied = f" (tied: {', '.join(self.ties)})" if len(self.ties) > 1 else ""
            return f"bind {self.node or 'one of'}{tied}"
        if self.kind == "preemption":
            tied = f" (tied: {', '.join(self.ties)})" if len(self.ties) > 1 else ""
            return f"preempt on {self.node}{tied}: victims {list(self.victims)}"
        return f"unschedulable: {self.message}" if self.message else "unschedulable"

    def same_as(self, other: Answer) -> bool:
        """Whether ``other`` is a possible outcome of this answer (a node among its ties,
        the same victims)."""
        if self.kind != other.kind:
            return False
        if self.kind == "unschedulable":
            return not (self.message and other.message) or self.message == other.message
        nodes = set(self.ties) | {self.node} - {None}
        if other.node not in nodes:
            return False
        return self.kind == "bind" or set(self.victims) == set(other.victims)


@dataclass
class Explanation:
    """One disagreement, judged on kaudit's state."""

    pod: str
    audit_class: str
    cause: str
    moment_seq: int
    recorded: Answer
    audit: Answer
    kaudit: Answer
    upstream: list[Answer]
    verdict: str
    #: Fields where upstream's and kaudit's full cycle reports differ (first run).
    field_differences: str = ""
    #: The nearest state giving the recorded answer, when found.
    nearest_state: JSON | None = None
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> JSON:
        data = asdict(self)
        for key in ("recorded", "audit", "kaudit"):
            data[key] = asdict(getattr(self, key)) | {"text": getattr(self, key).text()}
        data["upstream"] = [asdict(a) | {"text": a.text()} for a in self.upstream]
        return data


# ----------------------------------------------------------------------------- answers

def recorded_answer(record: JSON) -> Answer:
    recorded = record["recorded"]
    kind = {"bind": "bind", "preemption": "preemption"}.get(recorded["kind"], "unschedulable")
    return Answer(kind, recorded.get("node"), tuple(sorted(recorded.get("victims") or ())),
                  (recorded["node"],) if recorded.get("node") else (),
                  recorded.get("message") or "" if kind == "unschedulable" else "")


def audit_answer(record: JSON) -> Answer:
    """kaudit's answer as the audit stored it (in the recorded state)."""
    said = record.get("kaudit") or {}
    if said.get("node"):
        # A binding (on the pod's nominated node, when it names one).
        return Answer("bind", said["node"], (),
                      tuple(sorted(said.get("tied") or said.get("tiedNodes") or [said["node"]])))
    if said.get("nominatedNode"):
        # The audit compares only the victims the recording can show; kaudit chose these too.
        victims = [*(said.get("victims") or ()), *(said.get("victimsAlreadyPreempted") or ())]
        return Answer("preemption", said["nominatedNode"], tuple(sorted(set(victims))),
                      tuple(sorted(said.get("tiedNodes") or [said["nominatedNode"]])))
    return Answer("unschedulable", message=said.get("message") or "")


def kaudit_answer(report: JSON) -> Answer:
    """kaudit's answer from its what-if evaluation."""
    own = report.get("incomingNominatedNode")
    if own and (report["nodes"].get(own) or {}).get("feasible"):
        return Answer("bind", own, (), (own,))
    if report.get("selectedNode"):
        ties = tuple(sorted(report.get("tiedNodes") or [report["selectedNode"]]))
        return Answer("bind", report["selectedNode"], (), ties)
    return _failure_answer(report)


def _failure_answer(report: JSON) -> Answer:
    """A cycle report's answer when it binds nowhere (kaudit's what-if report and the
    oracle's ``expect`` share these fields): its preemption, or its failure message."""
    preemption = report.get("preemption") or {}
    if preemption.get("nominatedNode"):
        return Answer("preemption", preemption["nominatedNode"],
                      tuple(sorted(preemption.get("victims") or ())),
                      tuple(sorted(preemption.get("tiedNodes") or ())))
    return Answer("unschedulable", message=report.get("message") or "")


def upstream_answer(expect: JSON) -> Answer:
    """Upstream's answer from the oracle's ``expect``."""
    if expect.get("nominatedNodeFits"):
        node = expect["nominatedNodeFits"]
        return Answer("bind", node, (), (node,))
    if expect.get("maxNodes"):
        ties = tuple(sorted(expect["maxNodes"]))
        return Answer("bind", ties[0] if len(ties) == 1 else None, (), ties)
    return _failure_answer(expect)


def upstream_allows(upstream: Answer, expect: JSON, other: Answer, *,
                    sampling: bool = True) -> bool:
    """Whether ``other`` is one of upstream's possible outcomes on the state: a node it ties,
    or, for a preemption, a tied candidate with the victims upstream found there, or (with
    ``sampling``) any candidate with those victims when its dry run samples
    (:func:`dry_run_samples`)."""
    if upstream.same_as(other):
        return True
    if other.kind != "preemption" or upstream.kind != "preemption":
        return False
    candidates = (expect.get("preemption") or {}).get("candidates") or {}
    candidate = candidates.get(other.node)
    if candidate is None or set(candidate["victims"]) != set(other.victims):
        return False
    return other.node in upstream.ties or (sampling and dry_run_samples(expect))


#: ``minCandidateNodesAbsolute``, DefaultPreemption's default (``pkg/scheduler/apis/config/
#: v1/defaults.go``): its dry run examines at least this many candidates.
MIN_CANDIDATE_NODES_ABSOLUTE = 100


def dry_run_samples(expect: JSON) -> bool:
    """Whether upstream's preemption finds more candidates than its dry run examines:
    ``DryRunPreemption`` walks the potential nodes from a random offset
    (``GetOffsetAndNumCandidates``) and stops at ``numCandidates`` (at least 100), so which
    of them it nominates depends on that offset; the oracle's cycle lists every candidate."""
    candidates = (expect.get("preemption") or {}).get("candidates") or {}
    return len(candidates) > MIN_CANDIDATE_NODES_ABSOLUTE


def agrees_with_upstream(kaudit: Answer, upstream: Answer, expect: JSON,
                         ranks: dict[str, tuple[int, str]]) -> bool:
    """Whether kaudit's answer is one a run of upstream's cycle could give on that state: the
    same, a node upstream ties (for a preemption, with the victims upstream found on it), or
    victims differing only among equally ranked pods. One run picks among its ties at random,
    so kaudit's tied pick differing from it is no disagreement."""
    return upstream.same_as(kaudit) or upstream_allows(upstream, expect, kaudit) \
        or equal_victims(upstream, kaudit, ranks)


def importance(objects: Iterable[JSON]) -> dict[str, tuple[int, str]]:
    """Each pod's rank in upstream's victim order (``MoreImportantPod``: priority, then start
    time), by namespace/name."""
    return {f"{(o.get('metadata') or {}).get('namespace') or 'default'}/"
            f"{(o.get('metadata') or {}).get('name')}":
            (int((o.get("spec") or {}).get("priority") or 0),
             str((o.get("status") or {}).get("startTime") or ""))
            for o in objects if o.get("kind") == "Pod"}


def answers_differ(audit: Answer, kaudit: Answer, ranks: dict[str, tuple[int, str]]) -> bool:
    """Whether kaudit on the rebuilt state answers otherwise than the audit did. Victims of
    equal rank come in the order of the node's pods in the audit's cache, which the rebuilt
    state (listed anew) does not keep; the audit of a binding that fits nowhere records no
    node and no preemption (it judges the binding), where the rebuilt state's what-if goes
    on to preempt."""
    if audit.same_as(kaudit) or kaudit.same_as(audit) or equal_victims(audit, kaudit, ranks):
        return False
    return not (audit.kind == "unschedulable" and not audit.message
                and kaudit.kind == "preemption")


def shows_another_state(audit: Answer, kaudit: Answer, ranks: dict[str, tuple[int, str]],
                        outcomes: list[tuple[Answer, JSON]]) -> bool:
    """Whether the audit's answer shows that it judged another state than the rebuilt one:
    kaudit answers otherwise there (:func:`answers_differ`), and the audit's answer is none of
    upstream's outcomes there (``outcomes``: upstream's answer and cycle per run). Each dry
    run that samples walks from its own random offset, so two different nominations can
    both be upstream's on one state."""
    return answers_differ(audit, kaudit, ranks) and not any(
        upstream_allows(answer, expect, audit) for answer, expect in outcomes)


def equal_rank_victims(audit: Answer, outcomes: list[tuple[Answer, JSON]],
                       ranks: dict[str, tuple[int, str]]) -> list[str]:
    """When upstream, on the rebuilt state, finds other victims on the audit's nominated node:
    the victims of either answer there that share their rank (``MoreImportantPod``:
    priority, start time) with another of them. Upstream reprieves such pods in its
    ``NodeInfo.Pods`` order, which the rebuilt state does not keep; empty when none."""
    if audit.kind != "preemption":
        return []
    for _, expect in outcomes:
        candidate = ((expect.get("preemption") or {}).get("candidates") or {}).get(audit.node)
        if candidate is None or set(candidate["victims"]) == set(audit.victims):
            continue
        pods = sorted(set(candidate["victims"]) | set(audit.victims))
        rank_of = {pod: ranks.get(pod, (0, "?" + pod)) for pod in pods}
        shared = Counter(rank_of.values())
        return [pod for pod in pods if shared[rank_of[pod]] > 1]
    return []


def equal_victims(a: Answer, b: Answer, ranks: dict[str, tuple[int, str]]) -> bool:
    """Whether two preemptions on one node differ only by victims of equal rank: upstream
    sorts the victims with ``sort.Slice`` (not stable) in ``SelectVictimsOnNode``, so which
    of equal pods it reprieves follows the order its cache lists them in."""
    if a.kind != "preemption" or b.kind != "preemption" or a.node != b.node:
        return False
    only_a = sorted(ranks.get(v, (0, "?" + v)) for v in set(a.victims) - set(b.victims))
    only_b = sorted(ranks.get(v, (0, "?" + v)) for v in set(b.victims) - set(a.victims))
    return only_a == only_b


# ----------------------------------------------------------------------------- the state

def _key(obj: JSON) -> str:
    metadata = obj.get("metadata") or {}
    return f"{obj.get('kind')}/{metadata.get('namespace') or ''}/{metadata.get('name')}"


def finished(obj: JSON) -> bool:
    """A pod that succeeded or failed: upstream's scheduler never sees one (its pod informer
    lists and watches with ``status.phase!=Succeeded,status.phase!=Failed``,
    ``pkg/scheduler/scheduler.go``), but the oracle's fake clientset ignores field
    selectors, so such pods are left out of the state."""
    return obj.get("kind") == "Pod" and (obj.get("status") or {}).get("phase") in (
        "Succeeded", "Failed")


def stored(obj: JSON) -> JSON:
    """``obj`` as the API server stores it, as far as a scheduler reads it: a pod's
    ``status.startTime`` without a fraction of a second (a ``metav1.Time`` keeps whole
    seconds; an audit log's status patch may carry one the stored pod lacks)."""
    start = (obj.get("status") or {}).get("startTime")
    if obj.get("kind") != "Pod" or not isinstance(start, str):
        return obj
    whole = re.sub(r"\.\d+(?=(Z|z|[+-]\d\d:\d\d)$)", "", start)
    return obj if whole == start else {**obj, "status": {**obj["status"], "startTime": whole}}


def fold(events: Iterable[StoredEvent], state: dict[str, JSON] | None = None
         ) -> dict[str, JSON]:
    """Every object of :data:`STATE_KINDS` as ``events`` leave it and as stored, by
    kind/namespace/name (finished pods left out)."""
    state = {} if state is None else state
    for event in events:
        if event.kind not in STATE_KINDS:
            continue
        key = _key({**event.object, "kind": event.kind})
        if event.type == "DELETED" or finished({**event.object, "kind": event.kind}):
            state.pop(key, None)
        else:
            state[key] = stored({**event.object, "kind": event.kind})
    return state


def pending_pod(events: list[StoredEvent], moment: int, pod: str) -> JSON:
    """The pod as last recorded before ``moment`` (else as first recorded at or after it),
    without ``spec.nodeName``."""
    namespace, _, name = pod.partition("/")
    mine = [e for e in events if e.kind == "Pod" and e.namespace == namespace
            and e.name == name and e.type != "DELETED"]
    before = [e for e in mine if e.seq < moment]
    chosen = before[-1] if before else next((e for e in mine if e.seq >= moment), None)
    if chosen is None:
        raise InputError(f"pod {pod}: not in the trace")
    obj = {**chosen.object, "kind": "Pod"}
    return {**obj, "spec": {k: v for k, v in (obj.get("spec") or {}).items() if k != "nodeName"}}


def scenario(state: dict[str, JSON], pod: JSON, config: str, without: Iterable[str] = ()
             ) -> JSON:
    """The oracle's cycle scenario: ``state`` without the pod itself and without the pods
    ``without`` (namespace/name)."""
    dropped = {f"Pod/{key}" for key in without} | {_key(pod)}
    return {"objects": [obj for key, obj in state.items() if key not in dropped],
            "pod": pod, "config": config}


# ----------------------------------------------------------------------------- explaining

class Explainer:
    """Explains the disagreements of one audit run against one stored trace."""

    def __init__(self, engine: Engine, run: str, trace: str | None = None, *,
                 cycle_program: Path, repeats: int = 3, window_us: int = 1_000_000,
                 nearest: bool = True) -> None:
        self.report = audit_report(engine, run)
        summary = get_trace(engine, trace or self.report["trace"])
        self.events = list(iter_events(engine, summary.id))
        with engine.connect() as connection:
            config = connection.execute(select(Run.config).where(
                Run.name == self.report["run"])).scalar_one()
        self.config: str = config
        self.cycle_program = cycle_program
        self.repeats = repeats
        self.window_us = window_us
        #: Whether a timing verdict looks for the nearest state giving the recorded answer.
        self.nearest = nearest
        self.seqs = [event.seq for event in self.events]
        #: Each pod's events (namespace/name), in trace order.
        self.pod_events: dict[str, list[StoredEvent]] = {}
        for event in self.events:
            if event.kind == "Pod":
                self.pod_events.setdefault(f"{event.namespace}/{event.name}", []).append(event)
        #: The state folded up to an index, kept for the record being probed: every probe
        #: of one moment starts from it instead of folding the whole trace again.
        self._base: tuple[int, dict[str, JSON]] | None = None

    def disagreements(self) -> list[JSON]:
        return list(self.report["disagreements"])

    def explain_all(self, limit: int | None = None, pods: frozenset[str] = frozenset(),
                    progress: Callable[[int, int], None] | None = None) -> list[Explanation]:
        """Every disagreement explained (only those of ``pods``, namespace/name, when given),
        or ``limit`` of them spread evenly over the run; ``progress(done, total)`` after each
        batch."""
        records = [r for r in self.disagreements() if not pods or r["pod"] in pods]
        if limit is not None and len(records) > limit:
            step = len(records) / limit
            records = [records[int(i * step)] for i in range(limit)]
        explanations: list[Explanation] = []
        # A batch at a time: each case is the whole cluster, so holding every case (and its
        # request to upstream) at once grows with disagreements × cluster size.
        for first in range(0, len(records), BATCH):
            batch = records[first:first + BATCH]
            cases = [self._case(record) for record in batch]
            requests = [{"id": f"{i}-{n}", "objects": c["objects"], "pod": c["pod"],
                         "config": c["config"]}
                        for i, c in enumerate(cases) for n in range(self.repeats)]
            answers = run_cycles(self.cycle_program, requests)
            explanations += [
                self._explain(record, case, [answers[f"{i}-{n}"] for n in range(self.repeats)])
                for i, (record, case) in enumerate(zip(batch, cases, strict=True))]
            if progress is not None:
                progress(len(explanations), len(records))
        return explanations

    def _position(self, moment: int) -> int:
        """The index of the first event at or after seq ``moment``."""
        return bisect.bisect_left(self.seqs, moment)

    def _case(self, record: JSON, shift: int = 0, *, toggled: int | None = None) -> JSON:
        """The scenario of ``record``'s moment, ``shift`` events later (or earlier when
        negative), or with the one event at index ``toggled`` taken as seen (after the moment)
        or as not yet seen (before it); the pod's own events are never moved."""
        at = self._position(record["momentSeq"])
        pod = pending_pod(self.pod_events.get(record["pod"], []), record["momentSeq"],
                          record["pod"])
        # Probes move events at most PROBE_EVENTS from the moment: the events before that
        # are folded once per moment.
        start = max(0, min(at - PROBE_EVENTS, at + shift,
                           at if toggled is None else toggled))
        if toggled is not None:
            seen = [i for i in range(start, at) if i != toggled] \
                + ([toggled] if toggled >= at else [])
        else:
            seen = list(range(start, at + shift))
        chosen = sorted({i for i in seen if not self._own(i, record["pod"])}
                        | {i for i in range(start, at) if self._own(i, record["pod"])})
        state = fold((self.events[i] for i in chosen), dict(self._folded_to(start)))
        return scenario(state, pod, self.config, record.get("decidedAfter") or ())

    def _folded_to(self, end: int) -> dict[str, JSON]:
        """The state the first ``end`` events leave (not to be changed: callers copy it)."""
        if self._base is None or self._base[0] > end:
            self._base = (0, {})
        done, state = self._base
        if done < end:
            state = fold(self.events[done:end], dict(state))
            self._base = (end, state)
        return state

    def _own(self, index: int, pod: str) -> bool:
        event = self.events[index]
        return event.kind == "Pod" and f"{event.namespace}/{event.name}" == pod

    def _explain(self, record: JSON, case: JSON, answers: list[JSON]) -> Explanation:
        recorded = recorded_answer(record)
        notes: list[str] = []
        errors = [a["error"] for a in answers if "error" in a]
        report = whatif_report(case)
        kaudit = kaudit_answer(report)
        audit = audit_answer(record)
        ranks = importance(case["objects"])
        rebuilt_differs = answers_differ(audit, kaudit, ranks)
        if errors:
            if rebuilt_differs:
                notes.append(f"the rebuilt state is not the audit's: the audit said "
                             f"{audit.text()}, kaudit on the rebuilt state says {kaudit.text()}")
            return Explanation(record["pod"], record["class"], record.get("cause", ""),
                               record["momentSeq"], recorded, audit, kaudit, [],
                               f"not decided: upstream's cycle failed: {errors[0]}", notes=notes)
        expects = [a["expect"] for a in answers]
        upstream = [upstream_answer(e) for e in expects]
        outcomes = list(zip(upstream, expects, strict=True))
        agreeing = [u for u, e in outcomes
                    if agrees_with_upstream(kaudit, u, e, ranks)]
        by_offset = kaudit.kind == "preemption" and any(
            dry_run_samples(e) and not u.same_as(kaudit) and kaudit.node not in u.ties
            for u, e in outcomes)
        if agreeing and by_offset:
            notes.append("upstream's dry run examines only some of its candidates, from a random "
                         "offset: kaudit's nomination is one of them, with the same victims")
        elif agreeing and not any(u.same_as(kaudit) for u in upstream):
            notes.append("kaudit's and upstream's victims differ only by pods of equal "
                         "priority and start time (upstream's unstable sort of equal victims)")
        if rebuilt_differs and not shows_another_state(audit, kaudit, ranks, outcomes):
            rebuilt_differs = False
            notes.append(f"the audit's answer ({audit.text()}) is also one of upstream's on the "
                         "rebuilt state (another random offset of the dry run)")
        tied: list[str] = []
        if rebuilt_differs:
            notes.append(f"the rebuilt state is not the audit's: the audit said {audit.text()}, "
                         f"kaudit on the rebuilt state says {kaudit.text()}")
            tied = equal_rank_victims(audit, outcomes, ranks)
            if tied:
                notes.append(f"on {audit.node} upstream finds other victims, and pods of equal "
                             f"rank decide which: {tied}; the audit reprieves them in its "
                             "cache's order (an update moves a pod to the end of its node's "
                             "list), the rebuilt state, listed anew, in key order")
        field_diff = differences(compare_cycle(expects[0], report))
        # Which candidate a sampling dry run nominates depends on its offset and on how its
        # workers interleave; the audit searched both (``kaudit.plugins.preemption_offsets``)
        # on this state before calling the decision a disagreement, so a candidate reachable
        # only that way is not taken as upstream's answer here.
        recorded_there = any(upstream_allows(u, e, recorded, sampling=False)
                             or equal_victims(u, recorded, ranks) for u, e in outcomes)
        if not recorded_there and any(upstream_allows(u, e, recorded) for u, e in outcomes):
            notes.append("the recorded nomination is one of upstream's candidates, with the "
                         "recorded victims, but the audit's search of the dry run's offsets "
                         "and worker interleavings found none that nominates it here")
        if not agreeing:
            verdict = BUG
        elif recorded_there and rebuilt_differs and not tied:
            # (With victims of equal rank, the state cannot be rebuilt as the audit held it.)
            verdict = AUDIT_STATE
        elif rebuilt_differs:
            verdict = UNREBUILT
        elif recorded_there:
            verdict = RANDOMNESS
        else:
            verdict = TIMING
        if len(set(upstream)) > 1:
            notes.append(f"upstream's answer varies from run to run: "
                         f"{sorted({u.text() for u in upstream})}")
        explanation = Explanation(record["pod"], record["class"], record.get("cause", ""),
                                  record["momentSeq"], recorded, audit, kaudit,
                                  upstream, verdict, field_diff, notes=notes)
        if verdict == TIMING and self.nearest:
            explanation.nearest_state = self._nearest_state(record, recorded)
        return explanation

    def _nearest_state(self, record: JSON, recorded: Answer) -> JSON | None:
        """The fewest events around the moment that, taken as seen (after) or as not yet seen
        (before), make kaudit give the recorded answer; confirmed by upstream."""
        at = self._position(record["momentSeq"])
        moment_us = self.events[at].ts_us if at < len(self.events) else 0
        single = self._single_change(record, recorded, at, moment_us)
        if single is not None:
            return single
        for shift in _shifts(self.events, at, moment_us, self.window_us):
            case = self._case(record, shift)
            try:
                answer = kaudit_answer(whatif_report(case))
            except (KauditError, AssertionError, KeyError):
                continue
            if not recorded.same_as(answer) and not answer.same_as(recorded):
                continue
            lo, hi = (at, at + shift) if shift > 0 else (at + shift, at)
            moved = [e for e in self.events[lo:hi] if e.kind in STATE_KINDS
                     and f"{e.namespace}/{e.name}" != record["pod"]]
            confirm = run_cycles(self.cycle_program, [{"id": "probe", **case}])["probe"]
            upstream = (upstream_answer(confirm["expect"]).text() if "expect" in confirm
                        else f"error: {confirm['error']}")
            return {"events": shift,
                    "as": "already seen" if shift > 0 else "not yet seen",
                    "changes": [_describe(e, moment_us) for e in moved],
                    "kaudit": answer.text(), "upstream": upstream}
        return None

    def _single_change(self, record: JSON, recorded: Answer, at: int, moment_us: int
                       ) -> JSON | None:
        """The one event nearest the moment that, alone taken as seen (after it) or as not
        yet seen (before it), makes kaudit give the recorded answer; confirmed by upstream."""
        for shift in _shifts(self.events, at, moment_us, self.window_us):
            index = at + shift - 1 if shift > 0 else at + shift
            event = self.events[index]
            if event.kind not in STATE_KINDS or self._own(index, record["pod"]):
                continue
            if shift < 0 and any(e.kind == event.kind and e.namespace == event.namespace
                                 and e.name == event.name for e in self.events[index + 1:at]):
                continue  # a later event of that object hides it
            case = self._case(record, toggled=index)
            try:
                answer = kaudit_answer(whatif_report(case))
            except (KauditError, AssertionError, KeyError):
                continue
            if not recorded.same_as(answer) and not answer.same_as(recorded):
                continue
            confirm = run_cycles(self.cycle_program, [{"id": "probe", **case}])["probe"]
            upstream = (upstream_answer(confirm["expect"]).text() if "expect" in confirm
                        else f"error: {confirm['error']}")
            return {"events": 1 if shift > 0 else -1, "single": True,
                    "as": "already seen" if shift > 0 else "not yet seen",
                    "changes": [_describe(event, moment_us)],
                    "kaudit": answer.text(), "upstream": upstream}
        return None


def _shifts(events: list[StoredEvent], at: int, moment_us: int, window_us: int) -> list[int]:
    """Event counts to try, nearest first: +1, -1, +2, -2 ... within the window."""
    out = []
    for n in range(1, PROBE_EVENTS + 1):
        if at + n <= len(events) and events[at + n - 1].ts_us - moment_us <= window_us:
            out.append(n)
        if at - n >= 0 and moment_us - events[at - n].ts_us <= window_us:
            out.append(-n)
    return out


def _describe(event: StoredEvent, moment_us: int) -> str:
    obj = event.object
    what = f"{event.type} {event.kind} {event.namespace + '/' if event.namespace else ''}" \
           f"{event.name}"
    if event.kind == "Pod":
        node = (obj.get("spec") or {}).get("nodeName")
        nominated = (obj.get("status") or {}).get("nominatedNodeName")
        deleting = (obj.get("metadata") or {}).get("deletionTimestamp")
        parts = ([f"on {node}"] if node else []) + \
            ([f"nominated {nominated}"] if nominated and not node else []) + \
            (["terminating"] if deleting else [])
        if parts:
            what += f" ({', '.join(parts)})"
    return f"{what} at {(event.ts_us - moment_us) / 1000:+.1f} ms"


# ----------------------------------------------------------------------------- the command

def render(explanations: list[Explanation]) -> str:
    lines = []
    for e in explanations:
        lines.append(f"{e.pod} (momentSeq {e.moment_seq}; {e.audit_class}: {e.cause})")
        lines.append(f"  recorded:             {e.recorded.text()}")
        lines.append(f"  kaudit (audit):       {e.audit.text()}")
        lines.append(f"  kaudit on the state:  {e.kaudit.text()}")
        for n, answer in enumerate(e.upstream, 1):
            lines.append(f"  upstream, run {n}:      {answer.text()}")
        lines.append(f"  verdict: {e.verdict}")
        for note in e.notes:
            lines.append(f"  note: {note}")
        if e.verdict == BUG and e.field_differences:
            lines.append("  differing fields:")
            lines.extend("  " + line for line in e.field_differences.splitlines())
        if e.nearest_state:
            near = e.nearest_state
            alone = " (that one event alone)" if near.get("single") else ""
            lines.append(f"  the recorded answer once {abs(near['events'])} event(s) are taken "
                         f"as {near['as']}{alone} (kaudit: {near['kaudit']}; upstream: "
                         f"{near['upstream']}):")
            changes = near["changes"]
            shown = changes[:LISTED_CHANGES] if near["events"] > 0 else \
                changes[-LISTED_CHANGES:]
            lines.extend(f"    {change}" for change in shown)
            if len(changes) > len(shown):
                lines.append(f"    ... and {len(changes) - len(shown)} more, farther from "
                             "the moment")
        elif e.verdict == TIMING:
            lines.append("  no state within the window gives the recorded answer")
        lines.append("")
    counts: dict[str, int] = {}
    for e in explanations:
        counts[e.verdict] = counts.get(e.verdict, 0) + 1
    lines.append(f"{len(explanations)} disagreement(s): " +
                 "; ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    return "\n".join(lines)


def _progress(done: int, total: int) -> None:
    print(f"\rjudged {done:,} of {total:,} disagreement(s)", end="\n" if done == total else "",
          file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realcluster.disagreements",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", help="the database URL (default: KAUDIT_DB)")
    parser.add_argument("--run", required=True, help="the audit run")
    parser.add_argument("--trace", help="the stored trace (default: the run's)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--repeats", type=int, default=3,
                        help="upstream cycles per decision (default 3)")
    parser.add_argument("--limit", type=int,
                        help="explain this many disagreements, spread evenly over the run "
                             "(default: all)")
    parser.add_argument("--pod", action="append", default=[], metavar="NAMESPACE/NAME",
                        help="explain only this pod's disagreements (repeatable)")
    parser.add_argument("--no-nearest", action="store_true",
                        help="skip the search for the nearest state giving the recorded "
                             "answer (each probe evaluates the whole cluster: at 1,000 nodes "
                             "the search takes minutes per disagreement)")
    parser.add_argument("--window-ms", type=float, default=1000.0,
                        help="how far around the moment the timing probe looks (default 1000)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress on standard error")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    from tests.oracle.build import build_oracle, skip_reason
    engine = open_database(args.db, create=False)
    try:
        audit_report(engine, args.run)  # an unknown run, or one that is no audit, is refused
        reason = skip_reason()
        if reason is not None:
            print(f"upstream's oracle cannot be built: {reason}", file=sys.stderr)
            return 2
        explainer = Explainer(engine, args.run, args.trace,
                              cycle_program=build_oracle()["cycle"], repeats=args.repeats,
                              window_us=int(args.window_ms * 1000),
                              nearest=not args.no_nearest)
        explanations = explainer.explain_all(args.limit, frozenset(args.pod),
                                             progress=None if args.quiet else _progress)
    except KauditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps([e.as_json() for e in explanations], indent=2))
    else:
        print(render(explanations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
