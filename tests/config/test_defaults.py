"""The built-in default configuration equals kube-scheduler v1.34's.

Expected values: the table of the semantics digest (section 1.1 and 1.2), which follows
``apis/config/v1/default_plugins.go`` and ``defaults.go``, and upstream's expanded default
set (``apis/config/testing/defaults/defaults.go``, ``ExpandedPluginsV1``).
"""

from __future__ import annotations

from kaudit.config import EXTENSION_POINTS, PluginRef
from kaudit.scheduler.registry import plugin_specs
from tests.config.conftest import load_configuration, v1_34_gates

# (plugin, extension points, score weight) in MultiPoint order: semantics digest 1.1.
# DefaultPreemption is also a PreEnqueue plugin in v1.34 (asynchronous preemption).
DEFAULT_TABLE = [
    ("SchedulingGates", {"PreEnqueue"}, None),
    ("PrioritySort", {"QueueSort"}, None),
    ("NodeUnschedulable", {"Filter"}, None),
    ("NodeName", {"Filter"}, None),
    ("TaintToleration", {"Filter", "PreScore", "Score"}, 3),
    ("NodeAffinity", {"PreFilter", "Filter", "PreScore", "Score"}, 2),
    ("NodePorts", {"PreFilter", "Filter"}, None),
    ("NodeResourcesFit", {"PreFilter", "Filter", "PreScore", "Score"}, 1),
    ("VolumeRestrictions", {"PreFilter", "Filter"}, None),
    ("NodeVolumeLimits", {"PreFilter", "Filter"}, None),
    ("VolumeBinding", {"PreFilter", "Filter", "Reserve", "PreBind"}, None),
    ("VolumeZone", {"PreFilter", "Filter"}, None),
    ("PodTopologySpread", {"PreFilter", "Filter", "PreScore", "Score"}, 2),
    ("InterPodAffinity", {"PreFilter", "Filter", "PreScore", "Score"}, 2),
    ("DynamicResources", {"PreEnqueue", "PreFilter", "Filter", "PostFilter", "Reserve",
                          "PreBind"}, None),
    ("DefaultPreemption", {"PreEnqueue", "PostFilter"}, None),
    ("NodeResourcesBalancedAllocation", {"PreScore", "Score"}, 1),
    ("ImageLocality", {"Score"}, 1),
    ("DefaultBinder", {"Bind"}, None),
]


def expected_lists(table: list[tuple[str, set[str], int | None]]) -> dict[str, list[str]]:
    return {point: [name for name, points, _ in table if point in points]
            for point in EXTENSION_POINTS}


def test_default_profile_matches_the_upstream_table() -> None:
    config = load_configuration()
    assert list(config.profiles) == ["default-scheduler"]
    profile = config.profiles["default-scheduler"]
    for point, names in expected_lists(DEFAULT_TABLE).items():
        assert profile.enabled(point) == tuple(names), point
    assert profile.plugins["Score"] == tuple(
        PluginRef(name, weight) for name, points, weight in DEFAULT_TABLE if "Score" in points)
    assert profile.weight("TaintToleration") == 3 and profile.weight("ImageLocality") == 1
    assert all(ref.weight == 0 for point in EXTENSION_POINTS if point != "Score"
               for ref in profile.plugins[point])
    assert profile.percentage_of_nodes_to_score is None


def test_the_expanded_filter_order_is_upstreams() -> None:
    filters = load_configuration().profiles["default-scheduler"].enabled("Filter")
    assert filters == (
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources")


def test_global_defaults() -> None:
    config = load_configuration()
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (16, 0)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    assert config.pod_max_in_unschedulable_pods_duration_seconds == 300
    assert config.source is None and config.feature_gates == v1_34_gates()


def test_default_plugin_args_for_every_plugin_that_takes_args() -> None:
    args = load_configuration().profiles["default-scheduler"].plugin_args
    cpu_memory = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    assert args == {
        "DefaultPreemption": {"minCandidateNodesPercentage": 10,
                              "minCandidateNodesAbsolute": 100},
        "DynamicResources": {"filterTimeout": "10s"},
        "InterPodAffinity": {"hardPodAffinityWeight": 1,
                             "ignorePreferredTermsOfExistingPods": False},
        "NodeAffinity": {"addedAffinity": None},
        "NodeResourcesBalancedAllocation": {"resources": cpu_memory},
        "NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated",
                                                 "resources": cpu_memory},
                             "ignoredResources": [], "ignoredResourceGroups": []},
        "PodTopologySpread": {"defaultConstraints": [], "defaultingType": "System"},
        "VolumeBinding": {"bindTimeoutSeconds": 600},
    }


def test_without_dynamic_resource_allocation_the_dra_plugin_is_not_a_default() -> None:
    gates = v1_34_gates({"DynamicResourceAllocation": False})
    profile = load_configuration(feature_gates=gates).profiles["default-scheduler"]
    table = [row for row in DEFAULT_TABLE if row[0] != "DynamicResources"]
    for point, names in expected_lists(table).items():
        assert profile.enabled(point) == tuple(names), point
    assert "DynamicResources" not in profile.plugin_args


def test_storage_capacity_scoring_makes_volume_binding_score() -> None:
    gates = v1_34_gates({"StorageCapacityScoring": True})
    profile = load_configuration(feature_gates=gates).profiles["default-scheduler"]
    assert "VolumeBinding" in profile.enabled("PreScore")
    assert profile.enabled("Score").index("VolumeBinding") == 3  # after NodeResourcesFit
    assert profile.weight("VolumeBinding") == 1
    assert profile.plugin_args["VolumeBinding"] == {
        "bindTimeoutSeconds": 600,
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}


def test_dra_filter_timeout_is_unset_without_its_gate() -> None:
    gates = v1_34_gates({"DRASchedulerFilterTimeout": False})
    args = load_configuration(feature_gates=gates).profiles["default-scheduler"].plugin_args
    assert args["DynamicResources"] == {"filterTimeout": None}


def test_in_tree_plugin_specs() -> None:
    """Each plugin class declares what configuration knows of it: the extension points it
    implements (VolumeBinding's PreScore and Score only with StorageCapacityScoring,
    DynamicResources' Score only from v1.35) and its args kind with upstream's defaults."""
    specs = plugin_specs()
    # NodeDeclaredFeatures is registered from v1.35 and a default plugin from v1.36.
    assert set(specs) == {name for name, _, _ in DEFAULT_TABLE} | {"NodeDeclaredFeatures"}
    assert specs["NodeDeclaredFeatures"].points_since == {
        "v1.35": frozenset({"PreFilter", "Filter"})}
    weights = {ref.name: ref.weight for ref in
               load_configuration().profiles["default-scheduler"].plugins["Score"]}
    for name, points, weight in DEFAULT_TABLE:
        spec = specs[name]
        implemented = (spec.extension_points - frozenset().union(*spec.gated_points.values())
                       - frozenset().union(*spec.points_since.values()))
        assert (spec.name, implemented) == (name, frozenset(points)), name
        assert weights.get(name) == weight, name
    assert specs["NodeName"].args is None
    args = specs["InterPodAffinity"].args
    assert args is not None and args.kind == "InterPodAffinityArgs"
    assert args.defaulted(None, v1_34_gates()) == {
        "hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False}
