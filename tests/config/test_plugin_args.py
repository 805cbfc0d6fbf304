"""Plugin arguments: validation as given (validation_pluginargs.go) and defaulting.

Validation cases follow ``validation_pluginargs_test.go``; the ``args_error`` cases of the
transcribed upstream tables (``tests/data/conformance``) are read from disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from kaudit.config import FieldError, SchedulerConfiguration
from kaudit.errors import ConfigError
from kaudit.scheduler.registry import validate_plugin_args
from tests.config.conftest import v1_34_gates
from tests.conftest import DATA

CASES_DIR = DATA / "conformance" / "cases"


def conformance_cases(*files: str) -> list[Any]:
    cases = []
    for name in files:
        path = CASES_DIR / name
        if path.exists():
            for case in json.loads(path.read_text())["cases"]:
                if "args" in case:
                    cases.append(pytest.param(case, id=f"{name}:{case['name']}"))
    return cases


ERROR_FILES = ("noderesources_least_allocated.json", "noderesources_most_allocated.json")


@pytest.mark.parametrize("case", [c for c in conformance_cases(*ERROR_FILES)
                                  if "args_error" in c.values[0]["expect"]])
def test_conformance_args_errors(case: dict[str, Any]) -> None:
    errors = validate_plugin_args(case["plugin"], case["args"])
    assert {(e.type, e.field) for e in errors} == {
        (e["type"], e["field"]) for e in case["expect"]["args_error"]}


def test_conformance_has_the_six_weight_cases() -> None:
    cases = [c for c in conformance_cases(*ERROR_FILES) if "args_error" in c.values[0]["expect"]]
    assert len(cases) == 6


def distinct_valid_args() -> list[tuple[str, dict[str, Any]]]:
    files = sorted(p.name for p in CASES_DIR.glob("*.json"))
    seen = {(c.values[0]["plugin"], json.dumps(c.values[0]["args"], sort_keys=True))
            for c in conformance_cases(*files) if "args_error" not in c.values[0]["expect"]}
    return [(plugin, json.loads(args)) for plugin, args in sorted(seen)]


@pytest.mark.parametrize(("plugin", "args"), distinct_valid_args())
def test_every_other_conformance_args_is_valid(plugin: str, args: dict[str, Any]) -> None:
    assert validate_plugin_args(plugin, args) == []


def fit(strategy: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"scoringStrategy": strategy, **more}


@pytest.mark.parametrize(("plugin", "args", "errors"), [
    ("NodeResourcesFit", fit({"type": "LeastAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 101}]}),
     [("FieldValueInvalid", "scoringStrategy.resources[1].weight",
       "resource weight of memory not in valid range (0, 100]")]),
    ("NodeResourcesFit", fit({"type": "Unknown"}),
     [("FieldValueNotSupported", "scoringStrategy.type", 'supported values: "LeastAllocated", '
       '"MostAllocated", "RequestedToCapacityRatio"')]),
    ("NodeResourcesFit", {}, []),  # v1.34 does not require scoringStrategy here
    ("NodeResourcesFit", fit({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 50, "score": 11}, {"utilization": 40, "score": 2}]}}),
     [("FieldValueInvalid", "scoringStrategy.shape[1].utilization",
       "values must be sorted in increasing order"),
      ("FieldValueInvalid", "scoringStrategy.shape[0].score", "not in valid range [0, 10]")]),
    ("NodeResourcesFit", fit({"type": "RequestedToCapacityRatio"}),
     [("FieldValueRequired", "scoringStrategy.requestedToCapacityRatio",
       "must be specified when type is RequestedToCapacityRatio")]),
    ("NodeResourcesFit", fit({"type": "MostAllocated"}, ignoredResources=["-bad"],
                             ignoredResourceGroups=["a/b"]),
     [("FieldValueInvalid", "ignoredResources[0]", "name part must consist of alphanumeric "
       "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
       "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
      ("FieldValueInvalid", "ignoredResourceGroups[0]", "resource group name can't contain '/'")]),
    ("DefaultPreemption", {"minCandidateNodesPercentage": 101, "minCandidateNodesAbsolute": -1},
     [("FieldValueInvalid", "minCandidateNodesPercentage", "not in valid range [0, 100]"),
      ("FieldValueInvalid", "minCandidateNodesAbsolute", "not in valid range [0, inf)")]),
    ("DefaultPreemption", {},
     [("FieldValueInvalid", "minCandidateNodesPercentage",
       "cannot be zero at the same time as minCandidateNodesAbsolute"),
      ("FieldValueInvalid", "minCandidateNodesAbsolute",
       "cannot be zero at the same time as minCandidateNodesPercentage")]),
    ("InterPodAffinity", {"hardPodAffinityWeight": -1},
     [("FieldValueInvalid", "hardPodAffinityWeight", "not in valid range [0, 100]")]),
    ("NodeResourcesBalancedAllocation", {"resources": [
        {"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 2}]},
     [("FieldValueDuplicate", "resources[1].name", ""),
      ("FieldValueInvalid", "resources[1].weight", "must be 1")]),
    ("PodTopologySpread", {"defaultingType": "System", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     [("FieldValueInvalid", "defaultingType", "when .defaultConstraints are not empty")]),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Never",
         "labelSelector": {}},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     [("FieldValueInvalid", "defaultConstraints[0].maxSkew", "not in valid range (0, inf)"),
      ("FieldValueRequired", "defaultConstraints[0].topologyKey", "can not be empty"),
      ("FieldValueNotSupported", "defaultConstraints[0].whenUnsatisfiable",
       'supported values: "DoNotSchedule", "ScheduleAnyway"'),
      ("FieldValueForbidden", "defaultConstraints[0].labelSelector",
       "constraint must not define a selector, as they deduced for each pod"),
      ("FieldValueDuplicate", "defaultConstraints[2]", "")]),
    ("PodTopologySpread", {}, [("FieldValueNotSupported", "defaultingType",
                                'supported values: "System", "List"')]),
    ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In"},
            {"key": "size", "operator": "Gt", "values": ["big"]},
            {"key": "x", "operator": "Near"}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In",
                              "values": ["a", "b"]}]}]}}},
     [("FieldValueInvalid", "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[0].values",
       "for 'in', 'notin' operators, values set can't be empty"),
      ("FieldValueInvalid", "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[1].values[0]",
       "for 'Gt', 'Lt' operators, the value must be an integer"),
      ("FieldValueNotSupported", "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[2].operator",
       'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'),
      ("FieldValueInvalid", "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[1].matchFields[0].values", "must have one element")]),
    ("NodeAffinity", {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "a/b/c", "operator": "Exists"}]}},
        {"weight": 0, "preference": {"matchExpressions": [{"key": "", "operator": "Bad"}]}}]}},
     [("FieldValueInvalid", "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
       ".matchExpressions[0].key", "a qualified name must consist of alphanumeric characters, "
       "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
       "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
       "and '/' (e.g. 'example.com/MyName')")]),
    ("VolumeBinding", {"bindTimeoutSeconds": -1, "shape": []},
     [("FieldValueInvalid", "bindTimeoutSeconds",
       "invalid BindTimeoutSeconds, should not be a negative value"),
      ("FieldValueInvalid", "shape", "unexpected field `shape`, remove it or turn on the "
       "feature gate StorageCapacityScoring")]),
    ("DynamicResources", {"filterTimeout": "-1s"},
     [("FieldValueInvalid", "filterTimeout", "must be zero or positive")]),
    ("NodeResourcesFit", {"scoringStrategy": {"type": 3}, "extra": True},
     [("FieldValueTypeInvalid", "scoringStrategy.type", "expected string, got number"),
      ("FieldValueForbidden", "extra", 'unknown field "extra"')]),
    ("NodeResourcesFit", {"kind": "NodeResourcesFitArgs",
                          "apiVersion": "kubescheduler.config.k8s.io/v1beta3"},
     [("FieldValueNotSupported", "apiVersion", 'supported values: '
       '"kubescheduler.config.k8s.io/v1"')]),
    ("ImageLocality", {"anything": 1}, []),
])
def test_validate_plugin_args(plugin: str, args: dict[str, Any],
                              errors: list[tuple[str, str, str]]) -> None:
    got = validate_plugin_args(plugin, args, feature_gates=v1_34_gates())
    assert [(e.type, e.field, e.detail) for e in got] == errors


def test_gated_args_follow_the_feature_gates() -> None:
    capacity = v1_34_gates({"StorageCapacityScoring": True})
    assert validate_plugin_args("VolumeBinding", {"shape": []}, feature_gates=capacity) == [
        FieldError("FieldValueRequired", "shape", "at least one point must be specified")]
    no_timeout = v1_34_gates({"DRASchedulerFilterTimeout": False})
    assert validate_plugin_args("DynamicResources", {"filterTimeout": "5s"},
                                feature_gates=no_timeout) == [FieldError(
        "FieldValueForbidden", "filterTimeout",
        "DRASchedulingFilterTimeout feature gate is disabled")]


def test_field_error_renders_like_upstream() -> None:
    [error] = validate_plugin_args("NodeResourcesFit", fit(
        {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 0}]}))
    assert error.message() == ("scoringStrategy.resources[0].weight: Invalid value: 0: "
                               "resource weight of cpu not in valid range (0, 100]")
    assert error == FieldError("FieldValueInvalid", "scoringStrategy.resources[0].weight",
                               "resource weight of cpu not in valid range (0, 100]")


def test_unknown_plugin_is_an_error() -> None:
    with pytest.raises(ConfigError, match='unknown plugin "Nope"'):
        validate_plugin_args("Nope", {})


def test_given_args_are_defaulted(load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    args = load_yaml("""
        profiles:
        - pluginConfig:
          - name: NodeResourcesFit
            args:
              scoringStrategy:
                type: MostAllocated
                resources: [{name: cpu}, {name: nvidia.com/gpu, weight: 0}]
          - name: NodeResourcesBalancedAllocation
            args: {resources: [{name: cpu}, {name: memory, weight: 0}]}
          - name: InterPodAffinity
            args: {ignorePreferredTermsOfExistingPods: true}
          - name: DefaultPreemption
            args: {minCandidateNodesAbsolute: 5}
          - name: PodTopologySpread
            args:
              defaultingType: List
              defaultConstraints:
              - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}
          - name: VolumeBinding
            args: {bindTimeoutSeconds: 30}
          - name: DynamicResources
            args: {filterTimeout: 90s}
          - name: NodeAffinity
            args:
              addedAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions: [{key: pool, operator: In, values: [batch]}]
        """).profiles["default-scheduler"].plugin_args
    assert args["NodeResourcesFit"] == {
        "scoringStrategy": {"type": "MostAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]},
        "ignoredResources": [], "ignoredResourceGroups": []}
    assert args["NodeResourcesBalancedAllocation"] == {"resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}
    assert args["InterPodAffinity"] == {"hardPodAffinityWeight": 1,
                                        "ignorePreferredTermsOfExistingPods": True}
    assert args["DefaultPreemption"] == {"minCandidateNodesPercentage": 10,
                                         "minCandidateNodesAbsolute": 5}
    assert args["PodTopologySpread"]["defaultingType"] == "List"
    assert args["VolumeBinding"] == {"bindTimeoutSeconds": 30}
    assert args["DynamicResources"] == {"filterTimeout": "1m30s"}
    terms = args["NodeAffinity"]["addedAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["batch"]


def test_scoring_strategy_without_resources_gets_the_default_set(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    args = load_yaml("""
        profiles:
        - pluginConfig:
          - name: NodeResourcesFit
            args:
              apiVersion: kubescheduler.config.k8s.io/v1
              kind: NodeResourcesFitArgs
              scoringStrategy:
                type: RequestedToCapacityRatio
                requestedToCapacityRatio:
                  shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
        """).profiles["default-scheduler"].plugin_args["NodeResourcesFit"]
    assert args["scoringStrategy"] == {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                               {"utilization": 100, "score": 10}]}}
