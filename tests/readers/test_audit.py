"""Kubernetes audit logs as watch events: the conversion rules, what is left out and why,
malformed lines, merged and rotated files, and an audit log ingested and replayed."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import Result
from sqlalchemy import Engine, func, select

from kaudit.errors import TraceError
from kaudit.readers.audit import read_audit
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.store.models import Trace
from tests.data.audit.make_audit_log import build, event, node, pod

AUDIT_LOG = Path(__file__).parents[1] / "data" / "audit" / "audit.log"


def _read(*paths: Path) -> tuple[list[WatchEvent], list[Rejected], list[StreamStats]]:
    stats = [StreamStats() for _ in paths]
    events, rejected = [], []
    for _, item in read_audit(list(paths), stats):
        (rejected if isinstance(item, Rejected) else events).append(item)
    return events, rejected, stats


def _write(path: Path, docs: list[Any]) -> Path:
    path.write_bytes(b"".join((d if isinstance(d, bytes) else orjson.dumps(d)) + b"\n"
                              for d in docs))
    return path


def _summary(events: list[WatchEvent]) -> list[tuple[str, str, str]]:
    return [(e.type, e.kind, e.name) for e in events]


def test_the_fixture_is_what_its_builder_makes() -> None:
    assert AUDIT_LOG.read_bytes() == b"".join(orjson.dumps(e) + b"\n" for e in build())


def test_realistic_audit_log_becomes_the_watch_events_a_watcher_would_see() -> None:
    events, rejected, [stats] = _read(AUDIT_LOG)
    assert rejected == []
    assert _summary(events) == [
        ("ADDED", "Node", "node-0"), ("ADDED", "Node", "node-1"),
        ("ADDED", "PriorityClass", "batch-low"), ("ADDED", "PodDisruptionBudget", "web"),
        ("ADDED", "Pod", "web-7d4b9c-xk2pq"), ("ADDED", "Pod", "web-7d4b9c-m9z7d"),
        ("MODIFIED", "Pod", "web-7d4b9c-xk2pq"), ("MODIFIED", "Pod", "web-7d4b9c-m9z7d"),
        ("MODIFIED", "Pod", "web-7d4b9c-xk2pq"),  # the kubelet's status patch
        ("MODIFIED", "Node", "node-0"),  # allocatable changed (the heartbeat is left out)
        ("MODIFIED", "Node", "node-1"),  # cordoned
        ("MODIFIED", "Pod", "web-7d4b9c-xk2pq"),  # graceful deletion starts
        ("DELETED", "Pod", "web-7d4b9c-xk2pq"),  # the kubelet's final delete
    ]
    by_line = {e.line: e for e in events}
    assert [e.line for e in events] == sorted(by_line)
    created, bound, running = [e for e in events if e.name == "web-7d4b9c-xk2pq"][:3]
    # Created by a controller with generateName: the name and uid come from the response.
    assert created.namespace == "shop" and created.uid == "uid-web-0"
    assert "nodeName" not in created.object["spec"]
    # pods/binding at level Request: the node from the request's target.
    assert bound.object["spec"]["nodeName"] == "node-1"
    # ... and the PodScheduled condition the binding subresource sets.
    assert bound.object["status"] == {
        "phase": "Pending", "qosClass": "Burstable",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": "2026-11-02T09:00:10Z"}]}
    # The strategic merge patch applied to the bound pod.
    assert running.object["spec"]["nodeName"] == "node-1"
    assert running.object["status"]["phase"] == "Running"
    # The kubelet's conditions as its strategic merge patch lists them, then the binding's.
    assert [c["type"] for c in running.object["status"]["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    allocatable = next(e for e in events if e.name == "node-0" and e.type == "MODIFIED")
    assert allocatable.object["status"]["allocatable"]["memory"] == "15Gi"
    assert allocatable.object["status"]["allocatable"]["cpu"] == "4"
    cordoned = next(e for e in events if e.name == "node-1" and e.type == "MODIFIED")
    assert cordoned.object["spec"]["unschedulable"] is True
    assert events[-1].ts_us - events[-2].ts_us == 25_000_000
    assert {e.uid for e in events if e.name == "web-7d4b9c-xk2pq"} == {"uid-web-0"}

    dropped = {reason: count for reason, (count, _) in stats.dropped.items()}
    assert dropped == {
        "stage RequestReceived: only ResponseComplete is replayed": 1,
        "read request (get, list, watch)": 3,
        "resource leases.coordination.k8s.io: not replayed": 1,
        "failed request (code 409)": 1,
        "dry run": 1,
        "resource configmaps: not replayed": 1,
        "patch pods logged without its object (level Metadata): log it at level Request or "
        "RequestResponse": 1,
        "node status heartbeat: nothing the scheduler reads changed": 1,
    }
    first_read = stats.dropped["read request (get, list, watch)"][1]
    assert json.loads(AUDIT_LOG.read_text().splitlines()[first_read - 1])["verb"] == "get"
    assert stats.format == "audit" and stats.lines == 23


def _pod_created_at_request_level(t: float) -> dict[str, Any]:
    body = pod("batch-1", "1", "1Gi", uid="ignored")
    body["metadata"] = {"name": "batch-1", "namespace": "shop"}
    body.pop("status")
    return event(t, "create", "pods", name="batch-1", namespace="shop", level="Request",
                 request=body)


def test_objects_keep_one_uid_when_some_records_lack_it(tmp_path: Path) -> None:
    full = pod("batch-1", "1", "1Gi", uid="real-uid")
    full["spec"]["nodeName"] = "node-0"
    log = _write(tmp_path / "audit.log", [
        _pod_created_at_request_level(1),
        event(2, "create", "pods", name="batch-1", namespace="shop", subresource="binding",
              request={"kind": "Binding", "apiVersion": "v1",
                       "metadata": {"name": "batch-1"}, "target": {"name": "node-0"}}),
        event(3, "update", "pods", name="batch-1", namespace="shop", subresource="status",
              level="RequestResponse", request=full, response=full),
    ])
    events, rejected, _ = _read(log)
    assert not rejected
    uids = {e.uid for e in events}
    assert len(uids) == 1 and next(iter(uids)).startswith("audit-")
    assert [e.object["spec"].get("nodeName") for e in events] == [None, "node-0", "node-0"]
    assert events[0].object["kind"] == "Pod" and events[0].object["apiVersion"] == "v1"


def test_request_level_update_patch_and_json_patch(tmp_path: Path) -> None:
    updated = pod("batch-1", "2", "1Gi", uid="u")
    updated["metadata"]["labels"] = {"app": "batch", "tier": "low"}
    log = _write(tmp_path / "audit.log", [
        event(1, "create", "pods", name="batch-1", namespace="shop", level="RequestResponse",
              request=pod("batch-1", "1", "1Gi", uid="u"),
              response=pod("batch-1", "1", "1Gi", uid="u")),
        event(2, "update", "pods", name="batch-1", namespace="shop", request=updated),
        event(3, "patch", "pods", name="batch-1", namespace="shop",
              request={"metadata": {"labels": {"tier": None, "team": "data"}}}),
        event(4, "patch", "pods", name="batch-1", namespace="shop",
              request=[{"op": "add", "path": "/metadata/annotations",
                        "value": {"note": "json patch"}}]),
        event(5, "patch", "pods", name="batch-1", namespace="shop",
              request=[{"op": "remove", "path": "/spec/no-such-field"}]),
        event(6, "patch", "pods", name="unknown", namespace="shop",
              request={"metadata": {"labels": {"a": "b"}}}),
    ])
    events, rejected, [stats] = _read(log)
    assert not rejected
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED"]
    assert events[1].object["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "2"
    assert events[2].object["metadata"]["labels"] == {"app": "batch", "team": "data"}
    assert events[3].object["metadata"]["annotations"] == {"note": "json patch"}
    assert events[3].object["metadata"]["labels"] == {"app": "batch", "team": "data"}
    assert set(stats.dropped) == {
        "patch could not be applied to the last known pods",
        "patch of pods not seen before, logged without the result: log it at level "
        "RequestResponse, or give the state at the start with --snapshot"}


def test_deletions_graceful_finalizers_and_collections(tmp_path: Path) -> None:
    bound = pod("web-1", "1", "1Gi", uid="u1")
    bound["spec"]["nodeName"] = "node-0"
    unbound = pod("web-2", "1", "1Gi", uid="u2")
    held = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "shop", "uid": "u3",
                         "finalizers": ["kubernetes.io/pvc-protection"]},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    log = _write(tmp_path / "audit.log", [
        event(1, "create", "pods", namespace="shop", level="RequestResponse",
              request=bound, response=bound),
        event(1.5, "create", "pods", namespace="shop", level="RequestResponse",
              request=unbound, response=unbound),
        event(1.7, "create", "persistentvolumeclaims", namespace="shop",
              level="RequestResponse", request=held, response=held),
        # Level Request, no response: a bound pod deleted without gracePeriodSeconds: 0.
        event(2, "delete", "pods", name="web-1", namespace="shop",
              request={"kind": "DeleteOptions", "apiVersion": "v1"}),
        event(3, "delete", "pods", name="web-1", namespace="shop",
              request={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}),
        # An unbound pod goes at once.
        event(4, "delete", "pods", name="web-2", namespace="shop", level="Metadata"),
        # Finalizers left: terminating, then gone with the collection.
        event(5, "delete", "persistentvolumeclaims", name="data", namespace="shop",
              level="RequestResponse",
              response={**held, "metadata": {**held["metadata"],
                                             "deletionTimestamp": "2026-11-02T09:00:05Z"}}),
        # A collection deleted: the response lists the objects as they were before.
        event(6, "deletecollection", "persistentvolumeclaims", namespace="shop",
              level="RequestResponse",
              response={"kind": "PersistentVolumeClaimList", "apiVersion": "v1",
                        "items": [held]}),
        # The protection controller removes the last finalizer: the claim is gone.
        event(6.5, "patch", "persistentvolumeclaims", name="data", namespace="shop",
              request={"metadata": {"$deleteFromPrimitiveList/finalizers": [
                  "kubernetes.io/pvc-protection"]}}),
        event(7, "deletecollection", "pods", namespace="shop", level="Metadata"),
    ])
    events, rejected, [stats] = _read(log)
    assert not rejected
    assert _summary(events)[3:] == [
        ("MODIFIED", "Pod", "web-1"), ("DELETED", "Pod", "web-1"),
        ("MODIFIED", "Pod", "web-2"), ("DELETED", "Pod", "web-2"),
        ("MODIFIED", "PersistentVolumeClaim", "data"),
        ("MODIFIED", "PersistentVolumeClaim", "data"),
        ("DELETED", "PersistentVolumeClaim", "data")]
    terminating = events[3].object["metadata"]
    assert terminating["deletionGracePeriodSeconds"] == 30
    # Received at 09:00:01.996 (stamped 4 ms before it was logged), plus 30 s, in whole
    # seconds as metav1.Time is written.
    assert terminating["deletionTimestamp"] == "2026-11-02T09:00:31Z"
    assert events[5].object["spec"]["containers"]  # the last known object, not a stub
    assert list(stats.dropped) == [
        "deletecollection logged without the deleted objects: log it at level RequestResponse"]


def test_files_are_merged_by_time_whatever_their_order(tmp_path: Path) -> None:
    lines = AUDIT_LOG.read_bytes().splitlines(keepends=True)
    newer = tmp_path / "audit.log"
    newer.write_bytes(b"".join(lines[12:]))
    older = tmp_path / "audit-2026-11-02T09-00-12.000.log.gz"
    older.write_bytes(gzip.compress(b"".join(lines[:12])))
    merged, rejected, stats = _read(newer, older)
    whole, _, _ = _read(AUDIT_LOG)
    assert not rejected
    assert [(e.ts_us, e.type, e.name) for e in merged] == [
        (e.ts_us, e.type, e.name) for e in whole]
    assert sum(s.dropped_count for s in stats) == 10


def test_events_slightly_out_of_order_are_reordered(tmp_path: Path) -> None:
    a = event(10.2, "create", "nodes", name="late", level="RequestResponse",
              response=node("late", "z"), request=node("late", "z"))
    b = event(10.0, "create", "nodes", name="early", level="RequestResponse",
              response=node("early", "z"), request=node("early", "z"))
    events, _, _ = _read(_write(tmp_path / "audit.log", [a, b]))
    assert [e.name for e in events] == ["early", "late"]
    assert [e.line for e in events] == [2, 1]


@pytest.mark.parametrize(("line", "reason"), [
    (b"{not json", "invalid JSON"),
    (orjson.dumps({"type": "ADDED", "object": {}}), "a watch event, not an audit event"),
    (orjson.dumps({"kind": "Event", "apiVersion": "v1"}), "apiVersion must be audit.k8s.io/v1"),
    (orjson.dumps({"kind": "Policy", "apiVersion": "audit.k8s.io/v1"}),
     "kind: expected Event or EventList"),
    (orjson.dumps({**event(1, "create", "nodes", name="n", level="RequestResponse",
                           response=node("n", "z")), "stageTimestamp": "yesterday"}),
     "stageTimestamp: timestamp 'yesterday' is not RFC 3339"),
    (orjson.dumps(event(1, "create", "nodes", name="n", level="RequestResponse",
                        response=node("n", "z") | {"status": {"allocatable": {"cpu": "lots"}}})),
     "create nodes: object.status.allocatable.cpu: invalid quantity 'lots'"),
])
def test_malformed_lines_are_rejected_with_line_and_reason(tmp_path: Path, line: bytes,
                                                           reason: str) -> None:
    good = AUDIT_LOG.read_bytes().splitlines()[0]
    log = _write(tmp_path / "audit.log", [good, line])
    events, rejected, _ = _read(log)
    assert len(events) == 1
    assert [r.line for r in rejected] == [2]
    assert reason in rejected[0].reason


def test_event_lists_from_the_webhook_backend_are_read(tmp_path: Path) -> None:
    items = build()[:3]
    log = _write(tmp_path / "batch.json", [{"kind": "EventList", "apiVersion": "audit.k8s.io/v1",
                                            "items": items}])
    events, rejected, _ = _read(log)
    assert not rejected and [e.name for e in events] == ["node-0", "node-1", "batch-low"]


def test_ingest_audit_log_all_or_nothing(engine: Engine, tmp_path: Path) -> None:
    lines = AUDIT_LOG.read_bytes().splitlines()
    broken = _write(tmp_path / "audit.log", [*lines[:10], b'{"kind": "Event"', *lines[10:]])
    with pytest.raises(TraceError) as caught:
        ingest_trace(engine, [TraceInput(broken, format="audit")])
    assert str(caught.value).startswith(f"{broken}:11: invalid JSON")
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Trace)) == 0

    result = ingest_trace(engine, [TraceInput(broken, format="audit")], skip_invalid=True)
    assert result.events == 13 and result.rejected == 1 and result.dropped == 10


def test_ingest_and_replay_an_audit_log(run_kaudit: Callable[..., Result]) -> None:
    ingested = run_kaudit("ingest", str(AUDIT_LOG), "--name", "prod", "--json")
    assert ingested.exit_code == 0, ingested.output
    report = json.loads(ingested.output)
    assert report["trace"]["sources"][0]["format"] == "audit"
    assert report["dropped"] == 10 and report["trace"]["events"] == 13
    shown = run_kaudit("traces", "prod")
    assert "left out (valid records with nothing to replay)" in shown.output
    assert "failed request (code 409) (first at" in shown.output

    replayed = run_kaudit("replay", "prod", "--name", "r", "--json")
    assert replayed.exit_code == 0, replayed.output
    story = json.loads(run_kaudit("explain", "r", "shop/web-7d4b9c-m9z7d", "--json").output)
    assert story["recordedNode"] == "node-0"
    assert story["boundNode"] in ("node-0", "node-1")


def test_format_is_told_from_the_first_line(run_kaudit: Callable[..., Result]) -> None:
    result = run_kaudit("ingest", str(AUDIT_LOG), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["trace"]["sources"][0]["format"] == "audit"


def test_upstream_graceful_delete_rules_and_recreated_names(tmp_path: Path) -> None:
    done = pod("job-1", "1", "1Gi", uid="j1")
    done["spec"]["nodeName"] = "node-0"
    done["status"] = {"phase": "Succeeded"}
    quick = pod("quick", "1", "1Gi", uid="q1")
    quick["spec"].update(nodeName="node-0", terminationGracePeriodSeconds=0)
    first = pod("db-0", "1", "1Gi", uid="db-a")
    second = pod("db-0", "1", "1Gi", uid="db-b")
    log = _write(tmp_path / "audit.log", [
        *(event(1 + i, "create", "pods", namespace="shop", level="RequestResponse",
                request=p, response=p) for i, p in enumerate((done, quick, first))),
        event(5, "delete", "pods", name="job-1", namespace="shop"),  # finished: at once
        event(6, "delete", "pods", name="quick", namespace="shop"),  # no grace period
        # db-0's deletion is missing from the log; a new db-0 appears.
        event(7, "create", "pods", namespace="shop", level="RequestResponse",
              request=second, response=second),
    ])
    events, rejected, _ = _read(log)
    assert not rejected
    assert [(e.type, e.name, e.uid) for e in events[3:]] == [
        # A pod's deletion always writes its deletionTimestamp first (BeforeDelete), then
        # deletes it at once when the grace period is 0.
        ("MODIFIED", "job-1", "j1"), ("DELETED", "job-1", "j1"),
        ("MODIFIED", "quick", "q1"), ("DELETED", "quick", "q1"),
        ("DELETED", "db-0", "db-a"), ("ADDED", "db-0", "db-b")]


def test_snapshot_objects_are_known_to_the_log(engine: Engine, tmp_path: Path) -> None:
    running = pod("old", "1", "1Gi", uid="u-old")
    running["spec"]["nodeName"] = "node-0"
    state = tmp_path / "state.json"
    state.write_bytes(orjson.dumps({"kind": "List", "items": [node("node-0", "z"), running]}))
    log = _write(tmp_path / "audit.log", [
        event(5, "patch", "pods", name="old", namespace="shop", subresource="status",
              request={"status": {"phase": "Running"}}),
        event(6, "delete", "pods", name="old", namespace="shop",
              request={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}),
    ])
    result = ingest_trace(engine, [TraceInput(state, "snapshot"), TraceInput(log)])
    assert [s["events"] for s in result.sources] == [2, 3]
    assert result.dropped == 0
    from kaudit.store.traces import iter_events

    stored = list(iter_events(engine, result.trace_id))
    assert [(e.type, e.name) for e in stored] == [
        ("ADDED", "node-0"), ("ADDED", "old"), ("MODIFIED", "old"), ("MODIFIED", "old"),
        ("DELETED", "old")]
    assert stored[-1].object["metadata"]["uid"] == "u-old"
    assert stored[0].ts_us == stored[2].ts_us  # the snapshot moved to the log's start


def test_a_damaged_file_does_not_stop_the_others(tmp_path: Path) -> None:
    lines = AUDIT_LOG.read_bytes()
    good = tmp_path / "a.log"
    good.write_bytes(lines)
    damaged = tmp_path / "b.log.gz"
    damaged.write_bytes(gzip.compress(lines)[:-30])
    events, rejected, _ = _read(good, damaged)
    assert len(events) >= 13
    assert any("gzip" in r.reason for r in rejected)


def test_event_list_items_need_no_type_and_bad_field_types_are_rejected(
        tmp_path: Path) -> None:
    items = [{k: v for k, v in e.items() if k not in ("kind", "apiVersion")}
             for e in build()[:2]]
    bad = {**build()[2], "verb": ["create"]}
    log = _write(tmp_path / "batch.log", [
        {"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": items}, bad])
    events, rejected, _ = _read(log)
    assert [e.name for e in events] == ["node-0", "node-1"]
    assert [(r.line, r.reason) for r in rejected] == [(2, "verb: must be a string")]


def _namespace_created(**fields: Any) -> dict[str, Any]:
    created = event(1, "create", "namespaces", name="team", level="RequestResponse",
                    response={"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": "team"}})
    return {**created, **fields}


@pytest.mark.parametrize(("fields", "reason"), [
    ({"responseStatus": {"code": "500"}}, "responseStatus.code: must be an integer, not '500'"),
    ({"responseStatus": {"code": 404.5}}, "responseStatus.code: must be an integer, not 404.5"),
    ({"responseStatus": {"code": 1e30}}, "responseStatus.code: must be an integer"),
    ({"responseStatus": {"code": 2**32 + 500}}, "responseStatus.code: must be an int32"),
    ({"responseStatus": {"code": True}}, "responseStatus.code: must be an integer"),
    ({"requestReceivedTimestamp": 1767603600}, "requestReceivedTimestamp: must be an RFC 3339"),
    ({"requestReceivedTimestamp": "soon"}, "requestReceivedTimestamp: timestamp 'soon'"),
    ({"level": "Bogus"}, "level: must be one of None, Metadata, Request, RequestResponse, "
                         "not 'Bogus'"),
    ({"level": 7}, "level: must be a string, not a number"),
    ({"auditID": 7}, "auditID: must be a string"),
    ({"user": {"groups": "admins"}}, "user.groups: must be a list of strings"),
    ({"sourceIPs": [1]}, "sourceIPs[0]: must be a string"),
    ({"annotations": {"a": 1}}, "annotations.a: must be a string"),
])
def test_fields_of_the_wrong_type_are_rejected_as_the_api_decoder_would(
        tmp_path: Path, fields: dict[str, Any], reason: str) -> None:
    """audit.k8s.io/v1 Event's field types (``apiserver/pkg/apis/audit/v1/types.go``)."""
    log = _write(tmp_path / "audit.log", [_namespace_created(**fields)])
    events, rejected, _ = _read(log)
    assert not events
    assert [r.line for r in rejected] == [1]
    assert rejected[0].reason.startswith(reason)


def test_a_failed_request_whose_code_is_a_string_is_refused_not_replayed(
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    failed = _write(tmp_path / "failed.log",
                    [_namespace_created(responseStatus={"code": 500})])
    assert "nothing to replay" in run_kaudit("ingest", str(failed)).output
    as_text = _write(tmp_path / "text.log",
                     [_namespace_created(responseStatus={"code": "500"})])
    result = run_kaudit("ingest", str(as_text))
    assert result.exit_code == 2
    assert f"{as_text}:1: responseStatus.code: must be an integer" in result.output


def test_a_create_logged_after_the_writes_it_caused_still_comes_first(tmp_path: Path) -> None:
    # As a real kube-apiserver logged it: the pod's create completed (and was logged) after
    # the scheduler's binding and the kubelet's status patch, though it was received first.
    created = pod("web-0", "100m", "64Mi", uid="uid-web-0")
    create = event(1.011, "create", "pods", name="web-0", namespace="shop",
                   level="RequestResponse", request=created, response=created)
    create["requestReceivedTimestamp"] = "2026-11-02T09:00:00.994000Z"
    binding = event(1.010, "create", "pods", name="web-0", namespace="shop",
                    subresource="binding", user="system:kube-scheduler",
                    request={"kind": "Binding", "apiVersion": "v1",
                             "metadata": {"name": "web-0", "namespace": "shop"},
                             "target": {"kind": "Node", "name": "node-0"}})
    running = event(1.017, "patch", "pods", name="web-0", namespace="shop",
                    subresource="status", request={"status": {"phase": "Running"}})
    log = _write(tmp_path / "audit.log", [binding, create, running])
    events, rejected, [stats] = _read(log)
    assert not rejected and not stats.dropped
    assert _summary(events) == [("ADDED", "Pod", "web-0"), ("MODIFIED", "Pod", "web-0"),
                                ("MODIFIED", "Pod", "web-0")]
    assert events[1].object["spec"]["nodeName"] == "node-0"
    assert events[2].object["spec"]["nodeName"] == "node-0"
    assert events[2].object["status"]["phase"] == "Running"
    assert [e.ts_us for e in events] == sorted(e.ts_us for e in events)


def _created_then_deleted(created: dict[str, Any], response: dict[str, Any]
                          ) -> list[dict[str, Any]]:
    """shop/web-0 created at 1 s, and a delete received at 2 s whose response is
    ``response``."""
    return [event(1, "create", "pods", name="web-0", namespace="shop", level="RequestResponse",
                  request=created, response=created),
            event(2.000, "delete", "pods", name="web-0", namespace="shop",
                  level="RequestResponse", request={"kind": "DeleteOptions", "apiVersion": "v1"},
                  response=response)]


def test_a_binding_received_after_a_deletion_that_shows_it_was_committed_first(
        tmp_path: Path) -> None:
    # A Deployment scaled down while the scheduler binds one of its pods: the controller's
    # delete is received first, but its response shows the pod bound (the binding committed
    # first: a terminating pod cannot be bound).
    created = pod("web-0", "100m", "64Mi", uid="uid-web-0")
    terminating = json.loads(json.dumps(created))
    terminating["spec"]["nodeName"] = "node-0"
    terminating["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                            "lastTransitionTime": "2026-11-02T09:00:02Z"}]
    terminating["metadata"].update(deletionTimestamp="2026-11-02T09:00:32Z",
                                   deletionGracePeriodSeconds=30)
    log = _write(tmp_path / "audit.log", [
        *_created_then_deleted(created, terminating),
        event(2.001, "create", "pods", name="web-0", namespace="shop", subresource="binding",
              user="system:kube-scheduler",
              request={"kind": "Binding", "apiVersion": "v1",
                       "metadata": {"name": "web-0", "namespace": "shop"},
                       "target": {"kind": "Node", "name": "node-0"}}),
    ])
    events, rejected, [stats] = _read(log)
    assert not rejected
    assert _summary(events) == [("ADDED", "Pod", "web-0"), ("MODIFIED", "Pod", "web-0"),
                                ("MODIFIED", "Pod", "web-0")]
    bound, deleting = events[1].object, events[2].object
    assert bound["spec"]["nodeName"] == "node-0"
    assert "deletionTimestamp" not in bound["metadata"]
    assert bound["status"]["conditions"][0]["status"] == "True"
    assert deleting["spec"]["nodeName"] == "node-0"
    assert deleting["metadata"]["deletionTimestamp"] == "2026-11-02T09:00:32Z"
    assert list(stats.dropped) == ["pods/binding already made: a deletion received before "
                                   "it showed the pod bound"]


def test_a_status_received_after_a_deletion_that_shows_it_was_committed_first(
        tmp_path: Path) -> None:
    # The scheduler's failure and nomination are received just after a pending pod's delete
    # but committed before it: the delete's response shows them.
    created = pod("web-0", "100m", "64Mi", uid="uid-web-0")
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/2 nodes are available: 2 Insufficient cpu.",
                 "lastTransitionTime": "2026-11-02T09:00:02Z"}
    gone = json.loads(json.dumps(created))
    gone["status"].update(conditions=[condition], nominatedNodeName="node-0")
    gone["metadata"].update(deletionTimestamp="2026-11-02T09:00:02Z",
                            deletionGracePeriodSeconds=0)
    log = _write(tmp_path / "audit.log", [
        *_created_then_deleted(created, gone),
        event(2.001, "patch", "pods", name="web-0", namespace="shop", subresource="status",
              user="system:kube-scheduler", level="Request",
              request={"status": {"conditions": [condition], "nominatedNodeName": "node-0"}}),
    ])
    events, rejected, _ = _read(log)
    assert not rejected
    assert [(e.type, (e.object["status"].get("nominatedNodeName"),
                      "deletionTimestamp" in e.object["metadata"])) for e in events[:4]] == [
        ("ADDED", (None, False)), ("MODIFIED", ("node-0", False)),
        ("MODIFIED", ("node-0", True)), ("DELETED", ("node-0", True))]


def test_an_update_that_changes_nothing_is_no_watch_event(tmp_path: Path) -> None:
    # A node agent patching a status it already wrote: the API server writes nothing, so no
    # watcher sees an event (and the scheduler's cache keeps the pod where it was in its
    # node's list, which orders preemption's equally ranked victims).
    running = pod("web-0", "100m", "64Mi", uid="uid-web-0")
    running["spec"]["nodeName"] = "node-0"
    running["status"] = {"phase": "Running", "startTime": "2026-11-02T09:00:01Z"}
    patch = {"status": {"phase": "Running", "startTime": "2026-11-02T09:00:01Z"}}
    log = _write(tmp_path / "audit.log", [
        event(1, "create", "pods", name="web-0", namespace="shop", level="RequestResponse",
              request=running, response=running),
        event(2, "patch", "pods", name="web-0", namespace="shop", subresource="status",
              level="Request", request=patch),
        event(3, "patch", "pods", name="web-0", namespace="shop", subresource="status",
              level="Request", request={"status": {"phase": "Succeeded"}}),
    ])
    events, rejected, [stats] = _read(log)
    assert not rejected
    assert [(e.type, e.object["status"]["phase"]) for e in events] == [
        ("ADDED", "Running"), ("MODIFIED", "Succeeded")]
    assert list(stats.dropped) == ["update that changed nothing (the API server writes no new "
                                   "version and watchers see no event)"]


def test_a_start_time_sent_with_a_fraction_is_read_as_stored(tmp_path: Path) -> None:
    # A node agent's status patch (level Request) sends nanoseconds; the stored pod, which the
    # scheduler gets, has whole seconds (preemption ranks equally important victims by it).
    running = pod("web-0", "100m", "64Mi", uid="uid-web-0")
    running["spec"]["nodeName"] = "node-0"
    log = _write(tmp_path / "audit.log", [
        event(1, "create", "pods", name="web-0", namespace="shop", level="RequestResponse",
              request=running, response=running),
        event(2, "patch", "pods", name="web-0", namespace="shop", subresource="status",
              level="Request", request={"status": {
                  "phase": "Running", "startTime": "2026-11-02T09:00:01.249842768Z"}}),
    ])
    events, rejected, _ = _read(log)
    assert not rejected
    assert events[-1].object["status"]["startTime"] == "2026-11-02T09:00:01Z"


def test_a_delete_received_after_the_final_one_changes_nothing(tmp_path: Path) -> None:
    # The scheduler deletes a preemption victim twice (its second call finds it terminating);
    # the node agent's final delete is received between them and commits last.
    running = pod("victim", "100m", "64Mi", uid="uid-victim")
    running["spec"]["nodeName"] = "node-0"
    terminating = json.loads(json.dumps(running))
    terminating["metadata"].update(deletionTimestamp="2026-11-02T09:00:03Z",
                                   deletionGracePeriodSeconds=1)
    final = json.loads(json.dumps(terminating))
    final["metadata"]["deletionGracePeriodSeconds"] = 0
    delete_options = {"kind": "DeleteOptions", "apiVersion": "v1"}
    log = _write(tmp_path / "audit.log", [
        event(1, "create", "pods", name="victim", namespace="shop", level="RequestResponse",
              request=running, response=running),
        event(2, "delete", "pods", name="victim", namespace="shop", level="RequestResponse",
              request=delete_options, response=terminating),
        event(3.000, "delete", "pods", name="victim", namespace="shop", level="RequestResponse",
              request={**delete_options, "gracePeriodSeconds": 0}, response=final),
        event(3.001, "delete", "pods", name="victim", namespace="shop", level="RequestResponse",
              request=delete_options, response=terminating),
    ])
    events, rejected, [stats] = _read(log)
    assert not rejected
    assert _summary(events) == [("ADDED", "Pod", "victim"), ("MODIFIED", "Pod", "victim"),
                                ("DELETED", "Pod", "victim")]
    assert list(stats.dropped) == ["delete of an object already deleted (received after its "
                                   "final deletion, committed before it): changed nothing"]


def test_a_pod_deleted_by_its_kubelet_goes_when_its_last_finalizer_does(tmp_path: Path) -> None:
    # A Job's pod: the kubelet's delete (grace 0) leaves it while the Job controller's tracking
    # finalizer is on; the controller's patch removing the finalizer deletes it
    # (ShouldDeleteDuringUpdate: no finalizers, no grace period left).
    tracked = pod("job-1", "100m", "64Mi", uid="uid-job-1")
    tracked["spec"]["nodeName"] = "node-0"
    tracked["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    gone = json.loads(json.dumps(tracked))
    gone["metadata"].update(deletionTimestamp="2026-11-02T09:00:02Z",
                            deletionGracePeriodSeconds=0)
    released = json.loads(json.dumps(gone))
    released["metadata"]["finalizers"] = []
    log = _write(tmp_path / "audit.log", [
        event(1, "create", "pods", name="job-1", namespace="shop", level="RequestResponse",
              request=tracked, response=tracked),
        event(2, "delete", "pods", name="job-1", namespace="shop", level="RequestResponse",
              request={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
              response=gone),
        event(3, "patch", "pods", name="job-1", namespace="shop", level="RequestResponse",
              request={"metadata": {"$deleteFromPrimitiveList/finalizers": [
                  "batch.kubernetes.io/job-tracking"]}}, response=released),
    ])
    events, rejected, _ = _read(log)
    assert not rejected
    assert _summary(events) == [("ADDED", "Pod", "job-1"), ("MODIFIED", "Pod", "job-1"),
                                ("DELETED", "Pod", "job-1")]


def _received(doc: dict[str, Any], seconds: float) -> dict[str, Any]:
    """``doc`` with its request received at ``seconds`` (its response as logged)."""
    minute, second = divmod(seconds, 60)
    return {**doc, "requestReceivedTimestamp": f"2026-11-02T09:{int(minute):02d}:{second:09.6f}Z"}


def _times(events: list[WatchEvent]) -> list[tuple[str, str, float]]:
    start = 1_793_610_000_000_000  # 2026-11-02T09:00:00Z
    return [(e.type, e.name, round((e.ts_us - start) / 1e6, 3)) for e in events]


def test_a_slow_deletion_comes_after_the_schedulers_binding_it_committed_after(
        tmp_path: Path) -> None:
    # old's deletion was received at 2.000 s and answered at 2.040 s; the scheduler's
    # binding of web, received at 2.020 s, was decided without seeing it: the scheduler's
    # writes are stamped when received (next to its decision), the others when they
    # committed (their response, as a watcher sees them).
    old, web = pod("old", "100m", "64Mi", uid="uid-old"), pod("web", "100m", "64Mi", uid="uid-web")
    bound_old = {**old, "spec": {**old["spec"], "nodeName": "node-0"}}
    docs = [
        event(1.0, "create", "pods", name="old", namespace="shop", level="RequestResponse",
              request=bound_old, response=bound_old),
        event(1.5, "create", "pods", name="web", namespace="shop", level="RequestResponse",
              request=web, response=web),
        _received(event(2.040, "delete", "pods", name="old", namespace="shop",
                         level="RequestResponse", response=bound_old,
                         request={"kind": "DeleteOptions", "apiVersion": "v1",
                                  "gracePeriodSeconds": 0}), 2.000),
        _received(event(2.045, "create", "pods", name="web", namespace="shop",
                        subresource="binding", user="system:kube-scheduler",
                        request={"kind": "Binding", "apiVersion": "v1",
                                 "metadata": {"name": "web", "namespace": "shop"},
                                 "target": {"kind": "Node", "name": "node-0"}}), 2.020),
    ]
    events, rejected, _ = _read(_write(tmp_path / "audit.log", docs))
    assert not rejected
    later = _times(events)[2:]
    assert later[0] == ("MODIFIED", "web", 2.02)
    assert {(name, t) for _, name, t in later[1:]} == {("old", 2.04)}


def test_a_write_committed_before_the_next_request_on_its_object_was_received(
        tmp_path: Path) -> None:
    # The label patch was answered at 3.050 s, but the next request on that node, received at
    # 3.010 s, came after it: the patch committed by then. Each object's writes keep their
    # order, and the other node's update answered at 3.020 s comes after both.
    def labelled(name: str, value: str, t: float, received: float) -> dict[str, Any]:
        obj = node(name, "z")
        obj["metadata"]["labels"]["tier"] = value
        return _received(event(t, "update", "nodes", name=name, level="RequestResponse",
                               request=obj, response=obj), received)

    docs = [event(1.0, "create", "nodes", name=name, level="RequestResponse",
                  request=node(name, "z"), response=node(name, "z")) for name in ("n1", "n2")]
    docs += [labelled("n1", "a", 3.050, 3.000), labelled("n2", "b", 3.020, 3.005),
             labelled("n1", "c", 3.030, 3.010)]
    events, rejected, _ = _read(_write(tmp_path / "audit.log", docs))
    assert not rejected
    assert _times(events)[2:] == [("MODIFIED", "n1", 3.01), ("MODIFIED", "n2", 3.02),
                                  ("MODIFIED", "n1", 3.03)]
    assert [e.object["metadata"]["labels"]["tier"] for e in events[2:]] == ["a", "b", "c"]


def test_a_write_received_after_a_binding_whose_response_shows_the_pod_unbound_comes_first(
        tmp_path: Path) -> None:
    # The scheduler binds web (its binding received at 2.010 s, answered at 2.030 s) and,
    # preempting on the pod it had assumed there, marks it a victim: that DisruptionTarget
    # patch, received at 2.015 s, shows the pod still unbound, so it committed first, as a
    # watcher saw it. The binding then comes second, with the condition kept.
    web = pod("web", "100m", "64Mi", uid="uid-web")
    target = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
              "lastTransitionTime": "2026-11-02T09:00:02Z"}
    marked = json.loads(json.dumps(web))
    marked["status"]["conditions"] = [target]
    marked["metadata"]["resourceVersion"] = "201"
    docs = [
        event(1.0, "create", "pods", name="web", namespace="shop", level="RequestResponse",
              request=web, response=web),
        _received(event(2.030, "create", "pods", name="web", namespace="shop",
                        subresource="binding", user="system:kube-scheduler",
                        request={"kind": "Binding", "apiVersion": "v1",
                                 "metadata": {"name": "web", "namespace": "shop"},
                                 "target": {"kind": "Node", "name": "node-0"}}), 2.010),
        _received(event(2.020, "patch", "pods", name="web", namespace="shop",
                         subresource="status", user="system:kube-scheduler",
                         level="RequestResponse",
                         request={"status": {"conditions": [target]}}, response=marked), 2.015),
    ]
    events, rejected, _ = _read(_write(tmp_path / "audit.log", docs))
    assert not rejected
    assert _times(events) == [("ADDED", "web", 1.0), ("MODIFIED", "web", 2.015),
                              ("MODIFIED", "web", 2.015)]
    patched, bound = events[1].object, events[2].object
    assert "nodeName" not in patched["spec"]
    assert bound["spec"]["nodeName"] == "node-0"
    assert [c["type"] for c in bound["status"]["conditions"]] == ["DisruptionTarget",
                                                                   "PodScheduled"]


def test_a_write_received_second_with_an_older_resource_version_committed_first(
        tmp_path: Path) -> None:
    # Two clients update node n1: the first request is received at 3.000 s and answered at
    # 3.040 s with resourceVersion 305; the second, received at 3.010 s, was answered with
    # 304, so it committed first. The first's label is the one that stays.
    def labelled(value: str, rv: int, t: float, received: float) -> dict[str, Any]:
        obj = node("n1", "z", rv=rv)
        obj["metadata"]["labels"]["tier"] = value
        return _received(event(t, "update", "nodes", name="n1", level="RequestResponse",
                               request=obj, response=obj), received)

    docs = [event(1.0, "create", "nodes", name="n1", level="RequestResponse",
                  request=node("n1", "z"), response=node("n1", "z")),
            labelled("a", 305, 3.040, 3.000), labelled("b", 304, 3.020, 3.010)]
    events, rejected, _ = _read(_write(tmp_path / "audit.log", docs))
    assert not rejected
    assert [e.object["metadata"]["labels"].get("tier") for e in events] == [None, "b", "a"]
    assert _times(events)[1:] == [("MODIFIED", "n1", 3.01), ("MODIFIED", "n1", 3.04)]


def test_two_scheduler_status_writes_keep_the_order_their_resource_versions_prove(
        tmp_path: Path) -> None:
    # The scheduler's failure handler patches web's PodScheduled condition (received at
    # 3.000 s, retried on a conflict, answered at 3.010 s with resourceVersion 206); its
    # preemption of another pod clears web's nomination (received at 3.003 s, answered at
    # 3.006 s with 205). The nomination was cleared first, as a watcher saw it.
    def status(t: float, received: float, rv: int, nominated: str, message: str,
               patch: dict[str, Any]) -> dict[str, Any]:
        obj = pod("web", "100m", "64Mi", uid="uid-web", rv=rv)
        if nominated:
            obj["status"]["nominatedNodeName"] = nominated
        obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable", "message": message}]
        return _received(event(t, "patch", "pods", name="web", namespace="shop",
                               subresource="status", level="RequestResponse",
                               user="system:kube-scheduler", request=patch, response=obj),
                         received)

    nominated = pod("web", "100m", "64Mi", uid="uid-web", rv=204)
    nominated["status"]["nominatedNodeName"] = "n1"
    docs = [event(1.0, "create", "pods", namespace="shop", level="RequestResponse",
                  request=nominated, response=nominated),
            status(3.010, 3.000, 206, "", "second", {"status": {"conditions": []}}),
            status(3.006, 3.003, 205, "", "first", {"status": {"nominatedNodeName": None}})]
    events, rejected, _ = _read(_write(tmp_path / "audit.log", docs))
    assert not rejected
    assert [(e.object["status"].get("nominatedNodeName"),
             e.object["status"]["conditions"][0]["message"]) for e in events[1:]] == [
        (None, "first"), (None, "second")]
    assert _times(events)[1:] == [("MODIFIED", "web", 3.003), ("MODIFIED", "web", 3.003)]


def test_a_status_patch_that_read_a_deletions_mark_changes_nothing(tmp_path: Path) -> None:
    # web (bound, no grace period) is deleted by the scheduler: received at 3.000 s, the
    # deletion writes its mark (resourceVersion 217), then removes the pod (218) and answers
    # at 3.050 s. The kubelet's status patch, received at 3.020 s, read the mark and was
    # answered at 3.040 s with the object at 217: it proves no earlier commit, and the pod it
    # shows is gone. A watcher saw the mark, then the deletion.
    bound = pod("web", "1", "1Gi", uid="uid-web", rv=210)
    bound["spec"].update(nodeName="n1", terminationGracePeriodSeconds=0)
    marked = {**bound, "metadata": {**bound["metadata"], "resourceVersion": "218",
                                    "deletionTimestamp": "2026-11-02T09:00:03Z",
                                    "deletionGracePeriodSeconds": 0}}
    running = {**marked, "metadata": {**marked["metadata"], "resourceVersion": "217"},
               "status": {**marked["status"], "phase": "Running"}}
    docs = [event(1.0, "create", "pods", namespace="shop", level="RequestResponse",
                  request=bound, response=bound),
            _received(event(3.050, "delete", "pods", name="web", namespace="shop",
                            level="RequestResponse", user="system:kube-scheduler",
                            request={"kind": "DeleteOptions", "apiVersion": "v1"},
                            response=marked), 3.000),
            _received(event(3.040, "patch", "pods", name="web", namespace="shop",
                            subresource="status", level="RequestResponse",
                            user="system:node:n1", request={"status": {"phase": "Running"}},
                            response=running), 3.020)]
    events, rejected, [stats] = _read(_write(tmp_path / "audit.log", docs))
    assert not rejected
    assert [(e.type, e.object["status"].get("phase"),
             bool(e.object["metadata"].get("deletionTimestamp"))) for e in events] == [
        ("ADDED", "Pending", False), ("MODIFIED", "Pending", True), ("DELETED", "Pending", True)]
    assert any(reason.startswith("update of an object already deleted")
               for reason in stats.dropped)


def test_a_node_patch_received_during_its_deletion_committed_before_it(
        tmp_path: Path) -> None:
    # The node controller taints n1 (received at 3.050 s, answered at 3.100 s with n1 as
    # patched) while a drain deletes it (received at 3.000 s, answered at 3.500 s with a
    # Status naming n1's uid). The patch found n1: it committed before the deletion, as a
    # watcher saw it; after the deletion it would have found no node.
    tainted = node("n1", "z", rv=305)
    tainted["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable",
                                  "effect": "NoSchedule"}]
    deleted = {"kind": "Status", "apiVersion": "v1", "status": "Success",
               "details": {"name": "n1", "kind": "nodes", "uid": "uid-n1"}}
    docs = [event(1.0, "create", "nodes", name="n1", level="RequestResponse",
                  request=node("n1", "z"), response=node("n1", "z")),
            _received(event(3.500, "delete", "nodes", name="n1", level="RequestResponse",
                            response=deleted), 3.000),
            _received(event(3.100, "patch", "nodes", name="n1", level="RequestResponse",
                            user="system:serviceaccount:kube-system:node-controller",
                            request={"spec": {"taints": tainted["spec"]["taints"]}},
                            response=tainted), 3.050)]
    events, rejected, _ = _read(_write(tmp_path / "audit.log", docs))
    assert not rejected
    assert [(e.type, e.name) for e in events] == [("ADDED", "n1"), ("MODIFIED", "n1"),
                                                   ("DELETED", "n1")]
    assert events[1].object["spec"]["taints"][0]["key"] == "node.kubernetes.io/unschedulable"
    # A node of the same name created anew is another object: its write proves nothing.
    other = node("n1", "z", rv=306)
    other["metadata"]["uid"] = "uid-n1-again"
    docs[2] = _received(event(3.100, "patch", "nodes", name="n1", level="RequestResponse",
                              request={"spec": {}}, response=other), 3.050)
    events, _, _ = _read(_write(tmp_path / "audit2.log", docs))
    assert [e.type for e in events][:2] == ["ADDED", "DELETED"]


def test_an_update_logged_after_its_objects_deletion_does_not_bring_it_back(
        tmp_path: Path) -> None:
    # A node agent's status update commits before the scheduler's delete of a victim but is
    # logged after it (the log is written as requests complete): the pod it shows (bound,
    # not terminating) is the one the deletion then removed, and a uid never lives again.
    bound = pod("web-0", "100m", "64Mi", uid="uid-web-0")
    bound["spec"]["nodeName"] = "node-0"
    gone = json.loads(json.dumps(bound))
    gone["metadata"].update(deletionTimestamp="2026-11-02T09:00:02Z",
                            deletionGracePeriodSeconds=0)
    running = {**bound, "status": {**bound["status"], "phase": "Running"}}
    log = _write(tmp_path / "audit.log", [
        *_created_then_deleted(bound, gone),
        event(2.5, "update", "pods", name="web-0", namespace="shop", subresource="status",
              level="RequestResponse", user="system:node:node-0", request=running,
              response=running),
    ])
    events, rejected, [stats] = _read(log)
    assert not rejected
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert any(reason.startswith("update of an object already deleted (committed before")
               for reason in stats.dropped)


@pytest.mark.parametrize(("agent", "cleared"), [
    ("kube-scheduler/v1.34.2 (linux/amd64) kubernetes/abc", False),
    ("kube-scheduler/v1.35.4 (linux/amd64) kubernetes/abc", True)])
def test_a_binding_from_v1_35_clears_the_nomination_and_copies_the_zone(
        tmp_path: Path, agent: str, cleared: bool) -> None:
    """From v1.35 the API server clears a pod's nomination as it binds it and copies its
    node's zone and region labels onto it (kube-scheduler's user agent names the release)."""
    n = node("node-0", "zone-a")
    created = pod("web-0", "100m", "64Mi", uid="uid-web-0")
    created["status"] = {**(created.get("status") or {}), "nominatedNodeName": "node-0"}
    binding = event(2, "create", "pods", name="web-0", namespace="shop",
                    subresource="binding", user="system:kube-scheduler", agent=agent,
                    request={"kind": "Binding", "apiVersion": "v1",
                             "metadata": {"name": "web-0", "namespace": "shop"},
                             "target": {"kind": "Node", "name": "node-0"}})
    log = _write(tmp_path / "audit.log", [
        event(0.5, "create", "nodes", name="node-0", level="RequestResponse", request=n,
              response=n, user="system:node:node-0"),
        event(1, "create", "pods", name="web-0", namespace="shop", level="RequestResponse",
              request=created, response=created),
        binding])
    events, rejected, _ = _read(log)
    assert not rejected
    bound = events[-1].object
    assert bound["spec"]["nodeName"] == "node-0"
    assert ("nominatedNodeName" not in bound["status"]) is cleared
    labels = bound["metadata"].get("labels") or {}
    assert (labels.get("topology.kubernetes.io/zone") == "zone-a") is cleared
