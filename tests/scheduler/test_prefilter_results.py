"""PreFilterResults in a scheduling cycle, as upstream's ``TestSchedulerSchedulePod`` rows
(``pkg/scheduler/schedule_one_test.go``, v1.34) have them: the nodes a result names that do
not exist are dropped, every node outside it gets the absent-nodes status
``node(s) didn't satisfy plugin(s) [...]`` (UnschedulableAndUnresolvable), and the plugins
whose result narrowed the nodes are the Diagnosis's UnschedulablePlugins, also when no node is
left to filter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kaudit.cluster.objects import pod_info
from kaudit.framework.diagnosis import Diagnosis
from kaudit.framework.plugin import Plugin
from kaudit.framework.status import Code, Status
from kaudit.tracegen.builders import make_pod
from tests.framework.fakes import (
    cluster_of,
    daemonset_pod,
    fake_filter,
    fake_pre_filter,
    scheduler_of,
)
from tests.scheduler.test_schedule import cluster_of as cluster_with_zones
from tests.scheduler.test_schedule import node, scheduler

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

#: name → (plugins by point, nodes, want: NumAllNodes, explicit statuses, absent status,
#: UnschedulablePlugins, PreFilterMsg); rows of upstream's table whose FitError this checks.
ROWS: dict[str, tuple[Mapping[str, Sequence[type[Plugin]]], tuple[str, ...],
                      tuple[int, dict[str, Status], Status, set[str], str]]] = {
    "test prefilter plugin returning non-intersecting nodes": (
        {"PreFilter": [fake_pre_filter("FakePreFilter1"),
                       fake_pre_filter("FakePreFilter2", ["node2"]),
                       fake_pre_filter("FakePreFilter3", ["node1"])]},
        ("node1", "node2", "node3"),
        (3, {}, Status.of(UU, "node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3] "
                              "simultaneously"),
         {"FakePreFilter2", "FakePreFilter3"},
         "node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3] simultaneously")),
    "test prefilter plugin returning empty node set": (
        {"PreFilter": [fake_pre_filter("FakePreFilter1"),
                       fake_pre_filter("FakePreFilter2", [])]},
        ("node1",),
        (1, {}, Status.of(UU, "node(s) didn't satisfy plugin FakePreFilter2"),
         {"FakePreFilter2"}, "node(s) didn't satisfy plugin FakePreFilter2")),
    "test some nodes are filtered out by prefilter plugin and other are filtered out by "
    "filter plugin": (
        {"PreFilter": [fake_pre_filter("FakePreFilter", ["node2"])],
         "Filter": [fake_filter("FakeFilter", {"node2": Code.UNSCHEDULABLE})]},
        ("node1", "node2"),
        (2, {"node2": Status.of(Code.UNSCHEDULABLE, "injecting failure for pod test-prefilter",
                                plugin="FakeFilter")},
         Status.of(UU, "node(s) didn't satisfy plugin(s) [FakePreFilter]"),
         {"FakePreFilter", "FakeFilter"}, "")),
    "test prefilter plugin returned an invalid node": (
        {"PreFilter": [fake_pre_filter("FakePreFilter", ["invalid-node"])],
         "Filter": [fake_filter("TrueFilter", {})]},
        ("1", "2"),
        (2, {}, Status.of(UU, "node(s) didn't satisfy plugin(s) [FakePreFilter]"),
         {"FakePreFilter"}, "")),
}


def _diagnosis_as_upstream_reads_it(diagnosis: Diagnosis, node_names: Sequence[str]
                                    ) -> tuple[dict[str, Status], Status, set[str], str]:
    statuses = {name: diagnosis.node_statuses[name] for name in node_names
                if name in diagnosis.node_statuses}
    return (statuses, diagnosis.absent_status, diagnosis.unschedulable_plugins,
            diagnosis.pre_filter_message)


@pytest.mark.parametrize("exhaustive", [False, True], ids=["cycle", "whatif"])
@pytest.mark.parametrize("row", list(ROWS))
def test_upstream_fit_errors_of_prefilter_results(row: str, exhaustive: bool) -> None:
    points, node_names, (all_nodes, statuses, absent, plugins, pre_filter_message) = ROWS[row]
    cluster = cluster_of(*node_names)
    pod = pod_info(cluster, make_pod("test-prefilter").obj())
    attempt = scheduler_of(points).schedule(cluster, pod, exhaustive=exhaustive)
    assert attempt.selected is None and attempt.error is None
    assert attempt.num_all_nodes == all_nodes
    assert _diagnosis_as_upstream_reads_it(attempt.diagnosis, node_names) == (
        statuses, absent, plugins, pre_filter_message)


@pytest.mark.parametrize("exhaustive", [False, True], ids=["cycle", "whatif"])
def test_daemonset_pod_whose_node_left_fails_on_every_node_without_preemption(
        exhaustive: bool) -> None:
    """NodeAffinity's PreFilterResult names only a node that is gone: no node is filtered,
    every node is UnschedulableAndUnresolvable, so preemption has no candidate, even where
    evicting a lower-priority pod would make room."""
    full = make_pod("low").req(cpu="4").node("a").obj()
    cluster = cluster_with_zones(node("a"), node("b", cpu="1"), pods=(full,))
    sched = scheduler()
    pod = pod_info(cluster, daemonset_pod("gone-node", priority=1000))
    attempt = sched.schedule(cluster, pod, exhaustive=exhaustive)
    assert attempt.evaluated == 0 and attempt.selected is None and attempt.error is None
    assert attempt.diagnosis.unschedulable_plugins == {"NodeAffinity"}
    assert attempt.diagnosis.node_statuses == {}
    assert sched.next_start_node_index == 0
    preemption = attempt.post_filter_result.details.as_json()
    assert (preemption["potentialNodes"], preemption["candidates"]) == (0, 0)
    assert attempt.message == (
        "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is "
        "not helpful for scheduling.")
