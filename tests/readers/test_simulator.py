"""kube-scheduler-simulator inputs: recorder JSON Lines and snapshot exports, with the
export's scheduler configuration stored and used by replay."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from click.testing import Result
from sqlalchemy import Engine, func, select

from kaudit.errors import ConfigError, TraceError
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.readers.simulator import read_records
from kaudit.readers.snapshot import read_snapshot
from kaudit.store.models import Trace

EXPORT = Path(__file__).parents[1] / "data" / "simulator" / "export.json"


def _object(kind: str, name: str, **body: Any) -> dict[str, Any]:
    api = {"PriorityClass": "scheduling.k8s.io/v1"}.get(kind, "v1")
    metadata = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"}
    if kind == "Pod":
        metadata["namespace"] = "default"
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **body}


def _records() -> list[dict[str, Any]]:
    node = _object("Node", "node-a", spec={}, status={
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}})
    pending = _object("Pod", "web-1", spec={"containers": [{
        "name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]},
        status={"phase": "Pending"})
    bound = copy.deepcopy(pending)
    bound["spec"]["nodeName"] = "node-a"
    bound["status"]["phase"] = "Running"
    return [
        {"time": "2025-04-28T10:00:00.123456789Z", "event": "Add", "resource": node},
        {"time": "2025-04-28T10:00:00.2Z", "event": "Add", "resource": pending},
        {"time": "2025-04-28T10:00:01Z", "event": "Update", "resource": bound},
        {"time": "2025-04-28T10:05:00Z", "event": "Delete", "resource": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "default"}}},
    ]


def _write(path: Path, docs: list[Any]) -> Path:
    path.write_bytes(b"".join((d if isinstance(d, bytes) else orjson.dumps(d)) + b"\n"
                              for d in docs))
    return path


def test_recorder_lines_become_watch_events(tmp_path: Path) -> None:
    stats = StreamStats()
    items = list(read_records(_write(tmp_path / "record.jsonl", _records()), stats))
    assert all(isinstance(i, WatchEvent) for i in items)
    events = [i for i in items if isinstance(i, WatchEvent)]
    assert [(e.type, e.kind, e.name) for e in events] == [
        ("ADDED", "Node", "node-a"), ("ADDED", "Pod", "web-1"), ("MODIFIED", "Pod", "web-1"),
        ("DELETED", "Pod", "web-1")]
    assert events[0].ts_us % 1_000_000 == 123456  # nanoseconds truncated to microseconds
    assert events[3].ts_us - events[2].ts_us == 299_000_000
    assert stats.format == "simulator-records" and stats.lines == 4


@pytest.mark.parametrize(("line", "reason"), [
    (b"not json", "invalid JSON"),
    (orjson.dumps({"type": "ADDED", "object": {}}), "not a simulator record"),
    (orjson.dumps({"time": "2025-04-28T10:00:02Z", "event": "Patch", "resource": {}}),
     "event: 'Patch' is not one of Add, Update, Delete"),
    (orjson.dumps({"event": "Add", "resource": {}}), "time: missing"),
    (orjson.dumps({"time": "10 o'clock", "event": "Add", "resource": {}}), "time: timestamp"),
    (orjson.dumps({"time": "2025-04-28T10:00:02Z", "event": "Add",
                   "resource": {"kind": "Pod", "metadata": {"name": "x"}}}),
     "resource.spec: a Pod needs a spec"),
])
def test_malformed_records_name_line_and_reason(tmp_path: Path, line: bytes,
                                                reason: str) -> None:
    path = _write(tmp_path / "record.jsonl", [*_records()[:2], line])
    rejected = [i for i in read_records(path, StreamStats()) if isinstance(i, Rejected)]
    assert [r.line for r in rejected] == [3]
    assert reason in rejected[0].reason


def test_records_ingest_all_or_nothing(engine: Engine, tmp_path: Path) -> None:
    path = _write(tmp_path / "record.jsonl", [*_records()[:2], b"{oops", *_records()[2:]])
    with pytest.raises(TraceError, match=r"record\.jsonl:3: invalid JSON"):
        ingest_trace(engine, [TraceInput(path)])
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Trace)) == 0
    good = _write(tmp_path / "good.jsonl", _records())
    result = ingest_trace(engine, [TraceInput(good)])
    assert result.events == 4 and result.sources[0]["format"] == "simulator-records"


def test_snapshot_export_objects_and_config() -> None:
    stats = StreamStats()
    events = [e for e in read_snapshot(EXPORT, 7, stats) if isinstance(e, WatchEvent)]
    # The importer's order: namespaces, priority classes, ..., nodes, pvs, pods.
    assert [e.kind for e in events] == ["Namespace", "PriorityClass", "Node", "Node", "Node",
                                        "Pod", "Pod", "Pod", "Pod"]
    assert all(e.ts_us == 7 and e.type == "ADDED" for e in events)
    assert events[1].object["apiVersion"] == "scheduling.k8s.io/v1"
    assert stats.format == "simulator-snapshot"
    config = stats.scheduler_config
    assert config is not None and config["kind"] == "KubeSchedulerConfiguration"
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"


def test_snapshot_export_in_yaml_with_a_bad_object(tmp_path: Path) -> None:
    doc = orjson.loads(EXPORT.read_bytes())
    doc["nodes"][2]["status"]["allocatable"]["cpu"] = "four"
    path = tmp_path / "export.yaml"
    path.write_text(yaml.safe_dump(doc))
    rejected = [e for e in read_snapshot(path, 0) if isinstance(e, Rejected)]
    assert [r.reason.split(":")[0] for r in rejected] == ["nodes[2].status.allocatable.cpu"]
    doc["pods"] = {"not": "a list"}
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(TraceError, match="pods: must be a list of Pod objects"):
        list(read_snapshot(path, 0))


def test_export_config_is_stored_and_used_by_replay(run_kaudit: Callable[..., Result]) -> None:
    ingested = run_kaudit("ingest", str(EXPORT), "--json")
    assert ingested.exit_code == 0, ingested.output
    report = json.loads(ingested.output)
    assert report["schedulerConfig"] is True
    trace = report["trace"]
    assert trace["sources"][0]["role"] == "snapshot"
    stored = trace["schedulerConfig"]
    assert stored["profiles"][0]["pluginConfig"][4]["args"]["scoringStrategy"]["type"] == \
        "MostAllocated"

    replayed = run_kaudit("replay", "export", "--name", "stored", "--json")
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.output)["config"] == "trace export: schedulerConfig"
    defaults = run_kaudit("replay", "export", "--name", "plain", "--defaults", "--json")
    assert json.loads(defaults.output)["config"] is None
    # MostAllocated packs the two batch pods with api-0 on node-1; defaults spread them.
    stored_nodes = {json.loads(run_kaudit("explain", "stored", p, "--json").output)["boundNode"]
                    for p in ("batch-x7k2p", "batch-9fjq2")}
    plain_nodes = {json.loads(run_kaudit("explain", "plain", p, "--json").output)["boundNode"]
                   for p in ("batch-x7k2p", "batch-9fjq2")}
    assert stored_nodes == {"node-1"} and stored_nodes != plain_nodes


def test_an_old_export_config_is_refused_unless_ignored(run_kaudit: Callable[..., Result],
                                                       engine: Engine, tmp_path: Path) -> None:
    doc = orjson.loads(EXPORT.read_bytes())
    # A 2022 export: removed plugins and fields kube-scheduler v1 no longer has.
    doc["schedulerConfig"]["healthzBindAddress"] = "0.0.0.0:10251"
    doc["schedulerConfig"]["profiles"][0]["plugins"]["filter"] = {
        "enabled": [{"name": "EBSLimits"}]}
    old = tmp_path / "old-export.json"
    old.write_bytes(orjson.dumps(doc))
    with pytest.raises(ConfigError) as caught:
        ingest_trace(engine, [TraceInput(old)])
    message = str(caught.value)
    assert "schedulerConfig" in message and "healthzBindAddress" in message
    assert "--no-config" in message
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Trace)) == 0
    result = run_kaudit("ingest", str(old), "--no-config", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["trace"]["schedulerConfig"] is None


def test_a_delete_record_gets_the_uid_its_object_had(run_kaudit: Callable[..., Result],
                                                     tmp_path: Path) -> None:
    path = _write(tmp_path / "record.jsonl", _records())
    events = [e for e in read_records(path, StreamStats()) if isinstance(e, WatchEvent)]
    assert events[-1].uid == "uid-web-1" == events[1].uid
    assert run_kaudit("ingest", str(path), "--name", "rec").exit_code == 0
    assert run_kaudit("replay", "rec", "--name", "r").exit_code == 0
    deletes = [json.loads(line) for line in
               run_kaudit("events", "r", "--kind", "delete").output.splitlines()]
    assert [(d["pod"], d["reason"]) for d in deletes] == [("default/web-1", "trace")]


def test_a_byte_order_mark_and_a_damaged_first_line(run_kaudit: Callable[..., Result],
                                                    tmp_path: Path) -> None:
    lines = [orjson.dumps(r) for r in _records()]
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")
    result = run_kaudit("ingest", str(bom), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["trace"]["events"] == 4
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(lines[0][:40] + b"\n" + b"\n".join(lines[1:]) + b"\n")
    result = run_kaudit("ingest", str(damaged), "--skip-invalid", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["trace"]["events"] == 3


def test_a_snapshot_may_carry_dra_objects_in_typed_lists(tmp_path: Path) -> None:
    """``deviceClasses``, ``resourceSlices``, ``resourceClaimTemplates`` and
    ``resourceClaims`` (not in the simulator's own export) are read like its other lists,
    before the pods."""
    from kaudit.tracegen.dra import claim, claim_spec, device_class, exact_request, gpu
    from kaudit.tracegen.dra import resource_slice as make_slice

    def bare(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    document = {
        "nodes": [{"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}],
        "deviceClasses": [bare(device_class("gpu.example.com", "true"))],
        "resourceSlices": [bare(make_slice("n1-gpus", "gpu.example.com", "n1",
                                           [gpu(0, "A100", "80Gi", "pci-0")], node="n1"))],
        "resourceClaims": [bare(claim("c", claim_spec(exact_request("gpu", "gpu.example.com"))))],
        "pods": [{"metadata": {"name": "p", "namespace": "default"},
                  "spec": {"containers": [{"name": "c"}],
                           "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}}],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document))
    events = [e for e in read_snapshot(path, 0) if isinstance(e, WatchEvent)]
    assert [e.object["kind"] for e in events] == [
        "Node", "DeviceClass", "ResourceSlice", "ResourceClaim", "Pod"]
    assert events[1].object["apiVersion"] == "resource.k8s.io/v1"
