"""One recorded decision against kaudit's evaluation of the same moment: its class and reason.

The evaluation is kube-scheduler v1.34.2's scheduling cycle run exhaustively (every filter on
every node, every feasible node scored: ``schedulePod`` in ``pkg/scheduler/schedule_one.go``),
PostFilter included (``pkg/scheduler/framework/preemption/preemption.go``'s dry run and
``SelectCandidate``). The classes (``docs/audit.md``):

* ``agrees`` / ``tie``: the recorded node is kaudit's only top-scoring node / one of several;
  also ``agrees`` when it is the pod's nominated node and that node fits (``evaluateNominatedNode``
  binds there without scoring);
* ``sampled``: feasible, scored below the top, but the top of some window of nodes a cycle would
  evaluate at ``percentageOfNodesToScore`` (``numFeasibleNodesToFind``; the window starts at the
  scheduler's rotating ``nextStartNodeIndex``), with the likelihood of such a window for a
  uniformly random start. Each window is scored as a sampled cycle scores it: NormalizeScore
  over the window's nodes, and PreScore again where a plugin reads them (PodTopologySpread's
  weights and domains). The windows are contiguous runs of feasible nodes; upstream filters
  with parallel workers, each on its own chunk of nodes, so a cycle may also find a set no
  window holds: when such a set puts the recorded node on top, it is ``sampled`` too, without
  a likelihood (:mod:`kaudit.replay.audit_sampling`);
* ``scoredLower``: feasible, below the top in every window, with the plugins that make the
  difference;
* ``infeasible``: a filter (or PreFilter, or an extender) rejects the recorded node;
* ``unschedulableSame`` / ``unschedulableDifferent``: a recorded failure; kaudit's FitError
  message equal byte for byte, or kaudit's different message or placement;
* ``preemptionSame`` / ``preemptionDifferent``: the recorded nomination (and victims, when the
  recording shows them) among kaudit's best candidates with the same victims, or not;
* ``notJudged``: the configuration does not serve the pod, no scheduler decided it, or the
  recording lacks what the decision needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.replay.audit_plan import (
    BIND,
    PREEMPTION,
    PREEMPTION_REASON,
    UNSCHEDULABLE,
    RecordedDecision,
)
from kaudit.replay.audit_sampling import (
    reachable_with_workers,
    sampling_likelihood,
    total_scores,
)
from kaudit.scheduler.schedule import Attempt, Scheduler

CLASSES = ("agrees", "tie", "sampled", "scoredLower", "infeasible", "unschedulableSame",
           "unschedulableDifferent", "preemptionSame", "preemptionDifferent", "notJudged")
#: The classes that count as agreeing with the recording.
AGREEING = frozenset({"agrees", "tie", "unschedulableSame", "preemptionSame"})

Judgment = dict[str, Any]


def not_judged(reason: str, missing: list[str] | None = None, cause: str | None = None
               ) -> Judgment:
    """A decision kaudit does not judge; ``cause`` groups it in reports (default: the
    reason)."""
    return {"class": "notJudged", "reason": reason, "cause": cause or reason,
            **({"missing": missing} if missing else {})}


def judge(decision: RecordedDecision, attempt: Attempt, cluster: ClusterState,
          scheduler: Scheduler, nominated: str, *, agreement_only: bool = False) -> Judgment:
    """The class of ``decision`` given kaudit's exhaustive ``attempt`` at its moment;
    ``nominated`` is the pod's recorded nominated node then ("" for none).
    ``agreement_only`` spares the costly detail of a binding scored lower (whether sampling
    explains it, which plugins make the difference) and classes it ``scoredLower`` alone:
    for the lagging views, which keep a judgment only when it agrees."""
    if attempt.error:
        return not_judged(f"kaudit's evaluation failed: {attempt.error}",
                          cause="kaudit's evaluation failed")
    if decision.kind == BIND:
        return _judge_bind(decision, attempt, cluster, scheduler, nominated, agreement_only)
    if decision.kind == UNSCHEDULABLE:
        return _judge_failure(decision, attempt)
    if decision.kind == PREEMPTION:
        return _judge_preemption(decision, attempt)
    return not_judged("created with spec.nodeName: no scheduler decided it")


# ----------------------------------------------------------------------------- bindings

def _position(attempt: Attempt, cluster: ClusterState, node: str) -> int | None:
    run = attempt.filters
    slot = cluster.slot_of.get(node)
    if run is None or slot is None:
        return None
    where = np.flatnonzero(run.slots == slot)
    return int(where[0]) if len(where) else None


def _rejection(attempt: Attempt, cluster: ClusterState, node: str) -> Status | None:
    """Why ``node`` is not feasible for kaudit, or None when it is."""
    position = _position(attempt, cluster, node)
    if position is None:
        if not attempt.pre_filter.status.ok:
            return attempt.pre_filter.status
        return attempt.diagnosis.node_statuses.get(node) or attempt.diagnosis.absent_status \
            or Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "not evaluated")
    assert attempt.filters is not None
    status = attempt.filters.status(position)
    if not status.ok:
        return status
    if attempt.passing is not None and cluster.slot_of[node] not in set(
            attempt.passing.tolist()):
        return attempt.diagnosis.node_statuses.get(node) or Status.of(
            Code.UNSCHEDULABLE, "rejected by an extender")
    return None


def _status_json(status: Status) -> dict[str, Any]:
    return {"plugin": status.plugin, "code": status.code.name, "reasons": list(status.reasons)}


def _judge_bind(decision: RecordedDecision, attempt: Attempt, cluster: ClusterState,
                scheduler: Scheduler, nominated: str, agreement_only: bool) -> Judgment:
    recorded = decision.node or ""
    kaudit: dict[str, Any] = {"node": attempt.selected, "tied": attempt.tied,
                              "feasible": attempt.feasible}
    rejected = _rejection(attempt, cluster, recorded)
    nominated_fits = bool(nominated) and nominated in cluster.slot_of \
        and _rejection(attempt, cluster, nominated) is None
    if nominated_fits:
        kaudit = {**kaudit, "node": nominated, "nominatedNode": nominated}
        if recorded == nominated:
            return {"class": "agrees", "kaudit": kaudit, "cause": "nominated node",
                    "reason": f"the pod's nominated node {nominated} fits: kube-scheduler binds "
                              "it there without scoring"}
    if rejected is not None:
        reasons = "; ".join(rejected.reasons) or rejected.message
        return {"class": "infeasible", "kaudit": kaudit, "rejectedBy": _status_json(rejected),
                "cause": f"{rejected.plugin or 'filter'}: {reasons}",
                "reason": f"kaudit rejects {recorded}: {rejected.plugin or 'filter'}: {reasons}"}
    if nominated_fits:
        return {"class": "scoredLower", "kaudit": kaudit, "plugins": [],
                "cause": "the nominated node fits elsewhere",
                "reason": f"the pod's nominated node {nominated} fits, and kube-scheduler binds "
                          f"a nominated pod there without scoring; {recorded} was chosen"}
    assert attempt.scores is not None
    slots = attempt.scores.slots
    total = total_scores(attempt)
    index = int(np.flatnonzero(slots == cluster.slot_of[recorded])[0])
    top = int(total.max())
    if int(total[index]) == top:
        tied = int((total == top).sum())
        return {"class": "agrees" if tied == 1 else "tie", "kaudit": kaudit, "cause": "",
                "score": int(total[index]), "topScore": top,
                "reason": "kaudit's only top-scoring node" if tied == 1 else
                f"one of kaudit's {tied} nodes tied at the top score {top}"}
    if agreement_only:
        return {"class": "scoredLower", "kaudit": kaudit, "cause": "", "reason": ""}
    plugins = _differences(attempt, cluster, recorded)
    likelihood = sampling_likelihood(attempt, scheduler, cluster, index)
    base = {"kaudit": kaudit, "score": int(total[index]), "topScore": top, "plugins": plugins}
    lead = ", ".join(f"{p['plugin']} ({p['best']} vs {p['recorded']})" for p in plugins
                     if p["best"] > p["recorded"])
    leaders = ", ".join(p["plugin"] for p in plugins if p["best"] > p["recorded"])
    if likelihood > 0:
        return {"class": "sampled", **base, "likelihood": likelihood,
                "cause": "percentageOfNodesToScore",
                "reason": f"{recorded} scores {int(total[index])} against the top {top}, but "
                          "is the top of the nodes a cycle evaluates at percentageOfNodesToScore "
                          f"with probability {likelihood:.1%}"}
    if reachable_with_workers(attempt, scheduler, cluster, index):
        return {"class": "sampled", **base, "cause": "percentageOfNodesToScore, parallel workers",
                "reason": f"{recorded} scores {int(total[index])} against the top {top}, and no "
                          "run of consecutive feasible nodes puts it on top, but it is the top "
                          "of a set a cycle at percentageOfNodesToScore can find when its "
                          "filter workers, each on its own chunk of nodes, interleave"}
    return {"class": "scoredLower", **base,
            "cause": f"scores higher elsewhere: {leaders or 'total'}",
            "reason": f"{recorded} scores {int(total[index])}, kaudit's top is {top} on "
                      f"{attempt.selected}" + (f"; higher there: {lead}" if lead else "")}


def _index_of(slots: np.ndarray, slot: int) -> int:
    """The position of ``slot`` in ``slots`` (its last, were it listed twice)."""
    return int(np.flatnonzero(slots == slot)[-1])


def _differences(attempt: Attempt, cluster: ClusterState, recorded: str) -> list[dict[str, Any]]:
    """Each plugin's weighted score on kaudit's choice and on the recorded node, where they
    differ (largest lead of kaudit's choice first)."""
    scores = attempt.scores
    assert scores is not None and attempt.selected is not None
    best = _index_of(scores.slots, cluster.slot_of[attempt.selected])
    mine = _index_of(scores.slots, cluster.slot_of[recorded])
    rows: list[dict[str, Any]] = []
    columns = {name: values * scores.weights.get(name, 1)
               for name, values in scores.normalized.items()}
    columns.update({f"extender {name}": values
                    for name, values in attempt.extender_scores.items()})
    for name, values in columns.items():
        a, b = int(values[best]), int(values[mine])
        if a != b:
            rows.append({"plugin": name, "best": a, "recorded": b})
    rows.sort(key=lambda row: int(row["recorded"]) - int(row["best"]))
    return rows


# ----------------------------------------------------------------------------- failures

def _judge_failure(decision: RecordedDecision, attempt: Attempt) -> Judgment:
    kaudit = {"node": attempt.selected, "message": attempt.message}
    if attempt.selected is not None:
        return {"class": "unschedulableDifferent", "kaudit": kaudit,
                "cause": "kaudit places the pod",
                "reason": f"kaudit places the pod on {attempt.selected} at that moment"}
    recorded = decision.message or ""
    mine = attempt.message or ""
    same = recorded == mine or (decision.source == "event" and len(recorded) >= 1024
                                and mine.startswith(recorded.rstrip(".")))
    if same:
        return {"class": "unschedulableSame", "kaudit": kaudit, "cause": "",
                "reason": "the same message, byte for byte"}
    if not recorded:
        return {"class": "unschedulableSame", "kaudit": kaudit, "cause": "",
                "reason": "unschedulable for kaudit too; the recording carries no message "
                          "to compare"}
    return {"class": "unschedulableDifferent", "kaudit": kaudit, "cause": "another message",
            "reason": f"kaudit's message differs: {mine!r}"}


def _already_preempted(victim: PodInfo) -> bool:
    """Whether ``victim`` already carries the DisruptionTarget condition a preemption by the
    scheduler writes (``PreemptPod`` in ``pkg/scheduler/framework/preemption/preemption.go``,
    Kubernetes v1.34, patches it only when ``UpdatePodCondition`` changes it, and deleting a
    pod already terminating writes nothing)."""
    for condition in (victim.obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget":
            return condition.get("status") == "True" and \
                condition.get("reason") == PREEMPTION_REASON
    return False


def _judge_preemption(decision: RecordedDecision, attempt: Attempt) -> Judgment:
    recorded = decision.node or ""
    if attempt.selected is not None:
        return {"class": "preemptionDifferent", "cause": "kaudit places the pod",
                "kaudit": {"node": attempt.selected, "nominatedNode": None, "victims": []},
                "reason": f"kaudit places the pod on {attempt.selected} without preemption"}
    details = getattr(attempt.post_filter_result, "details", None)
    chosen = getattr(details, "chosen", None)
    if details is None or chosen is None:
        return {"class": "preemptionDifferent", "cause": "kaudit finds no preemption",
                "kaudit": {"node": None, "nominatedNode": None, "victims": [],
                           "message": attempt.message},
                "reason": f"kaudit finds no preemption: {attempt.message}"}
    kaudit = {"node": None, "nominatedNode": chosen.node,
              "victims": [v.key for v in chosen.victims],
              "tiedNodes": [c.node for c in details.tied]}
    tied = {c.node: c for c in details.tied}
    if recorded not in tied:
        found = {c.node for c in details.candidates}
        why = ("a candidate kaudit ranks below " + chosen.node if recorded in found else
               "not a candidate kaudit's dry run found")
        if details.examined_nodes < details.potential_nodes and recorded not in found:
            why += (f" (the dry run examined {details.examined_nodes} of "
                    f"{details.potential_nodes} potential nodes from a random offset)")
        return {"class": "preemptionDifferent", "kaudit": kaudit,
                "cause": "another candidate" if recorded in found else "not a candidate",
                "reason": f"recorded nomination {recorded}: {why}"}
    candidate = tied[recorded]
    if not decision.victims:
        return {"class": "preemptionSame", "kaudit": kaudit, "cause": "",
                "reason": "the same node; the recording shows no victims to compare"}
    # A victim an earlier preemption already took is chosen again without a trace: upstream's
    # PreemptPod writes its DisruptionTarget condition only when that changes it.
    mine = {v.key for v in candidate.victims if not _already_preempted(v)}
    again = sorted(v.key for v in candidate.victims if _already_preempted(v))
    if again:
        # Not compared (the recording cannot show them) but listed, so a victim kaudit
        # should not have taken again is in sight.
        kaudit = {**kaudit, "victimsAlreadyPreempted": again}
    theirs = set(decision.victims)
    if mine == theirs:
        return {"class": "preemptionSame", "kaudit": kaudit, "cause": "",
                "reason": "the same node and the same victims"}
    flips = {key for group in candidate.victim_ties for key in group}
    shared = set(decision.shared_victims)
    if shared and (theirs - shared) - flips <= mine and mine - flips <= theirs | shared:
        return {"class": "preemptionSame", "kaudit": kaudit, "cause": "",
                "reason": "the same node; the victims agree with the recorded ones but for "
                          "pods another preemption on that node may have taken (the recording "
                          "does not say for whom a pod was preempted)"}
    if mine ^ theirs <= flips:
        return {"class": "preemptionSame", "kaudit": kaudit, "cause": "",
                "reason": "the same node; the victims differ only among equally ranked pods "
                          "(upstream's unstable sort)"}
    return {"class": "preemptionDifferent", "kaudit": {**kaudit, "victims": sorted(mine)},
            "cause": "other victims",
            "reason": f"the same node, other victims: recorded {sorted(theirs)}, kaudit "
                      f"{sorted(mine)}"}
