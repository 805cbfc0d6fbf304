"""The framework runtime's PreScore and Score runs, against upstream's
``pkg/scheduler/framework/runtime/framework.go`` (v1.34.2): ``RunPreScorePlugins`` (a Skip
drops the plugin's Score for the cycle), ``RunScorePlugins`` (every Score, then every
NormalizeScore, then each score times its plugin's weight) and ``prioritizeNodes`` /
``selectHost`` in ``pkg/scheduler/schedule_one.go`` (the sum over plugins, every node 1 with
no score plugin, no scoring for a single feasible node, the top total wins)."""

from __future__ import annotations

import numpy as np

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.tracegen.builders import make_pod
from tests.framework.fakes import (
    cluster_of,
    framework_of,
    node_score,
    scheduler_of,
    verdict_filter,
)


def _pod(cluster: ClusterState) -> PodInfo:
    return pod_info(cluster, make_pod("p").obj())


def _to_max(raw: np.ndarray) -> np.ndarray:
    """A NormalizeScore scaling the highest score to 100 (as many in-tree plugins do)."""
    top = int(raw.max())
    return raw * 100 // top if top else raw


def test_scores_are_normalized_weighted_and_summed() -> None:
    """A: raw 1, 2, 4 normalized to 25, 50, 100, weight 2; B: 30, 20, 10 as is, weight 3."""
    a = node_score("A", {"n1": 1, "n2": 2, "n3": 4}, normalize=_to_max)
    b = node_score("B", {"n1": 30, "n2": 20, "n3": 10})
    framework = framework_of({"PreScore": [a, b], "Score": [a, b]}, {"A": 2, "B": 3})
    cluster = cluster_of("n1", "n2", "n3")
    slots = np.asarray([cluster.slot_of[n] for n in ("n1", "n2", "n3")])
    state = CycleState()
    pod = _pod(cluster)
    pre_score = framework.run_pre_score(state, pod, cluster, slots)
    run = framework.run_score(state, pod, cluster, slots, pre_score)
    assert {n: r.tolist() for n, r in run.raw.items()} == {"A": [1, 2, 4], "B": [30, 20, 10]}
    assert {n: r.tolist() for n, r in run.normalized.items()} == {
        "A": [25, 50, 100], "B": [30, 20, 10]}
    assert run.weights == {"A": 2, "B": 3}
    assert run.total.tolist() == [25 * 2 + 30 * 3, 50 * 2 + 20 * 3, 100 * 2 + 10 * 3]
    assert pre_score == {"A": Status(plugin="A"), "B": Status(plugin="B")}


def test_the_highest_total_is_selected() -> None:
    """B's weight 2 outweighs A's preference (n3 totals 200 against n1's 100); with A's
    weight 3 the choice follows A."""
    a = node_score("A", {"n1": 100, "n2": 50, "n3": 0})
    b = node_score("B", {"n1": 0, "n2": 50, "n3": 100})
    cluster = cluster_of("n1", "n2", "n3")
    points = {"PreScore": [a, b], "Score": [a, b]}
    attempt = scheduler_of(points, {"A": 1, "B": 2}).schedule(cluster, _pod(cluster))
    assert attempt.selected == "n3"
    assert attempt.scores is not None
    assert dict(zip(cluster.names(attempt.scores.slots.tolist()),
                    attempt.scores.total.tolist(), strict=True)) == {
        "n1": 100, "n2": 150, "n3": 200}
    attempt = scheduler_of(points, {"A": 3, "B": 2}).schedule(cluster, _pod(cluster))
    assert attempt.selected == "n1"


def test_ties_are_the_nodes_at_the_top_total() -> None:
    a = node_score("A", {"n1": 70, "n2": 70, "n3": 10})
    cluster = cluster_of("n1", "n2", "n3")
    attempt = scheduler_of({"Score": [a]}, tie_break="name").schedule(cluster, _pod(cluster))
    assert sorted(cluster.names(attempt.tied_slots.tolist())) == ["n1", "n2"]
    assert attempt.selected == "n1"


def test_only_feasible_nodes_are_scored() -> None:
    a = node_score("A", {"n1": 100, "n2": 10, "n3": 20})
    points = {"Filter": [verdict_filter("F", {"n1": Status.of(Code.UNSCHEDULABLE, "no")})],
              "Score": [a]}
    cluster = cluster_of("n1", "n2", "n3")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.scores is not None
    assert sorted(cluster.names(attempt.scores.slots.tolist())) == ["n2", "n3"]
    assert attempt.selected == "n3"


def test_a_pre_score_skip_drops_the_plugin_s_score() -> None:
    """RunPreScorePlugins records Skip in the skip set; RunScorePlugins leaves the plugin out
    (its score would have chosen n1). A Score plugin without PreScore is unaffected."""
    skipped = node_score("Skipped", {"n1": 100}, pre_score=Status.of(Code.SKIP))
    other = node_score("Other", {"n2": 10})
    points = {"PreScore": [skipped], "Score": [skipped, other]}
    cluster = cluster_of("n1", "n2")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.scores is not None
    assert list(attempt.scores.normalized) == ["Other"]
    assert attempt.scores.pre_score["Skipped"].code == Code.SKIP
    assert attempt.state is not None and attempt.state.skip_score == {"Skipped"}
    assert attempt.selected == "n2"


def test_without_score_plugins_every_node_scores_one() -> None:
    """findNodesThatPassFilters looks for one feasible node when nothing scores; with every
    node evaluated (``kaudit whatif``), prioritizeNodes: ``If no priority configs are
    provided, then all nodes will have a score of one``."""
    cluster = cluster_of("n1", "n2", "n3")
    attempt = scheduler_of({}).schedule(cluster, _pod(cluster))
    assert (attempt.evaluated, attempt.feasible, attempt.scores) == (1, 1, None)
    attempt = scheduler_of({}).schedule(cluster, _pod(cluster), exhaustive=True)
    assert attempt.scores is not None
    assert attempt.scores.total.tolist() == [1, 1, 1]
    assert len(attempt.tied_slots) == 3


def test_a_single_feasible_node_is_not_scored() -> None:
    """schedulePod returns the only feasible node without PreScore or Score."""
    a = node_score("A", {}, pre_score=Status.of(Code.ERROR, "must not run"))
    points = {"Filter": [verdict_filter("F", {"n1": Status.of(Code.UNSCHEDULABLE, "no")})],
              "PreScore": [a], "Score": [a]}
    cluster = cluster_of("n1", "n2")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.error is None
    assert attempt.scores is None
    assert attempt.selected == "n2"
