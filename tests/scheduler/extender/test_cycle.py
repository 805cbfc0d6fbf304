"""Extenders in the scheduling cycle, with in-process extenders (the HTTP client has its own
tests): ``findNodesThatPassExtenders``, ``prioritizeNodes``, ``extendersBinding`` and
``callExtenders`` as ``schedule_one.go`` and ``preemption.go`` (Kubernetes v1.34) run them,
with the expected values worked out from those functions."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.extender import EXTENDER_NAME, ExtenderError, FilterAnswer
from kaudit.framework.status import Code
from kaudit.model.pod import PodInfo
from kaudit.scheduler.binding import bind
from kaudit.scheduler.build import build_scheduler, load
from kaudit.scheduler.schedule import Scheduler
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import V1_34, gates_at


@dataclass
class Fake:
    """An extender answering from plain functions; ``None`` for a verb it does not have."""

    name: str = "fake"
    ignorable: bool = False
    weight: int = 1
    filtering: Callable[[list[str]], FilterAnswer] | None = None
    scoring: Callable[[list[str]], list[tuple[str, int]]] | None = None
    binding: Callable[[str], None] | None = None
    preempting: Callable[[dict[str, list[str]]], dict[str, list[str]]] | None = None
    interested: bool = True
    asked: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def is_filter(self) -> bool:
        return self.filtering is not None

    @property
    def is_prioritizer(self) -> bool:
        return self.scoring is not None

    @property
    def is_binder(self) -> bool:
        return self.binding is not None

    @property
    def supports_preemption(self) -> bool:
        return self.preempting is not None

    def is_interested(self, pod: PodInfo) -> bool:
        return self.interested

    def filter(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
               ) -> FilterAnswer:
        names = [n for n, _ in nodes]
        self.asked.append(("filter", names))
        assert self.filtering is not None
        return self.filtering(names)

    def prioritize(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
                   ) -> tuple[list[tuple[str, int]], int]:
        names = [n for n, _ in nodes]
        self.asked.append(("prioritize", names))
        assert self.scoring is not None
        return self.scoring(names), self.weight

    def bind(self, pod: PodInfo, node: str) -> None:
        self.asked.append(("bind", [node]))
        assert self.binding is not None
        self.binding(node)

    def process_preemption(self, pod: PodInfo,
                           victims: Mapping[str, tuple[Sequence[PodInfo], int]],
                           pods_on: Callable[[str], Mapping[str, PodInfo] | None]
                           ) -> dict[str, tuple[list[PodInfo], int]]:
        self.asked.append(("preempt", list(victims)))
        assert self.preempting is not None
        answer = self.preempting({n: [p.uid for p in pods] for n, (pods, _) in victims.items()})
        out = {}
        for node, uids in answer.items():
            on = pods_on(node) or {}
            out[node] = ([on[u] for u in uids], 0)
        return out


def _fails(message: str) -> Callable[[Any], Any]:
    def fail(*_: Any) -> Any:
        raise ExtenderError(message)
    return fail


def _scheduler(*extenders: Fake) -> Scheduler:
    config, registry = load(None, gates_at(V1_34))
    built = build_scheduler(config, registry, seed=1)
    for framework in built.frameworks.values():
        for plugin in framework.instances.values():
            if plugin.handle is not None:
                plugin.handle.extenders = tuple(extenders)
    return Scheduler(built.frameworks, seed=1, extenders=list(extenders))


def _cluster(*objects: dict[str, Any]) -> ClusterState:
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="110").obj()
             for i in (1, 2, 3)]
    cluster, _ = cluster_from_objects([*nodes, *objects])
    return cluster


def _pod(cluster: ClusterState, name: str = "p", cpu: str = "1", priority: int = 0) -> PodInfo:
    return pod_info(cluster, make_pod(name).uid(f"uid-{name}").req(cpu=cpu)
                    .priority(priority).obj())


def test_failed_nodes_count_in_the_message_and_unresolvable_wins() -> None:
    extender = Fake(filtering=lambda names: FilterAnswer(
        [], failed={"n1": "busy", "n2": "busy"}, failed_unresolvable={"n2": "gone", "n3": "gone"}))
    cluster = _cluster()
    attempt = _scheduler(extender).schedule(cluster, _pod(cluster))
    assert attempt.selected is None and attempt.feasible == 0
    # DynamicResources's PostFilter speaks first in the default profile.
    assert attempt.message == (
        "0/3 nodes are available: 1 busy, 2 gone. no new claims to deallocate, preemption: "
        "0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.")
    statuses = attempt.diagnosis.node_statuses
    assert statuses["n2"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and not statuses["n2"].plugin
    assert statuses["n1"].code == Code.UNSCHEDULABLE
    assert EXTENDER_NAME in attempt.diagnosis.unschedulable_plugins


def test_nodes_dropped_without_a_reason_have_no_status() -> None:
    cluster = _cluster()
    attempt = _scheduler(Fake(filtering=lambda names: FilterAnswer(None))).schedule(
        cluster, _pod(cluster), run_post_filter=False)
    # Upstream counts nodes absent from NodeToStatus with the absent status, which has no
    # reason: the message lists nothing.
    assert attempt.message == "0/3 nodes are available:"
    assert EXTENDER_NAME in attempt.diagnosis.unschedulable_plugins


def test_an_error_fails_the_cycle_unless_the_extender_is_ignorable() -> None:
    cluster = _cluster()
    broken = Fake(filtering=_fails("connection refused"))
    attempt = _scheduler(broken).schedule(cluster, _pod(cluster))
    assert attempt.error == "connection refused" and attempt.post_filter is None
    follow = Fake("next", filtering=lambda names: FilterAnswer(names[:1]))
    skipped = Fake(filtering=_fails("connection refused"), ignorable=True)
    attempt = _scheduler(skipped, follow).schedule(cluster, _pod(cluster))
    assert attempt.error is None and attempt.selected == follow.asked[0][1][0]
    # The failed extender is skipped: the next one is sent every node.
    assert skipped.asked == follow.asked == [("filter", ["n1", "n2", "n3"])]


def test_extenders_see_only_what_the_last_one_let_through_and_skip_uninterested_pods() -> None:
    first = Fake("first", filtering=lambda names: FilterAnswer([n for n in names if n != "n1"]))
    aside = Fake("aside", filtering=_fails("never called"), interested=False)
    second = Fake("second", filtering=lambda names: FilterAnswer(names))
    cluster = _cluster()
    _scheduler(first, aside, second).schedule(cluster, _pod(cluster))
    assert second.asked[0] == ("filter", ["n2", "n3"]) and aside.asked == []


def test_extender_scores_are_weighted_scaled_and_added() -> None:
    """``score × weight × MaxNodeScore / MaxExtenderPriority``; unknown hosts are ignored,
    a failed prioritize adds nothing, one feasible node is not prioritized."""
    scorer = Fake(weight=3, scoring=lambda names: [("n1", 1), ("n3", 9), ("elsewhere", 10)])
    broken = Fake("broken", scoring=_fails("timeout"))
    cluster = _cluster()
    attempt = _scheduler(scorer, broken).schedule(cluster, _pod(cluster))
    assert attempt.scores is not None
    slots = [cluster.node(int(s)).name for s in attempt.scores.slots]
    by_node = dict(zip(slots, attempt.extender_scores["fake"].tolist(), strict=True))
    assert by_node == {"n1": 30, "n2": 0, "n3": 270}
    assert "broken" not in attempt.extender_scores  # a failed call adds no scores
    assert attempt.selected == "n3"
    single = Fake(filtering=lambda names: FilterAnswer(["n2"]),
                  scoring=_fails("must not be called"))
    attempt = _scheduler(single).schedule(cluster, _pod(cluster))
    assert attempt.selected == "n2" and [verb for verb, _ in single.asked] == ["filter"]


def test_a_prioritizing_extender_makes_the_cycle_look_for_more_than_one_node() -> None:
    """``numFeasibleNodesToFind`` is 1 only with no score plugins and no extender that
    filters or prioritizes: with a prioritizer every node is scored."""
    config, registry = load(None, gates_at(V1_34))
    built = build_scheduler(config, registry)
    framework = built.frameworks["default-scheduler"]
    framework.points["Score"] = []
    cluster = _cluster()
    plain = Scheduler(built.frameworks).schedule(cluster, _pod(cluster))
    assert plain.evaluated == 1
    scorer = Fake(scoring=lambda names: [(n, 5 if n == "n2" else 0) for n in names])
    scored = Scheduler(built.frameworks, extenders=[scorer]).schedule(cluster, _pod(cluster))
    assert scored.evaluated == 3 and scored.selected == "n2"


def test_a_failing_nominated_node_falls_back_to_the_full_search() -> None:
    extender = Fake(filtering=lambda names: FilterAnswer([n for n in names if n != "n1"],
                                                         failed={"n1": "full"}))
    cluster = _cluster()
    pod = pod_info(cluster, {**make_pod("p").uid("uid-p").req(cpu="1").obj(),
                             "status": {"nominatedNodeName": "n1"}})
    attempt = _scheduler(extender).schedule(cluster, pod)
    assert not attempt.nominated_node_used and attempt.selected in ("n2", "n3")
    assert extender.asked[0] == ("filter", ["n1"])


def test_an_ignorable_binder_that_fails_leaves_the_pod_to_the_bind_plugins() -> None:
    cluster = _cluster()
    pod = _pod(cluster)
    scheduler = _scheduler(Fake(binding=_fails("busy"), ignorable=True))
    framework = scheduler.framework_for(pod)
    assert framework is not None
    state = scheduler.schedule(cluster, pod).state
    assert state is not None
    done = bind(framework, cluster, state, pod, "n1", scheduler.extenders)
    assert done.ok and done.binder is None
    strict = _scheduler(Fake(binding=_fails("busy")))
    other = _pod(cluster, "q")
    state = strict.schedule(cluster, other).state
    assert state is not None
    failed = bind(framework, cluster, state, other, "n1", strict.extenders)
    assert failed.failure is not None and failed.failure.code == Code.ERROR
    assert failed.failure.message == "busy" and failed.binder == "fake"
    assert "uid-q" not in cluster.pods  # unreserved and forgotten


def _full_cluster() -> ClusterState:
    return _cluster(*(make_pod(f"low{i}").uid(f"uid-low{i}").node(f"n{i}").req(cpu="3").obj()
                      for i in (1, 2, 3)))


def test_preemption_asks_extenders_to_narrow_the_candidates() -> None:
    keep_n3 = Fake(preempting=lambda victims: {n: v for n, v in victims.items() if n == "n3"})
    cluster = _full_cluster()
    attempt = _scheduler(keep_n3).schedule(cluster, _pod(cluster, "high", "2", 100))
    assert attempt.post_filter_result is not None
    assert attempt.post_filter_result.nominated_node_name == "n3"
    assert [(verb, sorted(nodes)) for verb, nodes in keep_n3.asked] == [
        ("preempt", ["n1", "n2", "n3"])]


@pytest.mark.parametrize(("ignorable", "message"), [
    # The first node of the victims map (upstream's is a Go map: any of them).
    (False, r'^preemption: expected at least one victim pod on node "n[123]"$'),
    # The Unschedulable status joins DynamicResources's reason; an error stands alone.
    (True, "^no new claims to deallocate, preemption: no candidate node for preemption$"),
])
def test_preemption_without_victims_from_an_extender(ignorable: bool, message: str) -> None:
    empty = Fake(preempting=lambda victims: {n: [] for n in victims}, ignorable=ignorable)
    cluster = _full_cluster()
    attempt = _scheduler(empty).schedule(cluster, _pod(cluster, "high", "2", 100))
    assert attempt.error is None and attempt.post_filter is not None
    assert re.match(message, attempt.post_filter.message)
    assert attempt.message is not None
    assert attempt.message.endswith(" " + attempt.post_filter.message)
    result = attempt.post_filter_result
    assert result is None or result.nominated_node_name is None


def test_scores_wrap_as_go_int64_arithmetic_does() -> None:
    huge = Fake(weight=5, scoring=lambda names: [("n1", 2**62), ("n2", 1)])
    cluster = _cluster()
    attempt = _scheduler(huge).schedule(cluster, _pod(cluster))
    assert attempt.scores is not None
    slots = [cluster.node(int(s)).name for s in attempt.scores.slots]
    final = dict(zip(slots, attempt.extender_scores["fake"].tolist(), strict=True))
    assert final["n1"] == (2**62 * 50 + 2**63) % 2**64 - 2**63 and final["n2"] == 50


def test_an_extender_status_replaces_a_plugins() -> None:
    """Upstream sets the extenders' statuses after the filter plugins': a node an extender
    names as unresolvable counts so, and is no preemption candidate, even if a plugin had
    failed it first."""
    cluster = _cluster(make_pod("low").uid("uid-low").node("n3").req(cpu="3").obj())
    blocked = Fake(filtering=lambda names: FilterAnswer(
        [], failed={n: "busy" for n in names}, failed_unresolvable={"n3": "quota exhausted"}))
    attempt = _scheduler(blocked).schedule(cluster, _pod(cluster, "big", "2", 100))
    assert attempt.diagnosis.node_statuses["n3"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert attempt.message is not None
    assert attempt.message.startswith("0/3 nodes are available: 1 quota exhausted, 2 busy.")
    assert "Insufficient cpu" not in attempt.message
    details = attempt.post_filter_result.details if attempt.post_filter_result else None
    assert details is not None and "n3" not in [c.node for c in details.candidates]


def test_a_node_that_needs_no_victim_makes_preemption_an_error() -> None:
    """An extender failed n1, where the pod fits without evicting anything: the dry run
    finds no victim there, ``expected at least one victim pod on node "n1"``, and with no
    candidate that error is PostFilter's answer (the nomination is left as it is)."""
    extender = Fake(filtering=lambda names: FilterAnswer(
        [], failed={"n1": "busy"}, failed_unresolvable={"n2": "no", "n3": "no"}))
    cluster = _cluster(make_pod("low").uid("uid-low").node("n1").req(cpu="1").obj())
    attempt = _scheduler(extender).schedule(cluster, _pod(cluster, "high", "1", 100))
    assert attempt.post_filter is not None and attempt.post_filter.code == Code.ERROR
    assert attempt.post_filter.message == (
        'preemption: expected at least one victim pod on node "n1"')
    result = attempt.post_filter_result
    assert result is None or result.nominated_node_name is None


def test_the_start_index_counts_the_statuses_of_the_nominated_nodes_check() -> None:
    """``processedNodes = len(feasibleNodes) + NodeToStatus.Len()``: statuses an extender set
    while the nominated node was checked count, even for nodes it was not sent."""
    answers = iter([FilterAnswer([], failed={"n1": "busy", "n2": "busy"})])
    extender = Fake(filtering=lambda names: next(answers, FilterAnswer(names)))
    cluster = _cluster()
    scheduler = _scheduler(extender)
    pod = pod_info(cluster, {**make_pod("p").uid("uid-p").req(cpu="1").obj(),
                             "status": {"nominatedNodeName": "n1"}})
    attempt = scheduler.schedule(cluster, pod)
    assert attempt.selected is not None and not attempt.nominated_node_used
    assert extender.asked[:2] == [("filter", ["n1"]), ("filter", ["n1", "n2", "n3"])]
    assert scheduler.next_start_node_index == (3 + 2) % 3
