"""The per-release facts of ``kaudit.versions`` against upstream, and the configuration
reading them.

Where upstream's source is in the Go module cache (``go mod download
k8s.io/kubernetes@v1.34.2``), the v1.34.2 gate table, default plugins and API defaults are
compared with what ``pkg/features/kube_features.go``,
``pkg/scheduler/apis/config/v1/default_plugins.go`` and ``.../v1/defaults.go`` say; without
it those comparisons are skipped and the hand-checked expectations below still run.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest

import kaudit
from kaudit import versions
from kaudit.config import FeatureGates, parse_feature_gates
from kaudit.config import args_defaults as ad
from kaudit.config.default_plugins import default_plugins
from kaudit.config.feature_gates import GATE_SPECS
from kaudit.config.v1types import MULTI_POINT
from kaudit.errors import ConfigError
from kaudit.versions import (
    BETA,
    DEFAULT,
    SUPPORTED,
    DefaultPlugin,
    GatedPlugin,
    GateSpec,
    KubernetesVersion,
)
from kaudit.versions.v1_34 import V1_34_2
from kaudit.versions.v1_35 import V1_35_4
from kaudit.versions.v1_36 import V1_36_3
from kaudit.versions.v1_37 import V1_37_2
from tests.config.conftest import load_configuration

#: Every release kaudit has the facts of, supported or being added.
RELEASES = (V1_34_2, V1_35_4, V1_36_3, V1_37_2)

# -- upstream source in the module cache ------------------------------------------------------


def _module_caches() -> list[Path]:
    """Go module caches that may hold upstream's source: ``$GOMODCACHE``, the oracle's (its
    build downloads ``k8s.io/kubernetes``), ``go env GOMODCACHE`` and ``~/go/pkg/mod``."""
    from tests.oracle.build import cache_root

    candidates = [os.environ.get("GOMODCACHE"), str(cache_root() / "gomodcache")]
    go = shutil.which("go")
    if go is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            candidates.append(subprocess.run([go, "env", "GOMODCACHE"], capture_output=True,
                                             text=True, timeout=30, check=False).stdout.strip())
    candidates.append(str(Path.home() / "go" / "pkg" / "mod"))
    return [Path(c) for c in candidates if c and Path(c).is_dir()]


def upstream_source(version: KubernetesVersion) -> Path:
    """The unpacked ``k8s.io/kubernetes`` module of ``version``, or skip the test."""
    for cache in _module_caches():
        root = cache / "k8s.io" / f"kubernetes@{version.name}"
        if (root / "pkg" / "features" / "kube_features.go").is_file():
            return root
    pytest.skip(f"k8s.io/kubernetes@{version.name} is not in a Go module cache "
                f"(go mod download k8s.io/kubernetes@{version.name})")


_FEATURE_CONST = re.compile(r'^\s*(\w+)\s+featuregate\.Feature\s*=\s*"([^"]+)"', re.MULTILINE)
_GATE_ENTRY = re.compile(r"^\t(?:\w+\.)?(\w+): \{\s*$")
_VERSIONED_SPEC = re.compile(r'\{Version: version\.MustParse\("(\d+)\.(\d+)"\),([^}]*)\}')


def upstream_gates(root: Path, minor: tuple[int, int]) -> dict[str, GateSpec]:
    """``defaultVersionedKubernetesFeatureGates`` resolved at ``minor``: for each gate, its last
    versioned spec at or before it (as ``featuregate`` does at that emulation version)."""
    text = (root / "pkg" / "features" / "kube_features.go").read_text()
    names = dict(_FEATURE_CONST.findall(text))
    body = text[text.index("var defaultVersionedKubernetesFeatureGates"):]
    body = body[:body.index("\n}\n")]
    gates: dict[str, GateSpec] = {}
    current: str | None = None
    for line in body.splitlines():
        entry = _GATE_ENTRY.match(line)
        if entry is not None:
            current = names.get(entry[1], entry[1])
            continue
        spec = _VERSIONED_SPEC.search(line)
        if spec is None or current is None or (int(spec[1]), int(spec[2])) > minor:
            continue
        fields = spec[3]
        compatible = re.search(r'MinCompatibilityVersion: version\.MustParse\("(\d+)\.(\d+)"\)',
                               line)
        if compatible is not None and (int(compatible[1]), int(compatible[2])) > \
                (minor[0], minor[1] - 1):
            continue  # needs a newer emulated compatibility version than the default (n-1)
        default = re.search(r"Default: (true|false)", fields)
        stage = re.search(r"PreRelease: featuregate\.(\w+)", fields)
        assert default is not None and stage is not None, line
        gates[current] = GateSpec(default[1] == "true", stage[1].upper(),
                                  "LockToDefault: true" in fields)
    return gates


def _go_function(text: str, name: str) -> str:
    start = text.index(f"func {name}(")
    return text[start:text.index("\n}\n", start)]


def upstream_default_multi_point(root: Path) -> list[DefaultPlugin]:
    """``getDefaultPlugins``'s MultiPoint list, names resolved through ``names.go``."""
    plugins = root / "pkg" / "scheduler" / "framework" / "plugins"
    names = dict(re.findall(r'^\s*(\w+)\s*=\s*"(\w+)"', (plugins / "names" / "names.go")
                            .read_text(), re.MULTILINE))
    text = (root / "pkg/scheduler/apis/config/v1/default_plugins.go").read_text()
    body = _go_function(text, "getDefaultPlugins")
    return [DefaultPlugin(names[name], None if weight == "" else int(weight)) for name, weight
            in re.findall(r"\{Name: names\.(\w+)(?:, Weight: ptr\.To\[int32\]\((\d+)\))?\}",
                          body)]


# -- the registry of releases ------------------------------------------------------------------


def test_the_default_is_the_newest_release_kaudit_names() -> None:
    assert DEFAULT is SUPPORTED[-1] and DEFAULT.name == kaudit.KUBERNETES_VERSION == "v1.37.2"
    assert DEFAULT in SUPPORTED
    assert [v.release for v in SUPPORTED] == sorted(v.release for v in SUPPORTED)
    assert len({v.name for v in SUPPORTED}) == len(SUPPORTED)


@pytest.mark.parametrize("name", ["v1.34.2", "1.34.2", "v1.34", "1.34", " v1.34.2 "])
def test_get_resolves_a_release_or_its_minor(name: str) -> None:
    assert versions.get(name) is V1_34_2


def test_a_minor_names_its_newest_supported_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    older = replace(V1_34_2, name="v1.34.1")
    newer = replace(V1_34_2, name="v1.34.10")
    monkeypatch.setattr(versions, "SUPPORTED", (older, newer, V1_34_2))
    assert versions.get("v1.34") is newer and versions.get("1.34.1") is older


@pytest.mark.parametrize("name", ["v1.34.1", "v1.38", "v1.35.0", "1.34.2.0", "v1.34.02",
                                  "v1", "latest", "", "V1.34.2", "v1.34.2-rc.0"])
def test_get_refuses_anything_else_naming_the_supported_releases(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        versions.get(name)
    assert f"unsupported Kubernetes version {name!r}" in str(info.value)
    assert "kaudit supports v1.34.2" in str(info.value)


def test_each_release_is_consistent() -> None:
    for version in SUPPORTED:
        names = [p.name for p in version.default_multi_point]
        assert len(names) == len(set(names)), version
        for gated in version.gated_plugins:
            assert gated.gate in version.gates, (version, gated)
            assert gated.before is None or gated.before in names, (version, gated)
        keys = [change.key for change in version.ungated_changes]
        assert len(keys) == len(set(keys)), version
        assert all(re.search(r"#\d+|no pull request named", c.upstream) and "pkg/" in c.upstream
                   for c in version.ungated_changes), version


def test_ungated_changes_are_named_and_carried() -> None:
    assert versions.carries(V1_34_2, "taint-toleration-reason-without-taint")
    assert not versions.carries(V1_34_2, "no-such-change")
    change = V1_34_2.ungated_changes[0]
    assert "node(s) had untolerated taint(s)" in change.summary and "#134740" in change.upstream


# -- v1.34.2 against upstream ------------------------------------------------------------------

# Hand-checked against kube_features.go (the gates whose state moved in the 1.3x releases).
V1_34_GATES = {
    "DynamicResourceAllocation": GateSpec(True, "GA"),  # locked from 1.35
    "SchedulerAsyncAPICalls": GateSpec(False, "BETA"),  # on in v1.34.0
    "SchedulerQueueingHints": GateSpec(True, "GA", locked=True),
    "InPlacePodVerticalScaling": GateSpec(True, "BETA"),
    "NominatedNodeNameForExpectation": GateSpec(False, "ALPHA"),
    "ClearingNominatedNodeNameAfterBinding": GateSpec(False, "ALPHA"),
    "DRAAdminAccess": GateSpec(True, "BETA"),
    "StorageCapacityScoring": GateSpec(False, "ALPHA"),
    "CSIMigrationPortworx": GateSpec(True, "GA", locked=True),
}


def test_v1_34_2_gates_as_checked_by_hand() -> None:
    assert {name: V1_34_2.gates[name] for name in V1_34_GATES} == V1_34_GATES
    assert len(V1_34_2.gates) == 28


@pytest.mark.parametrize("version", RELEASES, ids=lambda v: v.name)
def test_gates_equal_upstreams(version: KubernetesVersion) -> None:
    root = upstream_source(version)
    upstream = upstream_gates(root, version.release[:2])
    assert len(upstream) > 150  # the parser read the whole table
    missing = sorted(set(version.gates) - set(upstream))
    assert missing == []
    assert {name: upstream[name] for name in version.gates} == dict(version.gates)


@pytest.mark.parametrize("version", RELEASES, ids=lambda v: v.name)
def test_every_gate_the_scheduler_reads_is_in_the_table(version: KubernetesVersion) -> None:
    """Each gate ``pkg/scheduler`` (outside tests) asks about is one kaudit knows, so a user may
    set it as upstream lets them (``features.X`` naming no gate, such as the declared-features
    framework's ``features.AllFeatures``, is not one)."""
    root = upstream_source(version)
    gates = upstream_gates(root, version.release[:2])
    read = set()
    for path in (root / "pkg" / "scheduler").rglob("*.go"):
        if not path.name.endswith("_test.go") and "/testing/" not in str(path):
            read.update(re.findall(r"\bfeatures\.([A-Z]\w+)\b", path.read_text()))
    assert sorted((read & set(gates)) - set(version.gates)) == []


# From default_plugins.go: getDefaultPlugins, in order, with weights.
V1_34_MULTI_POINT = [
    ("SchedulingGates", None), ("PrioritySort", None), ("NodeUnschedulable", None),
    ("NodeName", None), ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", None),
    ("NodeResourcesFit", 1), ("VolumeRestrictions", None), ("NodeVolumeLimits", None),
    ("VolumeBinding", None), ("VolumeZone", None), ("PodTopologySpread", 2),
    ("InterPodAffinity", 2), ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", None),
]


def test_v1_34_2_default_plugins_as_checked_by_hand() -> None:
    assert [(p.name, p.weight) for p in V1_34_2.default_multi_point] == V1_34_MULTI_POINT
    assert V1_34_2.gated_plugins == (GatedPlugin("DynamicResourceAllocation",
                                                 DefaultPlugin("DynamicResources"),
                                                 before="DefaultPreemption"),)


def upstream_gated_plugins(root: Path) -> list[GatedPlugin]:
    """``applyFeatureGates``: for each gate it tests, in order, the plugins appended or those
    its helper inserts before another (with the weights upstream gives)."""
    text = (root / "pkg/scheduler/apis/config/v1/default_plugins.go").read_text()
    body = _go_function(text, "applyFeatureGates")
    plugin = r"v1\.Plugin\{Name: names\.(\w+)(?:, Weight: ptr\.To\[int32\]\((\d+)\))?\}"
    gated = []
    for branch in re.split(r"\n\tif ", body)[1:]:
        gate = re.match(r"utilfeature\.DefaultFeatureGate\.Enabled\(features\.(\w+)\)",
                        branch)
        assert gate is not None, branch
        appended = re.findall(r"append\(config\.MultiPoint\.Enabled, " + plugin, branch)
        helper = re.search(r"\b(apply\w+)\(config\)", branch)
        before = None
        if not appended:
            assert helper is not None, branch
            helper_body = _go_function(text, helper[1])
            # A helper may name its plugin twice (insert, else append): once each.
            appended = list(dict.fromkeys(re.findall(plugin, helper_body)))
            anchor = re.search(r"Name == names\.(\w+)", helper_body)
            assert appended, helper_body
            before = None if anchor is None else anchor[1]
        names_go = (root / "pkg/scheduler/framework/plugins/names/names.go").read_text()
        names = dict(re.findall(r'^\s*(\w+)\s*=\s*"(\w+)"', names_go, re.MULTILINE))
        for name, weight in appended:
            gated.append(GatedPlugin(gate[1], DefaultPlugin(names[name], None if not weight
                                                            else int(weight)),
                                     before=None if before is None else names[before]))
    return gated


@pytest.mark.parametrize("version", RELEASES, ids=lambda v: v.name)
def test_default_plugins_equal_upstreams(version: KubernetesVersion) -> None:
    root = upstream_source(version)
    assert upstream_default_multi_point(root) == list(version.default_multi_point)
    assert upstream_gated_plugins(root) == list(version.gated_plugins)


@pytest.mark.parametrize("version", RELEASES, ids=lambda v: v.name)
def test_api_defaults_equal_upstreams(version: KubernetesVersion) -> None:
    root = upstream_source(version)
    config = root / "pkg" / "scheduler" / "apis" / "config"
    defaults = (config / "v1" / "defaults.go").read_text()

    def ptr(field: str) -> int:
        found = re.findall(rf"obj\.{field} = ptr\.To\[int\d+\]\((\d+)\)", defaults)
        assert len(found) == 1, field
        return int(found[0])

    api = version.api_defaults
    assert (api.parallelism, api.pod_initial_backoff_seconds, api.pod_max_backoff_seconds) == (
        ptr("Parallelism"), ptr("PodInitialBackoffSeconds"), ptr("PodMaxBackoffSeconds"))
    assert (api.min_candidate_nodes_percentage, api.min_candidate_nodes_absolute) == (
        ptr("MinCandidateNodesPercentage"), ptr("MinCandidateNodesAbsolute"))
    assert api.hard_pod_affinity_weight == ptr("HardPodAffinityWeight")
    assert api.bind_timeout_seconds == ptr("BindTimeoutSeconds")
    types = (config / "types.go").read_text() + (config / "types_pluginargs.go").read_text()
    pct = re.search(r"DefaultPercentageOfNodesToScore = (\d+)", types)
    timeout = re.search(r"DynamicResourcesFilterTimeoutDefault = (\d+) \* time\.Second", types)
    assert pct is not None and timeout is not None
    assert api.percentage_of_nodes_to_score == int(pct[1])
    assert api.dra_filter_timeout == f"{timeout[1]}s"
    assert re.search(rf'{api.scoring_strategy}\s+ScoringStrategyType = "{api.scoring_strategy}"',
                     types)
    assert re.search(r'SystemDefaulting\s+PodTopologySpreadConstraintsDefaulting = '
                     rf'"{api.topology_spread_defaulting}"', types)
    spec = re.findall(r"\{Name: string\(v1\.Resource(\w+)\), Weight: (\d+)\}", defaults)
    assert [(name.lower(), int(weight)) for name, weight in spec] == list(api.resources)


# -- the configuration reads the release ---------------------------------------------------------


def test_configuration_names_are_the_default_releases() -> None:
    assert GATE_SPECS is DEFAULT.gates
    assert FeatureGates().version is DEFAULT and parse_feature_gates("").version is DEFAULT
    assert ad.DRA_FILTER_TIMEOUT_DEFAULT == "10s"
    assert ad.default_resources() == [{"name": "cpu", "weight": 1},
                                      {"name": "memory", "weight": 1}]


def _other_release() -> KubernetesVersion:
    """A made-up release that differs from v1.34.2 in every kind of fact."""
    gates = dict(V1_34_2.gates)
    gates["SchedulerAsyncAPICalls"] = GateSpec(True, BETA)
    gates["MadeUpGate"] = GateSpec(True, BETA)
    del gates["CSIMigrationPortworx"]
    return replace(
        V1_34_2, name="v1.99.0", gates=MappingProxyType(gates),
        default_multi_point=tuple(reversed(V1_34_2.default_multi_point)),
        gated_plugins=(*V1_34_2.gated_plugins,
                       GatedPlugin("MadeUpGate", DefaultPlugin("MadeUp", 4)),
                       GatedPlugin("MadeUpGate", DefaultPlugin("Early"), before="MadeUp")),
        api_defaults=replace(V1_34_2.api_defaults, parallelism=3,
                             percentage_of_nodes_to_score=40, pod_initial_backoff_seconds=2,
                             pod_max_backoff_seconds=20, min_candidate_nodes_percentage=5,
                             min_candidate_nodes_absolute=50, hard_pod_affinity_weight=7,
                             bind_timeout_seconds=60, dra_filter_timeout="5s",
                             resources=(("cpu", 1),), scoring_strategy="MostAllocated",
                             topology_spread_defaulting="List"))


def test_gates_are_those_of_their_release() -> None:
    other = _other_release()
    gates = FeatureGates(version=other)
    assert gates.enabled("SchedulerAsyncAPICalls") and gates.enabled("MadeUpGate")
    assert not FeatureGates().enabled("SchedulerAsyncAPICalls")
    with pytest.raises(ConfigError, match="unrecognized feature gate: CSIMigrationPortworx"):
        parse_feature_gates("CSIMigrationPortworx=true", other)
    assert parse_feature_gates("MadeUpGate=false", other).non_default() == {"MadeUpGate": False}
    assert gates.with_overrides({"MadeUpGate": False}).version is other
    twin = replace(other, name="v1.99.1")
    assert gates != FeatureGates(version=twin)  # the same values of another release
    assert repr(FeatureGates()) == "FeatureGates({})"
    assert repr(gates) == "FeatureGates({}, version='v1.99.0')"


def test_default_plugins_are_those_of_the_release_of_the_gates() -> None:
    other = _other_release()
    enabled = default_plugins(FeatureGates(version=other))[MULTI_POINT].enabled
    names = [p.name for p in enabled]
    assert names[:2] == ["DefaultBinder", "ImageLocality"]
    assert names[-2:] == ["Early", "MadeUp"] and enabled[-1].weight == 4
    # Reversed, DefaultPreemption comes before the scores: DynamicResources still precedes it.
    assert names.index("DynamicResources") == names.index("DefaultPreemption") - 1
    off = default_plugins(FeatureGates({"MadeUpGate": False}, version=other))[MULTI_POINT]
    assert "MadeUp" not in [p.name for p in off.enabled]
    assert default_plugins(FeatureGates(), DEFAULT) == default_plugins(FeatureGates())
    with pytest.raises(ValueError, match=f"feature gates of {DEFAULT.name} given"):
        default_plugins(FeatureGates(), other)


def test_api_and_args_defaults_are_those_of_the_release() -> None:
    other = replace(_other_release(), gated_plugins=V1_34_2.gated_plugins)  # registered only
    config = load_configuration(feature_gates=FeatureGates(version=other))
    assert (config.parallelism, config.percentage_of_nodes_to_score,
            config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (3, 40, 2, 20)
    args = config.profiles["default-scheduler"].plugin_args
    assert args["DefaultPreemption"] == {"minCandidateNodesPercentage": 5,
                                         "minCandidateNodesAbsolute": 50}
    assert args["InterPodAffinity"]["hardPodAffinityWeight"] == 7
    assert args["VolumeBinding"]["bindTimeoutSeconds"] == 60
    assert args["DynamicResources"] == {"filterTimeout": "5s"}
    assert args["NodeResourcesFit"]["scoringStrategy"] == {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}
    assert args["NodeResourcesBalancedAllocation"] == {"resources": [{"name": "cpu",
                                                                      "weight": 1}]}
    assert args["PodTopologySpread"]["defaultingType"] == "List"
    default = load_configuration()
    assert (default.parallelism, default.percentage_of_nodes_to_score,
            default.pod_initial_backoff_seconds, default.pod_max_backoff_seconds) == (16, 0, 1, 10)


# -- what an upgrade changes ----------------------------------------------------------------------

def test_changes_between_names_each_change_once_at_its_release() -> None:
    from kaudit.versions import changes_between
    from kaudit.versions.v1_37 import V1_37_2

    upgrade = changes_between(V1_34_2, V1_37_2)
    named = {what: release for release, what, _ in upgrade}
    assert named["select-host-heap"] == "v1.35.4"
    assert named["balanced-allocation-with-and-without-pod"] == "v1.36.3"
    assert named["NodeDeclaredFeatures on"] == "v1.36.3"
    assert named["StorageCapacityScoring on"] == "v1.37.2"
    assert named["DynamicResources weight 2"] == "v1.35.4"
    # The DRA beta features kaudit models (from v1.36) explain differences; what it does not
    # model explains none.
    assert named["DRAConsumableCapacity on"] == named["DRAPartitionableDevices on"] == "v1.36.3"
    assert named["DRADeviceTaintRules on"] == named["VolumeLimitScaling on"] == "v1.37.2"
    assert "parallel-prebind" not in named and "DRAExtendedResource on" not in named
    assert "DRADeviceBindingConditions on" not in named
    assert changes_between(V1_34_2, V1_34_2) == []
    assert [w for _, w, _ in changes_between(V1_35_4, V1_36_3)] == [
        w for r, w, _ in upgrade if r == "v1.36.3"]
