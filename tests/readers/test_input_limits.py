"""One set of input limits at every reader: nesting, integers, YAML tags and CLI numbers are
refused with ``FILE:LINE: field: reason`` and exit 2, never a traceback
(:mod:`kaudit.input_limits`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kaudit.cli import cli
from kaudit.input_limits import TOO_DEEP
from tests.data.audit.make_audit_log import event, node

WATCH_NODE = {"ts": 0, "type": "ADDED", "object": {
    "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}}


def _nested(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def _deep_watch(path: Path) -> None:
    doc = json.loads(json.dumps(WATCH_NODE))
    doc["object"]["metadata"]["annotations"] = {"deep": _nested(300)}  # type: ignore[index]
    path.write_text(json.dumps(doc) + "\n")


def _deep_audit(path: Path) -> None:
    created = node("n1", "a")
    created["metadata"]["annotations"] = {"deep": _nested(300)}
    path.write_text(json.dumps(event(1.0, "create", "nodes", name="n1", response=created,
                                     level="RequestResponse")) + "\n")


def _deep_simulator(path: Path) -> None:
    resource = dict(WATCH_NODE["object"], spec={"deep": _nested(300)})  # type: ignore[arg-type]
    path.write_text(json.dumps({"time": "2026-01-01T00:00:00Z", "event": "Add",
                                "resource": resource}) + "\n")


def _snapshot(item_yaml: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text("apiVersion: v1\nkind: List\nitems:\n" + item_yaml)
    return write


NODE_ITEM = "- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n"

# (file name, writer, what the refusal must say)
CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "watch-300-deep": ("deep.jsonl", _deep_watch,
                       "deep.jsonl:1: object.metadata.annotations.deep[0][0]"),
    "audit-300-deep": ("deep-audit.log", _deep_audit, "deep-audit.log:1: responseObject."),
    "simulator-300-deep": ("records.jsonl", _deep_simulator, "records.jsonl:1: resource.spec"),
    "snapshot-json-300-deep": ("list.json", lambda p: p.write_text(json.dumps(
        {"kind": "List", "items": [dict(WATCH_NODE["object"],  # type: ignore[arg-type]
                                        spec={"x": _nested(300)})]})),
        "list.json: items[0].spec.x[0]"),
    "yaml-binary-item": ("bin.yaml", _snapshot("- !!binary aGVsbG8=\n"),
                         "bin.yaml:4: invalid YAML: tag !!binary is not allowed"),
    "yaml-set-item": ("set.yaml", _snapshot("- !!set {a: null}\n"),
                      "set.yaml:4: invalid YAML: tag !!set is not allowed"),
    "yaml-5000-digits": ("big.yaml", _snapshot(NODE_ITEM + "  spec: {x: " + "9" * 5000 + "}\n"),
                         "big.yaml:7: invalid YAML: integer 9999999999…(5000 digits) is beyond "
                         "the 64-bit range"),
    "yaml-25-digits": ("big25.yaml", _snapshot(NODE_ITEM + "  spec: {x: " + "9" * 25 + "}\n"),
                       "big25.yaml: items[0].spec.x: integer 9999999999…(25 digits) is "
                       "beyond the 64-bit range"),
    "yaml-recursive-alias": ("loop.yaml", _snapshot(NODE_ITEM + "  spec: {x: &a [*a]}\n"),
                             "loop.yaml:7: invalid YAML: an alias refers to a node that "
                             "contains it"),
    "yaml-infinity": ("inf.yaml", _snapshot(NODE_ITEM + "  spec: {x: .inf}\n"),
                      "inf.yaml: items[0].spec.x: inf is not a finite number"),
}


@pytest.mark.parametrize("case", CASES)
def test_inputs_beyond_the_limits_are_refused_naming_file_line_and_field(
        case: str, tmp_path: Path) -> None:
    name, write, expected = CASES[case]
    path = tmp_path / name
    write(path)
    args = ["--snapshot", str(path)] if name.endswith((".yaml", ".json")) else [str(path)]
    result = CliRunner().invoke(cli, ["ingest", *args, "--db", f"sqlite:///{tmp_path}/k.db"],
                                catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"kaudit: error: {tmp_path}/{expected}"), result.output


def test_the_depth_refusal_says_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    _deep_watch(path)
    result = CliRunner().invoke(cli, ["ingest", str(path), "--db", f"sqlite:///{tmp_path}/k.db"])
    assert result.output.rstrip().endswith(TOO_DEEP), result.output


@pytest.mark.parametrize("step", ["1e300", "inf", "nan", "-1"])
def test_a_step_beyond_any_time_is_refused(step: str, tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({k: v for k, v in WATCH_NODE.items() if k != "ts"}) + "\n")
    result = CliRunner().invoke(cli, ["ingest", str(path), "--step", step,
                                      "--db", f"sqlite:///{tmp_path}/k.db"],
                                catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"kaudit: error: --step: {step} is out of range"), \
        result.output


def test_untimed_events_placed_beyond_the_year_9999_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    event_line = json.dumps({k: v for k, v in WATCH_NODE.items() if k != "ts"})
    path.write_text("".join(event_line.replace('"n1"', f'"n{i}"') + "\n" for i in range(3)))
    result = CliRunner().invoke(cli, ["ingest", str(path), "--step", "253402300799",
                                      "--db", f"sqlite:///{tmp_path}/k.db"],
                                catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"kaudit: error: {path}:3: ts: "), result.output


def _audit_line(**changes: Any) -> dict[str, Any]:
    doc = event(1.0, "create", "nodes", name="n1", response=node("n1", "a"),
                level="RequestResponse")
    doc.update(changes)
    return doc


@pytest.mark.parametrize(("changes", "reason"), [
    ({"apiVersion": "audit.k8s.io/v2"},
     "apiVersion: 'audit.k8s.io/v2' is not supported: kaudit reads audit.k8s.io/v1 "
     "audit events"),
    ({"stageTimestamp": 1767225600},
     "stageTimestamp: must be an RFC 3339 string (e.g. 2026-01-02T03:04:05.123456Z), not "
     "a number"),
])
def test_audit_events_of_another_version_or_with_a_numeric_time_are_refused(
        changes: dict[str, Any], reason: str, tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text(json.dumps(_audit_line()) + "\n" + json.dumps(_audit_line(**changes)) + "\n")
    result = CliRunner().invoke(cli, ["ingest", str(path), "--format", "audit",
                                      "--db", f"sqlite:///{tmp_path}/k.db"],
                                catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"kaudit: error: {path}:2: {reason}", result.output


def test_a_seed_beyond_int64_is_a_usage_error(tmp_path: Path) -> None:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\n")
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                    "openb-pod-0000,12000,16384,1,1000\n")
    result = CliRunner().invoke(cli, ["ingest", str(nodes), str(pods), "--seed", "1" + "0" * 27,
                                      "--db", f"sqlite:///{tmp_path}/k.db"],
                                catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--seed'" in result.output
