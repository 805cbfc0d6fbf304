"""Compare two runs of one trace (either may be ``recorded``), pod by pod, with reasons.

A pod that landed on different nodes is a *tie flip* when the other run's node was among the
top-scoring nodes of the binding attempt, or among the candidate nodes its preemption left tied
(or that preemption's dry run stopped early, so its candidates depended on a random offset); a
pod evicted in one run only is a tie flip when a tie among equally ranked victims decided it.
Those are coin flips, not changes. Otherwise the reason is
read from the binding attempt of run B (or A): which plugins' weighted scores put the winner
ahead of the other run's node, or which filter rejected that node, worded by the verdict's
renderer (:func:`kaudit.queries.verdict_text.cause_words`) with exact amounts: the pod's
requests at that attempt against the node's free capacity then (read for the moved pods' nodes
only). When both runs used the same configuration, every other difference follows from earlier
tie-breaks (the cluster drifted apart) and is reported as a *tie consequence*, not as a change.

A pod neither run scheduled is counted apart (``unscheduledInBoth``), not as ``same``: it
landed nowhere, so it did not land where the other run put it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit import versions
from kaudit.errors import ConfigError, InputError
from kaudit.eventlog.codec import rejects, unpack_attempt
from kaudit.plugins import names as plugin_names
from kaudit.queries.decision_inputs import describe_pod, free_capacity, trace_id_of
from kaudit.queries.outcomes import RECORDED, Outcomes, PodOutcome, run_outcomes
from kaudit.queries.runs import get_run, node_names
from kaudit.queries.summary_rows import diff_rows
from kaudit.queries.verdict_text import INSUFFICIENT, CauseWords, cause_words
from kaudit.store.models import RunEvent

#: A pending-time difference smaller than this is not a change.
PENDING_TOLERANCE_US = 1_000_000


@dataclass
class PodChange:
    pod: str
    change: str
    a: dict[str, Any]
    b: dict[str, Any]
    reason: str = ""
    deltas: dict[str, int] = field(default_factory=dict)
    #: The other run's node's rejection in words (``lack cpu``), for a pod moved by it.
    rejected_cause: str | None = None
    #: When the runs mirrored different releases: the release changes that touch what
    #: decided the move, or that the cluster had drifted apart by then.
    release_cause: str | None = None
    #: For a pod scheduled in one run only: the filter plugin that rejected, in the other
    #: run's last attempt, the node the pod got.
    rejected_by: str | None = None

    def as_json(self) -> dict[str, Any]:
        document = {"pod": self.pod, "change": self.change, "a": self.a, "b": self.b,
                    "reason": self.reason, "scoreDeltas": self.deltas}
        if self.release_cause is not None:
            document["releaseCause"] = self.release_cause
        return document


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def aggregates(outcomes: Outcomes) -> dict[str, Any]:
    pods = outcomes.pods.values()
    pending = [p.pending_us / 1e6 for p in pods if p.pending_us is not None]
    return {
        "pods": len(outcomes.pods),
        "scheduled": sum(1 for p in pods if p.node is not None),
        "pendingAtEnd": sum(1 for p in pods if p.pending_at_end),
        # The recorded cluster's attempts are not in the trace: which pods were never tried
        # is unknown there.
        "heldBack": (sum(1 for p in pods if p.pending_at_end and not p.attempts)
                     if outcomes.run_id is not None else None),
        "neverScheduled": sum(1 for p in pods if p.never_scheduled),
        "preempted": sum(1 for p in pods if p.preempted),
        "attempts": sum(p.attempts for p in pods) if outcomes.run_id is not None else None,
        "pendingSeconds": {"p50": statistics.median(pending) if pending else None,
                           "p95": _percentile(pending, 0.95),
                           "max": max(pending) if pending else None},
        "nodesInUse": len({p.node for p in pods if p.node is not None}),
        **(outcomes.utilisation or {}),
    }


class _BindingAttempts:
    """The binding attempts of the runs being compared, read in bulk the first time a run's
    are needed, and unpacked only for the nodes a comparison looks at."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.names: dict[int, dict[int, str]] = {}
        self.slots: dict[int, dict[str, int]] = {}
        self.rows: dict[int, dict[int, tuple[int, str, bytes | None]]] = {}

    def _load_names(self, run_id: int) -> None:
        if run_id not in self.names:
            self.names[run_id] = node_names(self.engine, run_id)
            self.slots[run_id] = {name: slot for slot, name in self.names[run_id].items()}

    def _load(self, run_id: int) -> None:
        self._load_names(run_id)
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(RunEvent.seq, RunEvent.ts_us, RunEvent.data, RunEvent.blob).where(
                    RunEvent.run_id == run_id, RunEvent.kind == "attempt",
                    RunEvent.node.is_not(None)))
            self.rows[run_id] = {seq: (ts_us, data, blob) for seq, ts_us, data, blob in rows}

    def get(self, outcomes: Outcomes, outcome: PodOutcome, nodes: tuple[str | None, ...]
            ) -> dict[str, Any] | None:
        run_id = outcomes.run_id
        if run_id is None or outcome.binding_attempt is None:
            return None
        if run_id not in self.rows:
            self._load(run_id)
        ts_us, data, blob = self.rows[run_id][outcome.binding_attempt]
        return self._unpack(run_id, ts_us, data, blob, nodes)

    def last(self, outcomes: Outcomes, outcome: PodOutcome, nodes: tuple[str | None, ...]
             ) -> dict[str, Any] | None:
        """The pod's last attempt (one that failed, for a pod never bound), for ``nodes``."""
        run_id = outcomes.run_id
        if run_id is None or outcome.last_attempt is None:
            return None
        self._load_names(run_id)
        with self.engine.connect() as connection:
            row = connection.execute(
                select(RunEvent.ts_us, RunEvent.data, RunEvent.blob).where(
                    RunEvent.run_id == run_id, RunEvent.seq == outcome.last_attempt)).first()
        if row is None:
            return None
        return self._unpack(run_id, row[0], row[1], row[2], nodes)

    def _unpack(self, run_id: int, ts_us: int, data: str, blob: bytes | None,
                nodes: tuple[str | None, ...]) -> dict[str, Any]:
        slots = self.slots[run_id]
        only = {slots[n] for n in nodes if n is not None and n in slots}
        return {**unpack_attempt(orjson.loads(data), blob, self.names[run_id], only),
                "tsUs": ts_us}


_NOT_EVALUATED = "did not evaluate"
#: How :func:`kaudit.queries.verdict_text.cause_words` begins a cause it has no words of its
#: own for (upstream's reasons follow).
_GENERIC_REJECTION = "rejected by "
#: Changes that come from chance (coin flips, sampling), not from the configuration.
CHANCE = ("tie-flip", "tie-consequence", "sampling")


def change_cause(change: PodChange) -> str:
    """The change's cause in a few words, for grouping: the plugin (and reason) that decided
    a move, a tie or sampling artifact, or the change's kind."""
    if change.change in ("tie-flip", "tie-consequence"):
        return "chance: " + ("a coin flip between top-scored nodes or equal victims"
                             if change.change == "tie-flip" else "follows earlier coin flips")
    if change.change == "sampling":
        return "chance: the other node was outside the sampled nodes"
    if change.change == "moved":
        if change.rejected_cause:
            return ("the other node no longer fit: "
                    + change.rejected_cause.removeprefix(_GENERIC_REJECTION))
        if change.deltas:
            plugin = max(change.deltas, key=lambda p: abs(change.deltas[p]))
            return f"scored higher by {plugin}"
        return "moved: " + (change.reason or "no attempt to compare")
    if change.change.startswith("scheduled-only-in-"):
        return f"bound only in {change.change[-1].upper()}"
    if change.change.startswith("preempted-only-in-"):
        return f"preempted only in {change.change[-1].upper()}"
    return "waited longer or shorter"


def rejecting_filter(attempt: Mapping[str, Any], node: str
                     ) -> tuple[str, tuple[str, ...]] | None:
    """The first filter plugin that rejected ``node`` in ``attempt`` and its reasons (upstream's
    code when it gave none), or None when the node passed or was not evaluated."""
    verdicts = attempt["nodes"].get(node)
    if verdicts is None or verdicts.get("feasible"):
        return None
    failed = [(p, v) for p, v in verdicts["filter"].items() if rejects(v)]
    if not failed:
        return None
    plugin, verdict = failed[0]
    return plugin, tuple(verdict["reasons"]) or (verdict["code"],)


def lacking_resources(plugin: str, reasons: Sequence[str]) -> list[str]:
    """The resources of ``Insufficient …`` reasons (empty for any other rejection)."""
    if plugin != plugin_names.NODE_RESOURCES_FIT or not all(
            r.startswith(INSUFFICIENT) for r in reasons):
        return []
    return [r[len(INSUFFICIENT):] for r in reasons]


def resource_facts(engine: Engine, run_id: int, trace_id: int, pod: str, ts_us: int,
                   node: str, resources: Sequence[str]) -> list[dict[str, Any]]:
    """The pod's requests against ``node``'s free capacity at ``ts_us`` for ``resources``, as
    :func:`kaudit.queries.verdict_text.cause_words` takes them (the capacity of that one node
    is read, so a diff of thousands of moved pods stays a query per pod)."""
    if not resources:
        return []
    requests = describe_pod(engine, trace_id, pod, ts_us).requests
    free = free_capacity(engine, run_id, ts_us, exclude_pod=pod, only=[node]).get(node)
    facts: list[dict[str, Any]] = []
    for name in resources:
        # A node without an extended resource has none free; ephemeral-storage may simply
        # not have been recorded by an older run (unknown, so not worded as 0).
        amount = None if free is None else free.get(
            name, None if name == "ephemeral-storage" else 0)
        facts.append({"resource": name, "requested": requests.get(name),
                      **({"free": [max(amount, 0)]} if amount is not None else {})})
    return facts


def rejection_sentence(label: str, node: str, words: CauseWords) -> str:
    """``sample-2 rejected node-b2: lack cpu (needs 1, free 820m)``; a cause the renderer
    words only generically (``rejected by PodTopologySpread: …``) reads ``sample-2 rejected
    node-b2 by PodTopologySpread: …``."""
    if words.cause.startswith(_GENERIC_REJECTION):
        return f"{label} rejected {node} by {words.cause.removeprefix(_GENERIC_REJECTION)}"
    return f"{label} rejected {node}: {words.cause}" + (f" ({words.detail})" if words.detail
                                                          else "")


def rejection_words(attempt: Mapping[str, Any], node: str,
                    resources: Sequence[Mapping[str, Any]] = ()) -> CauseWords | None:
    """The attempt's rejection of ``node`` in the verdict's words (``resources``: the facts of
    :func:`resource_facts`), or None when it did not reject the node."""
    rejection = rejecting_filter(attempt, node)
    if rejection is None:
        return None
    return cause_words(*rejection, resources=resources)


def explain_move(attempt: dict[str, Any], winner: str, other: str, label: str,
                 resources: Sequence[Mapping[str, Any]] = ()) -> tuple[str, dict[str, int]]:
    """Why ``attempt`` (of run ``label``) chose ``winner`` rather than ``other``; a rejection
    of ``other`` is worded with ``resources`` (see :func:`resource_facts`) when given."""
    nodes = attempt["nodes"]
    won, lost = nodes.get(winner, {}), nodes.get(other)
    if lost is None:
        return (f"{label} {_NOT_EVALUATED} {other} (it examined "
                f"{attempt['evaluatedNodes']} nodes from its rotating start)", {})
    if not lost.get("feasible"):
        rejection = rejection_words(attempt, other, resources)
        if rejection is None:
            return f"{label} found {other} infeasible before its filters", {}
        return rejection_sentence(label, other, rejection), {}
    if "score" not in lost or "score" not in won:
        return f"{label} had one feasible node or did not score", {}
    deltas = {p: won["score"][p]["weighted"] - lost["score"][p]["weighted"]
              for p in won["score"]}
    ordered = sorted(((p, d) for p, d in deltas.items() if d), key=lambda kv: -abs(kv[1]))
    words = ", ".join(f"{p} {d:+d}" for p, d in ordered)
    return (f"{label} chose {winner} ({won['total']}) over {other} ({lost['total']}): "
            f"{words or 'equal scores'}"), dict(ordered)


def _move(engine: Engine, outcomes: Outcomes, outcome: PodOutcome, attempt: dict[str, Any],
          winner: str, other: str) -> tuple[str, dict[str, int], str | None]:
    """:func:`explain_move` with the exact amounts of a resource rejection read from the run,
    and the rejection's cause words (None when ``other`` was not rejected)."""
    rejection = rejecting_filter(attempt, other)
    facts: list[dict[str, Any]] = []
    if rejection is not None and outcomes.run_id is not None:
        facts = resource_facts(engine, outcomes.run_id, outcomes.trace_id, outcome.key,
                               attempt["tsUs"], other, lacking_resources(*rejection))
    reason, deltas = explain_move(attempt, winner, other, outcomes.name, facts)
    words = rejection_words(attempt, other, facts)
    return reason, deltas, words.cause if words is not None else None


def _differs(pa: PodOutcome, pb: PodOutcome) -> bool:
    pending = (pa.pending_us is not None and pb.pending_us is not None
               and abs(pa.pending_us - pb.pending_us) >= PENDING_TOLERANCE_US)
    return pa.node != pb.node or pa.preempted != pb.preempted or pending


def _tie_flip(pa: PodOutcome, pb: PodOutcome, attempt_a: dict[str, Any] | None,
              attempt_b: dict[str, Any] | None) -> bool:
    """The other run's node was among this run's top-scoring nodes, or among the nodes this
    run's preemption left tied (either way round); or a preemption dry run that stopped early
    nominated the node."""
    if pa.node is None or pb.node is None or pa.node == pb.node:
        return False
    tied_b = [*(attempt_b["tiedNodes"] if attempt_b else []), *pb.nomination_tied]
    tied_a = [*(attempt_a["tiedNodes"] if attempt_a else []), *pa.nomination_tied]
    return (pa.node in tied_b or pb.node in tied_a
            or pa.nomination_partial or pb.nomination_partial)


EVICTION_TIE = "evicted in one run only, by a preemption tie: a coin flip"


def _eviction_tie(pa: PodOutcome, pb: PodOutcome) -> bool:
    """Evicted in one run only, and a preemption's tie decided its fate in either run."""
    return pa.preempted != pb.preempted and (pa.preempted_by_tie or pb.preempted_by_tie)


def _stem(key: str) -> str:
    namespace, _, name = key.partition("/")
    return f"{namespace}/{name.rsplit('-', 1)[0]}"


def _pair_replacements(a: Outcomes, b: Outcomes) -> list[tuple[str, str]]:
    """Pods only one run has, paired by owner name stem in creation order: a controller's
    replacement of a preempted or lost pod gets a new name in each run (``etl-7xk2q`` in the
    trace, ``etl-r1`` in kaudit), but stands for the same workload."""
    only_a = set(a.pods) - set(b.pods)
    only_b = set(b.pods) - set(a.pods)
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for keys, side in ((only_a, 0), (only_b, 1)):
        outcomes = a if side == 0 else b
        def created_first(key: str, outcomes: Outcomes = outcomes) -> tuple[int, str]:
            return outcomes.pods[key].created_us or 0, key

        for key in sorted(keys, key=created_first):
            groups.setdefault(_stem(key), ([], []))[side].append(key)
    pairs: list[tuple[str, str]] = []
    for in_a, in_b in groups.values():
        pairs.extend(zip(in_a, in_b, strict=False))
    return pairs


def _with_spared_victims(a: Outcomes, b: Outcomes) -> tuple[Outcomes, Outcomes]:
    """A pod one run evicted and the other does not list (it was bound by the trace and left
    alone there) is compared as not preempted, not reported as a pod of one run only."""
    def spared(x: Outcomes, y: Outcomes) -> Outcomes:
        missing = {key: PodOutcome(key) for key, outcome in y.pods.items()
                   if outcome.preempted and key not in x.pods}
        if not missing:
            return x
        return replace(x, pods={**x.pods, **missing})

    return spared(a, b), spared(b, a)


def diff_outcomes(engine: Engine, a: Outcomes, b: Outcomes, *,
                  aggregates_a: dict[str, Any] | None = None) -> dict[str, Any]:
    """The changed pods with reasons, and both sides' aggregates. ``aggregates_a`` are side
    A's as stored with it (a baseline summary's): what the run measured from its event log
    (attempts, allocation, imbalance, fragmentation), which its pods alone cannot give."""
    original_a, original_b = a, b
    attempts = _BindingAttempts(engine)
    changes: list[PodChange] = []
    counts = {"same": 0, "unscheduledInBoth": 0, "moved": 0, "tieFlips": 0,
              "tieConsequences": 0,
              "samplingArtifacts": 0,
              "scheduledOnlyInA": 0, "scheduledOnlyInB": 0, "preemptedOnlyInA": 0,
              "preemptedOnlyInB": 0, "pendingTimeChanged": 0}
    # The same configuration, as the same release: otherwise a moved pod may be the release's.
    same_config = (a.config is not None and a.config == b.config
                   and a.kubernetes_version == b.kubernetes_version)
    a, b = _with_spared_victims(a, b)
    pairs = [(key, key) for key in sorted(set(a.pods) & set(b.pods))]
    pairs += _pair_replacements(a, b)
    common = [ka if ka == kb else f"{ka} ≈ {kb}" for ka, kb in pairs]
    a_pods = {label: a.pods[ka] for label, (ka, _) in zip(common, pairs, strict=True)}
    b_pods = {label: b.pods[kb] for label, (_, kb) in zip(common, pairs, strict=True)}
    a, b = replace(a, pods=a_pods), replace(b, pods=b_pods)
    only_a = sorted(set(original_a.pods) - {ka for ka, _ in pairs})
    only_b = sorted(set(original_b.pods) - {kb for _, kb in pairs})
    for key in common:
        if same_config and _differs(a.pods[key], b.pods[key]):
            nodes = (a.pods[key].node, b.pods[key].node)
            attempt_b = attempts.get(b, b.pods[key], nodes)
            attempt_a = attempts.get(a, a.pods[key], nodes)
            evicted_by_tie = _eviction_tie(a.pods[key], b.pods[key])
            flip = evicted_by_tie or _tie_flip(a.pods[key], b.pods[key], attempt_a, attempt_b)
            counts["tieFlips" if flip else "tieConsequences"] += 1
            changes.append(PodChange(
                key, "tie-flip" if flip else "tie-consequence", a.pods[key].as_json(),
                b.pods[key].as_json(),
                EVICTION_TIE if evicted_by_tie else
                "both nodes were among the top scores: a coin flip" if flip else
                "same configuration: follows from earlier tie-breaks"))
            continue
        pa, pb = a.pods[key], b.pods[key]
        sides = pa.as_json(), pb.as_json()
        if _eviction_tie(pa, pb):
            counts["tieFlips"] += 1
            changes.append(PodChange(key, "tie-flip", *sides, EVICTION_TIE))
            continue
        if pa.preempted != pb.preempted:
            change = "preempted-only-in-a" if pa.preempted else "preempted-only-in-b"
            counts["preemptedOnlyInA" if pa.preempted else "preemptedOnlyInB"] += 1
            changes.append(PodChange(key, change, *sides))
            continue
        if (pa.node is None) != (pb.node is None):
            only = "a" if pa.node is not None else "b"
            counts["scheduledOnlyInA" if only == "a" else "scheduledOnlyInB"] += 1
            reason = ""
            failed_side = b if only == "a" else a
            failed = failed_side.pods[key]
            placed = (pa if only == "a" else pb).node
            rejected_by: str | None = None
            if failed_side.run_id is not None and failed.attempts:
                reason = f"never bound in {failed_side.name}"
                last = attempts.last(failed_side, failed, (placed,))
                rejection = None if last is None or placed is None else \
                    rejecting_filter(last, placed)
                if rejection is not None:
                    rejected_by = rejection[0]
                    reason += (f"; its last attempt there found {placed} rejected by "
                               f"{rejection[0]}: {', '.join(rejection[1])}")
            changes.append(PodChange(key, f"scheduled-only-in-{only}", *sides, reason,
                                     rejected_by=rejected_by))
            continue
        if pa.node != pb.node and pa.node is not None and pb.node is not None:
            attempt_b = attempts.get(b, pb, (pa.node, pb.node))
            attempt_a = attempts.get(a, pa, (pa.node, pb.node))
            if _tie_flip(pa, pb, attempt_a, attempt_b):
                counts["tieFlips"] += 1
                changes.append(PodChange(key, "tie-flip", *sides,
                                         "both nodes were among the top scores: a coin flip"))
                continue
            rejected: str | None = None
            if attempt_b is not None:
                reason, deltas, rejected = _move(engine, b, pb, attempt_b, pb.node, pa.node)
            elif attempt_a is not None:
                reason, deltas, rejected = _move(engine, a, pa, attempt_a, pa.node, pb.node)
                deltas = {p: -d for p, d in deltas.items()}
            else:
                reason, deltas = "", {}
            if _NOT_EVALUATED in reason:
                # The other run never looked at this node (percentageOfNodesToScore sampled
                # from a rotating start): a sampling artifact, like a tie flip, not a verdict
                # of the configuration.
                counts["samplingArtifacts"] += 1
                changes.append(PodChange(key, "sampling", *sides, reason, deltas))
                continue
            counts["moved"] += 1
            changes.append(PodChange(key, "moved", *sides, reason, deltas, rejected))
            continue
        if pa.pending_us is not None and pb.pending_us is not None and \
                abs(pa.pending_us - pb.pending_us) >= PENDING_TOLERANCE_US:
            counts["pendingTimeChanged"] += 1
            changes.append(PodChange(key, "pending-time", *sides))
            continue
        counts["same" if pa.node is not None else "unscheduledInBoth"] += 1
    side_a = aggregates_a if aggregates_a is not None else aggregates(original_a)
    side_b = aggregates(original_b)
    upgrade = _release_changes(a.kubernetes_version, b.kubernetes_version)
    if upgrade is not None:
        changes = [replace(c, release_cause=_release_cause(c, upgrade)) for c in changes]
    return {
        "a": a.name, "b": b.name, "compared": len(common), "sameConfiguration": same_config,
        # The release each side mirrored (None for ``recorded``, the real cluster).
        "kubernetesVersions": {"a": a.kubernetes_version, "b": b.kubernetes_version},
        "onlyInA": only_a, "onlyInB": only_b,
        "counts": counts,
        "aggregates": {"a": side_a, "b": side_b},
        "rows": diff_rows(side_a, side_b),
        "changes": [{**c.as_json(), "cause": change_cause(c)} for c in changes],
        "causes": _cause_counts(changes),
    }


ReleaseChanges = list[tuple[str, str, tuple[str, ...]]]


def _release_changes(a: str | None, b: str | None) -> ReleaseChanges | None:
    """What differs between the releases two runs mirrored (oldest to newest), or None when
    they mirrored the same one (or one side is the recorded cluster)."""
    if a is None or b is None or a == b:
        return None
    try:
        first, second = versions.get(a), versions.get(b)
    except ConfigError:
        return None
    older, newer = sorted((first, second), key=lambda v: v.release)
    return versions.changes_between(older, newer)


def _release_cause(change: PodChange, upgrade: ReleaseChanges) -> str:
    """Which release changes explain a changed pod: those touching the plugin that decided a
    move (or the choice among tied nodes for a tie flip); else the cluster had drifted apart
    by then (earlier pods went elsewhere), the plugin's own code being the same."""
    def named(plugin: str) -> list[str]:
        """The release changes touching ``plugin`` (the choice among ties for ``*``): the
        gates turned on or off, when there are, and how many other changes it has."""
        found = [(release, what) for release, what, plugins in upgrade if plugin in plugins]
        gates = [(r, w) for r, w in found if w.endswith((" on", " off"))]
        if not gates or len(gates) == len(found):
            return [f"{release}: {what}" for release, what in found]
        others = len(found) - len(gates)
        return [*(f"{release}: {what}" for release, what in gates),
                f"{others} other change{'s' if others > 1 else ''} of {plugin} "
                f"(kaudit versions lists them)"]

    if change.change == "tie-flip":
        found = named("*")
        return "; ".join(found) if found else "a tie both releases break at random"
    if change.change.startswith("scheduled-only-in-") and change.rejected_by is not None:
        found = named(change.rejected_by)
        if found:
            return (f"{change.rejected_by} rejected it in one release only, and changed in "
                    + "; ".join(found) + " (or the cluster differed by then)")
        return (f"{change.rejected_by}'s code is the same in both releases: the cluster "
                "differed by then (earlier pods went elsewhere)")
    if change.change != "moved":
        return "the cluster differed by then (earlier pods went elsewhere)"
    if change.deltas:
        plugin = max(change.deltas, key=lambda p: abs(change.deltas[p]))
        found = named(plugin)
        if found:
            return (f"{plugin} decided it, and changed in " + "; ".join(found)
                    + " (or the cluster differed by then)")
        return (f"{plugin}'s code is the same in both releases: the cluster differed by then "
                "(earlier pods went elsewhere)")
    return "the cluster differed by then (earlier pods went elsewhere)"


def _cause_counts(changes: list[PodChange]) -> list[dict[str, Any]]:
    """Changed pods grouped by cause, largest first (chance last)."""
    groups: dict[str, list[str]] = {}
    for change in changes:
        groups.setdefault(change_cause(change), []).append(change.pod)
    return [{"cause": cause, "count": len(pods), "chance": cause.startswith("chance:"),
             "pods": pods[:5]}
            for cause, pods in sorted(groups.items(), key=lambda kv: (
                kv[0].startswith("chance:"), -len(kv[1]), kv[0]))]


def diff_runs(engine: Engine, run_a: str, run_b: str) -> dict[str, Any]:
    """Compare two runs of one trace by name; either may be ``recorded``."""
    if run_a == RECORDED and run_b == RECORDED:
        raise InputError("compare `recorded` with a run of the trace")
    trace = None
    for ref in (run_a, run_b):
        if ref != RECORDED:
            trace = get_run(engine, ref).trace
    a = run_outcomes(engine, run_a, trace)
    b = run_outcomes(engine, run_b, trace)
    if a.trace_id != b.trace_id:
        raise InputError(f"runs {run_a!r} and {run_b!r} replay different traces")
    return diff_outcomes(engine, a, b)


def verdict_on_other_node(engine: Engine, run_ref: str, pod: str, other: str | None
                          ) -> dict[str, Any] | None:
    """What the attempt that bound ``pod`` in run ``run_ref`` said of ``other`` (the node
    another run put it on), worded as the diff words a move: ``text`` (``sample-2 rejected
    node-b2: lack cpu (needs 1, free 570m)``), ``rejection`` (the cause and its detail, or
    None when the attempt did not reject the node) and whether it evaluated the node. None
    for ``recorded``, a pod the run never bound, or the node the run chose itself."""
    if run_ref == RECORDED or other is None:
        return None
    run = get_run(engine, run_ref)
    with engine.connect() as connection:
        row = connection.execute(
            select(RunEvent.ts_us, RunEvent.node, RunEvent.data, RunEvent.blob).where(
                RunEvent.run_id == run.id, RunEvent.kind == "attempt", RunEvent.pod == pod,
                RunEvent.node.is_not(None)).order_by(RunEvent.seq.desc()).limit(1)).first()
    if row is None or row.node == other:
        return None
    names = node_names(engine, run.id)
    slots = {name: slot for slot, name in names.items()}
    only = {slots[n] for n in (row.node, other) if n in slots}
    attempt = {**unpack_attempt(orjson.loads(row.data), row.blob, names, only),
               "tsUs": row.ts_us}
    rejection = rejecting_filter(attempt, other)
    facts = resource_facts(engine, run.id, trace_id_of(engine, run.id), pod, row.ts_us, other,
                           lacking_resources(*rejection)) if rejection is not None else []
    text, deltas = explain_move(attempt, row.node, other, run.name, facts)
    words = rejection_words(attempt, other, facts)
    return {"run": run.name, "node": other, "chosen": row.node, "text": text,
            "evaluated": other in attempt["nodes"], "scoreDeltas": deltas,
            "rejection": None if words is None else {
                "plugin": rejection[0] if rejection else None, "cause": words.cause,
                "detail": words.detail}}
