"""The nominated-pods filter pass, against upstream's ``RunFilterPluginsWithNominatedPods``
and ``addGENominatedPods`` (``pkg/scheduler/framework/runtime/framework.go``, v1.34.2).

Upstream judges a node with nominated pods of equal or higher priority (the pod itself
aside) twice: pass 1 with them added to the node and, through the PreFilter extensions'
AddPod, to a clone of the cycle state; if that fails, its status is the node's; if it
passes, pass 2 runs without them and decides. A lower-priority nominated pod is not added.

kaudit runs the pass three ways (a fork per node when filters read other nodes or keep
PreFilter state, one fork for all nodes when each filter reads only its node, the summed
``NominatedLoad`` view when every filter can only be hindered by added pods); each test
runs over the ways a nominator can be given so that every path is held to upstream's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from kaudit.cluster.nominated import NominatedLoad
from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import NodeFilterPlugin, NodeView, Plugin
from kaudit.framework.runtime import FilterRun, Framework, Nominator
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.tracegen.builders import make_pod
from tests.framework.fakes import (
    cluster_of,
    framework_of,
    pods_filter,
    recording_pre_filter,
)

CROWDED = "node(s) crowded"
LONELY = "node(s) without the team"
POD_PRIORITY = 10


def _crowd(only_its_node: bool = True, only_hinder: bool = False) -> type[Plugin]:
    """Fails a node holding any pod (what an added pod can only make worse, as resources)."""
    return pods_filter("Crowd", lambda pods: CROWDED if pods else None,
                       only_its_node=only_its_node, only_hinder=only_hinder)


def _company(only_its_node: bool = True) -> type[Plugin]:
    """Fails a node without a ``team=x`` pod (what an added pod can make pass, as pod
    affinity: the reason upstream runs pass 2)."""
    return pods_filter("Company", lambda pods: None if any(
        p.labels.get("team") == "x" for p in pods) else LONELY, only_its_node=only_its_node)


@dataclass
class _Nominations:
    """Nominated pods by node, with ``nodes()`` as the replay's nominator has."""

    by_node: dict[str, list[PodInfo]] = field(default_factory=dict)

    def __call__(self, node: str) -> list[PodInfo]:
        return list(self.by_node.get(node, []))

    def nodes(self) -> Collection[str]:
        return self.by_node.keys()


@dataclass
class _LoadedNominations(_Nominations):
    """The replay's nominator whole: ``nodes()`` and the summed ``load``."""

    load: NominatedLoad = field(default_factory=NominatedLoad)


NominatorMaker = Callable[[ClusterState, dict[str, list[PodInfo]]], Nominator]


def _plain(cluster: ClusterState, by_node: dict[str, list[PodInfo]]) -> Nominator:
    return lambda node: list(by_node.get(node, []))


def _with_nodes(cluster: ClusterState, by_node: dict[str, list[PodInfo]]) -> Nominator:
    return _Nominations(by_node)


def _with_load(cluster: ClusterState, by_node: dict[str, list[PodInfo]]) -> Nominator:
    nominations = _LoadedNominations(by_node)
    for node, pods in by_node.items():
        for pod in pods:
            nominations.load.add(pod, node, cluster)
    return nominations


NOMINATORS = pytest.mark.parametrize("nominator", [_plain, _with_nodes, _with_load],
                                     ids=["plain", "nodes", "load"])


def _pod(cluster: ClusterState, name: str, priority: int, **labels: str) -> PodInfo:
    builder = make_pod(name).req(cpu="100m").priority(priority)
    if labels:
        builder = builder.labels(**labels)
    return pod_info(cluster, builder.obj())


def _filter(filters: Sequence[type[Plugin]], nominator: NominatorMaker,
            nominated: dict[str, list[tuple[str, int, dict[str, str]]]],
            pre_filter: Sequence[type[Plugin]] = (), pod_priority: int = POD_PRIORITY,
            ) -> tuple[FilterRun, ClusterState]:
    """The filter run over n1, n2 of a pod of ``pod_priority`` with the pods ``nominated``
    (name, priority, labels) on their nodes."""
    cluster = cluster_of("n1", "n2")
    framework: Framework = framework_of({"PreFilter": list(pre_filter),
                                         "Filter": list(filters)})
    by_node = {node: [_pod(cluster, name, priority, **labels)
                      for name, priority, labels in pods]
               for node, pods in nominated.items()}
    pod = _pod(cluster, "p", pod_priority)
    state = CycleState()
    framework.run_pre_filter(state, pod, cluster)
    slots = np.asarray([cluster.slot_of["n1"], cluster.slot_of["n2"]])
    run = framework.run_filter_with_nominated(state, pod, cluster, slots,
                                              nominator(cluster, by_node))
    return run, cluster


def _verdicts(run: FilterRun, cluster: ClusterState) -> dict[str, Status]:
    return {name: run.status(i) for i, name in enumerate(cluster.names(run.slots.tolist()))}


CROWDS = pytest.mark.parametrize("crowd", [
    _crowd(), _crowd(only_its_node=False), _crowd(only_hinder=True)],
    ids=["its-node", "other-nodes", "only-hinder"])


@NOMINATORS
@CROWDS
@pytest.mark.parametrize("priority", [POD_PRIORITY + 10, POD_PRIORITY],
                         ids=["higher", "equal"])
def test_a_nominated_pod_of_higher_or_equal_priority_takes_its_node(
        nominator: NominatorMaker, crowd: type[Plugin], priority: int) -> None:
    run, cluster = _filter([crowd], nominator, {"n1": [("q", priority, {})]})
    assert _verdicts(run, cluster) == {"n1": Status(Code.UNSCHEDULABLE, (CROWDED,), "Crowd"),
                                       "n2": Status.success()}


@NOMINATORS
@CROWDS
def test_a_lower_priority_nominated_pod_is_not_added(nominator: NominatorMaker,
                                                     crowd: type[Plugin]) -> None:
    run, cluster = _filter([crowd], nominator, {"n1": [("q", POD_PRIORITY - 1, {})]})
    assert _verdicts(run, cluster) == {"n1": Status.success(), "n2": Status.success()}


@NOMINATORS
@CROWDS
def test_the_pod_s_own_nomination_is_not_added(nominator: NominatorMaker,
                                               crowd: type[Plugin]) -> None:
    """``pi.GetPod().UID != pod.UID``: a pod nominated to n1 is not in its own way."""
    run, cluster = _filter([crowd], nominator, {"n1": [("p", POD_PRIORITY, {})]})
    assert _verdicts(run, cluster) == {"n1": Status.success(), "n2": Status.success()}


@NOMINATORS
@pytest.mark.parametrize("only_its_node", [True, False], ids=["its-node", "other-nodes"])
def test_pass_two_decides_when_pass_one_passes(nominator: NominatorMaker,
                                               only_its_node: bool) -> None:
    """The team pod nominated to n1 makes pass 1 pass there; pass 2, without it, fails: the
    node fails (upstream's conservative decision), with pass 2's status."""
    run, cluster = _filter([_company(only_its_node)], nominator,
                           {"n1": [("q", POD_PRIORITY + 1, {"team": "x"})]})
    lonely = Status(Code.UNSCHEDULABLE, (LONELY,), "Company")
    assert _verdicts(run, cluster) == {"n1": lonely, "n2": lonely}


@NOMINATORS
def test_pass_one_s_failure_is_the_node_s_status(nominator: NominatorMaker) -> None:
    """Pass 1 fails on Crowd (the team pod is there); pass 2 does not run, so n1's status is
    Crowd's, not Company's; n2, with no nomination, fails only Company."""
    run, cluster = _filter([_company(), _crowd()], nominator,
                           {"n1": [("q", POD_PRIORITY + 1, {"team": "x"})]})
    assert _verdicts(run, cluster) == {
        "n1": Status(Code.UNSCHEDULABLE, (CROWDED,), "Crowd"),
        "n2": Status(Code.UNSCHEDULABLE, (LONELY,), "Company")}


@NOMINATORS
def test_add_pod_runs_for_the_pods_added_only(nominator: NominatorMaker) -> None:
    """addGENominatedPods calls RunPreFilterExtensionAddPod for each pod it adds (the
    higher-or-equal ones), on the node it is nominated to."""
    added: list[tuple[str, str]] = []
    recorder = recording_pre_filter("Recorder", added)
    _filter([_crowd()], nominator,
            {"n1": [("high", POD_PRIORITY + 5, {}), ("low", POD_PRIORITY - 5, {})],
             "n2": [("equal", POD_PRIORITY, {})]}, pre_filter=[recorder])
    assert sorted(added) == [("equal", "n2"), ("high", "n1")]


@NOMINATORS
def test_no_nominator_no_nominations(nominator: NominatorMaker) -> None:
    run, cluster = _filter([_crowd(only_hinder=True)], nominator, {})
    assert _verdicts(run, cluster) == {"n1": Status.success(), "n2": Status.success()}


def _error_alone(name: str) -> type[Plugin]:
    """Fails a node holding a pod; answers Error on n1 when it holds none."""

    class ErrorAlone(NodeFilterPlugin):
        def filter_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> Status:
            if node.pods:
                return Status.of(Code.UNSCHEDULABLE, CROWDED)
            if node.name == "n1":
                return Status.of(Code.ERROR, "n1 is empty")
            return Status.success()

    ErrorAlone.name = name
    return ErrorAlone


def test_an_error_of_a_pass_two_upstream_never_runs() -> None:
    """n1 has a higher-priority nominated pod: pass 1 rejects it (Unschedulable) and
    upstream returns that status without pass 2; the filter's Error on an empty n1 is never
    met, and n2 passes."""
    run, cluster = _filter([_error_alone("ErrorAlone")], _with_nodes,
                           {"n1": [("q", POD_PRIORITY + 1, {})]})
    assert _verdicts(run, cluster) == {
        "n1": Status(Code.UNSCHEDULABLE, (CROWDED,), "ErrorAlone"), "n2": Status.success()}
