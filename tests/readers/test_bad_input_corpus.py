"""The bad-input corpus: one file per ill-typed input a hostile or careless user could give,
in the watch-event and audit-log formats. Each is refused at ingest with exit code 2, a
``FILE:LINE: field: what is wrong`` message and the database exactly as it was, so that any
trace ingest accepts replays (see the issue on replays that crash on what ingest let in)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import database_contents

NODE = make_node("n1").capacity(cpu="4", memory="8Gi").obj()
POD = make_pod("p").req(cpu="1").obj()


def _pod(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    pod = copy.deepcopy(POD)
    change(pod)
    return pod


def _node(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    node = copy.deepcopy(NODE)
    change(node)
    return node


# name -> (the bad object, the expected message's field and reason)
OBJECTS: dict[str, tuple[dict[str, Any], str]] = {
    "labels-a-list": (_pod(lambda p: p["metadata"].update(labels=["a"])),
                      "object.metadata.labels: must be an object, not a list"),
    "label-value-a-number": (_pod(lambda p: p["metadata"].update(labels={"a": 1})),
                             "object.metadata.labels.a: must be a string"),
    "node-selector-a-list": (_pod(lambda p: p["spec"].update(nodeSelector=["zone"])),
                             "object.spec.nodeSelector: must be an object"),
    "node-selector-value-null-ok-but-number-not": (
        _pod(lambda p: p["spec"].update(nodeSelector={"zone": 3})),
        "object.spec.nodeSelector.zone: must be a string"),
    "tolerations-a-string": (_pod(lambda p: p["spec"].update(tolerations="all")),
                             "object.spec.tolerations: must be a list, not a string"),
    "toleration-a-string": (_pod(lambda p: p["spec"].update(tolerations=["all"])),
                            "object.spec.tolerations[0]: must be an object"),
    "taints-a-string": (_node(lambda n: n.setdefault("spec", {}).update(taints="all")),
                        "object.spec.taints: must be a list, not a string"),
    "priority-a-string": (_pod(lambda p: p["spec"].update(priority="high")),
                          "object.spec.priority: must be an integer, not a string"),
    "priority-beyond-int32": (_pod(lambda p: p["spec"].update(priority=2**31)),
                              "object.spec.priority: 2147483648 does not fit an int32"),
    "priority-huge": (_pod(lambda p: p["spec"].update(priority=10**30)),
                      "object.spec.priority: must be an integer"),
    "quantity-1e400": (_pod(lambda p: p["spec"]["containers"][0]["resources"]["requests"]
                            .update(cpu="1e400")),
                       "requests.cpu: quantity '1e400' is too large (beyond int64)"),
    "affinity-weight-a-string": (_pod(lambda p: p["spec"].update(affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "10"}]}})),
        "preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be an integer"),
    "spread-skew-a-float": (_pod(lambda p: p["spec"].update(topologySpreadConstraints=[
        {"maxSkew": 1.5, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}])),
        "topologySpreadConstraints[0].maxSkew: must be an integer, not 1.5"),
    "name-with-slash": (_pod(lambda p: p["metadata"].update(name="a/b")),
                        "object.metadata.name: 'a/b' may not be"),
    "name-with-nul": (_pod(lambda p: p["metadata"].update(name="a\x00b")),
                      "object.metadata.name: 'a\\x00b' contains a control character"),
    "name-too-long": (_pod(lambda p: p["metadata"].update(name="a" * 254)),
                      "object.metadata.name: longer than 253 characters"),
    "namespace-too-long": (_pod(lambda p: p["metadata"].update(namespace="n" * 64)),
                           "object.metadata.namespace: longer than 63 characters"),
}

TIMESTAMPS: dict[str, tuple[bytes, str]] = {
    "ts-1e308": (b"1e308", "ts: timestamp 1e+308 is out of range"),
    "ts-10e30": (b"1" + b"0" * 30, "is out of range"),
    "ts-milliseconds": (b"1767603600000", "(milliseconds or microseconds? ts is in seconds)"),
    "ts-offset-25h": (b'"2026-01-05T09:00:00+25:00"', "time-zone offset +25:00 is beyond"),
    "ts-offset-60m": (b'"2026-01-05T09:00:00-01:60"', "time-zone offset -01:60 is beyond"),
}


def _watch_line(obj: dict[str, Any], ts: bytes = b"1") -> bytes:
    return b'{"ts":' + ts + b',"type":"ADDED","object":' + json.dumps(obj).encode() + b"}\n"


def _audit_line(obj: dict[str, Any]) -> bytes:
    resource = {"Pod": "pods", "Node": "nodes"}[obj["kind"]]
    return json.dumps({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
        "auditID": f"id-{resource}", "stage": "ResponseComplete", "verb": "create",
        "requestURI": f"/api/v1/{resource}", "responseStatus": {"code": 201},
        "objectRef": {"resource": resource, "apiVersion": "v1",
                      "namespace": obj["metadata"].get("namespace")},
        "responseObject": obj, "stageTimestamp": "2026-01-05T09:00:01.000000Z"}).encode() + b"\n"


def _refused(run_kaudit: Callable[..., Result], engine: Engine, path: Path, line: int,
             reason: str) -> None:
    before = database_contents(engine)
    result = run_kaudit("ingest", str(path))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"kaudit: error: {path}:{line}: "), result.output
    assert reason in result.output, result.output
    assert "Traceback" not in result.output
    assert database_contents(engine) == before


@pytest.mark.parametrize("case", sorted(OBJECTS))
def test_ill_typed_watch_events_are_refused(case: str, run_kaudit: Callable[..., Result],
                                            engine: Engine, tmp_path: Path) -> None:
    obj, reason = OBJECTS[case]
    path = tmp_path / f"{case}.jsonl"
    first = _watch_line(NODE, b"0") if obj["kind"] == "Pod" else _watch_line(POD, b"0")
    path.write_bytes(first + _watch_line(obj))
    _refused(run_kaudit, engine, path, 2, reason)


@pytest.mark.parametrize("case", sorted(OBJECTS))
def test_ill_typed_audit_records_are_refused(case: str, run_kaudit: Callable[..., Result],
                                             engine: Engine, tmp_path: Path) -> None:
    obj, reason = OBJECTS[case]
    path = tmp_path / f"{case}.log"
    path.write_bytes(_audit_line(obj))
    _refused(run_kaudit, engine, path, 1, reason)


@pytest.mark.parametrize("case", sorted(TIMESTAMPS))
def test_timestamps_out_of_range_are_refused(case: str, run_kaudit: Callable[..., Result],
                                             engine: Engine, tmp_path: Path) -> None:
    ts, reason = TIMESTAMPS[case]
    path = tmp_path / f"{case}.jsonl"
    path.write_bytes(_watch_line(NODE, b"0") + _watch_line(POD, ts))
    _refused(run_kaudit, engine, path, 2, reason)


def test_the_corpus_objects_are_otherwise_valid(run_kaudit: Callable[..., Result],
                                                tmp_path: Path) -> None:
    """The good objects the corpus starts from ingest and replay: the refusals above come
    from the one field each case breaks."""
    path = tmp_path / "good.jsonl"
    path.write_bytes(_watch_line(NODE, b"0") + _watch_line(POD))
    assert run_kaudit("ingest", str(path), "--name", "good").exit_code == 0
    replayed = run_kaudit("replay", "good")
    assert replayed.exit_code == 0 and "1 pods scheduled" in replayed.output


def _audit_record(audit_id: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
            "auditID": audit_id, "stage": "ResponseComplete", "verb": "create",
            "requestURI": "/api/v1/nodes", "responseStatus": {"code": 201},
            "objectRef": {"resource": "nodes", "apiVersion": "v1"},
            "stageTimestamp": "2026-01-05T09:00:01.000000Z", **fields}


def _yaml_bomb() -> str:
    text, previous = "a: &a [x, x, x, x, x, x, x, x, x]\n", "a"
    for name in "bcdefghij":
        text += f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]\n"
        previous = name
    return text


BINDING = {"kind": "Binding", "apiVersion": "v1",
           "metadata": {"name": "p", "namespace": "default"}}
POD_RECORD = _audit_record(
    "pod", requestURI="/api/v1/namespaces/default/pods", responseObject=POD,
    objectRef={"resource": "pods", "apiVersion": "v1", "namespace": "default"})


def _binding_record(target: Any) -> dict[str, Any]:
    return _audit_record(
        "bind", requestURI="/api/v1/namespaces/default/pods/p/binding",
        objectRef={"resource": "pods", "subresource": "binding", "name": "p",
                   "apiVersion": "v1", "namespace": "default"},
        requestObject={**BINDING, "target": target},
        stageTimestamp="2026-01-05T09:00:02.000000Z")


# name -> (file name, content, line or None, expected reason)
FILES: dict[str, tuple[str, bytes, int | None, str]] = {
    "empty": ("empty.jsonl", b"", None, "the file holds no events: it is empty"),
    "audit-response-a-list": ("list.log", b"".join(json.dumps(r).encode() + b"\n" for r in (
        _audit_record("n", responseObject=NODE),
        _audit_record("m", responseObject=[NODE]))), 2,
        "responseObject: must be an object, not a list"),
    "audit-binding-target-a-number": ("bind.log", b"".join(
        json.dumps(r).encode() + b"\n" for r in (
            _audit_record("n", responseObject=NODE), POD_RECORD, _binding_record(7))), 3,
        "requestObject.target: must be an object, not a number"),
    "audit-binding-target-name-a-number": ("bind.log", b"".join(
        json.dumps(r).encode() + b"\n" for r in (
            _audit_record("n", responseObject=NODE), POD_RECORD,
            _binding_record({"kind": "Node", "name": 7}))), 3,
        "requestObject.target.name: must be a node's name, not a number"),
    "yaml-alias-bomb": ("bomb.yaml", ("apiVersion: v1\nkind: List\n" + _yaml_bomb()).encode(),
                        9, "expands to more than 2,000,000 nodes through its aliases"),
    "yaml-deep": ("deep.yaml", b"apiVersion: v1\nkind: List\nx: " + b"[" * 10_000
                  + b"]" * 10_000 + b"\n", None, "nested more than 200 levels deep"),
    "pretty-printed-watch-event": (
        "pretty.json", json.dumps({"type": "ADDED", "object": NODE}, indent=2).encode(),
        None, "this looks like a pretty-printed watch event"),
    "list-items-not-a-list": ("list.yaml", b"apiVersion: v1\nkind: List\nitems: 5\n", None,
                              "items: a List's items must be a list, not a number"),
    "alibaba-missing-column": ("nodes.csv", b"sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,2\n",
                               1, "an Alibaba openb node list without the column(s) model"),
}


@pytest.mark.parametrize("case", sorted(FILES))
def test_malformed_files_are_refused(case: str, run_kaudit: Callable[..., Result],
                                     engine: Engine, tmp_path: Path) -> None:
    name, content, line, reason = FILES[case]
    path = tmp_path / name
    path.write_bytes(content)
    before = database_contents(engine)
    result = run_kaudit("ingest", str(path))
    assert result.exit_code == 2, result.output
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert result.output.startswith(f"kaudit: error: {where}"), result.output
    assert reason in result.output and "Traceback" not in result.output
    assert database_contents(engine) == before


@pytest.mark.parametrize(("text", "reason"), [
    (_yaml_bomb(), "expands to more than 2,000,000 nodes"),
    ("a: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested more than 200 levels deep"),
])
def test_config_yaml_bombs_are_refused(text: str, reason: str,
                                       run_kaudit: Callable[..., Result],
                                       tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    result = run_kaudit("config", "show", str(path), db=False)
    assert result.exit_code == 2 and f"kaudit: error: {path}" in result.output, result.output
    assert reason in result.output
