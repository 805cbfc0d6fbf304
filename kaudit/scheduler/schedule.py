"""Scheduling one pod: upstream's ``schedulePod``, recorded in full.

Mirrors ``pkg/scheduler/schedule_one.go`` (Kubernetes v1.34): PreFilter; the nominated node
first; ``numFeasibleNodesToFind`` (adaptive ``percentageOfNodesToScore``); nodes examined from
the rotating start index in node-tree order, each stopping at its first failing filter, with
nominated pods of equal or higher priority taken into account; the single-feasible-node
shortcut; PreScore, Score, NormalizeScore and weights; ``selectHost`` among the top scores.

Upstream filters nodes in parallel and stops once it has found enough feasible ones, so which
nodes beyond that point were examined is nondeterministic; kaudit examines them in order, the
natural deterministic model. Ties among the top-scored nodes are broken as the release's
``selectHost`` does (:mod:`kaudit.scheduler.select_host`: in v1.34 by an RNG seeded with (run
seed, pod UID, attempt); from v1.35 by the score heap over the nodes in filter order), and the
whole tie set is recorded, so a replay is reproducible and a diff can tell a real change from a
coin flip.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.config import FeatureGates
from kaudit.framework.cycle_state import DECISION_SEED_KEY, PREEMPTION_TARGET_KEY, CycleState
from kaudit.framework.diagnosis import Diagnosis, fit_error_message
from kaudit.framework.extender import EXTENDER_NAME, Extender, ExtenderCall, ExtenderError
from kaudit.framework.plugin import PostFilterResult
from kaudit.framework.runtime import (
    FilterRun,
    Framework,
    Nominator,
    PluginError,
    PreFilterOutcome,
    ScoreRun,
    concat_runs,
)
from kaudit.framework.status import Code, Status
from kaudit.gostrings import go_quote
from kaudit.model.pod import PodInfo
from kaudit.scheduler.batching import OpportunisticBatch, Signature
from kaudit.scheduler.extender.cycle import extender_scores, filter_through_extenders
from kaudit.scheduler.queue import HintTable, QueuedPod, hint_table
from kaudit.scheduler.select_host import ScoreHeap, heap_keys, heap_root, uniform_choice

#: A cycle's batch: the profile's batching state, the queue's cycle and the replay's clock.
_BatchCycle = tuple[OpportunisticBatch, int, int]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
#: How a tie at the highest score is broken: ``random`` as upstream's ``selectHost`` of the
#: release (:mod:`kaudit.scheduler.select_host`: seeded in v1.34; from v1.35 the root of its
#: score heap, recorded as ``heap``);
#: ``name``, the lowest node name, as the FGD authors' simulator's modified ``selectHost``;
#: ``shuffled-name``, the first in an order of names drawn with the seed, as that simulator
#: does after renaming its nodes with a random ``NNNN-`` prefix.
TIE_BREAKS = ("random", "name", "shuffled-name")
#: CycleState key of the per-decision RNG seed (run seed, pod UID, attempt).

def num_feasible_nodes_to_find(percentage: int | None, global_percentage: int,
                               num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``: how many feasible nodes to look for before scoring."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage if percentage is not None else global_percentage
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass
class Attempt:
    """Everything one scheduling attempt did, for explanations and the event log."""

    pod: PodInfo
    profile: str
    num_all_nodes: int
    pre_filter: PreFilterOutcome = field(default_factory=PreFilterOutcome)
    filters: FilterRun | None = None
    #: True when the nominated node passed and the full search was skipped.
    nominated_node_used: bool = False
    #: Opportunistic Batching (v1.35 on): the node the batch hinted ("" for none), and
    #: whether it passed and was taken without a search or scoring.
    node_hint: str = ""
    hint_used: bool = False
    signature: Signature | None = None
    scores: ScoreRun | None = None
    selected: str | None = None
    #: The top-scoring nodes' slots (the tie set), and a function naming a slot.
    tied_slots: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: How a tie among ``tied_slots`` was broken (:data:`TIE_BREAKS`).
    tie_break: str = "random"
    node_name: Any = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    message: str | None = None
    post_filter: Status | None = None
    post_filter_result: PostFilterResult | None = None
    error: str | None = None
    state: CycleState | None = None
    #: The feasible slots once extenders filtered them (None when no extender filtered).
    passing: np.ndarray | None = None
    #: Every extender call the cycle made, in order (filter, prioritize, preempt).
    extender_calls: list[ExtenderCall] = field(default_factory=list)
    #: Each prioritizing extender's final scores over ``scores.slots``.
    extender_scores: dict[str, np.ndarray] = field(default_factory=dict)
    extender_weights: dict[str, int] = field(default_factory=dict)

    @property
    def tied(self) -> list[str]:
        return [self.node_name(int(s)) for s in self.tied_slots] if self.node_name else []

    @property
    def feasible_slots(self) -> np.ndarray:
        """The nodes that passed the filter plugins and the extenders."""
        if self.passing is not None:
            return self.passing
        if self.filters is None:
            return np.zeros(0, dtype=np.int64)
        slots: np.ndarray = self.filters.slots[self.filters.feasible]
        return slots

    @property
    def feasible(self) -> int:
        if self.passing is not None:
            return len(self.passing)
        return 0 if self.filters is None else int(self.filters.feasible.sum())

    @property
    def evaluated(self) -> int:
        return 0 if self.filters is None else len(self.filters.slots)

    @property
    def scheduled(self) -> bool:
        return self.selected is not None


class Scheduler:
    """The profiles' frameworks and the scheduler-wide rotating start index."""

    def __init__(self, frameworks: Mapping[str, Framework], *,
                 percentage_of_nodes_to_score: int = 0, seed: int = 0,
                 feature_gates: Any = None, tie_break: str = "random",
                 extenders: Sequence[Extender] = (),
                 extender_calls: list[ExtenderCall] | None = None) -> None:
        self.frameworks = dict(frameworks)
        #: The extenders in call order, and the list their calls are appended to.
        self.extenders = list(extenders)
        self.extender_calls: list[ExtenderCall] = ([] if extender_calls is None
                                                   else extender_calls)
        self._extender_filters = any(e.is_filter for e in self.extenders)
        self._extender_prioritizers = any(e.is_prioritizer for e in self.extenders)
        self.feature_gates = feature_gates if feature_gates is not None else FeatureGates()
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.seed = seed
        if tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {', '.join(TIE_BREAKS)}, not {tie_break!r}")
        self.tie_break = tie_break
        #: v1.35's selectHost: the root of a heap over the scores in filter order.
        self._score_heap = versions.carries(self.feature_gates.version, "select-host-heap")
        #: Opportunistic Batching: on with its gate, without extenders, for upstream's
        #: tie-break only (its heap is what the batch keeps).
        self._batching = ("OpportunisticBatching" in self.feature_gates
                          and self.feature_gates.enabled("OpportunisticBatching")
                          and not self.extenders and tie_break == "random")
        self._batches: dict[str, OpportunisticBatch] = {}
        self._ranks: dict[str, bytes] = {}
        self.next_start_node_index = 0

    def framework_for(self, pod: PodInfo) -> Framework | None:
        return self.frameworks.get(pod.scheduler_name)

    def hint_tables(self) -> dict[str, HintTable]:
        """``buildQueueingHintMap`` of each profile, by scheduler name."""
        return {name: hint_table(framework.instances.values(), extenders=bool(self.extenders))
                for name, framework in self.frameworks.items()}

    def queue_sort_key(self) -> Callable[[QueuedPod], Any] | None:
        """The first profile's QueueSort as a sort key (upstream requires every profile to
        sort alike), or None when it offers none."""
        sort = next(iter(self.frameworks.values())).queue_sort
        if sort is None or not hasattr(sort, "key"):
            return None
        return lambda queued: sort.key(queued)

    def schedule(self, cluster: ClusterState, pod: PodInfo, *, attempt: int = 1,
                 nominator: Nominator | None = None, exhaustive: bool = False,
                 candidates: list[str] | None = None, run_post_filter: bool = True,
                 preemption_target: str | None = None, cycle: int = 0,
                 now_us: int = 0) -> Attempt:
        """Run one scheduling cycle for ``pod`` (no side effects on ``cluster``).

        ``exhaustive`` runs every filter on every node, samples nothing and scores even a
        single feasible node (``kaudit whatif``); ``candidates`` limits evaluation to those
        nodes, the others counting as failed; ``preemption_target`` makes preemption's dry run
        start at the first offset whose candidates nominate that node, when one does, instead
        of its random offset. ``cycle`` (the queue's scheduling cycle) and ``now_us`` (the
        replay's clock) are given by a replay's own cycles: Opportunistic Batching, where on,
        then carries results from one cycle to the next.
        """
        framework = self.framework_for(pod)
        if framework is None:
            raise ValueError(f"profile not found for scheduler name {go_quote(pod.scheduler_name)}")
        order = cluster.order_array
        result = Attempt(pod, framework.scheduler_name, len(order))
        result.node_name = lambda slot: cluster.node(slot).name
        state = CycleState()
        state.write(DECISION_SEED_KEY, f"{self.seed}/{pod.uid}/{attempt}")
        if preemption_target is not None:
            state.write(PREEMPTION_TARGET_KEY, preemption_target)
        result.state = state
        if len(order) == 0:
            # ``ErrNoNodesAvailable``: upstream returns before any plugin runs and treats it as
            # UnschedulableAndUnresolvable with no rejecting plugin, so the pod backs off and is
            # retried (any cluster event moves it too).
            result.message = NO_NODES_AVAILABLE
            return result
        calls = self.extender_calls
        calls.clear()
        try:
            batch = None
            if self._batching and cycle > 0 and not exhaustive and candidates is None \
                    and framework.signing_plugins is not None:
                batch = (self._batches.setdefault(framework.scheduler_name,
                                                  OpportunisticBatch()), cycle, now_us)
            self._find_feasible(framework, cluster, pod, state, result, nominator, exhaustive,
                                candidates, batch)
            # Rejected at PreFilter (no filters ran), or no node passed the filters and the
            # extenders: a FitError.
            if result.filters is None or result.feasible == 0:
                if run_post_filter and framework.plugins("PostFilter"):
                    outcome, status = framework.run_post_filter(state, pod, cluster,
                                                                result.diagnosis)
                    result.post_filter, result.post_filter_result = status, outcome
                    result.diagnosis.post_filter_message = status.message
                result.message = fit_error_message(result.num_all_nodes, result.diagnosis)
                return result
            self._select(framework, cluster, pod, state, result, attempt, exhaustive, batch)
        except (PluginError, ExtenderError) as exc:
            result.error = str(exc)
            result.message = str(exc)
            result.selected = None
        finally:
            if calls:
                result.extender_calls = list(calls)
                calls.clear()
        return result

    # ------------------------------------------------------------------ filtering

    def _find_feasible(self, framework: Framework, cluster: ClusterState, pod: PodInfo,
                       state: CycleState, result: Attempt, nominator: Nominator | None,
                       exhaustive: bool, candidates: list[str] | None,
                       batch: _BatchCycle | None) -> None:
        diagnosis = result.diagnosis
        outcome = framework.run_pre_filter(state, pod, cluster)
        result.pre_filter = outcome
        diagnosis.unschedulable_plugins.update(outcome.unschedulable_plugins)
        if not outcome.status.ok:
            status = outcome.status
            if not status.rejected:
                raise PluginError(status.message)
            diagnosis.absent_status = status
            diagnosis.pre_filter_message = status.message
            diagnosis.add_plugin_status(status)
            return

        order = cluster.order_array
        if batch is not None:
            result.node_hint, result.signature = batch[0].node_hint(
                framework, cluster, state, pod, batch[1], batch[2])
        # The nominated node first; else the batch's hint, tried the same way.
        first = pod.nominated_node_name or result.node_hint
        if first and not exhaustive and candidates is None:
            slot = cluster.slot_of.get(first)
            if slot is not None and cluster.live[slot]:
                run = framework.run_filter_with_nominated(state, pod, cluster,
                                                          np.asarray([slot]), nominator)
                if run.feasible.all():
                    passing = self._nominated_through_extenders(cluster, pod, run.slots,
                                                                diagnosis)
                    if len(passing):
                        result.filters = run
                        result.passing = passing if self._extender_filters else None
                        result.nominated_node_used = bool(pod.nominated_node_name)
                        result.hint_used = not pod.nominated_node_name
                        return
                else:
                    self._record_statuses(cluster, run, diagnosis)

        # ``processedNodes`` counts every node with a status: those the nominated node's
        # evaluation set (its own, any an extender named) count too.
        nominated_statuses = set(diagnosis.node_statuses)
        nodes = order
        if candidates is not None:
            wanted = {cluster.slot_of[n] for n in candidates if n in cluster.slot_of}
            nodes = order[np.isin(order, list(wanted))]
        if outcome.allowed is not None:
            allowed = [cluster.slot_of[n] for n in outcome.allowed if n in cluster.slot_of]
            allowed_mask = np.isin(order, allowed)
            nodes = nodes[np.isin(nodes, order[allowed_mask])]
            names = sorted(outcome.node_names)
            diagnosis.absent_status = Status.of(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(names)}]")
        if len(nodes) == 0:
            result.filters = framework.run_filter(state, pod, cluster, nodes)
            if not exhaustive and nominated_statuses:
                self.next_start_node_index = ((self.next_start_node_index
                                               + len(nominated_statuses)) % len(order))
            return

        if exhaustive:
            run = framework.run_filter_with_nominated(state, pod, cluster, nodes, nominator,
                                                      exhaustive=True)
        else:
            to_find = num_feasible_nodes_to_find(framework.percentage_of_nodes_to_score,
                                                 self.percentage_of_nodes_to_score, len(nodes))
            if not self._extender_filters and not self._has_scoring(framework):
                to_find = 1
            start = self.next_start_node_index % len(nodes)
            rotation = np.concatenate([nodes[start:], nodes[:start]])
            if not framework.has_filters:
                run = framework.run_filter(state, pod, cluster, rotation[:to_find])
            else:
                run = self._filter_until(framework, cluster, pod, state, rotation, to_find,
                                         nominator)
            processed = len(run.slots)
            if nominated_statuses:
                processed += len(nominated_statuses - self._failed_names(cluster, run))
            self.next_start_node_index = (self.next_start_node_index + processed) % len(order)
        result.filters = run
        extender_statuses: dict[str, Status] = {}
        if self._extender_filters:
            feasible = run.slots[run.feasible]
            result.passing = filter_through_extenders(self.extenders, pod, cluster, feasible,
                                                      extender_statuses)
            if len(result.passing) != len(feasible):
                # Extenders register no events: a pod they rejected waits for any event.
                diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        if exhaustive or result.feasible == 0:
            # Only a failed attempt reads per-node statuses (the FitError message, preemption,
            # the rejecting plugins); the FilterRun keeps every verdict either way.
            self._record_statuses(cluster, run, diagnosis)
        # Set after the plugins' (an extender may name a node a plugin failed): upstream's
        # findNodesThatPassExtenders runs once findNodesThatPassFilters has set its statuses.
        diagnosis.node_statuses.update(extender_statuses)

    @staticmethod
    def _failed_names(cluster: ClusterState, run: FilterRun) -> set[str]:
        """The nodes ``run`` failed (their statuses replace any earlier ones)."""
        return set(cluster.names(run.slots[~run.feasible].tolist()))

    def _has_scoring(self, framework: Framework) -> bool:
        """``hasScoring``: score plugins, or an extender that prioritizes."""
        return framework.has_scoring or self._extender_prioritizers

    def _nominated_through_extenders(self, cluster: ClusterState, pod: PodInfo,
                                     slots: np.ndarray, diagnosis: Diagnosis) -> np.ndarray:
        """``evaluateNominatedNode``'s extender step: a failed call is logged upstream and
        the full search follows."""
        if not self._extender_filters:
            return slots
        try:
            return filter_through_extenders(self.extenders, pod, cluster, slots,
                                            diagnosis.node_statuses)
        except ExtenderError:
            return slots[:0]

    def _filter_until(self, framework: Framework, cluster: ClusterState, pod: PodInfo,
                      state: CycleState, rotation: np.ndarray, to_find: int,
                      nominator: Nominator | None) -> FilterRun:
        """Examine nodes in order until ``to_find`` are feasible (vectorised in chunks)."""
        runs: list[FilterRun] = []
        found = 0
        position = 0
        chunk = max(to_find, 64)
        while position < len(rotation) and found < to_find:
            block = rotation[position:position + chunk]
            run = framework.run_filter_with_nominated(state, pod, cluster, block, nominator)
            feasible_positions = np.flatnonzero(run.feasible)
            needed = to_find - found
            if len(feasible_positions) >= needed:
                run = run.take(int(feasible_positions[needed - 1]) + 1)
            found += int(run.feasible.sum())
            runs.append(run)
            position += len(block)
            chunk *= 2
        return concat_runs(runs)

    @staticmethod
    def _record_statuses(cluster: ClusterState, run: FilterRun, diagnosis: Diagnosis) -> None:
        failed = np.flatnonzero(~run.feasible)
        if len(failed) == 0:
            return
        plugins = run.first_failure[failed]
        reasons = run.reason_ids[plugins, failed]
        codes = run.codes[plugins, failed]
        names = cluster.names(run.slots[failed].tolist())
        # Nodes failing the same plugin for the same reasons share one (immutable) status.
        keys = (plugins.astype(np.int64) << 40) | (reasons.astype(np.int64) << 8) | codes
        distinct, which = np.unique(keys, return_inverse=True)
        shared = []
        for key in distinct.tolist():
            plugin, reason, code = key >> 40, (key >> 8) & (2**32 - 1), key & 255
            status = Status(Code(code), run.reason_tables[plugin][reason], run.plugins[plugin])
            shared.append(status)
            diagnosis.add_plugin_status(status)
        diagnosis.node_statuses.update(zip(names, map(shared.__getitem__,
                                                      which.reshape(-1).tolist()), strict=True))

    # ------------------------------------------------------------------ scoring

    def _select(self, framework: Framework, cluster: ClusterState, pod: PodInfo,
                state: CycleState, result: Attempt, attempt: int, exhaustive: bool,
                batch: _BatchCycle | None) -> None:
        assert result.filters is not None
        feasible = result.feasible_slots
        if len(feasible) == 1 and not exhaustive:
            result.selected = cluster.node(int(feasible[0])).name
            result.tied_slots = feasible
            if batch is not None:
                batch[0].store(result.signature, result.node_hint, result.selected, None,
                               batch[1], batch[2])
            return
        if not framework.has_scoring and not self.extenders:
            total = np.ones(len(feasible), dtype=np.int64)
            result.scores = ScoreRun(feasible, {}, {}, {}, {}, total)
        else:
            pre_score = framework.run_pre_score(state, pod, cluster, feasible)
            result.scores = framework.run_score(state, pod, cluster, feasible, pre_score)
        total = result.scores.total
        if self._extender_prioritizers:
            result.extender_scores, result.extender_weights = extender_scores(
                self.extenders, pod, cluster, feasible)
            for column in result.extender_scores.values():
                total = total + column  # int64 arrays wrap, as upstream's sums do
        result.tied_slots = feasible[total == total.max()]
        result.tie_break = self.tie_break
        if self.tie_break == "random" and self._score_heap and (len(result.tied_slots) > 1
                                                                 or batch is not None):
            result.tie_break = "heap" if len(result.tied_slots) > 1 else "random"
            randomized = None
            if result.extender_scores:
                randomized = self._extender_scored(result.extender_scores)
            keys = heap_keys(total, randomized, state.read(DECISION_SEED_KEY))
            if batch is None or result.signature is None:
                # Only the root is needed: a pod without a signature leaves the batch nothing
                # to keep (StoreScheduleResults forgets its heap).
                result.selected = cluster.node(int(feasible[heap_root(keys)])).name
                if batch is not None:
                    batch[0].store(None, result.node_hint, result.selected, None,
                                   batch[1], batch[2])
                return
            heap = ScoreHeap(keys, feasible)
            result.selected = cluster.node(heap.pop()).name
            batch[0].store(result.signature, result.node_hint, result.selected, heap,
                           batch[1], batch[2])
            return
        result.selected = self._break_tie(cluster, result.tied_slots, state)

    @staticmethod
    def _extender_scored(columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """The nodes some prioritizing extender answered for (a node it left out scores 0 and
        gets no randomizer; kaudit keeps only the sums, so a node answered with 0 counts as
        left out)."""
        scored: np.ndarray = np.logical_or.reduce([column != 0 for column in columns.values()])
        return scored

    def _break_tie(self, cluster: ClusterState, tied: np.ndarray, state: CycleState) -> str:
        """The node chosen among those tied at the highest score: uniformly at random
        (v1.34's ``selectHost``), or the first by name or by a seeded order of names."""
        if self.tie_break == "random" or len(tied) == 1:
            choice = uniform_choice(len(tied), state.read(DECISION_SEED_KEY))
            return cluster.node(int(tied[choice])).name
        names = [cluster.node(int(slot)).name for slot in tied]
        if self.tie_break == "name":
            return min(names)
        return min(names, key=self._rank)

    def _rank(self, name: str) -> bytes:
        rank = self._ranks.get(name)
        if rank is None:
            rank = hashlib.sha256(f"{self.seed}/{name}".encode()).digest()
            self._ranks[name] = rank
        return rank
