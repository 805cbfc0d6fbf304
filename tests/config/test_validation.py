"""Invalid configurations: each error names the file, the field path and the reason.

Messages follow ``apis/config/validation/validation.go``, ``validation_pluginargs.go``,
``framework/runtime/framework.go`` and ``pkg/scheduler/profile/profile.go``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kaudit.config import PluginSpec, SchedulerConfiguration

CUSTOM_SORT = {"CustomSort": PluginSpec("CustomSort", frozenset({"QueueSort"}))}


@pytest.mark.parametrize(("text", "message"), [
    # plugin args, validated after defaulting (so weight 0 would be valid: it becomes 1)
    ("""
     profiles:
     - pluginConfig:
       - name: NodeResourcesFit
         args:
           scoringStrategy:
             type: MostAllocated
             resources: [{name: cpu, weight: 101}]
     """, "config.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: "
         "Invalid value: 101: resource weight of cpu not in valid range (0, 100]"),
    ("""
     profiles:
     - pluginConfig:
       - name: InterPodAffinity
         args: {hardPodAffinityWeight: 101}
     """, "config.yaml: profiles[0].pluginConfig[0].args.hardPodAffinityWeight: "
         "Invalid value: 101: not in valid range [0, 100]"),
    ("""
     profiles:
     - pluginConfig:
       - name: NodeResourcesFit
         args: {scoringStrategy: {type: Random}}
     """, 'config.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported '
         'value: "Random": supported values: "LeastAllocated", "MostAllocated", '
         '"RequestedToCapacityRatio"'),
    # args.Shape is a []config.UtilizationShapePoint: json.Marshal writes the internal
    # struct's Go field names in declaration order
    pytest.param("""
     profiles:
     - pluginConfig:
       - name: VolumeBinding
         args: {shape: [{utilization: 0, score: 0}]}
     """, "config.yaml: profiles[0].pluginConfig[0].args.shape: Invalid value: "
         '[{"Utilization":0,"Score":0}]: unexpected field `shape`, remove it or turn on '
         "the feature gate StorageCapacityScoring"),
    # repeated or removed names
    ("""
     profiles:
     - pluginConfig:
       - {name: NodeResourcesFit, args: {}}
       - {name: NodeResourcesFit, args: {}}
     """, 'config.yaml: profiles[0].pluginConfig[1]: Duplicate value: "NodeResourcesFit"'),
    ("""
     profiles:
     - schedulerName: a
     - schedulerName: a
     """, 'config.yaml: profiles[1].schedulerName: Duplicate value: '
         '"profiles[0].schedulerName"'),
    ("""
     profiles:
     - plugins: {filter: {enabled: [{name: EBSLimits}]}}
     """, 'config.yaml: profiles[0].plugins.filter.enabled[0]: Invalid value: "EBSLimits": '
         'was invalid in version "kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration '
         'is version "kubescheduler.config.k8s.io/v1")'),
    ("""
     profiles:
     - schedulerName: a
     - percentageOfNodesToScore: 10
     """, "config.yaml: profiles[1].schedulerName: Required value"),
    # global settings
    ("percentageOfNodesToScore: 101\n",
     "config.yaml: percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
    ("profiles: [{percentageOfNodesToScore: -1}]\n",
     "config.yaml: profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid "
     "range [0-100]"),
    ("podInitialBackoffSeconds: 0\n",
     "config.yaml: podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"),
    ("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 4\n",
     "config.yaml: podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to "
     "PodInitialBackoffSeconds"),
    ("parallelism: 0\n",
     "config.yaml: parallelism: Invalid value: 0: should be an integer value greater than zero"),
    # framework assembly
    ("""
     profiles:
     - plugins: {filter: {enabled: [{name: Foo}]}}
     """, 'config.yaml: profiles[0].plugins.filter.enabled[0]: Not found: "Foo": '
         'FilterPlugin "Foo" does not exist'),
    ("""
     profiles:
     - plugins: {multiPoint: {enabled: [{name: Foo}]}}
     """, 'config.yaml: profiles[0].plugins.multiPoint.enabled[0]: Not found: "Foo": '
         'PreFilterPlugin "Foo" does not exist'),
    ("""
     profiles:
     - plugins: {score: {enabled: [{name: NodeName, weight: 2}]}}
     """, 'config.yaml: profiles[0].plugins.score.enabled[0]: Invalid value: "NodeName": '
         'plugin "NodeName" does not extend ScorePlugin plugin'),
    ("""
     profiles:
     - plugins:
         filter:
           disabled: [{name: "*"}]
           enabled: [{name: NodeName}, {name: NodeName}]
     """, 'config.yaml: profiles[0].plugins.filter.enabled[1]: Duplicate value: "NodeName": '
         'plugin "NodeName" already registered as "FilterPlugin"'),
    ("""
     profiles:
     - plugins: {multiPoint: {enabled: [{name: NodeName}, {name: NodeName}]}}
     """, 'config.yaml: profiles[0].plugins.multiPoint.enabled[0]: Duplicate value: '
         '"NodeName": plugin "NodeName" already registered as "FilterPlugin"'),
    # (the last of the two replaces the default NodeName in place, the first is appended)
    ("""
     profiles:
     - plugins: {multiPoint: {disabled: [{name: DefaultBinder}]}}
     """, "config.yaml: profiles[0].plugins.bind: Required value: at least one bind plugin is "
         'needed for profile with scheduler name "default-scheduler"'),
])
def test_invalid_configuration(text: str, message: str,
                               config_error: Callable[..., str]) -> None:
    assert config_error(text) == message


def test_all_validation_errors_are_reported_together(config_error: Callable[..., str]) -> None:
    assert config_error("parallelism: -1\npercentageOfNodesToScore: 200\n").splitlines() == [
        "config.yaml: parallelism: Invalid value: -1: should be an integer value greater "
        "than zero",
        "config.yaml: percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]"]


def test_a_resource_weight_of_zero_is_defaulted_not_rejected(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    config = load_yaml("""
        profiles:
        - pluginConfig:
          - name: NodeResourcesFit
            args: {scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 0}]}}
        """)
    fit = config.profiles["default-scheduler"].plugin_args["NodeResourcesFit"]
    assert fit["scoringStrategy"]["resources"] == [{"name": "cpu", "weight": 1}]


def test_two_queue_sort_plugins_in_one_profile(config_error: Callable[..., str]) -> None:
    message = config_error("""
        profiles:
        - plugins: {queueSort: {enabled: [{name: CustomSort}]}}
        """, extra_plugins=CUSTOM_SORT)
    assert message == ("config.yaml: profiles[0].plugins.queueSort: Invalid value: 2: only one "
                       "queue sort plugin required for profile with scheduler name "
                       '"default-scheduler", but got 2')


def test_profiles_must_share_the_queue_sort_point(config_error: Callable[..., str]) -> None:
    message = config_error("""
        profiles:
        - schedulerName: a
        - schedulerName: b
          plugins:
            queueSort:
              enabled: [{name: CustomSort}]
              disabled: [{name: "*"}]
        """, extra_plugins=CUSTOM_SORT)
    # curr is the internal config.PluginSet after defaulting: Go field names, an unset
    # weight 0 and the disabled list as mergePluginSet leaves it
    assert message == (
        'config.yaml: profiles[1].plugins.queueSort: Invalid value: {"Enabled":[{"Name":'
        '"CustomSort","Weight":0}],"Disabled":[{"Name":"*","Weight":0}]}: must be the same '
        "for all profiles")


def test_an_unset_queue_sort_weight_equals_zero(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    # the internal Plugin.Weight is an int32: an unset v1 weight converts to 0, so the two
    # queueSort sets are Semantic.DeepEqual
    config = load_yaml("""
        profiles:
        - schedulerName: a
          plugins: {queueSort: {enabled: [{name: CustomSort}], disabled: [{name: "*"}]}}
        - schedulerName: b
          plugins: {queueSort: {enabled: [{name: CustomSort, weight: 0}],
                                disabled: [{name: "*"}]}}
        """, extra_plugins=CUSTOM_SORT)
    assert set(config.profiles) == {"a", "b"}


def test_a_queue_sort_without_disabled_plugins_prints_null(
        config_error: Callable[..., str]) -> None:
    message = config_error("""
        profiles:
        - schedulerName: a
          plugins: {queueSort: {enabled: [{name: CustomSort}], disabled: [{name: "*"}]}}
        - schedulerName: b
        """, extra_plugins=CUSTOM_SORT)
    # the defaults enable PrioritySort at multiPoint: b's queueSort set is empty, and
    # mergePluginSet leaves its lists nil, which json.Marshal writes as null
    assert message == ('config.yaml: profiles[1].plugins.queueSort: Invalid value: '
                       '{"Enabled":null,"Disabled":null}: must be the same for all profiles')


def test_profiles_must_share_the_expanded_queue_sort(config_error: Callable[..., str]) -> None:
    message = config_error("""
        profiles:
        - schedulerName: a
        - schedulerName: b
          plugins:
            multiPoint:
              enabled: [{name: CustomSort}]
              disabled: [{name: PrioritySort}]
        """, extra_plugins=CUSTOM_SORT)
    assert message == ('config.yaml: profiles[1].plugins.queueSort: Invalid value: '
                       '"CustomSort": different queue sort plugins for profile "b": '
                       '"CustomSort", first: "PrioritySort"')
