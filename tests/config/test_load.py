"""Loading configuration files: YAML and JSON, strict decoding, plugin merging end to end,
and the effective configuration written back out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kaudit.config import PluginRef, PluginSpec, SchedulerConfiguration
from kaudit.errors import ConfigError, InputError
from kaudit.framework.plugin import FilterPlugin
from kaudit.scheduler.registry import build_registry
from tests.config.conftest import load_configuration, load_object, v1_34_gates

REAL_WORLD = """\
# Bin-pack batch work; keep the default profile for services.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 50
podMaxBackoffSeconds: 30
profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        enabled:
          - name: NodeResourcesFit
            weight: 5
        disabled:
          - name: NodeResourcesBalancedAllocation
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: cpu
                weight: 3
              - name: memory
                weight: 1
              - name: nvidia.com/gpu
                weight: 5
  - schedulerName: batch-scheduler
    percentageOfNodesToScore: 100
    plugins:
      multiPoint:
        disabled:
          - name: ImageLocality
          - name: PodTopologySpread
      filter:
        disabled:
          - name: TaintToleration
"""


def test_a_real_world_file(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(REAL_WORLD)
    config = load_configuration(path)
    assert config.source == str(path)
    assert (config.percentage_of_nodes_to_score, config.pod_max_backoff_seconds) == (50, 30)
    assert list(config.profiles) == ["default-scheduler", "batch-scheduler"]

    default = config.profiles["default-scheduler"]
    # The explicitly configured Score plugin comes first, then MultiPoint's in order.
    assert default.plugins["Score"] == (
        PluginRef("NodeResourcesFit", 5), PluginRef("TaintToleration", 3),
        PluginRef("NodeAffinity", 2), PluginRef("PodTopologySpread", 2),
        PluginRef("InterPodAffinity", 2), PluginRef("ImageLocality", 1))
    # Disabled at Score only: BalancedAllocation still runs its PreScore, as upstream.
    assert "NodeResourcesBalancedAllocation" in default.enabled("PreScore")
    assert default.plugin_args["NodeResourcesFit"]["scoringStrategy"] == {
        "type": "MostAllocated", "resources": [
            {"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1},
            {"name": "nvidia.com/gpu", "weight": 5}]}
    assert default.percentage_of_nodes_to_score is None

    batch = config.profiles["batch-scheduler"]
    assert batch.percentage_of_nodes_to_score == 100
    assert not {"ImageLocality", "PodTopologySpread"} & {
        name for point in batch.plugins for name in batch.enabled(point)}
    assert "PodTopologySpread" not in batch.plugin_args
    assert "TaintToleration" not in batch.enabled("Filter")
    assert batch.weight("TaintToleration") == 3
    assert batch.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"] == "LeastAllocated"


def test_json_files_load_like_yaml(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "scheduler.json"
    path.write_text(json.dumps(yaml.safe_load(REAL_WORLD), indent=2))
    yaml_path = tmp_path / "scheduler.yaml"
    yaml_path.write_text(REAL_WORLD)
    assert load_configuration(path).profiles == load_configuration(yaml_path).profiles


def test_tab_indented_json_and_json_syntax_errors(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.json"
    path.write_text('{\n\t"apiVersion": "kubescheduler.config.k8s.io/v1",\n'
                    '\t"kind": "KubeSchedulerConfiguration",\n\t"parallelism": 4\n}\n')
    assert load_configuration(path).parallelism == 4
    path.write_text('{\n\t"apiVersion": "kubescheduler.config.k8s.io/v1",\n\t"kind" 1\n}\n')
    with pytest.raises(ConfigError) as info:
        load_configuration(path)
    assert str(info.value) == f"{path}:3: Expecting ':' delimiter"


def test_the_effective_configuration_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(REAL_WORLD)
    gates = v1_34_gates({"StorageCapacityScoring": True})
    config = load_configuration(path, feature_gates=gates)
    document = config.to_dict()
    assert document["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert document["kind"] == "KubeSchedulerConfiguration"
    assert document["profiles"][0]["plugins"]["score"]["enabled"][0] == {
        "name": "NodeResourcesFit", "weight": 5}
    assert document["profiles"][0]["pluginConfig"][0]["args"]["kind"] == "DefaultPreemptionArgs"
    again = load_object(json.loads(json.dumps(document)), "again", feature_gates=gates)
    assert again.profiles == config.profiles
    assert again.to_dict() == document


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("profiles:\n  - schedulerName: a\n   bad: 1\n", 5, "expected <block end>"),
    ("profiles: [\n", 4, "expected the node content"),
    ("kind: a: b\n", 3, "mapping values are not allowed here"),
    ("parallelism: 3\nparallelism: 4\n", 4, 'key "parallelism" already set in map'),
])
def test_syntax_errors_name_the_file_and_line(text: str, line: int, problem: str,
                                              config_error: Callable[..., str]) -> None:
    message = config_error(text)
    assert message.startswith(f"config.yaml:{line}: ") and problem in message


@pytest.mark.parametrize(("text", "message"), [
    ("percentageOfNodesToScor: 50\n",
     'config.yaml: percentageOfNodesToScor: Forbidden: unknown field "percentageOfNodesToScor"'),
    ("parallelism: '16'\n",
     'config.yaml: parallelism: Invalid value: "16": expected int32, got string'),
    ("parallelism: 3000000000\n",
     "config.yaml: parallelism: Invalid value: 3000000000: number out of range for int32"),
    ("profiles: {schedulerName: a}\n",
     'config.yaml: profiles: Invalid value: {"schedulerName":"a"}: expected array, got object'),
    ("profiles: [{plugins: {score: {enabled: [{name: ImageLocality, weight: high}]}}}]\n",
     'config.yaml: profiles[0].plugins.score.enabled[0].weight: Invalid value: "high": '
     "expected int32, got string"),
    ("profiles: [{plugins: {scores: {}}}]\n",
     'config.yaml: profiles[0].plugins.scores: Forbidden: unknown field "scores"'),
    ("profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: "
     "{kind: MostAllocated}}}]}]\n",
     "config.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.kind: Forbidden: unknown "
     'field "kind"'),
    ("profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {kind: "
     "NodeResourcesBalancedAllocationArgs}}]}]\n",
     'config.yaml: profiles[0].pluginConfig[0].args.kind: Unsupported value: '
     '"NodeResourcesBalancedAllocationArgs": supported values: "NodeResourcesFitArgs"'),
    ("profiles: [{pluginConfig: [{name: DynamicResources, args: {filterTimeout: soon}}]}]\n",
     'config.yaml: profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: "soon": '
     'time: invalid duration "soon"'),
    ("leaderElection: {leaderElect: maybe}\n",
     'config.yaml: leaderElection.leaderElect: Invalid value: "maybe": expected bool, got '
     "string"),
])
def test_strict_decoding(text: str, message: str, config_error: Callable[..., str]) -> None:
    assert config_error(text) == message


@pytest.mark.parametrize(("text", "message"), [
    ("kind: KubeSchedulerConfiguration\n",
     'config.yaml: apiVersion: Required value: must be "kubescheduler.config.k8s.io/v1"'),
    ("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
     'config.yaml: apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": '
     'supported values: "kubescheduler.config.k8s.io/v1"'),
    ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n",
     'config.yaml: kind: Unsupported value: "Policy": supported values: '
     '"KubeSchedulerConfiguration"'),
    ("", "config.yaml: Invalid value: null: expected a KubeSchedulerConfiguration object, "
         "got an empty document"),
    ("- a\n", 'config.yaml: Invalid value: ["a"]: expected a KubeSchedulerConfiguration '
              "object, got array"),
])
def test_only_v1_kube_scheduler_configuration(text: str, message: str,
                                              config_error: Callable[..., str]) -> None:
    assert config_error(text, header=False) == message


def test_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.yaml: No such file or directory"):
        load_configuration(tmp_path / "missing.yaml")


def test_minimal_file_gives_the_defaults(load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    config = load_yaml("profiles: []\n")
    assert config.profiles == load_configuration().profiles


def test_args_of_unknown_plugins_are_ignored_as_upstream(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    config = load_yaml("profiles: [{pluginConfig: [{name: NotAPlugin, args: {x: 1}}]}]\n")
    assert "NotAPlugin" not in config.profiles["default-scheduler"].plugin_args


def test_multi_point_reconfiguration_without_weight_gives_weight_one(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    # mergePluginSet replaces the default entry, weight included; 0 then becomes 1.
    text = "profiles: [{plugins: {multiPoint: {enabled: [{name: TaintToleration}]}}}]\n"
    profile = load_yaml(text).profiles["default-scheduler"]
    assert profile.weight("TaintToleration") == 1
    assert profile.enabled("Filter").index("TaintToleration") == 2  # position kept


def test_disable_all_then_enable_some(load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    profile = load_yaml("""
        profiles:
        - plugins:
            multiPoint:
              disabled: [{name: "*"}]
              enabled: [{name: PrioritySort}, {name: NodeName}, {name: DefaultBinder},
                        {name: ImageLocality, weight: 4}]
            score:
              enabled: [{name: NodeAffinity}]
        """).profiles["default-scheduler"]
    assert {p: profile.enabled(p) for p in profile.plugins if profile.enabled(p)} == {
        "QueueSort": ("PrioritySort",), "Filter": ("NodeName",), "Bind": ("DefaultBinder",),
        "Score": ("ImageLocality", "NodeAffinity")}
    assert (profile.weight("ImageLocality"), profile.weight("NodeAffinity")) == (4, 1)
    assert list(profile.plugin_args) == ["NodeAffinity"]


def test_disable_all_at_one_point(load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    profile = load_yaml("""
        profiles:
        - plugins:
            score:
              disabled: [{name: "*"}]
              enabled: [{name: ImageLocality, weight: 7}, {name: TaintToleration}]
        """).profiles["default-scheduler"]
    assert profile.plugins["Score"] == (PluginRef("ImageLocality", 7),
                                        PluginRef("TaintToleration", 1))
    assert "NodeAffinity" in profile.enabled("PreScore")


def test_out_of_tree_plugins(load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    extra = {"GpuPacking": PluginSpec("GpuPacking", frozenset({"Filter", "Score"}),
                                      default_args={"mode": "pack", "threshold": 80})}
    profile = load_yaml("""
        profiles:
        - plugins:
            multiPoint:
              enabled: [{name: GpuPacking, weight: 4}]
          pluginConfig:
          - name: GpuPacking
            args: {threshold: 90}
        """, extra_plugins=extra).profiles["default-scheduler"]
    assert profile.enabled("Filter")[-1] == "GpuPacking"
    assert profile.plugins["Score"][-1] == PluginRef("GpuPacking", 4)
    assert profile.plugin_args["GpuPacking"] == {"mode": "pack", "threshold": 90}
    with pytest.raises(InputError, match="a plugin named NodeName already exists"):
        build_registry([f"{__name__}:ShadowsNodeName"], entry_point_plugins=False)


class ShadowsNodeName(FilterPlugin):
    """An out-of-tree plugin that takes an in-tree plugin's name (upstream refuses it)."""

    name = "NodeName"


def test_volume_binding_score_is_accepted_but_inert_without_its_gate(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    profile = load_yaml("profiles: [{plugins: {score: {enabled: [{name: VolumeBinding}]}}}]\n"
                        ).profiles["default-scheduler"]
    assert "VolumeBinding" not in profile.enabled("Score")


def test_a_misspelt_plugin_gets_the_closest_name(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    with pytest.raises(ConfigError, match='ScorePlugin "NodeResourceFit" does not exist '
                                          r'\(did you mean "NodeResourcesFit"\?\)'):
        load_yaml("profiles: [{plugins: {score: {enabled: [{name: NodeResourceFit}]}}}]\n")


def test_plugin_config_for_no_plugin_is_ignored_with_a_warning(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    config = load_yaml("""
        profiles:
        - pluginConfig:
          - name: NodeResourceFit
            args: {scoringStrategy: {type: MostAllocated}}
        """)
    assert config.profiles == load_configuration().profiles  # ignored, as upstream does
    (warning,) = config.warnings
    assert warning.endswith('profiles[0].pluginConfig[0]: pluginConfig for "NodeResourceFit", '
                            "which is no registered plugin: ignored, as kube-scheduler ignores "
                            'it; did you mean "NodeResourcesFit"?')
    assert load_configuration().warnings == ()
