"""The one rule that chooses the Kubernetes release a use case mirrors, the gates a run's what-if
carries to another release, and the differences between releases (`kaudit versions`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import Engine

from kaudit import versions
from kaudit.errors import ConfigError
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.services.replay import FROM_DEFAULTS, ConfigChoice, resolve_config
from kaudit.services.versions import (
    FROM_FALLBACK,
    FROM_RECORDING,
    FROM_USER,
    carry_gates,
    explicit_version,
    fallback_release,
    mirrored_release,
    release_differences,
    resolve_version,
)
from kaudit.store.traces import TraceSummary, get_trace
from kaudit.versions import KubernetesVersion
from tests.conftest import MADE_UP, made_up_release, write_trace

V1_34_2 = versions.get("v1.34.2")


def test_the_fallback_is_the_default_release() -> None:
    assert fallback_release() is versions.DEFAULT


@pytest.mark.parametrize("name", ["1.99", "v1.99", "v1.99.0", "1.99.0"])
def test_the_users_release_wins(second_release: KubernetesVersion, name: str) -> None:
    resolved = resolve_version(name, "v1.34.2")
    assert resolved.version is second_release and resolved.origin == FROM_USER
    assert resolved.notices == ()


def test_an_unsupported_users_release_names_the_field_and_the_supported(
        second_release: KubernetesVersion) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_version("1.35", field="--kubernetes-version")
    assert str(info.value).startswith("--kubernetes-version: unsupported Kubernetes version "
                                      "'1.35': kaudit supports v1.34.2, v1.99.0")
    with pytest.raises(ConfigError, match=r"^kubernetesVersion: unsupported"):
        explicit_version("latest", "kubernetesVersion")


@pytest.mark.parametrize(("recorded", "expected", "noticed"), [
    ("v1.99.0", MADE_UP, False),               # the exact release
    ("v1.34.2", "v1.34.2", False),
    ("v1.99.7", MADE_UP, True),                # another patch of a minor kaudit mirrors
    ("v1.99.0-rc.1", MADE_UP, False),          # a pre-release's suffix: the same patch
    ("v1.34.2-eks-4a6f1c2", "v1.34.2", False),  # a vendor's build
    ("1.99", MADE_UP, True),
])
def test_the_recorded_release_when_kaudit_mirrors_its_minor(
        second_release: KubernetesVersion, recorded: str, expected: str, noticed: bool) -> None:
    resolved = resolve_version(None, recorded, subject="trace 't' was recorded from")
    assert resolved.name == expected and resolved.origin == FROM_RECORDING
    assert bool(resolved.notices) == noticed
    if noticed:
        assert resolved.notices[0].startswith(f"trace 't' was recorded from Kubernetes "
                                              f"{recorded}: using {expected}")


@pytest.mark.parametrize(("recorded", "nearest"), [
    ("v1.29.3", "v1.34.2"),  # older than every supported release: the oldest
    ("v1.50.0", "v1.34.2"),  # between two: the newest before it
    ("v1.120.1", MADE_UP),   # newer than every supported release: the newest
])
def test_a_recorded_release_kaudit_does_not_mirror_gets_the_nearest_with_a_notice(
        second_release: KubernetesVersion, recorded: str, nearest: str) -> None:
    resolved = resolve_version(None, recorded, subject="trace 't' was recorded from")
    assert resolved.name == nearest and resolved.origin == FROM_RECORDING
    assert resolved.notices == (
        f"trace 't' was recorded from Kubernetes {recorded}, which kaudit does not mirror (it "
        f"supports v1.34.2, v1.99.0): using {nearest}, the nearest (--kubernetes-version to "
        "choose)",)


def test_without_a_recorded_release_the_default_is_the_fallback() -> None:
    unknown = resolve_version(None, None)
    assert unknown.version is versions.DEFAULT is versions.SUPPORTED[-1]
    assert unknown.origin == FROM_FALLBACK and unknown.notices == ()


def test_the_newest_supported_patch_mirrors_a_minor(monkeypatch: pytest.MonkeyPatch) -> None:
    older, newer = made_up_release("v1.99.1"), made_up_release("v1.99.10")
    monkeypatch.setattr(versions, "SUPPORTED", (V1_34_2, older, newer))
    assert mirrored_release("v1.99.3") is newer and mirrored_release("v1.99.1") is older
    assert mirrored_release("v1.98.1") is None and mirrored_release("garbage") is None


# -- the configuration is loaded as the release ---------------------------------------------


def _trace(engine: Engine, tmp_path: Path, release: str | None) -> TraceSummary:
    from kaudit.tracegen.builders import make_node, make_pod

    path = write_trace(tmp_path / f"t{release}.jsonl",
                       (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
                       (1.0, "ADDED", make_pod("p1").req(cpu="1").obj()))
    if release is not None:
        header = (b'{"ts": "2026-01-05T09:00:00Z", "type": "BOOKMARK", "object": {"apiVersion": '
                  b'"kaudit.io/v1", "kind": "Recording", "metadata": {"annotations": '
                  b'{"kaudit.io/kubernetes-version": "' + release.encode() + b'"}}}}\n')
        path.write_bytes(header + path.read_bytes())
    return get_trace(engine, ingest_trace(engine, [TraceInput(path)]).trace_id)


def test_a_trace_replays_as_the_release_it_was_recorded_from(
        engine: Engine, tmp_path: Path, second_release: KubernetesVersion) -> None:
    trace = _trace(engine, tmp_path, "v1.99.0")
    assert trace.kubernetes_version == "v1.99.0"
    resolved = resolve_config(trace, ConfigChoice())
    assert resolved.kubernetes_version is second_release and resolved.origin == FROM_DEFAULTS
    assert resolved.config.parallelism == 8  # the release's API defaults
    assert resolved.config.feature_gates.enabled("MadeUpGate")
    assert resolved.version_origin == FROM_RECORDING and resolved.notices == ()
    # --kubernetes-version wins, and the gates are that release's.
    pinned = resolve_config(trace, ConfigChoice(kubernetes_version="v1.34.2",
                                                feature_gates="SchedulerAsyncAPICalls=true"))
    assert pinned.kubernetes_version is V1_34_2 and pinned.config.parallelism == 16
    assert pinned.config.feature_gates.non_default() == {"SchedulerAsyncAPICalls": True}
    with pytest.raises(ConfigError, match="unrecognized feature gate: MadeUpGate"):
        resolve_config(trace, ConfigChoice(kubernetes_version="1.34",
                                           feature_gates="MadeUpGate=false"))


def test_an_unsupported_recorded_release_replays_as_the_nearest_and_says_so(
        engine: Engine, tmp_path: Path) -> None:
    trace = _trace(engine, tmp_path, "v1.20.15")
    assert trace.kubernetes_version == "v1.20.15"  # kept as the source says it
    resolved = resolve_config(trace, ConfigChoice())
    assert resolved.kubernetes_version is versions.SUPPORTED[0]
    (notice,) = resolved.notices
    assert notice.startswith(f"trace '{trace.name}' was recorded from Kubernetes v1.20.15, "
                             "which kaudit does not mirror")
    plain = resolve_config(_trace(engine, tmp_path, None), ConfigChoice())
    assert plain.kubernetes_version is versions.DEFAULT and plain.notices == ()
    assert plain.version_origin == FROM_FALLBACK


# -- gates carried to another release ---------------------------------------------------------


def test_gates_carry_to_another_release_as_overrides(second_release: KubernetesVersion) -> None:
    values = {name: spec.default for name, spec in V1_34_2.gates.items()}
    same, notices = carry_gates(values, V1_34_2, V1_34_2, "run 'r'")
    assert same.version is V1_34_2 and dict(same) == values and notices == ()
    on = carry_gates({**values, "SchedulerAsyncAPICalls": True}, V1_34_2, V1_34_2, "run 'r'")[0]
    assert on.overrides == {"SchedulerAsyncAPICalls": True}
    # A gate the run had that its release's table no longer holds is left out, not an error.
    kept, notices = carry_gates({**values, "Gone": True}, V1_34_2, V1_34_2, "run 'r'")
    assert kept.overrides == {} and notices == (
        "run 'r''s feature gate Gone=true is not a gate of v1.34.2: left out",)

    values["SchedulerAsyncAPICalls"] = True  # set away from v1.34.2's default
    carried, notices = carry_gates(values, V1_34_2, second_release, "run 'r'")
    assert carried.version is second_release and notices == ()
    assert carried.overrides == {"SchedulerAsyncAPICalls": True}
    assert carried.enabled("MadeUpGate")  # the target's default

    gone = replace(second_release, gates={n: s for n, s in second_release.gates.items()
                                          if n != "SchedulerAsyncAPICalls"})
    locked = replace(second_release, gates={**second_release.gates, "SchedulerAsyncAPICalls":
                                            versions.GateSpec(False, versions.GA, locked=True)})
    for target, why in ((gone, "is not a gate of v1.99.0"),
                        (locked, "is locked to false in v1.99.0")):
        left, notices = carry_gates(values, V1_34_2, target, "run 'r'")
        assert left.overrides == {}
        assert notices == (f"run 'r''s feature gate SchedulerAsyncAPICalls=true {why}: left "
                           "out",)


# -- what differs between releases ------------------------------------------------------------


def test_differences_are_computed_from_the_releases_data(
        second_release: KubernetesVersion) -> None:
    report = release_differences()
    assert report["default"] == report["fallback"] == "v1.34.2"
    oldest, newest = report["releases"]
    assert (oldest["name"], newest["name"]) == ("v1.34.2", MADE_UP)  # oldest first
    assert oldest["default"] and not newest["default"]
    assert oldest["previous"] is None and oldest["changes"] is None
    assert [c["key"] for c in oldest["ungatedChanges"]] == [
        c.key for c in V1_34_2.ungated_changes]
    assert "taint-toleration-reason-without-taint" in [c["key"]
                                                       for c in oldest["ungatedChanges"]]
    assert newest["previous"] == "v1.34.2"
    assert newest["gateCount"] == len(V1_34_2.gates) + 1 == len(second_release.gates)
    changes = newest["changes"]
    assert changes["gates"] == [
        {"gate": "DRAConsumableCapacity",
         "before": {"default": False, "stage": "ALPHA", "locked": False},
         "after": {"default": False, "stage": "BETA", "locked": False}},
        {"gate": "MadeUpGate", "before": None,
         "after": {"default": True, "stage": "BETA", "locked": False}}]
    assert changes["defaultPlugins"] == [{"plugin": "TaintToleration",
                                          "before": {"weight": 3, "position": 5},
                                          "after": {"weight": 5, "position": 5}}]
    assert changes["defaultPluginOrderChanged"] is False and changes["gatedPlugins"] == []
    assert changes["apiDefaults"] == [{"field": "parallelism", "before": 16, "after": 8}]
    assert newest["ungatedChanges"] == [{"key": "made-up-change",
                                         "summary": "a made-up behaviour change",
                                         "upstream": "PR #99999; pkg/scheduler/schedule_one.go"}]


def test_plugin_order_and_gated_plugins_are_differences(monkeypatch: pytest.MonkeyPatch) -> None:
    base = made_up_release()
    other = replace(base, name="v1.100.0",
                    default_multi_point=tuple(reversed(base.default_multi_point)),
                    gated_plugins=(versions.GatedPlugin(
                        "DynamicResourceAllocation", versions.DefaultPlugin("DynamicResources", 2),
                        before="DefaultPreemption"),),
                    api_defaults=replace(base.api_defaults, resources=(("cpu", 1),)))
    monkeypatch.setattr(versions, "SUPPORTED", (base, other))
    changes = release_differences()["releases"][1]["changes"]
    assert changes["defaultPluginOrderChanged"] is True
    assert changes["gatedPlugins"] == [{"gate": "DynamicResourceAllocation",
                                        "plugin": "DynamicResources",
                                        "before": {"weight": None, "before": "DefaultPreemption"},
                                        "after": {"weight": 2, "before": "DefaultPreemption"}}]
    assert changes["apiDefaults"] == [{"field": "resources",
                                       "before": [["cpu", 1], ["memory", 1]],
                                       "after": [["cpu", 1]]}]
