"""The framework runtime's PreFilter and Filter runs, against upstream's
``pkg/scheduler/framework/runtime/framework.go`` (v1.34.2): ``RunPreFilterPlugins`` (Skip,
Unschedulable keeps going, UnschedulableAndUnresolvable stops, PreFilterResults intersect)
and ``RunFilterPlugins`` (a node stops at its first non-success: the first failing plugin is
its verdict, later plugins do not run on it), with the node restriction
``findNodesThatFitPod`` (``pkg/scheduler/schedule_one.go``) applies to a PreFilterResult."""

from __future__ import annotations

import numpy as np
import pytest

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeFilterPlugin,
    NodeVerdicts,
    NodeView,
    Plugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kaudit.framework.runtime import NOT_RUN, FilterRun, Framework
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.tracegen.builders import make_pod
from tests.framework.fakes import (
    cluster_of,
    fake_pre_filter,
    framework_of,
    scheduler_of,
    verdict_filter,
)

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _slots(cluster: ClusterState, *names: str) -> np.ndarray:
    return np.asarray([cluster.slot_of[name] for name in names])


def _pod(cluster: ClusterState) -> PodInfo:
    return pod_info(cluster, make_pod("p").obj())


def _run(framework: Framework, cluster: ClusterState, names: tuple[str, ...], *,
         exhaustive: bool = False) -> tuple[FilterRun, CycleState]:
    state = CycleState()
    pod = _pod(cluster)
    framework.run_pre_filter(state, pod, cluster)
    return framework.run_filter(state, pod, cluster, _slots(cluster, *names),
                                exhaustive=exhaustive), state


def test_a_node_stops_at_its_first_failing_plugin() -> None:
    """RunFilterPlugins returns at the first non-success: A fails n2, so B never sees n2;
    B fails n1 with two reasons; n3 passes both."""
    seen_a: list[str] = []
    seen_b: list[str] = []
    framework = framework_of({"Filter": [
        verdict_filter("A", {"n2": Status.of(U, "a says no")}, seen=seen_a),
        verdict_filter("B", {"n1": Status.of(UU, "b says no", "b also"),
                             "n2": Status.of(U, "b would say no")}, seen=seen_b)]})
    cluster = cluster_of("n1", "n2", "n3")
    run, _ = _run(framework, cluster, ("n1", "n2", "n3"))
    assert run.plugins == ["A", "B"]
    assert run.codes.tolist() == [[0, int(U), 0], [int(UU), NOT_RUN, 0]]
    assert run.first_failure.tolist() == [1, 0, NOT_RUN]
    assert run.feasible.tolist() == [False, False, True]
    assert run.status(0) == Status(UU, ("b says no", "b also"), "B")
    assert run.status(1) == Status(U, ("a says no",), "A")
    assert run.status(2) == Status.success()
    assert seen_a == ["n1", "n2", "n3"]
    assert seen_b == ["n1", "n3"]


@pytest.mark.parametrize("node", ["n1", "n2", "n3"])
def test_one_node_alone_gets_the_same_verdict(node: str) -> None:
    """A single node (the nominated node's evaluation) takes a path of its own; its verdict
    is the one it gets among many."""
    verdicts = [verdict_filter("A", {"n2": Status.of(U, "a says no")}),
                verdict_filter("B", {"n1": Status.of(UU, "b says no"),
                                     "n2": Status.of(U, "b would say no")})]
    cluster = cluster_of("n1", "n2", "n3")
    together, _ = _run(framework_of({"Filter": verdicts}), cluster, ("n1", "n2", "n3"))
    alone, _ = _run(framework_of({"Filter": verdicts}), cluster, (node,))
    index = ["n1", "n2", "n3"].index(node)
    assert alone.status(0) == together.status(index)
    assert alone.codes[:, 0].tolist() == together.codes[:, index].tolist()


def test_exhaustive_runs_every_plugin_on_every_node() -> None:
    """``kaudit whatif`` runs every plugin; the node's verdict is still its first failure."""
    seen_b: list[str] = []
    framework = framework_of({"Filter": [
        verdict_filter("A", {"n2": Status.of(U, "a says no")}),
        verdict_filter("B", {"n2": Status.of(UU, "b says no")}, seen=seen_b)]})
    cluster = cluster_of("n1", "n2")
    run, _ = _run(framework, cluster, ("n1", "n2"), exhaustive=True)
    assert run.codes.tolist() == [[0, int(U)], [0, int(UU)]]
    assert run.status(1) == Status(U, ("a says no",), "A")
    assert seen_b == ["n1", "n2"]


def _skipping(name: str, filter_status: Status) -> type[Plugin]:
    """A PreFilter and Filter plugin whose PreFilter answers Skip and whose Filter would
    answer ``filter_status`` everywhere."""

    class Skipping(PreFilterPlugin, NodeFilterPlugin):
        def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                       ) -> tuple[PreFilterResult | None, Status]:
            return None, Status.of(Code.SKIP)

        def filter_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> Status:
            return filter_status

    Skipping.name = name
    return Skipping


def test_a_pre_filter_skip_skips_the_plugins_filter() -> None:
    """RunPreFilterPlugins puts a Skip plugin in the skip set; RunFilterPlugins passes it by."""
    skipping = _skipping("Skipper", Status.of(UU, "never"))
    framework = framework_of({"PreFilter": [skipping],
                              "Filter": [skipping, verdict_filter("B", {})]})
    cluster = cluster_of("n1")
    run, state = _run(framework, cluster, ("n1",))
    assert state.skip_filter == {"Skipper"}
    assert run.plugins == ["B"]
    assert run.feasible.tolist() == [True]
    attempt = scheduler_of({"PreFilter": [skipping],
                            "Filter": [skipping]}).schedule(cluster, _pod(cluster))
    assert attempt.selected == "n1"
    assert attempt.pre_filter.statuses["Skipper"].code == Code.SKIP
    assert attempt.pre_filter.status.ok


def test_pre_filter_results_intersect_and_restrict_the_nodes() -> None:
    """``result.Merge``: the nodes both results name; findNodesThatFitPod filters only those
    (a name that is no node is dropped) and gives the rest the absent-nodes status."""
    points = {"PreFilter": [fake_pre_filter("P1", ["n1", "n2", "ghost"]),
                            fake_pre_filter("P2", ["n2", "n3", "ghost"])],
              "Filter": [verdict_filter("A", {"n2": Status.of(U, "a says no")})]}
    cluster = cluster_of("n1", "n2", "n3", "n4")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.pre_filter.allowed == frozenset({"n2", "ghost"})
    assert attempt.pre_filter.unschedulable_plugins == frozenset({"P1", "P2"})
    assert attempt.filters is not None
    assert cluster.names(attempt.filters.slots.tolist()) == ["n2"]
    diagnosis = attempt.diagnosis
    assert diagnosis.absent_status == Status.of(UU, "node(s) didn't satisfy plugin(s) [P1 P2]")
    assert diagnosis.node_statuses == {"n2": Status(U, ("a says no",), "A")}
    assert diagnosis.unschedulable_plugins == {"P1", "P2", "A"}
    assert attempt.message == ("0/4 nodes are available: 1 a says no, 3 node(s) didn't satisfy "
                               "plugin(s) [P1 P2].")


@pytest.mark.parametrize(("results", "message"), [
    ({"P1": ["n1"], "P2": ["n2"]}, "node(s) didn't satisfy plugin(s) [P1 P2] simultaneously"),
    ({"P1": []}, "node(s) didn't satisfy plugin P1"),
], ids=["two", "one"])
def test_an_empty_intersection_ends_pre_filter(results: dict[str, list[str]],
                                               message: str) -> None:
    """An empty merge returns UnschedulableAndUnresolvable with upstream's words (no
    plugin on the status), the narrowing plugins as the rejecting ones; later PreFilter
    plugins do not run."""
    plugins = [fake_pre_filter(name, nodes) for name, nodes in results.items()]
    plugins.append(fake_pre_filter("Later"))
    cluster = cluster_of("n1", "n2")
    attempt = scheduler_of({"PreFilter": plugins}).schedule(cluster, _pod(cluster))
    status = attempt.pre_filter.status
    assert (status.code, status.message, status.plugin) == (UU, message, "")
    assert "Later" not in attempt.pre_filter.statuses
    assert attempt.filters is None
    assert attempt.diagnosis.unschedulable_plugins == set(results)
    assert attempt.diagnosis.pre_filter_message == message
    assert attempt.message == f"0/2 nodes are available: {message}."


def test_unschedulable_keeps_pre_filter_going_and_unresolvable_stops_it() -> None:
    """Unschedulable: every PreFilter still runs (kubernetes#119770) and the last such status
    is returned; UnschedulableAndUnresolvable returns at once."""
    first = fake_pre_filter("First", status=Status.of(U, "first no"))
    second = fake_pre_filter("Second", status=Status.of(U, "second no"))
    stop = fake_pre_filter("Stop", status=Status.of(UU, "stop"))
    never = fake_pre_filter("Never")
    framework = framework_of({"PreFilter": [first, second, never]})
    cluster = cluster_of("n1")
    outcome = framework.run_pre_filter(CycleState(), _pod(cluster), cluster)
    assert list(outcome.statuses) == ["First", "Second", "Never"]
    assert outcome.status == Status(U, ("second no",), "Second")
    framework = framework_of({"PreFilter": [first, stop, never]})
    outcome = framework.run_pre_filter(CycleState(), _pod(cluster), cluster)
    assert list(outcome.statuses) == ["First", "Stop"]
    assert outcome.status == Status(UU, ("stop",), "Stop")


def test_filter_codes_other_than_rejections_are_errors() -> None:
    """``Filter plugins are not supposed to return any status other than Success or
    Unschedulable``: Wait, Skip and Pending become errors naming the plugin."""
    for code in (Code.WAIT, Code.SKIP, Code.PENDING):
        points = {"Filter": [verdict_filter("Odd", {"n2": Status.of(code, "odd")})]}
        cluster = cluster_of("n1", "n2")
        attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
        assert attempt.error == 'running "Odd" filter plugin: odd', code


class _ByIndex(FilterPlugin):
    """Fails each node ``n<i>`` with a reason of its own, ``i mod 7`` (Unschedulable for
    even ``i``, UnschedulableAndUnresolvable for odd): the chunks of a long
    search meet reasons in different orders and the runtime merges their tables."""

    name = "ByIndex"

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        numbers = [int(name[1:]) for name in cluster.names(slots.tolist())]
        return NodeVerdicts.from_statuses([Status.of(UU if i % 2 else U, f"reason {i % 7}")
                                           for i in numbers])


def test_a_search_in_chunks_keeps_every_node_s_reasons() -> None:
    """A cycle filters in growing chunks until enough nodes are feasible; concatenated, the
    chunks' reason tables still give each node its own reason and code."""
    names = [f"n{i}" for i in range(300)]
    cluster = cluster_of(*names)
    attempt = scheduler_of({"Filter": [_ByIndex]}).schedule(cluster, _pod(cluster))
    assert attempt.filters is not None and len(attempt.filters.slots) == 300
    order = cluster.names(attempt.filters.slots.tolist())
    numbers = {name: int(name[1:]) for name in order}
    expected = {name: Status(UU if i % 2 else U, (f"reason {i % 7}",), "ByIndex")
                for name, i in numbers.items()}
    assert attempt.diagnosis.node_statuses == expected
    for position, name in enumerate(order):
        assert attempt.filters.status(position) == expected[name]
