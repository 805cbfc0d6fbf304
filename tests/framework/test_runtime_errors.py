"""The runtime's error texts, as upstream's ``framework.go`` (v1.34) formats them: plugin names
in Go's ``%q``, and each extension point's wording. Inputs and expected texts are those of
``pkg/scheduler/framework/runtime/framework_test.go`` and ``schedule_one_test.go`` where they
have a row (``injected status``, ``injected filter status``, ``TestPlugin``)."""

from __future__ import annotations

import pytest

from kaudit.cluster.objects import pod_info
from kaudit.config.feature_gates import FeatureGates
from kaudit.config.model import PluginRef, Profile
from kaudit.errors import ConfigError
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import Handle
from kaudit.framework.runtime import Framework, PluginError
from kaudit.framework.status import Code, Status
from kaudit.scheduler.binding import bind
from kaudit.tracegen.builders import make_pod
from tests.framework.fakes import (
    cluster_of,
    failing_add_pod,
    failing_filter,
    fake_binding_step,
    fake_filter,
    fake_pre_filter,
    fake_score,
    framework_of,
    scheduler_of,
)

INJECTED = "injected status"


def _error(points: dict, nodes: tuple[str, ...] = ("node1", "node2")) -> str | None:
    cluster = cluster_of(*nodes)
    attempt = scheduler_of(points).schedule(cluster, pod_info(cluster, make_pod("p").obj()))
    return attempt.error


def test_prefilter_error() -> None:
    """schedule_one_test.go, "test prefilter plugin returning error status"."""
    points = {"PreFilter": [fake_pre_filter("FakePreFilter",
                                            status=Status.of(Code.ERROR, "injected error status"))]}
    assert _error(points) == 'running PreFilter plugin "FakePreFilter": injected error status'


@pytest.mark.parametrize("nodes", [("node1",), ("node1", "node2")], ids=["one", "many"])
def test_filter_error(nodes: tuple[str, ...]) -> None:
    """framework_test.go, TestFilterPlugins "ErrorFilter" (one node and several: kaudit runs
    them apart)."""
    points = {"Filter": [failing_filter("TestPlugin", "injected filter status")]}
    assert _error(points, nodes) == 'running "TestPlugin" filter plugin: injected filter status'


def test_filter_error_of_a_fake_filter() -> None:
    """The issue's shape: a filter answering Error names itself in ``%q``."""
    points = {"Filter": [fake_filter("DynamicResources", {"node1": Code.ERROR})]}
    assert _error(points, ("node1",)) == (
        'running "DynamicResources" filter plugin: injecting failure for pod p')


def test_add_pod_error() -> None:
    """framework_test.go, TestFilterPluginsWithNominatedPods: the AddPod extension's error."""
    framework = framework_of({"PreFilter": [failing_add_pod("TestPlugin1", INJECTED)]})
    cluster = cluster_of("node1")
    pod = pod_info(cluster, make_pod("p").obj())
    state = CycleState()
    framework.run_pre_filter(state, pod, cluster)
    with pytest.raises(PluginError) as raised:
        framework.run_pre_filter_add_pod(state, pod, pod_info(cluster, make_pod("q").obj()),
                                         cluster.slot_of["node1"], cluster)
    assert str(raised.value) == f'running AddPod on PreFilter plugin "TestPlugin1": {INJECTED}'


@pytest.mark.parametrize(("plugin", "error"), [
    (fake_score("TestPlugin", pre_score=Status.of(Code.ERROR, INJECTED)),
     f'running PreScore plugin "TestPlugin": {INJECTED}'),
    (fake_score("TestPlugin", score_error=INJECTED),
     f'running Score plugins: plugin "TestPlugin" failed with: {INJECTED}'),
    (fake_score("TestPlugin", normalize_error=INJECTED),
     f'running Normalize on Score plugins: plugin "TestPlugin" failed with: {INJECTED}'),
    (fake_score("TestPlugin", normalized=101),
     'applying score defaultWeights on Score plugins: plugin "TestPlugin" returns an invalid '
     "score 101, it should in the range of [0, 100] after normalizing"),
], ids=["prescore", "score", "normalize", "range"])
def test_scoring_errors(plugin: type, error: str) -> None:
    points = {"PreScore": [plugin], "Score": [plugin]}
    assert _error(points) == error


@pytest.mark.parametrize("point", ["Reserve", "Permit", "PreBind", "Bind"])
def test_binding_cycle_errors(point: str) -> None:
    """framework_test.go: "ErrorReservePlugin", "ErrorPermitPlugin", "ErrorPreBindPlugin"
    and RunBindPlugins' error."""
    plugin = fake_binding_step("TestPlugin", point, Status.of(Code.ERROR, INJECTED))
    framework = framework_of({point: [plugin]})
    cluster = cluster_of("node1")
    binding = bind(framework, cluster, CycleState(), pod_info(cluster, make_pod("p").obj()),
                   "node1")
    assert binding.failure is not None
    assert (binding.failure.code, binding.failure.message) == (
        Code.ERROR, f'running {point} plugin "TestPlugin": {INJECTED}')


def test_unknown_scheduler_name() -> None:
    """schedule_one.go's frameworkForPod: ``profile not found for scheduler name %q``."""
    cluster = cluster_of("node1")
    pod = pod_info(cluster, make_pod("p").scheduler("other").obj())
    with pytest.raises(ValueError, match=r'^profile not found for scheduler name "other"$'):
        scheduler_of({}).schedule(cluster, pod)


def test_plugin_at_a_point_it_does_not_extend() -> None:
    """framework.go's updatePluginList: ``plugin %q does not extend %s plugin``."""
    with pytest.raises(ConfigError) as raised:
        framework_of({"Filter": [fake_score("TestPlugin")]})
    assert str(raised.value) == ('profile default-scheduler: plugin "TestPlugin" does not '
                                 "extend FilterPlugin plugin")


def test_unregistered_plugin() -> None:
    profile = Profile(scheduler_name="default-scheduler",
                      plugins={"Filter": (PluginRef("TestPlugin"),)})
    with pytest.raises(ConfigError) as raised:
        Framework(profile, {}, Handle(feature_gates=FeatureGates()))
    assert str(raised.value) == ('profile default-scheduler: plugin "TestPlugin" is not '
                                 "registered (in-tree or via --plugin)")


def test_framework_errors_quote_names_with_go_escapes() -> None:
    """``%q`` escapes a quote in a name, which Python's ``repr`` would not."""
    points = {"Filter": [failing_filter('Say"Hi', "boom")]}
    assert _error(points, ("node1",)) == r'running "Say\"Hi" filter plugin: boom'
