"""How statuses combine into a cycle's outcome, against upstream v1.34.2: ``Diagnosis``'s
``AddPluginStatus`` (``pkg/scheduler/framework/types.go``), ``findNodesThatFitPod`` and
``findNodesThatPassFilters`` (``pkg/scheduler/schedule_one.go``: which plugins become
``UnschedulablePlugins``, the absent-nodes status, the PreFilter message) and
``RunPostFilterPlugins`` (``pkg/scheduler/framework/runtime/framework.go``: the last
meaningful result, the reasons gathered, the first rejector)."""

from __future__ import annotations

import pytest

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.diagnosis import Diagnosis
from kaudit.framework.plugin import Plugin, PostFilterPlugin, PostFilterResult
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


def _pod(cluster: ClusterState) -> PodInfo:
    return pod_info(cluster, make_pod("p").obj())


@pytest.mark.parametrize(("status", "unschedulable", "pending"), [
    (Status.of(U, "r", plugin="P"), {"P"}, set()),
    (Status.of(UU, "r", plugin="P"), {"P"}, set()),
    (Status.of(Code.PENDING, "r", plugin="P"), set(), {"P"}),
    (Status.of(Code.ERROR, "r", plugin="P"), set(), set()),
    (Status.of(Code.WAIT, plugin="P"), set(), set()),
    (Status.of(Code.SKIP, plugin="P"), set(), set()),
    (Status(plugin="P"), set(), set()),
    (Status.of(U, "no plugin"), set(), set()),
], ids=["unschedulable", "unresolvable", "pending", "error", "wait", "skip", "success",
        "no-plugin"])
def test_add_plugin_status(status: Status, unschedulable: set[str], pending: set[str]) -> None:
    diagnosis = Diagnosis()
    diagnosis.add_plugin_status(status)
    assert (diagnosis.unschedulable_plugins, diagnosis.pending_plugins) == (unschedulable,
                                                                            pending)


def test_each_node_counts_its_first_failure_only() -> None:
    """n1 fails A (Unschedulable) before B would fail it (UnschedulableAndUnresolvable); n2
    passes A and fails B; n3 fails A for another reason. The rejecting plugins are the ones
    whose statuses were returned; the FitError counts each node's reasons once."""
    points = {"Filter": [
        verdict_filter("A", {"n1": Status.of(U, "a one"), "n3": Status.of(UU, "a three")}),
        verdict_filter("B", {"n1": Status.of(UU, "b one"), "n2": Status.of(UU, "b two"),
                             "n3": Status.of(UU, "b three")})]}
    cluster = cluster_of("n1", "n2", "n3")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    diagnosis = attempt.diagnosis
    assert diagnosis.node_statuses == {"n1": Status(U, ("a one",), "A"),
                                       "n2": Status(UU, ("b two",), "B"),
                                       "n3": Status(UU, ("a three",), "A")}
    assert diagnosis.unschedulable_plugins == {"A", "B"}
    assert diagnosis.pending_plugins == set()
    assert attempt.message == "0/3 nodes are available: 1 a one, 1 a three, 1 b two."
    assert attempt.error is None


def test_a_plugin_that_never_returned_a_rejection_is_not_rejecting() -> None:
    """B would reject n1 but A rejected it first: B is not among the rejecting plugins (a
    cluster event for B alone would not requeue the pod upstream either)."""
    points = {"Filter": [verdict_filter("A", {"n1": Status.of(U, "a")}),
                         verdict_filter("B", {"n1": Status.of(UU, "b")})]}
    cluster = cluster_of("n1")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.diagnosis.unschedulable_plugins == {"A"}


def test_an_error_on_one_node_fails_the_cycle() -> None:
    """findNodesThatPassFilters: a node's Error cancels the search and the cycle returns it,
    whatever the other nodes answered."""
    points = {"Filter": [verdict_filter("A", {"n1": Status.of(U, "a"),
                                              "n2": Status.of(Code.ERROR, "broken")})]}
    cluster = cluster_of("n1", "n2", "n3")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.error == 'running "A" filter plugin: broken'
    assert attempt.message == attempt.error
    assert attempt.selected is None


def test_a_pre_filter_rejection_with_narrowing_results() -> None:
    """RunPreFilterPlugins returns Unschedulable with the narrowing plugins; the cycle takes
    them as UnschedulablePlugins, adds the rejecting plugin, gives every node the status and
    filters nothing."""
    points = {"PreFilter": [fake_pre_filter("Narrow", ["n1"]),
                            fake_pre_filter("Refuse", status=Status.of(U, "refused")),
                            fake_pre_filter("After")],
              "Filter": [verdict_filter("A", {})]}
    cluster = cluster_of("n1", "n2")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    diagnosis = attempt.diagnosis
    assert attempt.filters is None
    assert diagnosis.unschedulable_plugins == {"Narrow", "Refuse"}
    assert diagnosis.absent_status == Status(U, ("refused",), "Refuse")
    assert diagnosis.node_statuses == {}
    assert diagnosis.pre_filter_message == "refused"
    assert attempt.message == "0/2 nodes are available: refused."


def test_an_unresolvable_pre_filter_forgets_the_narrowing_plugins() -> None:
    """UnschedulableAndUnresolvable returns ``nil, s, nil``: the rejecting plugin alone."""
    points = {"PreFilter": [fake_pre_filter("Narrow", ["n1"]),
                            fake_pre_filter("Refuse", status=Status.of(UU, "never"))]}
    cluster = cluster_of("n1", "n2")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.diagnosis.unschedulable_plugins == {"Refuse"}
    assert attempt.diagnosis.absent_status == Status(UU, ("never",), "Refuse")


def test_an_empty_intersection_after_an_unschedulable_pre_filter() -> None:
    """The empty merge returns its own UnschedulableAndUnresolvable (no plugin on it): the
    earlier Unschedulable status is dropped, and its plugin is not among the rejecting ones,
    which are the narrowing plugins only."""
    points = {"PreFilter": [fake_pre_filter("Refuse", status=Status.of(U, "refused")),
                            fake_pre_filter("Left", ["n1"]), fake_pre_filter("Right", ["n2"])]}
    cluster = cluster_of("n1", "n2")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    message = "node(s) didn't satisfy plugin(s) [Left Right] simultaneously"
    assert attempt.diagnosis.unschedulable_plugins == {"Left", "Right"}
    assert attempt.diagnosis.absent_status == Status.of(UU, message)
    assert attempt.message == f"0/2 nodes are available: {message}."


@pytest.mark.parametrize("code", [Code.PENDING, Code.WAIT])
def test_pre_filter_codes_other_than_rejections_are_errors(code: Code) -> None:
    points = {"PreFilter": [fake_pre_filter("P", status=Status.of(code, "odd"))]}
    cluster = cluster_of("n1")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.error == 'running PreFilter plugin "P": odd'


def _post_filter(name: str, status: Status, nominated: str | None = None,
                 calls: list[str] | None = None) -> type[Plugin]:
    """A PostFilter plugin answering ``status`` and a result nominating ``nominated`` (None:
    a no-op result)."""

    class FakePostFilter(PostFilterPlugin):
        def post_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                        diagnosis: object) -> tuple[PostFilterResult | None, Status]:
            if calls is not None:
                calls.append(name)
            return PostFilterResult(nominated_node_name=nominated), status

    FakePostFilter.name = name
    return FakePostFilter


def _post(plugins: list[type[Plugin]]) -> tuple[PostFilterResult | None, Status]:
    framework = framework_of({"PostFilter": plugins})
    cluster = cluster_of("n1")
    return framework.run_post_filter(CycleState(), _pod(cluster), cluster, Diagnosis())


def test_post_filter_rejections_gather_reasons_and_keep_the_last_meaningful_result() -> None:
    result, status = _post([_post_filter("First", Status.of(U, "one"), nominated="n1"),
                            _post_filter("Second", Status.of(U, "two", "three")),
                            _post_filter("Third", Status.of(U, "four"), nominated="n2"),
                            _post_filter("Fourth", Status.of(U))])
    assert result is not None and result.nominated_node_name == "n2"
    assert status == Status(U, ("one", "two", "three", "four"), "First")


@pytest.mark.parametrize(("status", "expected"), [
    (Status(), Status(plugin="Stop")),
    (Status.of(UU, "stop"), Status(UU, ("stop",), "Stop")),
    (Status.of(Code.ERROR, "boom"), Status(Code.ERROR, ("boom",), "Stop")),
], ids=["success", "unresolvable", "error"])
def test_post_filter_stops_at_success_unresolvable_or_error(status: Status,
                                                            expected: Status) -> None:
    calls: list[str] = []
    result, got = _post([_post_filter("Before", Status.of(U, "before"), calls=calls),
                         _post_filter("Stop", status, nominated="n1", calls=calls),
                         _post_filter("After", Status.of(U, "after"), calls=calls)])
    assert calls == ["Before", "Stop"]
    assert (got.code, got.reasons) == (expected.code, expected.reasons)
    if not got.ok:  # upstream names the plugin on a failure (a success is returned as is)
        assert got.plugin == expected.plugin
    if status.code == Code.ERROR:  # upstream returns no result with an error
        assert result is None or result.nominated_node_name is None
    else:
        assert result is not None and result.nominated_node_name == "n1"


def test_the_post_filter_message_follows_the_fit_error() -> None:
    """schedulingCycle puts the PostFilter status's message in PostFilterMsg; FitError.Error
    appends it after the filter reasons."""
    points = {"Filter": [verdict_filter("A", {"n1": Status.of(U, "a")})],
              "PostFilter": [_post_filter("Preempt", Status.of(U, "preemption: not helpful"))]}
    cluster = cluster_of("n1")
    attempt = scheduler_of(points).schedule(cluster, _pod(cluster))
    assert attempt.post_filter == Status(U, ("preemption: not helpful",), "Preempt")
    assert attempt.message == "0/1 nodes are available: 1 a. preemption: not helpful"
    assert attempt.diagnosis.unschedulable_plugins == {"A"}
