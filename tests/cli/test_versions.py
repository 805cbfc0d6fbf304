"""``--kubernetes-version`` on every command that schedules, the release every run stores and
shows, and ``kaudit versions``. Several releases are tested with a made-up v1.99.0
(``tests.conftest.made_up_release``) that this process mirrors besides v1.34.2."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
import yaml
from click.testing import Result
from sqlalchemy import create_engine, select

from kaudit import versions
from kaudit.store.models import Run
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.versions import KubernetesVersion
from tests.conftest import MADE_UP, write_trace

Kaudit = Callable[..., Result]
UNSUPPORTED = ("--kubernetes-version: unsupported Kubernetes version 'v1.20': kaudit supports "
               "v1.34.2, v1.99.0")


def _small_trace(path: Path, release: str | None = None) -> Path:
    """Two nodes and three pods; with ``release``, the header ``kaudit record`` writes."""
    events = [(0.0, "ADDED", make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="10")
               .obj()) for i in range(2)]
    events += [(1.0 + i, "ADDED", make_pod(f"p{i}").req(cpu="1", memory="1Gi").obj())
               for i in range(3)]
    write_trace(path, *events)
    if release is not None:
        header = orjson.dumps({"ts": "2026-01-05T09:00:00Z", "type": "BOOKMARK", "object": {
            "apiVersion": "kaudit.io/v1", "kind": "Recording", "metadata": {"annotations": {
                "kaudit.io/kubernetes-version": release}}}})
        path.write_bytes(header + b"\n" + path.read_bytes())
    return path


def _stored_runs(db_url: str) -> dict[str, tuple[str | None, dict[str, object]]]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(select(Run.name, Run.kubernetes_version, Run.options))
            return {name: (release, orjson.loads(options)) for name, release, options in rows}
    finally:
        engine.dispose()


# -- kaudit versions ---------------------------------------------------------------------------


def test_versions_lists_the_releases_and_what_changed(run_kaudit: Kaudit,
                                                      second_release: KubernetesVersion) -> None:
    text = run_kaudit("versions", db=False)
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0] == "v1.34.2 (the default)"
    assert lines.index(MADE_UP) > 0  # oldest first
    assert "  changed since v1.34.2:" in lines
    assert "      MadeUpGate: absent → on (BETA)" in lines
    assert "      DRAConsumableCapacity: off (ALPHA) → off (BETA)" in lines
    assert "      TaintToleration: weight 3, position 5 → weight 5, position 5" in lines
    assert "      parallelism: 16 → 8" in lines
    assert "    made-up-change: a made-up behaviour change" in lines
    assert "      upstream: PR #99999; pkg/scheduler/schedule_one.go" in lines
    assert lines[-1].startswith("A replay mirrors the release --kubernetes-version names")
    report = json.loads(run_kaudit("versions", "--json", db=False).output)
    assert [r["name"] for r in report["releases"]] == ["v1.34.2", MADE_UP]
    assert report["releases"][1]["changes"]["apiDefaults"] == [
        {"field": "parallelism", "before": 16, "after": 8}]
    help_text = run_kaudit("versions", "--help", db=False).output
    assert "oldest first" in help_text and "--json" in help_text


def test_every_scheduling_command_takes_the_release(run_kaudit: Kaudit) -> None:
    for command in (["replay"], ["whatif"], ["compare"], ["check"], ["audit"],
                    ["config", "show"]):
        result = run_kaudit(*command, "--help", db=False)
        assert result.exit_code == 0
        assert "--kubernetes-version V" in result.output, command
        assert "v1.34.2" in result.output, command


@pytest.mark.parametrize("command", [
    ["replay", "t"], ["audit", "t"], ["compare", "t", "--config", "default"],
    ["check", "t.jsonl"], ["config", "show"]])
def test_an_unsupported_release_is_refused_naming_the_flag(
        run_kaudit: Kaudit, second_release: KubernetesVersion, command: list[str]) -> None:
    result = run_kaudit(*command, "--kubernetes-version", "v1.20",
                        db=command[0] not in ("config", "check"))
    assert result.exit_code == 2
    assert UNSUPPORTED in result.output and "Traceback" not in result.output


def test_whatif_and_config_show_mirror_the_release(run_kaudit: Kaudit, tmp_path: Path,
                                                   second_release: KubernetesVersion) -> None:
    shown = run_kaudit("config", "show", "--kubernetes-version", "1.99", db=False)
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("# Effective configuration of kube-scheduler defaults "
                                   "(Kubernetes v1.99.0)\n")
    assert yaml.safe_load(shown.output)["parallelism"] == 8
    default = yaml.safe_load(run_kaudit("config", "show", db=False).output)
    assert default["parallelism"] == 16
    refused = run_kaudit("config", "show", "--feature-gates", "MadeUpGate=true", db=False)
    assert refused.exit_code == 2 and "unrecognized feature gate: MadeUpGate" in refused.output

    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [
        make_node("n1").capacity(cpu="4", memory="8Gi").obj()]}))
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(make_pod("new").req(cpu="1").obj()))
    for args, release in (((), "v1.34.2"), (("--kubernetes-version", "v1.99.0"), MADE_UP)):
        answer = run_kaudit("whatif", "--cluster", str(cluster), "--pod", str(pod), "--json",
                            *args, db=False)
        assert answer.exit_code == 0, answer.output
        assert json.loads(answer.output)["kubernetesVersion"] == release
    text = run_kaudit("whatif", "--cluster", str(cluster), "--pod", str(pod),
                      "--kubernetes-version", "1.99", db=False)
    assert "Pod default/new, profile default-scheduler, 1 nodes, Kubernetes v1.99.0" \
        in text.output


# -- replay, runs, traces ----------------------------------------------------------------------


def test_a_replay_mirrors_the_traces_release_and_every_run_stores_it(
        run_kaudit: Kaudit, tmp_path: Path, db_url: str,
        second_release: KubernetesVersion) -> None:
    assert run_kaudit("ingest", str(_small_trace(tmp_path / "rec.jsonl", "v1.99.2"))
                      ).exit_code == 0
    assert run_kaudit("ingest", str(_small_trace(tmp_path / "plain.jsonl"))).exit_code == 0

    recorded = run_kaudit("replay", "rec", "--name", "as-recorded")
    assert recorded.exit_code == 0, recorded.output
    assert ("trace 'rec' was recorded from Kubernetes v1.99.2: using v1.99.0, the release of "
            "its minor kaudit mirrors") in recorded.output
    assert "run 'as-recorded' of trace 'rec' (Kubernetes v1.99.0): 3 pods scheduled" \
        in recorded.output
    pinned = run_kaudit("replay", "rec", "--name", "pinned", "--kubernetes-version", "1.34",
                        "--json")
    assert pinned.exit_code == 0, pinned.output
    assert json.loads(pinned.output)["kubernetesVersion"] == "v1.34.2"
    assert run_kaudit("replay", "plain", "--name", "plain").exit_code == 0

    stored = _stored_runs(db_url)
    assert {name: release for name, (release, _) in stored.items()} == {
        "as-recorded": MADE_UP, "pinned": "v1.34.2", "plain": "v1.34.2"}
    assert stored["as-recorded"][1]["kubernetesVersion"] == MADE_UP  # with its options
    assert stored["as-recorded"][1]["featureGates"]["MadeUpGate"] is True  # type: ignore[index]

    listing = run_kaudit("runs").output.splitlines()
    assert listing[0].split()[:6] == ["ID", "NAME", "TRACE", "STATUS", "SEED", "KUBERNETES"]
    assert listing[1].split()[1:6] == ["as-recorded", "rec", "complete", "0", MADE_UP]
    assert [r["kubernetesVersion"] for r in json.loads(run_kaudit("runs", "--json").output)] \
        == [MADE_UP, "v1.34.2", "v1.34.2"]
    one = run_kaudit("runs", "as-recorded")
    assert one.exit_code == 0, one.output
    assert "  Kubernetes: v1.99.0" in one.output.splitlines()
    assert json.loads(run_kaudit("runs", "pinned", "--json").output)["kubernetesVersion"] \
        == "v1.34.2"
    assert run_kaudit("runs", "nope").exit_code == 2

    traces = run_kaudit("traces").output
    assert "v1.99.2" in traces.splitlines()[1]
    detail = run_kaudit("traces", "rec").output
    assert "  recorded from: Kubernetes v1.99.2" in detail
    assert json.loads(run_kaudit("traces", "rec", "--json").output)["kubernetesVersion"] \
        == "v1.99.2"
    assert "recorded from" not in run_kaudit("traces", "plain").output


def test_a_trace_of_a_release_kaudit_does_not_mirror_replays_as_the_nearest(
        run_kaudit: Kaudit, tmp_path: Path) -> None:
    ingested = run_kaudit("ingest", str(_small_trace(tmp_path / "old.jsonl", "v1.29.3")))
    assert "  recorded from Kubernetes v1.29.3" in ingested.output
    result = run_kaudit("replay", "old")
    assert result.exit_code == 0, result.output
    supported = ", ".join(v.name for v in versions.SUPPORTED)
    oldest = versions.SUPPORTED[0].name
    assert "trace 'old' was recorded from Kubernetes v1.29.3, which kaudit does not mirror " \
           f"(it supports {supported}): using {oldest}, the nearest (--kubernetes-version to " \
           "choose)" in result.output
    assert f"(Kubernetes {oldest})" in result.output


# -- compare, check, audit ---------------------------------------------------------------------


def test_compare_two_releases_of_one_configuration(run_kaudit: Kaudit, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A twin of v1.34.2: the same configuration and gates, so only the release differs.
    twin = replace(versions.get("v1.34.2"), name=MADE_UP)
    monkeypatch.setattr(versions, "SUPPORTED", (versions.get("v1.34.2"), twin))
    trace = str(_small_trace(tmp_path / "t.jsonl"))
    text = run_kaudit("compare", trace, "--kubernetes-version", "1.34",
                      "--kubernetes-version", "1.99")
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[:2] == ["t-1: default, Kubernetes v1.34.2 (the baseline)",
                         "t-2: default, Kubernetes v1.99.0"]
    assert lines[2].startswith("t-1 (Kubernetes v1.34.2) → t-2 (Kubernetes v1.99.0): ")
    report = json.loads(run_kaudit("compare", "t", "--config", "default", "--format", "json",
                                   "--kubernetes-version", "1.99",
                                   "--kubernetes-version", "1.34").output)
    assert report["kubernetesVersions"] == {"a": MADE_UP, "b": "v1.34.2"}
    assert report["sides"] == {"a": {"run": "t-3", "config": "default, Kubernetes v1.99.0"},
                               "b": {"run": "t-4", "config": "default, Kubernetes v1.34.2"}}
    # The same configuration as two releases is not "the same configuration".
    assert report["sameConfiguration"] is False
    same = json.loads(run_kaudit("compare", "t", "--config", "default", "--config", "default",
                                 "--format", "json", "--kubernetes-version", "1.99").output)
    assert same["sameConfiguration"] is True
    assert same["kubernetesVersions"] == {"a": MADE_UP, "b": MADE_UP}
    diff = run_kaudit("diff", "t-1", "t-2").output
    assert diff.startswith("t-1 (Kubernetes v1.34.2) → t-2 (Kubernetes v1.99.0): ")
    assert "The runs mirrored different Kubernetes releases (v1.34.2 and v1.99.0)" in diff


@pytest.mark.parametrize(("args", "message"), [
    (("--config", "default", "--config", "default", "--kubernetes-version", "1.34",
      "--kubernetes-version", "1.99"), "give at most one --config"),
    (("--kubernetes-version", "1.99", "--kubernetes-version", "v1.99.0"),
     "--kubernetes-version v1.99.0 is given twice"),
    (("--kubernetes-version", "1.99"), "or two --kubernetes-version to compare releases"),
])
def test_compare_refuses_sides_it_cannot_tell_apart(run_kaudit: Kaudit,
                                                    second_release: KubernetesVersion,
                                                    args: tuple[str, ...], message: str) -> None:
    result = run_kaudit("compare", "t", *args)
    assert result.exit_code == 2 and message in result.output


def test_check_and_audit_judge_as_the_release(run_kaudit: Kaudit, tmp_path: Path,
                                              second_release: KubernetesVersion) -> None:
    trace = _small_trace(tmp_path / "t.jsonl")
    baseline = tmp_path / "baseline.json"
    assert run_kaudit("ingest", str(trace)).exit_code == 0
    assert run_kaudit("replay", "t", "--summary-out", str(baseline)).exit_code == 0
    assert json.loads(baseline.read_text())["kubernetes"] == "v1.34.2"
    checked = run_kaudit("check", str(trace), "--baseline", str(baseline), "--format", "json",
                         "--kubernetes-version", "1.99", db=False)
    assert checked.exit_code == 0, checked.output
    assert "the baseline was replayed as Kubernetes v1.34.2, the candidate as v1.99.0" \
        in checked.stderr
    assert json.loads(checked.stdout)["kubernetesVersions"] == {"a": "v1.34.2", "b": MADE_UP}
    plain = run_kaudit("check", str(trace), "--baseline", str(baseline), db=False)
    assert plain.exit_code == 0 and "the baseline was replayed" not in plain.output

    audited = run_kaudit("audit", "t", "--kubernetes-version", "1.99", "--json")
    assert audited.exit_code == 0, audited.output
    assert json.loads(audited.output)["kubernetesVersion"] == MADE_UP
    again = run_kaudit("audit", "--run", "t-2")
    assert "(configuration default, Kubernetes v1.99.0)" in again.output.splitlines()[0]
    refused = run_kaudit("audit", "--run", "t-2", "--kubernetes-version", "1.99")
    assert refused.exit_code == 2
    assert "--kubernetes-version only apply when auditing a TRACE" in refused.output


def test_a_sweep_check_takes_its_releases_from_the_spec(run_kaudit: Kaudit,
                                                        tmp_path: Path) -> None:
    result = run_kaudit("check", "--sweep", str(tmp_path / "s.yaml"), "--kubernetes-version",
                        "1.34", db=False)
    assert result.exit_code == 2
    assert "--kubernetes-version (a spec names releases with kubernetesVersion)" in result.output
