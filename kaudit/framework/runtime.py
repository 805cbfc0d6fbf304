"""The framework runtime of one profile: plugins per extension point, run in upstream's order.

Mirrors ``pkg/scheduler/framework/runtime/framework.go`` (Kubernetes v1.34): PreFilter with
Skip, Unschedulable-keeps-going and PreFilterResult intersection; Filter stopping at a node's
first failing plugin; PostFilter; PreScore with Skip; Score, NormalizeScore and weights. Filter
and Score run over arrays of node slots; the results keep, for every (plugin, node) that ran,
the verdict or the raw, normalized and weighted score, so a decision can be explained later.
A plugin's error fails with upstream's text, the plugin's name in Go's ``%q``
(``running "NodeAffinity" filter plugin: …``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from kaudit.cluster.nominated import NominatedLoad
from kaudit.cluster.state import ClusterState
from kaudit.errors import ConfigError
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.diagnosis import Diagnosis
from kaudit.framework.plugin import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    extension_points,
)
from kaudit.framework.status import Code, Status
from kaudit.gostrings import go_quote
from kaudit.model.pod import PodInfo

NOT_RUN = -1
#: Nominated pods whose placed copies are kept (the oldest are dropped beyond four times this).
_PLACED_KEPT = 10_000
_REJECTED = (int(Code.UNSCHEDULABLE), int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))

#: Nominated pods by node name: pods that preemption placed there but are not bound yet. A
#: nominator may also have ``nodes()``, the names of nodes with nominations (a set-like
#: collection is fastest), to skip the rest.
Nominator = Callable[[str], list[PodInfo]]


class PluginError(Exception):
    """A plugin returned Error (or an unexpected code): the attempt fails with this message."""


@dataclass
class PreFilterOutcome:
    statuses: dict[str, Status] = field(default_factory=dict)
    node_names: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Intersection of every PreFilterResult; None means all nodes.
    allowed: frozenset[str] | None = None
    status: Status = field(default_factory=Status.success)
    #: ``RunPreFilterPlugins``' third result, which becomes the Diagnosis's
    #: UnschedulablePlugins: the plugins whose PreFilterResult narrowed the nodes (none when
    #: a plugin's own UnschedulableAndUnresolvable ended PreFilter).
    unschedulable_plugins: frozenset[str] = frozenset()


@dataclass
class FilterRun:
    """Verdicts of every filter plugin that ran, over ``slots`` (in evaluation order)."""

    slots: np.ndarray
    plugins: list[str]
    codes: np.ndarray
    reason_ids: np.ndarray
    reason_tables: list[list[tuple[str, ...]]]
    first_failure: np.ndarray
    #: Statuses made so far, by (plugin, code, reason): nodes that failed alike share one.
    _made: dict[tuple[int, int, int], Status] = field(default_factory=dict, repr=False,
                                                      compare=False)

    @property
    def feasible(self) -> np.ndarray:
        feasible: np.ndarray = self.first_failure == NOT_RUN
        return feasible

    def status(self, position: int) -> Status:
        """The node's status: that of its first failing plugin, or Success."""
        plugin = int(self.first_failure[position])
        if plugin == NOT_RUN:
            return Status.success()
        return self.plugin_status(plugin, position)

    def plugin_status(self, plugin: int, position: int) -> Status:
        code = int(self.codes[plugin, position])
        reason = int(self.reason_ids[plugin, position])
        key = (plugin, code, reason)
        status = self._made.get(key)
        if status is None:
            status = self._made[key] = Status(Code(code), self.reason_tables[plugin][reason],
                                              self.plugins[plugin])
        return status

    def take(self, count: int) -> FilterRun:
        return FilterRun(self.slots[:count], self.plugins, self.codes[:, :count],
                         self.reason_ids[:, :count], self.reason_tables,
                         self.first_failure[:count])

    def select(self, positions: np.ndarray) -> FilterRun:
        """The verdicts of the nodes at ``positions`` (indices or a mask)."""
        return FilterRun(self.slots[positions], self.plugins, self.codes[:, positions],
                         self.reason_ids[:, positions], self.reason_tables,
                         self.first_failure[positions])


@dataclass
class ScoreRun:
    """Scores over the feasible ``slots``: per plugin raw, normalized and weighted."""

    slots: np.ndarray
    pre_score: dict[str, Status]
    raw: dict[str, np.ndarray]
    normalized: dict[str, np.ndarray]
    weights: dict[str, int]
    total: np.ndarray


def concat_runs(runs: list[FilterRun]) -> FilterRun:
    if len(runs) == 1:
        return runs[0]
    first = runs[0]
    tables = [list(t) for t in first.reason_tables]
    id_blocks = [first.reason_ids]
    for run in runs[1:]:
        remapped = np.empty_like(run.reason_ids)
        for p, table in enumerate(run.reason_tables):
            mapping = {}
            for i, reasons in enumerate(table):
                if reasons in tables[p]:
                    mapping[i] = tables[p].index(reasons)
                else:
                    mapping[i] = len(tables[p])
                    tables[p].append(reasons)
            lookup = np.asarray([mapping[i] for i in range(len(table))] or [0], dtype=np.int32)
            remapped[p] = lookup[run.reason_ids[p]]
        id_blocks.append(remapped)
    return FilterRun(np.concatenate([r.slots for r in runs]), first.plugins,
                     np.concatenate([r.codes for r in runs], axis=1),
                     np.concatenate(id_blocks, axis=1), tables,
                     np.concatenate([r.first_failure for r in runs]))


def _replace_positions(run: FilterRun, positions: list[int], other: FilterRun) -> FilterRun:
    """``run`` with the verdicts at ``positions`` taken from ``other``, whose i-th node is
    the one at ``positions[i]``."""
    merged = concat_runs([run, other])
    keep = np.arange(len(run.slots))
    keep[positions] = len(run.slots) + np.arange(len(positions))
    return FilterRun(run.slots, run.plugins, merged.codes[:, keep], merged.reason_ids[:, keep],
                     merged.reason_tables, merged.first_failure[keep])


class Framework:
    """The plugins of one profile, instantiated once each, by extension point."""

    def __init__(self, profile: Any, registry: Mapping[str, type[Plugin]],
                 handle: Handle) -> None:
        self.profile = profile
        self.scheduler_name: str = profile.scheduler_name
        self.percentage_of_nodes_to_score: int | None = profile.percentage_of_nodes_to_score
        #: The workers of upstream's parallel steps (``parallelism``).
        self.parallelism: int = handle.parallelism
        self.instances: dict[str, Plugin] = {}
        self.points: dict[str, list[Plugin]] = {}
        self.weights: dict[str, int] = {}
        self._placed_pods: dict[str, tuple[PodInfo, PodInfo]] = {}
        self._view_kept: tuple[ClusterState, NominatedLoad, tuple[object, ...],
                               ClusterState | None] | None = None
        for point, refs in profile.plugins.items():
            plugins = []
            for ref in refs:
                plugin = self._instance(ref.name, registry, handle)
                if point not in extension_points(type(plugin)):
                    raise ConfigError(f"profile {self.scheduler_name}: plugin "
                                      f"{go_quote(ref.name)} does not extend {point}Plugin "
                                      "plugin")
                plugins.append(plugin)
                if point == "Score":
                    self.weights[ref.name] = ref.weight or 1
            self.points[point] = plugins
        handle.weights = self.weights
        handle.framework = self

    def _instance(self, name: str, registry: Mapping[str, type[Plugin]],
                  handle: Handle) -> Plugin:
        plugin = self.instances.get(name)
        if plugin is None:
            factory = registry.get(name)
            if factory is None:
                raise ConfigError(f"profile {self.scheduler_name}: plugin {go_quote(name)} is not "
                                  "registered (in-tree or via --plugin)")
            plugin = factory(self.profile.plugin_args.get(name), handle)
            self.instances[name] = plugin
        return plugin

    def plugins(self, point: str) -> list[Any]:
        return self.points.get(point, [])

    @property
    def signing_plugins(self) -> list[Plugin] | None:
        """``computeBatchablePlugins``: the PreFilter, Filter, PreScore and Score plugins, each
        once, in that order, when every one of them signs pods; None when one does not (the
        profile never batches). Extenders are the scheduler's to check."""
        seen: dict[str, Plugin] = {}
        for point in ("PreFilter", "Filter", "PreScore", "Score"):
            for plugin in self.plugins(point):
                if not plugin.signs_pods:
                    return None
                seen.setdefault(plugin.name, plugin)
        return list(seen.values())

    @property
    def has_scoring(self) -> bool:
        return bool(self.plugins("Score"))

    @property
    def has_filters(self) -> bool:
        return bool(self.plugins("Filter"))

    @property
    def queue_sort(self) -> QueueSortPlugin | None:
        plugins = self.plugins("QueueSort")
        return plugins[0] if plugins else None

    # ------------------------------------------------------------------ PreEnqueue

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.plugins("PreEnqueue"):
            assert isinstance(plugin, PreEnqueuePlugin)
            status = plugin.pre_enqueue(pod)
            if not status.ok:
                return status.with_plugin(plugin.name)
        return Status.success()

    # ------------------------------------------------------------------ PreFilter

    def run_pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                       ) -> PreFilterOutcome:
        outcome = PreFilterOutcome()
        with_nodes: list[str] = []
        unschedulable: Status | None = None
        for plugin in self.plugins("PreFilter"):
            assert isinstance(plugin, PreFilterPlugin)
            result, status = plugin.pre_filter(state, pod, cluster)
            status = status.with_plugin(plugin.name)
            outcome.statuses[plugin.name] = status
            if status.code == Code.SKIP:
                state.skip_filter.add(plugin.name)
                continue
            if not status.ok:
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    outcome.status = status
                    outcome.unschedulable_plugins = frozenset()
                    return outcome
                if status.code == Code.UNSCHEDULABLE:
                    unschedulable = status
                    continue
                raise PluginError(f"running PreFilter plugin {go_quote(plugin.name)}: "
                                  f"{status.message}")
            if result is not None and not result.all_nodes:
                assert result.node_names is not None
                with_nodes.append(plugin.name)
                outcome.unschedulable_plugins = frozenset(with_nodes)
                outcome.node_names[plugin.name] = result.node_names
                outcome.allowed = (result.node_names if outcome.allowed is None
                                   else outcome.allowed & result.node_names)
                if not outcome.allowed:
                    names = sorted(with_nodes)
                    message = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1
                               else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] "
                                    "simultaneously")
                    outcome.status = Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
                    return outcome
        if unschedulable is not None:
            outcome.status = unschedulable
        return outcome

    def judges_nodes_independently(self, state: CycleState) -> bool:
        """Whether this cycle's filters judge each node on its own: every filter that runs
        reads only its node (and the cycle state), and no PreFilter extension changes the
        cycle state when pods are added or removed. Then pods added to or removed from
        several nodes of one forked state give each node the verdict it would get in a fork
        of its own, as upstream's per-node ``NodeInfo`` clones do."""
        return self.filters_read_only_their_node(state) and not any(
            plugin.name not in state.skip_filter and isinstance(plugin, PreFilterExtensions)
            for plugin in self.plugins("PreFilter"))

    def filters_read_only_their_node(self, state: CycleState) -> bool:
        """Whether every filter that runs this cycle reads only its node and the cycle state
        (``FilterPlugin.reads_only_its_node``): a node's verdict in a nodes-only fork (pods
        added to or removed from that node alone) is then its verdict in a full copy."""
        return all(plugin.reads_only_its_node for plugin in self.plugins("Filter")
                   if plugin.name not in state.skip_filter)

    def _run_extensions(self, state: CycleState, action: str,
                        call: Callable[[PreFilterExtensions], Status]) -> Status:
        """Every non-skipped PreFilter plugin's AddPod or RemovePod extension, in order."""
        for plugin in self.plugins("PreFilter"):
            name = plugin.name
            if name in state.skip_filter or not isinstance(plugin, PreFilterExtensions):
                continue
            status = call(plugin)
            if not status.ok:
                raise PluginError(f"running {action} on PreFilter plugin {go_quote(name)}: "
                                  f"{status.message}")
        return Status.success()

    def run_pre_filter_add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
                               slot: int, cluster: ClusterState) -> Status:
        return self._run_extensions(
            state, "AddPod",
            lambda plugin: plugin.add_pod(state, pod, pod_to_add, slot, cluster))

    def run_pre_filter_remove_pod(self, state: CycleState, pod: PodInfo,
                                  pod_to_remove: PodInfo, slot: int,
                                  cluster: ClusterState) -> Status:
        return self._run_extensions(
            state, "RemovePod",
            lambda plugin: plugin.remove_pod(state, pod, pod_to_remove, slot, cluster))

    # ------------------------------------------------------------------ Filter

    def run_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                   slots: np.ndarray, *, exhaustive: bool = False) -> FilterRun:
        """Run the filters over ``slots``; a node stops at its first failing plugin unless
        ``exhaustive`` (every plugin on every node, as ``kaudit whatif`` reports)."""
        plugins = [p for p in self.plugins("Filter") if p.name not in state.skip_filter]
        count = len(slots)
        codes = np.full((len(plugins), count), NOT_RUN, dtype=np.int8)
        reason_ids = np.zeros((len(plugins), count), dtype=np.int32)
        tables: list[list[tuple[str, ...]]] = []
        first_failure = np.full(count, NOT_RUN, dtype=np.int64)
        if count == 1 and not exhaustive:
            # One node (the nominated node, preemption's checks): no masks to keep.
            for index, plugin in enumerate(plugins):
                assert isinstance(plugin, FilterPlugin)
                verdicts = plugin.filter(state, pod, cluster, slots)
                code = int(verdicts.codes[0])
                codes[index, 0] = code
                reason_ids[index, 0] = verdicts.reason_ids[0]
                tables.append(verdicts.reasons)
                if code:
                    if code not in _REJECTED:
                        raise PluginError(f"running {go_quote(plugin.name)} filter plugin: "
                                          f"{verdicts.status(0).message}")
                    first_failure[0] = index
                    tables.extend([()] for _ in plugins[index + 1:])
                    break
            return FilterRun(slots, [p.name for p in plugins], codes, reason_ids, tables,
                             first_failure)
        alive = np.ones(count, dtype=bool)
        for index, plugin in enumerate(plugins):
            assert isinstance(plugin, FilterPlugin)
            positions = np.arange(count) if exhaustive else np.flatnonzero(alive)
            if len(positions) == 0:
                tables.append([()])
                continue
            verdicts = plugin.filter(state, pod, cluster, slots[positions])
            plugin_codes = verdicts.codes
            unexpected = (plugin_codes != 0) & (plugin_codes != _REJECTED[0]) & (
                plugin_codes != _REJECTED[1])
            # An exhaustive run also asks nodes an earlier plugin rejected, which upstream
            # never asks: only an Error at a node still in the running fails the cycle.
            unexpected &= alive[positions]
            if unexpected.any():
                where = int(np.flatnonzero(unexpected)[0])
                status = verdicts.status(where)
                raise PluginError(f"running {go_quote(plugin.name)} filter plugin: "
                                  f"{status.message}")
            codes[index, positions] = plugin_codes
            reason_ids[index, positions] = verdicts.reason_ids
            tables.append(verdicts.reasons)
            failed = positions[plugin_codes != 0]
            newly = failed[first_failure[failed] == NOT_RUN]
            first_failure[newly] = index
            alive[failed] = False
        return FilterRun(slots, [p.name for p in plugins], codes, reason_ids, tables,
                         first_failure)

    def run_filter_with_nominated(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                                  slots: np.ndarray, nominator: Nominator | None,
                                  *, exhaustive: bool = False) -> FilterRun:
        """``RunFilterPluginsWithNominatedPods`` over ``slots``.

        On a node with nominated pods of equal or higher priority, pass 1 runs with them added
        (through the PreFilter extensions) and its failure is the node's verdict; if it passes,
        the verdict is that of pass 2, the ordinary run without them.
        """
        if nominator is None:
            return self.run_filter(state, pod, cluster, slots, exhaustive=exhaustive)
        load = getattr(nominator, "load", None)
        if load is not None and self.nominated_pods_settle_verdicts(state):
            view = self._nominated_view(load, cluster, pod)
            if view is not None:
                return self.run_filter(state, pod, view, slots, exhaustive=exhaustive)
        passes = self._nominated_passes(pod, cluster, slots, nominator)
        try:
            run = self.run_filter(state, pod, cluster, slots, exhaustive=exhaustive)
        except PluginError:
            if not passes:
                raise
            # Upstream runs pass 2 only where pass 1 passed: an Error pass 2 would meet on a
            # node pass 1 rejected is never met.
            return self._pass_two_where_pass_one_passed(state, pod, cluster, slots, passes,
                                                        exhaustive)
        if not passes:
            return run
        positions, failed = self._run_pass_one(state, pod, cluster, passes, exhaustive)
        return _replace_positions(run, positions, failed) if failed is not None else run

    def _nominated_passes(self, pod: PodInfo, cluster: ClusterState, slots: np.ndarray,
                          nominator: Nominator) -> list[tuple[int, int, str, list[PodInfo]]]:
        """(position, slot, node, nominated pods) of each node of ``slots`` with nominated
        pods of equal or higher priority than ``pod`` (other than itself): where pass 1
        runs."""
        nominated_nodes = getattr(nominator, "nodes", None)
        if nominated_nodes is not None:  # only nodes that have nominated pods need pass 1
            with_nominations = nominated_nodes()
            if not with_nominations:
                return []
            if len(with_nominations) < len(slots):
                wanted = [cluster.slot_of[n] for n in with_nominations if n in cluster.slot_of]
                positions = np.flatnonzero(np.isin(slots, wanted)).tolist() if wanted else []
            else:
                positions = [i for i, name in enumerate(cluster.names(slots.tolist()))
                             if name in with_nominations]
        else:
            positions = list(range(len(slots)))
        passes: list[tuple[int, int, str, list[PodInfo]]] = []
        uid, priority = pod.uid, pod.priority
        slot_names = cluster.slot_names
        for position in positions:
            node_name = slot_names[int(slots[position])]
            nominated = [p for p in nominator(node_name)
                         if p.uid != uid and p.priority >= priority]
            if nominated:
                passes.append((position, int(slots[position]), node_name, nominated))
        return passes

    def _run_pass_one(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                      passes: list[tuple[int, int, str, list[PodInfo]]], exhaustive: bool
                      ) -> tuple[list[int], FilterRun | None]:
        """Pass 1 (the nominated pods added) on each node of ``passes``: the positions where
        it failed, in order, and their verdicts (None when it failed nowhere)."""
        if self.judges_nodes_independently(state):
            # One fork holds every node's nominated pods: each node sees only its own.
            forked = cluster.fork([slot for _, slot, _, _ in passes], nodes_only=True)
            forked.add_pods(self._placed(other, node_name)
                            for _, _, node_name, nominated in passes for other in nominated)
            with_nominated = self.run_filter(
                state.clone(), pod, forked, np.asarray([slot for _, slot, _, _ in passes]),
                exhaustive=exhaustive)
            failed = np.flatnonzero(~with_nominated.feasible)
            if not len(failed):
                return [], None
            return [passes[i][0] for i in failed.tolist()], with_nominated.select(failed)
        positions: list[int] = []
        runs: list[FilterRun] = []
        nodes_only = self.filters_read_only_their_node(state)
        for position, slot, node_name, nominated in passes:
            forked = cluster.fork(slot, nodes_only=nodes_only)
            forked_state = state.clone()
            for other in nominated:
                placed = self._placed(other, node_name)
                forked.add_pod(placed)
                self.run_pre_filter_add_pod(forked_state, pod, placed, slot, forked)
            with_nominated = self.run_filter(forked_state, pod, forked, np.asarray([slot]),
                                             exhaustive=exhaustive)
            if not with_nominated.feasible.all():
                positions.append(position)
                runs.append(with_nominated)
        return positions, (concat_runs(runs) if runs else None)

    def _pass_two_where_pass_one_passed(
            self, state: CycleState, pod: PodInfo, cluster: ClusterState, slots: np.ndarray,
            passes: list[tuple[int, int, str, list[PodInfo]]], exhaustive: bool) -> FilterRun:
        """Pass 1 first; pass 2 only on the nodes it did not reject."""
        positions, failed = self._run_pass_one(state, pod, cluster, passes, exhaustive)
        rejected = set(positions)
        kept = [i for i in range(len(slots)) if i not in rejected]
        ordinary = self.run_filter(state, pod, cluster, slots[kept], exhaustive=exhaustive)
        merged = concat_runs([ordinary, failed]) if failed is not None else ordinary
        order = np.empty(len(slots), np.int64)
        order[kept] = np.arange(len(kept))
        order[positions] = len(kept) + np.arange(len(positions))
        return FilterRun(slots, merged.plugins, merged.codes[:, order],
                         merged.reason_ids[:, order], merged.reason_tables,
                         merged.first_failure[order])

    def nominated_pods_settle_verdicts(self, state: CycleState) -> bool:
        """Whether a node's verdict with its nominated pods added is its final verdict: the
        cycle's filters judge each node on its own and pods added to a node only hinder
        (``FilterPlugin.added_pods_only_hinder``). Upstream's second pass, without the
        nominated pods, runs only when the first passed, and then passes too."""
        return self.judges_nodes_independently(state) and all(
            plugin.added_pods_only_hinder for plugin in self.plugins("Filter")
            if plugin.name not in state.skip_filter)

    def filters_read_node_pods(self, state: CycleState, pod: PodInfo) -> bool:
        """Whether some filter of the cycle reads the pods on a node to judge ``pod``
        (``FilterPlugin.reads_node_pods``), not only the node's sums."""
        return any(plugin.reads_node_pods(pod) for plugin in self.plugins("Filter")
                   if plugin.name not in state.skip_filter)

    def _nominated_view(self, load: NominatedLoad, cluster: ClusterState,
                        pod: PodInfo) -> ClusterState | None:
        """``load.view(cluster, pod)``, kept while neither changes (a cycle filters its nodes
        in chunks)."""
        key: tuple[object, ...] = (cluster.generation, cluster.node_generation, load.version,
                                   pod.uid, pod.priority)
        kept = self._view_kept
        if kept is not None and kept[0] is cluster and kept[1] is load and kept[2] == key:
            return kept[3]
        view = load.view(cluster, pod)
        self._view_kept = (cluster, load, key, view)
        return view

    def _placed(self, pod: PodInfo, node_name: str) -> PodInfo:
        """A nominated pod as if assigned to ``node_name`` (kept while the pod is nominated
        there: the same copy serves every cycle)."""
        kept = self._placed_pods.get(pod.uid)
        if kept is not None and kept[0] is pod and kept[1].node_name == node_name:
            return kept[1]
        placed = replace(pod, node_name=node_name)
        self._placed_pods[pod.uid] = (pod, placed)
        if len(self._placed_pods) > 4 * _PLACED_KEPT:
            for uid in list(self._placed_pods)[:_PLACED_KEPT]:
                del self._placed_pods[uid]
        return placed

    # ------------------------------------------------------------------ PostFilter

    def run_post_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                        diagnosis: Diagnosis) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self.plugins("PostFilter"):
            assert isinstance(plugin, PostFilterPlugin)
            outcome, status = plugin.post_filter(state, pod, cluster, diagnosis)
            if status.ok:
                return outcome, status.with_plugin(plugin.name)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return outcome, status.with_plugin(plugin.name)
            if not status.rejected:
                # An error ends PostFilter with no result (the details stay, to explain);
                # upstream's cycle still reports the pod unschedulable, with this message
                # after the FitError's.
                kept = PostFilterResult(details=outcome.details) if outcome else None
                return kept, status.with_plugin(plugin.name)
            # The last outcome that changes the nomination wins, as upstream's last non-noop
            # PostFilterResult; a no-op one is kept only for its details (for explanations).
            if outcome is not None and (outcome.nominated_node_name is not None
                                        or result is None):
                result = outcome
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # ------------------------------------------------------------------ Score

    def run_pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                      slots: np.ndarray) -> dict[str, Status]:
        statuses: dict[str, Status] = {}
        for plugin in self.plugins("PreScore"):
            assert isinstance(plugin, PreScorePlugin)
            status = plugin.pre_score(state, pod, cluster, slots).with_plugin(plugin.name)
            statuses[plugin.name] = status
            if status.code == Code.SKIP:
                state.skip_score.add(plugin.name)
            elif not status.ok:
                raise PluginError(f"running PreScore plugin {go_quote(plugin.name)}: "
                                  f"{status.message}")
        return statuses

    def run_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray, pre_score: dict[str, Status]) -> ScoreRun:
        """``RunScorePlugins``: every plugin's Score, then every NormalizeScore, then the
        range check and the weights, each step failing with upstream's text."""
        plugins = [plugin for plugin in self.plugins("Score")
                   if plugin.name not in state.skip_score]
        raw: dict[str, np.ndarray] = {}
        for plugin in plugins:
            assert isinstance(plugin, ScorePlugin)
            try:
                raw[plugin.name] = np.asarray(plugin.score(state, pod, cluster, slots),
                                              dtype=np.int64)
            except PluginError as exc:
                raise PluginError(f"running Score plugins: plugin {go_quote(plugin.name)} "
                                  f"failed with: {exc}") from None
        normalized: dict[str, np.ndarray] = {}
        for plugin in plugins:
            try:
                result = plugin.normalize(state, pod, slots, raw[plugin.name])
            except PluginError as exc:
                raise PluginError(f"running Normalize on Score plugins: plugin "
                                  f"{go_quote(plugin.name)} failed with: {exc}") from None
            normalized[plugin.name] = (raw[plugin.name] if result is None
                                       else np.asarray(result, dtype=np.int64))
        total = np.zeros(len(slots), dtype=np.int64)
        for name, final in normalized.items():
            if len(final) and (final.min() < MIN_NODE_SCORE or final.max() > MAX_NODE_SCORE):
                bad = int(final.max() if final.max() > MAX_NODE_SCORE else final.min())
                raise PluginError(f"applying score defaultWeights on Score plugins: plugin "
                                  f"{go_quote(name)} returns an invalid score {bad}, it should "
                                  f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after "
                                  "normalizing")
            total += final * self.weights[name]
        return ScoreRun(slots, pre_score, raw, normalized, dict(self.weights), total)

    # ------------------------------------------------------------------ binding cycle

    def _until_failure(self, point: str, call: Callable[[Any], Status]) -> Status:
        """Run ``call`` on each plugin of ``point`` in order; the first non-success stops."""
        for plugin in self.plugins(point):
            status = call(plugin)
            if not status.ok:
                return _binding_failure(point, plugin.name, status)
        return Status.success()

    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return self._until_failure(
            "Reserve", lambda plugin: cast(ReservePlugin, plugin).reserve(state, pod, node))

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for plugin in reversed(self.plugins("Reserve")):
            assert isinstance(plugin, ReservePlugin)
            plugin.unreserve(state, pod, node)

    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Permit; a Wait is not modelled (no in-tree plugin waits) and fails the binding."""
        return self._until_failure(
            "Permit", lambda plugin: cast(PermitPlugin, plugin).permit(state, pod, node)[0])

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return self._until_failure(
            "PreBind", lambda plugin: cast(PreBindPlugin, plugin).pre_bind(state, pod, node))

    def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for plugin in self.plugins("Bind"):
            assert isinstance(plugin, BindPlugin)
            status = plugin.bind(state, pod, node)
            if status.code == Code.SKIP:
                continue
            return (status.with_plugin(plugin.name) if status.ok
                    else _binding_failure("Bind", plugin.name, status))
        return Status.of(Code.ERROR, "no bind plugin bound the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for plugin in self.plugins("PostBind"):
            assert isinstance(plugin, PostBindPlugin)
            plugin.post_bind(state, pod, node)


def _binding_failure(point: str, plugin: str, status: Status) -> Status:
    """A binding-cycle plugin's failure as the runtime returns it: a rejection as the plugin
    gave it, anything else an Error ``running <point> plugin "<name>": <message>``."""
    if status.rejected or (point == "Permit" and status.code == Code.WAIT):
        return status.with_plugin(plugin)
    return Status.of(Code.ERROR, f"running {point} plugin {go_quote(plugin)}: {status.message}",
                     plugin=plugin)


__all__ = ["FilterRun", "Framework", "Nominator", "PluginError", "PreFilterOutcome",
           "PreFilterResult", "ScoreRun", "concat_runs"]
