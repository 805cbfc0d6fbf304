"""Fake plugins after upstream's ``pkg/scheduler/testing/framework/fake_plugins.go``, a
framework of them, and the objects of the tables: the building blocks of upstream's runtime
and ``schedule_one`` test tables.

Each factory makes a plugin class with the given name (kaudit plugins carry their name on the
class, upstream's fakes take it as an argument).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.config.feature_gates import FeatureGates
from kaudit.config.model import PluginRef, Profile
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    BindPlugin,
    FilterPlugin,
    Handle,
    NodeFilterPlugin,
    NodeScorePlugin,
    NodeVerdicts,
    NodeView,
    PermitPlugin,
    Plugin,
    PreBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kaudit.framework.runtime import Framework, PluginError
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.scheduler.schedule import Scheduler
from kaudit.tracegen.builders import make_node, make_pod


def fake_pre_filter(name: str, node_names: Sequence[str] | None = None,
                    status: Status | None = None) -> type[Plugin]:
    """``NewFakePreFilterPlugin(name, result, status)``: always answers ``node_names`` (None:
    all nodes) with ``status`` (None: Success)."""
    result = None if node_names is None else PreFilterResult(frozenset(node_names))

    class FakePreFilter(PreFilterPlugin):
        def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                       ) -> tuple[PreFilterResult | None, Status]:
            return result, status or Status.success()

    FakePreFilter.name = name
    return FakePreFilter


def fake_filter(name: str, failed: Mapping[str, Code]) -> type[Plugin]:
    """``NewFakeFilterPlugin(failedNodeReturnCodeMap)``: the nodes named fail with their code
    and ``injecting failure for pod <name>``."""

    class FakeFilter(NodeFilterPlugin):
        def filter_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> Status:
            code = failed.get(node.name)
            if code is None:
                return Status.success()
            return Status.of(code, f"injecting failure for pod {pod.name}")

    FakeFilter.name = name
    return FakeFilter


def failing_filter(name: str, message: str) -> type[Plugin]:
    """A filter that answers Error on every node."""

    class FailingFilter(FilterPlugin):
        def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                   slots: np.ndarray) -> NodeVerdicts:
            return NodeVerdicts.from_statuses([Status.of(Code.ERROR, message)] * len(slots))

    FailingFilter.name = name
    return FailingFilter


def failing_add_pod(name: str, message: str) -> type[Plugin]:
    """A PreFilter plugin whose AddPod extension answers Error."""

    class FailingAddPod(PreFilterPlugin, PreFilterExtensions):
        def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                       ) -> tuple[PreFilterResult | None, Status]:
            return None, Status.success()

        def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, slot: int,
                    cluster: ClusterState) -> Status:
            return Status.of(Code.ERROR, message)

        def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
                       slot: int, cluster: ClusterState) -> Status:
            return Status.success()

    FailingAddPod.name = name
    return FailingAddPod


def fake_score(name: str, *, pre_score: Status | None = None, score_error: str = "",
               normalize_error: str = "", normalized: int | None = None) -> type[Plugin]:
    """A PreScore and Score plugin: PreScore answers ``pre_score`` (Success by default);
    Score fails with ``score_error``, NormalizeScore with ``normalize_error``, or sets every
    node's score to ``normalized``; otherwise every node scores 1."""

    class FakeScore(PreScorePlugin, ScorePlugin):
        def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                      slots: np.ndarray) -> Status:
            return pre_score or Status.success()

        def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> np.ndarray:
            if score_error:
                raise PluginError(score_error)
            return np.ones(len(slots), dtype=np.int64)

        def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                      scores: np.ndarray) -> np.ndarray | None:
            if normalize_error:
                raise PluginError(normalize_error)
            return None if normalized is None else np.full(len(slots), normalized, np.int64)

    FakeScore.name = name
    return FakeScore


def fake_binding_step(name: str, point: str, status: Status) -> type[Plugin]:
    """A Reserve, Permit, PreBind or Bind plugin (``point``) that answers ``status``."""
    if point == "Reserve":
        class FakeReserve(ReservePlugin):
            def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
                return status

            def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
                return None
        plugin: type[Plugin] = FakeReserve
    elif point == "Permit":
        class FakePermit(PermitPlugin):
            def permit(self, state: CycleState, pod: PodInfo, node_name: str
                       ) -> tuple[Status, float]:
                return status, 0.0
        plugin = FakePermit
    elif point == "PreBind":
        class FakePreBind(PreBindPlugin):
            def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
                return status
        plugin = FakePreBind
    else:
        class FakeBind(BindPlugin):
            def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
                return status
        plugin = FakeBind
    plugin.name = name
    return plugin


def verdict_filter(name: str, verdicts: Mapping[str, Status], *,
                   seen: list[str] | None = None) -> type[Plugin]:
    """A filter answering each node named in ``verdicts`` with its status (the others pass);
    the names of the nodes it judged are appended to ``seen``."""

    class VerdictFilter(NodeFilterPlugin):
        def filter_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> Status:
            if seen is not None:
                seen.append(node.name)
            return verdicts.get(node.name, Status.success())

    VerdictFilter.name = name
    return VerdictFilter


def pods_filter(name: str, rejects: Callable[[Sequence[PodInfo]], str | None], *,
                only_its_node: bool = True, only_hinder: bool = False,
                code: Code = Code.UNSCHEDULABLE) -> type[Plugin]:
    """A filter judging a node by the pods on it: ``rejects(pods)`` answers a reason to fail
    the node with ``code`` (None passes). ``only_its_node`` and ``only_hinder`` are the
    plugin's ``reads_only_its_node`` and ``added_pods_only_hinder``."""

    class PodsFilter(FilterPlugin):
        reads_only_its_node = only_its_node
        added_pods_only_hinder = only_hinder

        def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                   slots: np.ndarray) -> NodeVerdicts:
            statuses = []
            for slot in slots.tolist():
                reason = rejects(list(cluster.pods_on[slot].values()))
                statuses.append(Status.success() if reason is None
                                else Status.of(code, reason))
            return NodeVerdicts.from_statuses(statuses)

    PodsFilter.name = name
    return PodsFilter


def recording_pre_filter(name: str, added: list[tuple[str, str]]) -> type[Plugin]:
    """A PreFilter plugin with extensions whose AddPod appends (pod added, node name) to
    ``added``."""

    class RecordingPreFilter(PreFilterPlugin, PreFilterExtensions):
        def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                       ) -> tuple[PreFilterResult | None, Status]:
            return None, Status.success()

        def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, slot: int,
                    cluster: ClusterState) -> Status:
            added.append((pod_to_add.name, cluster.node(slot).name))
            return Status.success()

        def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
                       slot: int, cluster: ClusterState) -> Status:
            return Status.success()

    RecordingPreFilter.name = name
    return RecordingPreFilter


def node_score(name: str, scores: Mapping[str, int], *,
               normalize: Callable[[np.ndarray], np.ndarray] | None = None,
               pre_score: Status | None = None) -> type[Plugin]:
    """A PreScore and Score plugin: each node scores its entry of ``scores`` (0 if absent);
    ``normalize`` is its NormalizeScore (None: none); PreScore answers ``pre_score``."""

    class NodeScore(PreScorePlugin, NodeScorePlugin):
        def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                      slots: np.ndarray) -> Status:
            return pre_score or Status.success()

        def score_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> int:
            return scores.get(node.name, 0)

        def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                      raw: np.ndarray) -> np.ndarray | None:
            return None if normalize is None else normalize(raw)

    NodeScore.name = name
    return NodeScore


def framework_of(points: Mapping[str, Sequence[type[Plugin]]],
                 weights: Mapping[str, int] | None = None) -> Framework:
    """A profile's framework with these plugins at these extension points (Score weight 1,
    or the plugin's entry in ``weights``), as upstream's ``tf.NewFramework`` with
    ``Register*Plugin`` calls."""
    registry: dict[str, type[Plugin]] = {}
    plugins: dict[str, tuple[PluginRef, ...]] = {}
    for point, classes in points.items():
        plugins[point] = tuple(
            PluginRef(c.name, (weights or {}).get(c.name, 1) if point == "Score" else 0)
            for c in classes)
        registry.update((c.name, c) for c in classes)
    profile = Profile(scheduler_name="default-scheduler", plugins=plugins)
    return Framework(profile, registry, Handle(feature_gates=FeatureGates()))


def scheduler_of(points: Mapping[str, Sequence[type[Plugin]]],
                 weights: Mapping[str, int] | None = None, *,
                 tie_break: str = "random") -> Scheduler:
    """A scheduler with one profile, :func:`framework_of` ``points`` and ``weights``."""
    return Scheduler({"default-scheduler": framework_of(points, weights)}, tie_break=tie_break)


def cluster_of(*names: str, pods: Sequence[dict[str, Any]] = ()) -> ClusterState:
    """Nodes with only a hostname label, as upstream's tables build them, and bound pods."""
    cluster = ClusterState()
    for name in names:
        cluster.add_node(make_node(name).capacity(cpu="4", memory="8Gi").obj())
    for pod in pods:
        cluster.add_pod(pod_info(cluster, pod))
    return cluster


def daemonset_pod(*node_names: str, priority: int = 0) -> dict:
    """A DaemonSet's pod: required node affinity ``matchFields metadata.name In [...]``."""
    obj = make_pod("ds").req(cpu="1").obj()
    obj["spec"]["priority"] = priority
    obj["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In",
                              "values": list(node_names)}]}]}}}
    return obj
