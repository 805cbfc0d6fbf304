"""DefaultPreemption: when no node fits, find a node where evicting lower-priority pods helps.

Mirrors ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`` and
``pkg/scheduler/framework/preemption/preemption.go`` (Kubernetes v1.34):

1. eligibility (``preemptionPolicy: Never``; a terminating victim on the nominated node);
2. potential nodes are those whose filter status is Unschedulable (never UU or absent);
3. a dry run from a random offset over ``max(n * minCandidateNodesPercentage / 100,
   minCandidateNodesAbsolute)`` candidates: remove every lower-priority pod, check the pod
   fits, then reprieve victims (PDB-violating first, each group most important first, sorted
   as Go's ``sort.Slice`` sorts the node's pods in upstream's ``NodeInfo.Pods`` order:
   ``kaudit.cluster.victim_columns``, ``preemption_go_sort``) while it still fits; stop
   once a non-violating candidate exists and enough candidates are found;
4. ``pickOneNodeForPreemption``: fewest PDB violations, lowest highest-victim priority,
   smallest sum of priorities, fewest victims, latest earliest start time, then the first.

When the cycle's filters each read only their node and no PreFilter extension is in play
(``Framework.judges_nodes_independently``), the dry run judges a block of nodes at once in
one forked state, one filter run per reprieve round; otherwise node by node, each in its own
fork. Both give every node the outcome of its own dry run.

The random offset comes from the attempt's seeded RNG, so replays are reproducible. The plugin
does not delete anything: its result names the node to nominate and the victims, and the
replay engine applies them (deleting victims, clearing lower nominations) as upstream's
``prepareCandidateAsync`` does through the API server, taking virtual time; meanwhile this
plugin's PreEnqueue holds the preemptor back (``SchedulerAsyncPreemption``).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework.cycle_state import DECISION_SEED_KEY, PREEMPTION_TARGET_KEY, CycleState
from kaudit.framework.diagnosis import Diagnosis, fit_error_message
from kaudit.framework.events import POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.extender import ExtenderError
from kaudit.framework.plugin import PostFilterPlugin, PostFilterResult, PreEnqueuePlugin
from kaudit.framework.runtime import Framework, PluginError
from kaudit.framework.status import Code, Status
from kaudit.gostrings import aggregate, go_quote
from kaudit.model.pod import PodInfo
from kaudit.model.timestamps import start_time_us
from kaudit.plugins import names
from kaudit.plugins.preemption_columns import (
    Outcome,
    TieFinder,
    no_ties,
    parse_budgets,
    select_victims_by_columns,
    tie_groups,
)
from kaudit.plugins.preemption_go_sort import go_sort, started_now
from kaudit.plugins.preemption_offsets import window_in_parallel, window_nominating

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
MAX_INT32 = 2**31 - 1
#: Pods whose rank is kept between cycles, at most (then the memo starts again).
_RANKS_KEPT = 1 << 18
_NO_VICTIMS = Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)


@dataclass(frozen=True)
class Candidate:
    node: str
    victims: tuple[PodInfo, ...]
    pdb_violations: int
    #: Works out ``victim_ties`` when first asked: only the chosen node's are ever read.
    find_ties: TieFinder = field(default=no_ties, repr=False, compare=False)

    @functools.cached_property
    def victim_ties(self) -> tuple[tuple[str, ...], ...]:
        """Groups of equally ranked potential victims (same priority and start time) whose
        fates differed: upstream reprieves them in the order its cache's pod order and
        ``sort.Slice`` leave them in, which kaudit mirrors but a recording cannot pin down
        (when the scheduler assumed each pod), so which of them are evicted (or count
        against a PodDisruptionBudget) may differ."""
        return self.find_ties()


@dataclass
class PreemptionDetails:
    """What the dry run found: for the event log and ``kaudit explain``."""

    eligible: bool = True
    potential_nodes: int = 0
    #: Potential nodes the dry run examined: fewer than ``potential_nodes`` when it stopped
    #: early, so the candidates found depended on the random start offset.
    examined_nodes: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    #: The node the dry run started at when the audit asked for an offset nominating a
    #: recorded node (``PREEMPTION_TARGET_KEY``), else None.
    started_at: str | None = None
    #: Whether that offset nominates the node only when upstream's workers interleave
    #: (:func:`kaudit.plugins.preemption_offsets.window_in_parallel`).
    in_parallel: bool = False
    chosen: Candidate | None = None
    #: The candidates still tied after all of upstream's selection criteria (upstream takes
    #: whichever comes first in its parallel dry run).
    tied: list[Candidate] = field(default_factory=list)
    node_statuses: dict[str, Status] = field(default_factory=dict)
    #: The candidates the extenders left (None when no extender took part).
    extender_candidates: list[Candidate] | None = None
    #: The dry run's errors (a node where the pod fit with no victim, a filter's error).
    errors: list[str] = field(default_factory=list)

    @property
    def tie_exposed(self) -> frozenset[str]:
        """Pods whose eviction or reprieve a coin flip decided: every victim of every tied
        node when the node was tied, else the members of the chosen node's victim ties."""
        if self.chosen is None:
            return frozenset()
        if len(self.tied) > 1:
            return frozenset(v.key for c in self.tied for v in c.victims)
        return frozenset(key for group in self.chosen.victim_ties for key in group)

    def as_json(self) -> dict[str, Any]:
        """The ``preemption`` object of every attempt JSON (``whatif``, ``explain``, the pod
        page): the nominated node, its victims in upstream's order (most important first),
        their PodDisruptionBudget violations, and how many nodes the dry run found workable
        (each listed under ``candidateNodes``)."""
        chosen = self.chosen
        return {
            "eligible": self.eligible,
            "nominatedNode": chosen.node if chosen else None,
            "victims": [v.key for v in chosen.victims] if chosen else [],
            "pdbViolations": chosen.pdb_violations if chosen else None,
            "candidates": len(self.candidates),
            "potentialNodes": self.potential_nodes,
            "examinedNodes": self.examined_nodes,
            "tiedNodes": [c.node for c in self.tied],
            "victimTies": [list(group) for group in chosen.victim_ties] if chosen else [],
            "candidateNodes": [{"node": c.node, "victims": [v.key for v in c.victims],
                                "pdbViolations": c.pdb_violations} for c in self.candidates],
            **({} if self.extender_candidates is None else {"afterExtenders": [
                {"node": c.node, "victims": [v.key for v in c.victims],
                 "pdbViolations": c.pdb_violations} for c in self.extender_candidates]}),
        }


def _terminating_by_preemption(pod: PodInfo) -> bool:
    if not pod.terminating:
        return False
    for condition in (pod.obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and \
                condition.get("reason") == "PreemptionByScheduler":
            return True
    return False


class DefaultPreemption(PreEnqueuePlugin, PostFilterPlugin):
    name = names.DEFAULT_PREEMPTION
    args_spec = ArgsSpec(
        kind="DefaultPreemptionArgs", schema=args_schema.DEFAULT_PREEMPTION_ARGS,
        set_defaults=args_defaults.set_defaults_default_preemption,
        validate=args_validation.validate_default_preemption_args)

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """With ``SchedulerAsyncPreemption``, hold a preemptor back while its preemption's API
        calls are still being issued (``IsPodRunningPreemption``)."""
        preemption = self.handle.ports.preemption if self.handle is not None else None
        if self.async_preemption and preemption is not None and preemption.preempting(pod.uid):
            return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_PREEMPTION)
        return Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod/Delete with a hint that never requeues: the registration only lets a pod
        this plugin gates see pod deletions (its other rejecting plugins decide)."""
        if not self.async_preemption:
            return []
        return [register(POD, "Delete", lambda pod, old, new: QueueingHint.QUEUE_SKIP)]

    @property
    def async_preemption(self) -> bool:
        gates = getattr(self.handle, "feature_gates", None)
        return gates is not None and gates.enabled("SchedulerAsyncPreemption")

    def __init__(self, args: dict[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.min_percentage = int(self.args.get("minCandidateNodesPercentage", 10))
        self.min_absolute = int(self.args.get("minCandidateNodesAbsolute", 100))
        self._ranks: dict[str, tuple[PodInfo, tuple[int, int, int]]] = {}
        self._cycle_now: int | None = None
        #: v1.37: a successful preemption says where it found room (upstream PR #140180).
        self.tells_placement = versions.handle_carries(handle, "post-filter-message-without-dra")
        #: v1.37: a pod without a start time reads the clock once, as its victim is built.
        self.fixed_unstarted = versions.handle_carries(handle, "victim-start-time-fixed")
        self._built: dict[str, int] = {}
        #: v1.37: a victim stops at the first PodDisruptionBudget it exhausts.
        self.first_violation_only = versions.handle_carries(handle, "pdb-first-violation-stops")

    # ------------------------------------------------------------------ helpers

    def _start_time(self, pod: PodInfo) -> int:
        parsed = start_time_us(pod.start_time)
        return self._now() if parsed is None else parsed

    def _framework(self) -> Framework:
        assert self.handle is not None and self.handle.framework is not None, \
            "DefaultPreemption runs inside a framework"
        return self.handle.framework

    def _now(self) -> int:
        """The virtual now, read once per cycle (a pod without a start time starts now)."""
        if self._cycle_now is None:
            clock = self.handle.ports.clock if self.handle is not None else None
            self._cycle_now = clock.now_us if clock is not None else 2**62
        return self._cycle_now

    def more_important(self, pod: PodInfo) -> tuple[int, int, int]:
        """Sort key: higher priority first, then the earlier start time (``MoreImportantPod``);
        a pod without a start time counts as starting now, just after any pod that started
        then (its last field is 1: ``preemption_go_sort.started_now``). Kept while the pod
        object stands."""
        key = self._ranks.get(pod.uid)
        if key is not None and key[0] is pod:
            return key[1]
        started = start_time_us(pod.start_time)
        if started is None:
            return -pod.priority, self._now(), 1
        if len(self._ranks) > _RANKS_KEPT:
            self._ranks.clear()
        rank = -pod.priority, started, 0
        self._ranks[pod.uid] = (pod, rank)
        return rank

    def sort_by_importance(self, pods: list[PodInfo]) -> None:
        """``sort.Slice`` by ``MoreImportantPod``, in place, as upstream sorts victims. From
        v1.37 a pod without a start time reads the clock once, when its victim is built, in
        its node's pod order (the first sight of it in a cycle here), so such pods are
        ordered, the first built the most important."""
        if not self.fixed_unstarted:
            go_sort(pods, self.more_important, started_now)
            return
        built = self._built

        def key(pod: PodInfo) -> tuple[int, ...]:
            rank = self.more_important(pod)
            if not started_now(rank):
                return (*rank, 0)
            return (*rank, built.setdefault(pod.uid, len(built)))
        go_sort(pods, key)

    def num_candidates(self, potential: int) -> int:
        count = potential * self.min_percentage // 100
        return min(max(count, self.min_absolute), potential)

    def eligible(self, pod: PodInfo, cluster: ClusterState, diagnosis: Diagnosis
                 ) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if diagnosis.status_of(nominated).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            slot = cluster.slot_of.get(nominated)
            if slot is not None:
                for other in cluster.pods_on[slot].values():
                    if other.priority < pod.priority and _terminating_by_preemption(other):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    # ------------------------------------------------------------------ PostFilter

    def post_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                    diagnosis: Any) -> tuple[PostFilterResult | None, Status]:
        self._cycle_now = None
        self._built.clear()
        details = PreemptionDetails()
        ok, message = self.eligible(pod, cluster, diagnosis)
        details.eligible = ok
        if not ok:
            return PostFilterResult(details=details), Status.of(Code.UNSCHEDULABLE,
                                                                 "preemption: " + message)
        potential = self._potential_nodes(cluster, diagnosis)
        details.potential_nodes = len(potential)
        rng = random.Random(f"preemption/{state.read(DECISION_SEED_KEY)}")
        if potential:
            offset = rng.randrange(len(potential))
            target = state.read(PREEMPTION_TARGET_KEY)
            if target is None or not self._from_offset_nominating(state, pod, cluster,
                                                                  potential, target, details):
                self._dry_run(state, pod, cluster, potential, offset, details)
        if not details.candidates and details.errors:
            # ``Preempt``: the dry run's errors, when it found no candidate, are the answer.
            return PostFilterResult(details=details), Status.of(
                Code.ERROR, "preemption: " + aggregate(details.errors))
        if not details.candidates:
            fit = Diagnosis(node_statuses=details.node_statuses,
                            absent_status=Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                    NOT_HELPFUL))
            text = fit_error_message(cluster.node_count, fit)
            return (PostFilterResult(nominated_node_name="", details=details),
                    Status.of(Code.UNSCHEDULABLE, "preemption: " + text))
        candidates = details.candidates
        extenders = self.handle.extenders if self.handle is not None else ()
        if extenders:
            try:
                candidates = self._call_extenders(extenders, pod, cluster, candidates)
            except ExtenderError as exc:
                return PostFilterResult(details=details), Status.of(Code.ERROR,
                                                                    f"preemption: {exc}")
            details.extender_candidates = candidates
            if not candidates:
                return PostFilterResult(details=details), Status.of(
                    Code.UNSCHEDULABLE, "preemption: " + NO_CANDIDATE)
        details.tied = self.best_candidates(candidates)
        details.chosen = details.tied[0]
        success = Status.success()
        if self.tells_placement:
            success = Status.of(Code.SUCCESS, "preemption: found a potential placement for pod "
                                f"on node {details.chosen.node}, preempting "
                                f"{len(details.chosen.victims)} victims")
        return (PostFilterResult(nominated_node_name=details.chosen.node, details=details),
                success)

    @staticmethod
    def _call_extenders(extenders: Sequence[Any], pod: PodInfo, cluster: ClusterState,
                        candidates: list[Candidate]) -> list[Candidate]:
        """``callExtenders``: each interested extender that supports preemption narrows the
        candidates' victims in turn. A failed call of an ignorable extender is skipped, and
        so are the nodes it answered no victims for; any other failure is an error. The
        candidates keep the dry run's order (upstream's come from a Go map, in no order)."""
        victims: dict[str, tuple[tuple[PodInfo, ...], int]] = {
            c.node: (c.victims, c.pdb_violations) for c in candidates}
        if not victims:
            return candidates

        def pods_on(node: str) -> dict[str, PodInfo] | None:
            slot = cluster.slot_of.get(node)
            return None if slot is None or not cluster.live[slot] else cluster.pods_on[slot]

        for extender in extenders:
            if not extender.supports_preemption or not extender.is_interested(pod):
                continue
            try:
                answered = extender.process_preemption(pod, victims, pods_on)
            except ExtenderError:
                if extender.ignorable:
                    continue
                raise
            for node, (pods, _) in list(answered.items()):
                if not pods:
                    if extender.ignorable:
                        del answered[node]
                        continue
                    raise ExtenderError("expected at least one victim pod on node "
                                        + go_quote(node))
            victims = {node: (tuple(pods), count) for node, (pods, count) in answered.items()}
            if not victims:
                break
        by_node = {c.node: c for c in candidates}
        narrowed = []
        for node in [*(c.node for c in candidates if c.node in victims),
                     *(n for n in victims if n not in by_node)]:
            pods, count = victims[node]
            kept = by_node.get(node)
            same = (kept is not None and kept.pdb_violations == count
                    and [v.uid for v in kept.victims] == [v.uid for v in pods])
            narrowed.append(kept if same and kept is not None else Candidate(node, pods, count))
        return narrowed

    @staticmethod
    def _potential_nodes(cluster: ClusterState, diagnosis: Diagnosis) -> list[int]:
        """``nodesWherePreemptionMightHelp``: the slots, in node order, whose filter status
        is Unschedulable (UnschedulableAndUnresolvable and absent nodes are left out)."""
        unschedulable = Code.UNSCHEDULABLE
        order = cluster.order
        if diagnosis.absent_status.code == unschedulable:
            statuses, absent = diagnosis.node_statuses, diagnosis.absent_status
            return [slot for slot, name in zip(order, cluster.names(order), strict=True)
                    if statuses.get(name, absent).code == unschedulable]
        # Only nodes with an explicit status can qualify: look those up, not every node.
        slot_of = cluster.slot_of
        slots = np.fromiter((slot_of[name] for name, status in
                             diagnosis.node_statuses.items()
                             if status.code == unschedulable and name in slot_of),
                            dtype=np.int64)
        if not len(slots):
            return []
        position = np.full(cluster.capacity, -1, dtype=np.int64)
        position[cluster.order_array] = np.arange(len(order))
        ranks = position[slots]
        slots = slots[ranks >= 0]
        ordered: list[int] = slots[np.argsort(ranks[ranks >= 0], kind="stable")].tolist()
        return ordered

    def _from_offset_nominating(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                                potential: list[int], target: str,
                                details: PreemptionDetails) -> bool:
        """The dry run as from the first offset whose candidates nominate ``target``
        (:mod:`kaudit.plugins.preemption_offsets`), every potential node examined once;
        False, ``details`` left as they were, when no offset does."""
        wanted = self.num_candidates(len(potential))
        if len(potential) <= wanted:
            return False  # every offset examines every node: the offset changes nothing
        every = PreemptionDetails()
        self._dry_run(state, pod, cluster, potential, 0, every, wanted=len(potential))
        position = {name: i for i, name in enumerate(cluster.names(potential))}
        window = window_nominating(every.candidates, position, len(potential), target, wanted,
                                   self.best_candidates)
        if window is None:
            window = window_in_parallel(
                every.candidates, position, len(potential), target, wanted,
                self._beats,
                self.handle.parallelism if self.handle is not None else 16)
            details.in_parallel = window is not None
        if window is None:
            return False
        details.candidates = window.candidates
        details.examined_nodes = window.examined
        details.started_at = window.start
        details.errors = every.errors
        details.node_statuses = every.node_statuses
        return True

    def _dry_run(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                 potential: list[int], offset: int, details: PreemptionDetails,
                 wanted: int | None = None) -> None:
        """Examine potential nodes from ``offset`` on, as upstream's ``DryRunPreemption``,
        until a candidate without PodDisruptionBudget violations exists and ``wanted``
        candidates are found (``numCandidates`` unless given). When the cycle's filters
        judge every node on its own, nodes are evaluated a block at a time in one forked
        state (``select_victims_on_nodes``); otherwise one at a time, each in a fork of its
        own."""
        assert self.handle is not None, "DefaultPreemption runs inside a framework"
        wanted = wanted or self.num_candidates(len(potential))
        pdbs = list(cluster.objects["PodDisruptionBudget"].values())
        batched = self._framework().judges_nodes_independently(state)
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        order = potential[offset:] + potential[:offset]
        holds = cluster.holds_lower_priority(np.asarray(order, dtype=np.int64),
                                             pod.priority).tolist()
        if not any(holds):
            # No node offers a victim (a cluster of one priority): every node answers as
            # SelectVictimsOnNode would, without a look at its pods.
            details.examined_nodes = len(order)
            details.node_statuses.update(dict.fromkeys(cluster.names(order), _NO_VICTIMS))
            return
        position, block = 0, max(wanted, 1) if batched else 1
        while position < len(order):
            slots = order[position:position + block]
            work = [slot for slot, held in zip(slots, holds[position:position + block],
                                               strict=True) if held]
            if batched:
                try:
                    outcomes = self.select_victims_on_nodes(state, pod, cluster, work, pdbs)
                except PluginError:
                    # A filter errs on some node of the block: judge from here node by node,
                    # so the error surfaces only if the walk reaches that node, as it would.
                    batched, block = False, 1
                    continue
            else:
                outcomes = [self._victims_or_error(state, pod, cluster, slot, pdbs)
                            for slot in work]
            by_slot = dict(zip(work, outcomes, strict=True))
            for index, slot in enumerate(slots):
                details.examined_nodes = position + index + 1
                node_name = cluster.node(slot).name
                outcome = by_slot.get(slot)
                if outcome is None:
                    details.node_statuses[node_name] = _NO_VICTIMS
                    continue
                victims, violations, status, find_ties = outcome
                if status.ok and victims:
                    candidate = Candidate(node_name, tuple(victims), violations, find_ties)
                    (non_violating if violations == 0 else violating).append(candidate)
                    if non_violating and len(non_violating) + len(violating) >= wanted:
                        details.candidates = non_violating + violating
                        return
                    continue
                if status.ok:
                    status = Status.of(Code.ERROR, "expected at least one victim pod on "
                                                   f"node {go_quote(node_name)}")
                if status.code == Code.ERROR:
                    details.errors.append(status.message)
                details.node_statuses[node_name] = status
            position += len(slots)
            if batched:
                block = self._next_block(wanted, len(non_violating) + len(violating), position)
        details.candidates = non_violating + violating

    def _victims_or_error(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                          slot: int, pdbs: Sequence[dict[str, Any]]) -> Outcome:
        """``SelectVictimsOnNode`` in a fork; a filter's error is that node's Error status,
        as upstream's ``DryRunPreemption`` keeps it, and the dry run goes on."""
        try:
            return self.select_victims_on_node(state.clone(), pod, cluster, slot, pdbs)
        except PluginError as exc:
            return [], 0, Status.of(Code.ERROR, str(exc)), no_ties

    @staticmethod
    def _next_block(wanted: int, found: int, examined: int) -> int:
        """How many more nodes to judge at once: enough for the candidates still wanted at
        the yield so far (a quarter more), at least 16; twice as many when none was found."""
        if not found:
            return 2 * examined
        return max(16, math.ceil(1.25 * max(wanted - found, 1) * examined / found))

    def _lower_priority_pods(self, pod: PodInfo, cluster: ClusterState, slot: int
                             ) -> list[PodInfo]:
        return [p for p in cluster.pods_on[slot].values() if p.priority < pod.priority]

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                               slot: int, pdbs: Sequence[dict[str, Any]]) -> Outcome:
        """``SelectVictimsOnNode``: (victims, PDB violations, status, victim ties)."""
        assert self.handle is not None, "DefaultPreemption runs inside a framework"
        framework = self._framework()
        nominator = self.handle.ports.nominator
        potential = self._lower_priority_pods(pod, cluster, slot)
        if not potential:
            # Without copying the state first: with a cluster of equal priorities this is
            # every node of every failed attempt.
            return [], 0, _NO_VICTIMS, no_ties
        # Upstream clones one NodeInfo; a nodes-only fork is that copy when the filters read
        # only their node.
        forked = cluster.fork(slot, nodes_only=framework.filters_read_only_their_node(state))
        for victim in potential:
            forked.remove_pods((victim,))
            framework.run_pre_filter_remove_pod(state, pod, victim, slot, forked)
        run = framework.run_filter_with_nominated(state, pod, forked, np.asarray([slot]),
                                                  nominator)
        if not run.feasible.all():
            return [], 0, run.status(0), no_ties
        self.sort_by_importance(potential)
        violating_pods, non_violating_pods = filter_pods_with_pdb_violation(
            potential, pdbs, self.first_violation_only)
        victims: list[PodInfo] = []
        violations = 0

        def reprieve(candidate: PodInfo) -> bool:
            forked.add_pod(candidate)
            framework.run_pre_filter_add_pod(state, pod, candidate, slot, forked)
            check = framework.run_filter_with_nominated(state, pod, forked, np.asarray([slot]),
                                                        nominator)
            fits = bool(check.feasible.all())
            if not fits:
                forked.remove_pods((candidate,))
                framework.run_pre_filter_remove_pod(state, pod, candidate, slot, forked)
                victims.append(candidate)
            return fits

        for candidate in violating_pods:
            if not reprieve(candidate):
                violations += 1
        for candidate in non_violating_pods:
            reprieve(candidate)
        return self._outcome(potential, violating_pods, non_violating_pods, victims, violations)

    def select_victims_on_nodes(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                                slots: list[int], pdbs: Sequence[dict[str, Any]]
                                ) -> list[Outcome]:
        """``SelectVictimsOnNode`` for many nodes at once, when the cycle's filters judge
        each node on its own: one fork loses every node's lower-priority pods, one filter run
        checks the pod fits on all of them, then each reprieve round adds back every node's
        next pod (in its own order) and one filter run judges them all. Each node's outcome
        is the one its own dry run would give. Held column-wise when it can be
        (``preemption_columns``); otherwise the fork moves the pods, or only their sums when
        no filter reads a node's pods."""
        assert self.handle is not None, "DefaultPreemption runs inside a framework"
        framework = self._framework()
        nominator = self.handle.ports.nominator
        by_columns = None
        if not (self.first_violation_only and budgets_may_overlap(pdbs)):
            # (The column-wise PDB split counts every budget a pod matches.)
            by_columns = select_victims_by_columns(state, pod, cluster, slots, pdbs,
                                                   framework, nominator, self._now(),
                                                   _NO_VICTIMS, self.fixed_unstarted)
        if by_columns is not None:
            return by_columns
        lower = [self._lower_priority_pods(pod, cluster, slot) for slot in slots]
        outcomes: list[Outcome | None] = [
            None if pods else ([], 0, _NO_VICTIMS, no_ties)
            for pods in lower]
        work = [i for i, pods in enumerate(lower) if pods]
        if work:
            state = state.clone()
            if framework.filters_read_node_pods(state, pod):
                forked = cluster.fork([slots[i] for i in work], nodes_only=True)
                take = _pods_only(forked.remove_pods)
                give = _pods_only(forked.add_pods)
            else:  # the filters read only the nodes' sums: move those, not the pods
                forked = cluster.fork((), nodes_only=True)
                take = functools.partial(forked.move_sums, sign=-1)
                give = functools.partial(forked.move_sums, sign=1)
            take((slots[i], victim) for i in work for victim in lower[i])
            run = framework.run_filter_with_nominated(
                state, pod, forked, np.asarray([slots[i] for i in work]), nominator)
            plans: dict[int, tuple[list[PodInfo], list[PodInfo], list[PodInfo]]] = {}
            feasible = run.feasible.tolist()
            for position, i in enumerate(work):
                if not feasible[position]:
                    outcomes[i] = ([], 0, run.status(position), no_ties)
                    continue
                self.sort_by_importance(lower[i])
                violating_pods, non_violating_pods = filter_pods_with_pdb_violation(
                    lower[i], pdbs, self.first_violation_only)
                plans[i] = (violating_pods, non_violating_pods,
                            violating_pods + non_violating_pods)
            victims: dict[int, list[PodInfo]] = {i: [] for i in plans}
            violations = dict.fromkeys(plans, 0)
            # Every plan's pods in one list: node k's r-th pod is at starts[k] + r.
            keys = list(plans)
            ordered = [p for i in keys for p in plans[i][2]]
            lengths = np.asarray([len(plans[i][2]) for i in keys], dtype=np.int64)
            starts = np.cumsum(lengths) - lengths
            node_slots = np.asarray([slots[i] for i in keys], dtype=np.int64)
            round_ = 0
            while True:
                at = np.flatnonzero(lengths > round_)
                if not len(at):
                    break
                index = starts[at] + round_
                give(zip(node_slots[at].tolist(), map(ordered.__getitem__, index.tolist()),
                         strict=True))
                check = framework.run_filter_with_nominated(state, pod, forked, node_slots[at],
                                                            nominator)
                failed = np.flatnonzero(~check.feasible)
                if not len(failed):
                    round_ += 1
                    continue
                out_nodes, out_pods = at[failed], index[failed]
                take(zip(node_slots[out_nodes].tolist(),
                         map(ordered.__getitem__, out_pods.tolist()), strict=True))
                for k, j in zip(out_nodes.tolist(), out_pods.tolist(), strict=True):
                    i = keys[k]
                    victims[i].append(ordered[j])
                    if round_ < len(plans[i][0]):
                        violations[i] += 1
                round_ += 1
            for i, (violating_pods, non_violating_pods, _) in plans.items():
                outcomes[i] = self._outcome(lower[i], violating_pods, non_violating_pods,
                                            victims[i], violations[i])
        return [outcome for outcome in outcomes if outcome is not None]

    def _outcome(self, ranked: list[PodInfo], violating_pods: list[PodInfo],
                 non_violating_pods: list[PodInfo], victims: list[PodInfo],
                 violations: int) -> Outcome:
        if violating_pods and non_violating_pods:
            self.sort_by_importance(victims)
        keys = [self.more_important(p) for p in ranked]

        def find_ties() -> tuple[tuple[str, ...], ...]:
            evicted = {v.uid for v in victims}
            violators = {v.uid for v in violating_pods}
            return tie_groups(keys, ranked, [p.uid in evicted for p in ranked],
                              [p.uid in violators for p in ranked])
        return victims, violations, Status.success(), find_ties

    # ------------------------------------------------------------------ choosing

    def select_candidate(self, candidates: list[Candidate]) -> Candidate:
        return self.best_candidates(candidates)[0]

    def _beats(self, one: Candidate, other: Candidate) -> bool:
        """Whether ``pickOneNodeForPreemption`` prefers ``one`` to ``other`` outright."""
        best = self.best_candidates([one, other])
        return len(best) == 1 and best[0] is one

    def best_candidates(self, candidates: list[Candidate]) -> list[Candidate]:
        """``pickOneNodeForPreemption``'s criteria in turn; the candidates still tied after
        the last one (upstream then takes the first it found)."""
        if len(candidates) == 1:
            return list(candidates)
        criteria = (
            lambda c: -c.pdb_violations,
            lambda c: -c.victims[0].priority,
            lambda c: -sum(v.priority + MAX_INT32 + 1 for v in c.victims),
            lambda c: -len(c.victims),
            self._earliest_start_of_most_important,
        )
        remaining = list(candidates)
        for criterion in criteria:
            scores = [criterion(c) for c in remaining]
            best = max(scores)
            remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
            if len(remaining) == 1:
                break
        return remaining

    def _earliest_start_of_most_important(self, candidate: Candidate) -> int:
        """``GetEarliestPodStartTime``: the earliest start among the highest-priority victims
        (a later time scores higher)."""
        top = candidate.victims[0].priority
        earliest = self._start_time(candidate.victims[0])
        for victim in candidate.victims:
            if victim.priority == top:
                earliest = min(earliest, self._start_time(victim))
            elif victim.priority > top:
                top, earliest = victim.priority, self._start_time(victim)
        return earliest


def _pods_only(change: Callable[[Iterable[PodInfo]], None]
               ) -> Callable[[Iterable[tuple[int, PodInfo]]], None]:
    """``change`` (a fork's add_pods or remove_pods) for (slot, pod) pairs."""
    return lambda pairs: change(pod for _, pod in pairs)


def filter_pods_with_pdb_violation(pods: Sequence[PodInfo], pdbs: Sequence[dict[str, Any]],
                                   first_violation_only: bool = False
                                   ) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split pods into (violating, non-violating) against copies of the PDBs' budgets. Up to
    v1.36 a pod counts against every budget it matches; from v1.37
    (``FilterVictimsWithPDBViolation``, ``first_violation_only``) it stops at the first it
    exhausts, leaving the later ones (in the PDBs' order) untouched."""
    if not pdbs:
        return [], list(pods)
    budgets = parse_budgets(pdbs)
    allowed = [budget.allowed for budget in budgets]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        for i, budget in enumerate(budgets):
            if budget.counts(pod):
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
                    if first_violation_only:
                        break
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def budgets_may_overlap(pdbs: Sequence[dict[str, Any]]) -> bool:
    """Whether a pod could count against two budgets (two PDBs share a namespace)."""
    namespaces = [(pdb.get("metadata") or {}).get("namespace") for pdb in pdbs]
    return len(set(namespaces)) < len(namespaces)
