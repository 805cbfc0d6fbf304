"""Out-of-tree plugins: registered with --plugin MODULE:CLASS and enabled by configuration."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from kaudit.cli import cli
from kaudit.errors import ConfigError, InputError
from kaudit.scheduler.build import load
from kaudit.scheduler.registry import build_registry, load_plugin_class
from kaudit.tracegen.builders import make_node, make_pod

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NoFridays
      - name: PreferLabel
        weight: 5
"""


def test_plugins_from_the_command_line(tmp_path: Path) -> None:
    nodes = [make_node("resting").capacity(cpu="4").label("example.com/no-fridays", "true").obj(),
             make_node("plain").capacity(cpu="4").obj(),
             make_node("preferred").capacity(cpu="4").label("example.com/preferred", "").obj()]
    (tmp_path / "state.json").write_bytes(orjson.dumps({"kind": "List", "items": nodes}))
    (tmp_path / "pod.json").write_bytes(orjson.dumps(make_pod("p").req(cpu="1").obj()))
    (tmp_path / "config.yaml").write_text(CONFIG)
    result = CliRunner().invoke(cli, [
        "whatif", "--cluster", str(tmp_path / "state.json"), "--pod", str(tmp_path / "pod.json"),
        "--config", str(tmp_path / "config.yaml"), "--json",
        "--plugin", "tests.scheduler.example_plugins:NoFridays",
        "--plugin", "tests.scheduler.example_plugins:PreferLabel"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["nodes"]["resting"]["filter"]["NoFridays"] == {
        "code": "Unschedulable", "reasons": ["node(s) rest on Fridays"]}
    assert report["selectedNode"] == "preferred"
    assert report["nodes"]["preferred"]["score"]["PreferLabel"]["weighted"] == 500

    unknown = CliRunner().invoke(cli, [
        "whatif", "--cluster", str(tmp_path / "state.json"), "--pod", str(tmp_path / "pod.json"),
        "--config", str(tmp_path / "config.yaml")])
    assert unknown.exit_code == 2 and "NoFridays" in unknown.output


def test_bad_plugin_references() -> None:
    for reference, message in (("nomodule", "expected MODULE:CLASS"),
                               ("no.such.module:X", "cannot import"),
                               ("tests.scheduler.example_plugins:json", "not a subclass")):
        with pytest.raises(InputError, match=message):
            load_plugin_class(reference)
    assert "NoFridays" in build_registry(["tests.scheduler.example_plugins:NoFridays"])


RESTING = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      enabled: [{name: RestingNodes}]
  pluginConfig:
  - name: RestingNodes
    args: {maxPods: %s}
"""


def test_a_plugin_declares_its_args_and_events(tmp_path: Path) -> None:
    """The documented example: typed args (strictly decoded, defaulted, validated with a field
    path) and the cluster events it registers, all declared on the class."""
    reference = "tests.scheduler.example_plugins:RestingNodes"
    (tmp_path / "ok.yaml").write_text(RESTING % 2)
    config, registry = load(tmp_path / "ok.yaml", plugins=[reference])
    profile = config.profiles["default-scheduler"]
    assert profile.plugin_args["RestingNodes"] == {"label": "example.com/resting", "maxPods": 2}
    assert "RestingNodes" in profile.enabled("Filter")
    written = {c["name"]: c["args"] for c in profile.to_dict()["pluginConfig"]}
    assert written["RestingNodes"]["kind"] == "RestingNodesArgs"
    events = {e.event.name for e in registry["RestingNodes"]().events_to_register()}
    assert events == {"NodeAdd|UpdateNodeLabel", "PodDelete"}
    for value, message in (("-1", "maxPods: Invalid value: -1: must not be negative"),
                           ('"two"', "maxPods"), ("3000000000", "maxPods")):
        (tmp_path / "bad.yaml").write_text(RESTING % value)
        with pytest.raises(ConfigError, match=message):
            load(tmp_path / "bad.yaml", plugins=[reference])
