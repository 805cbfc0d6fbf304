"""``kaudit config show``, run under the root group's error handling."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner, Result

from kaudit import KUBERNETES_VERSION, versions
from kaudit.cli import KauditGroup
from kaudit.cli.config import config
from kaudit.config import FeatureGates
from tests.config.conftest import load_configuration
from tests.conftest import V1_34

from .test_load import REAL_WORLD


def run(*args: str) -> Result:
    root = KauditGroup("kaudit")
    root.add_command(config)
    return CliRunner().invoke(root, ["config", "show", *args])


def test_show_prints_the_defaults_as_yaml() -> None:
    result = run()
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# Effective configuration of kube-scheduler defaults "
                                    f"(Kubernetes {KUBERNETES_VERSION})\n")
    assert yaml.safe_load(result.output) == load_configuration(
        feature_gates=FeatureGates()).to_dict()


def test_show_a_file_as_json_with_feature_gates(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(REAL_WORLD)
    result = run(str(path), "--json", "--feature-gates", "StorageCapacityScoring=true",
                 "--kubernetes-version", V1_34)
    assert result.exit_code == 0, result.output
    gates = FeatureGates({"StorageCapacityScoring": True}, versions.get(V1_34))
    assert json.loads(result.output) == load_configuration(path, feature_gates=gates).to_dict()


def test_yaml_output_names_non_default_gates() -> None:
    result = run("--feature-gates", "DynamicResourceAllocation=false",
                 "--kubernetes-version", V1_34)
    assert "# feature gates: DynamicResourceAllocation=false\n" in result.output
    assert "DynamicResources" not in result.output


def test_errors_exit_with_code_2(tmp_path: Path) -> None:
    result = run("--feature-gates", "SidecarContainers=false", "--kubernetes-version", V1_34)
    assert result.exit_code == 2
    assert result.output == ("kaudit: error: --feature-gates: cannot set feature gate "
                             "SidecarContainers to false, feature is locked to true\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "parallelism: 0\n")
    result = run(str(bad))
    assert result.exit_code == 2
    assert result.output == (f"kaudit: error: {bad}: parallelism: Invalid value: 0: should be "
                             "an integer value greater than zero\n")


def test_show_warns_of_plugin_config_for_no_plugin(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                    "kind: KubeSchedulerConfiguration\n"
                    "profiles:\n- pluginConfig: [{name: ImageLocallity, args: {}}]\n")
    result = CliRunner().invoke(KauditGroup("kaudit", commands={"config": config}),
                                ["config", "show", str(path), "--json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # the warning stays off standard output
    assert result.stderr.startswith(f"kaudit: warning: {path}: profiles[0].pluginConfig[0]: ")
    assert 'did you mean "ImageLocality"?' in result.stderr
