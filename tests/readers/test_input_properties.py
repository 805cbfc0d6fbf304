"""Property-based tests over the readers and the configuration loader: whatever a trace or a
configuration holds, kaudit answers exit 0 or a clean exit 2 (never a traceback), and any
trace that ingest accepts replays to a terminal status."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaudit.cli import cli
from kaudit.tracegen.builders import make_node, make_pod

NODE = make_node("n1").capacity(cpu="4", memory="8Gi").label("zone", "a").obj()
POD = (make_pod("p").req(cpu="1", memory="1Gi").label("app", "web")
       .node_selector(zone="a").obj())

# Every place replay reads, and a few around them.
PATHS: list[tuple[str, ...]] = [
    ("metadata",), ("metadata", "name"), ("metadata", "namespace"), ("metadata", "labels"),
    ("metadata", "labels", "app"), ("metadata", "uid"), ("metadata", "ownerReferences"),
    ("spec",), ("spec", "nodeSelector"), ("spec", "nodeSelector", "zone"),
    ("spec", "tolerations"), ("spec", "priority"), ("spec", "affinity"),
    ("spec", "topologySpreadConstraints"), ("spec", "containers"),
    ("spec", "containers", 0, "resources", "requests", "cpu"), ("spec", "nodeName"),
    ("spec", "schedulingGates"), ("spec", "volumes"), ("spec", "taints"),
    ("spec", "unschedulable"), ("status",), ("status", "allocatable"),
    ("status", "allocatable", "cpu"), ("status", "phase"), ("kind",),
]

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=12)
    | st.sampled_from(["1", "100m", "1e400", "a/b", "Exists", "NoSchedule", "x" * 300]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6)


def _set(obj: Any, path: tuple[str | int, ...], value: Any) -> None:
    for step in path[:-1]:
        if isinstance(obj, dict) and isinstance(step, str):
            obj = obj.setdefault(step, {})
        elif isinstance(obj, list) and isinstance(step, int) and step < len(obj):
            obj = obj[step]
        else:
            return
    if isinstance(obj, dict) and isinstance(path[-1], str):
        obj[path[-1]] = value


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(["node", "pod"]), st.sampled_from(PATHS),
                                  JSON_VALUES), min_size=1, max_size=3),
       ts=st.one_of(st.just(1), JSON_VALUES),
       event_type=st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "X"]))
def test_any_trace_is_refused_cleanly_or_replays_to_an_end(
        changes: list[tuple[str, tuple[str, ...], Any]], ts: Any, event_type: str) -> None:
    node, pod = copy.deepcopy(NODE), copy.deepcopy(POD)
    for which, path, value in changes:
        _set(node if which == "node" else pod, path, value)
    with tempfile.TemporaryDirectory() as directory:
        trace = Path(directory) / "trace.jsonl"
        try:
            lines = [json.dumps({"ts": 0, "type": "ADDED", "object": node}),
                     json.dumps({"ts": ts, "type": event_type, "object": pod})]
        except (TypeError, ValueError):
            return
        trace.write_text("\n".join(lines) + "\n")
        db = f"sqlite:///{directory}/kaudit.db"
        ingested = _run("ingest", str(trace), "--name", "t", "--db", db)
        assert ingested.exit_code in (0, 2), ingested.output
        if ingested.exit_code == 2:
            assert ingested.output.startswith(f"kaudit: error: {trace}"), ingested.output
            return
        replayed = _run("replay", "t", "--json", "--db", db)
        assert replayed.exit_code == 0, replayed.output
        assert json.loads(replayed.output)["status"] == "complete"


CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
              {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                  "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}}}]}]}
CONFIG_PATHS: list[tuple[str | int, ...]] = [
    ("apiVersion",), ("kind",), ("profiles",), ("profiles", 0, "schedulerName"),
    ("profiles", 0, "plugins"), ("profiles", 0, "pluginConfig"),
    ("profiles", 0, "pluginConfig", 0, "args"),
    ("profiles", 0, "pluginConfig", 0, "args", "scoringStrategy", "type"),
    ("profiles", 0, "pluginConfig", 0, "args", "scoringStrategy", "resources"),
    ("percentageOfNodesToScore",), ("podInitialBackoffSeconds",), ("podMaxBackoffSeconds",),
    ("extenders",),
]


@settings(max_examples=200, deadline=None)
@given(changes=st.lists(st.tuples(st.sampled_from(CONFIG_PATHS), JSON_VALUES), max_size=3),
       raw=st.one_of(st.none(), st.text(max_size=80)))
def test_any_configuration_is_loaded_or_refused_cleanly(
        changes: list[tuple[tuple[str | int, ...], Any]], raw: str | None) -> None:
    config = copy.deepcopy(CONFIG)
    for path, value in changes:
        _set(config, path, value)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        try:
            path.write_text(raw if raw is not None else json.dumps(config))
        except UnicodeEncodeError:
            return
        result = _run("config", "show", str(path))
        assert result.exit_code in (0, 2), result.output
        if result.exit_code == 2:
            assert result.output.startswith(f"kaudit: error: {path}"), result.output
