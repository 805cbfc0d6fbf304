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
from hypothesis import HealthCheck, example, given, settings
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


# ----------------------------------------------------------------------------- every reader

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "sample.jsonl"
#: Hostile values spliced into real inputs: deep nesting, huge numbers, odd YAML tags.
HOSTILE_JSON = ["[" * 300 + "]" * 300, "{\"a\":" * 260 + "1" + "}" * 260, "9" * 25,
                "9" * 5000, "-" + "9" * 19, "1e400", "\"1e400\"", "-1", "null", "\"\"", "[]",
                "18446744073709551615", "1.5"]
HOSTILE_YAML = [*HOSTILE_JSON, "!!binary aGVsbG8=", "!!set {a: null}", "!!omap [a: 1]",
                ".inf", ".nan", "2026-01-01T00:00:00Z", "!!timestamp 2026-01-01", "&a [*a]",
                "0x" + "f" * 40, "1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20"]
HOSTILE_CELLS = ["9" * 5000, "9" * 25, "-1", "", "1e400", "abc", "1.5", "00000000001"]


def _real_lines() -> dict[str, list[str]]:
    """Small real inputs of every JSON reader: native and kubectl watch streams, simulator
    records (the sample's events as the recorder writes them), an audit log, a simulator
    export."""
    events = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:25]]
    events = [e for e in events if e["type"] != "BOOKMARK"]  # the sample's header
    verbs = {"ADDED": "Add", "MODIFIED": "Update", "DELETED": "Delete"}
    return {
        "watch.jsonl": [json.dumps(event) for event in events],
        "kubectl.jsonl": [json.dumps({"type": e["type"], "object": e["object"]})
                          for e in events],
        "records.jsonl": [json.dumps({"time": e["ts"], "event": verbs[e["type"]],
                                      "resource": e["object"]}) for e in events],
        "audit.log": (DATA / "audit" / "audit.log").read_text().splitlines(),
        "export.json": [(DATA / "simulator" / "export.json").read_text()],
    }


REAL = _real_lines()


def _splice_json(text: str, position: int, value: str) -> str:
    """``"zz": value`` added to the object opening at or after ``position``."""
    at = text.find("{", position)
    return text if at < 0 else f'{text[:at + 1]}"zz":{value},{text[at + 1:]}'


def _splice_value(text: str, position: int, value: str) -> str:
    """The JSON value after the first ``":`` at or after ``position`` replaced by ``value``."""
    at = text.find('":', position)
    if at < 0:
        return text
    end = at + 2
    while end < len(text) and text[end] not in ",}]":
        end += 1 if text[end] != '"' else max(text.find('"', end + 1) - end + 1, 1)
    return text[:at + 2] + value + text[end:]


def _ingest_then_replay(directory: str, files: list[Path], *options: str) -> None:
    db = f"sqlite:///{directory}/kaudit.db"
    ingested = _run("ingest", *map(str, files), "--name", "t", *options, "--db", db)
    assert ingested.exit_code in (0, 2), ingested.output
    if ingested.exit_code == 2:
        first = ingested.output.splitlines()[0]
        assert first.startswith(("kaudit: error: " + str(files[0].parent),
                                 "kaudit: error: --")), ingested.output
        return
    replayed = _run("replay", "t", "--json", "--db", db)
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.output)["status"] == "complete"


BOUNDED = settings(max_examples=12, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _inside(reader: str, key: str, value: str) -> tuple[int, int, str, str]:
    """An edit splicing ``value`` into the object after ``key`` on the first line holding it."""
    number = next(i for i, line in enumerate(REAL[reader]) if key in line)
    return number, REAL[reader][number].index(key) + len(key), "splice", value


EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6),
                          st.sampled_from(["splice", "value", "truncate"]),
                          st.sampled_from(HOSTILE_JSON)), min_size=1, max_size=3)


@BOUNDED
@given(reader=st.sampled_from(sorted(REAL)), edits=EDITS)
@example(reader="watch.jsonl", edits=[_inside("watch.jsonl", '"object":', HOSTILE_JSON[0])])
@example(reader="audit.log", edits=[_inside("audit.log", '"requestObject":', HOSTILE_JSON[1])])
@example(reader="export.json", edits=[_inside("export.json", '"pods":', HOSTILE_JSON[0])])
def test_any_mutation_of_a_real_json_input_ingests_and_replays_or_is_refused_cleanly(
        reader: str, edits: list[tuple[int, int, str, str]]) -> None:
    lines = list(REAL[reader])
    for line_at, position_at, how, value in edits:
        number = line_at % len(lines)
        line = lines[number]
        position = position_at % max(len(line), 1)
        if how == "truncate":
            lines[number] = line[:position]
        else:
            lines[number] = (_splice_json if how == "splice" else _splice_value)(
                line, position, value)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / reader
        path.write_text("\n".join(lines) + "\n")
        _ingest_then_replay(directory, [path])


SNAPSHOT_YAML = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, uid: n1, labels: {zone: a}}
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "10"}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: default, uid: p, creationTimestamp: 2026-01-01T00:00:00Z}
  spec:
    priority: 5
    containers:
    - name: c
      resources: {requests: {cpu: "1", memory: 1Gi}}
"""


@BOUNDED
@given(line=st.integers(3, SNAPSHOT_YAML.count("\n") - 1),
       value=st.sampled_from(HOSTILE_YAML), where=st.sampled_from(["value", "key", "item"]))
@example(line=7, value="!!binary aGVsbG8=", where="key")
@example(line=7, value="9" * 5000, where="key")
def test_any_mutation_of_a_yaml_snapshot_ingests_and_replays_or_is_refused_cleanly(
        line: int, value: str, where: str) -> None:
    lines = SNAPSHOT_YAML.splitlines()
    text = lines[line]
    indent = text[:len(text) - len(text.lstrip(" -"))]
    if where == "value" and ":" in text:
        lines[line] = text[:text.index(":") + 1] + " " + value
    elif where == "key":
        lines.insert(line, f"{indent}zz: {value}")
    else:
        lines.insert(3, f"- {value}")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "snapshot.yaml"
        path.write_text("\n".join(lines) + "\n")
        _ingest_then_replay(directory, [path], "--format", "auto")


ALIBABA_NODES = ["sn,cpu_milli,memory_mib,gpu,model", "openb-node-0000,64000,262144,2,P100",
                 "openb-node-0227,32000,262144,0,"]
ALIBABA_PODS = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                "creation_time,deletion_time,scheduled_time",
                "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0",
                "openb-pod-0040,8000,0,0,0,,BE,Pending,200,200,"]


@BOUNDED
@given(table=st.sampled_from(["nodes", "pods"]), row=st.integers(1, 2),
       column=st.integers(0, 10), value=st.sampled_from(HOSTILE_CELLS),
       step=st.sampled_from([None, "1", "1e300", "253402300799", "nan"]))
@example(table="pods", row=1, column=1, value="9" * 5000, step=None)
@example(table="pods", row=1, column=1, value="1", step="1e300")
def test_any_mutation_of_an_alibaba_trace_ingests_and_replays_or_is_refused_cleanly(
        table: str, row: int, column: int, value: str, step: str | None) -> None:
    nodes, pods = list(ALIBABA_NODES), list(ALIBABA_PODS)
    rows = nodes if table == "nodes" else pods
    cells = rows[row].split(",")
    cells[column % len(cells)] = value
    rows[row] = ",".join(cells)
    with tempfile.TemporaryDirectory() as directory:
        node_file, pod_file = Path(directory) / "nodes.csv", Path(directory) / "pods.csv"
        node_file.write_text("\n".join(nodes) + "\n")
        pod_file.write_text("\n".join(pods) + "\n")
        _ingest_then_replay(directory, [node_file, pod_file],
                            *(["--step", step] if step is not None else []))
