"""The list/watch engine of ``kaudit record`` against a fake API server over real HTTP."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from kaudit.errors import InputError
from kaudit.model.kinds import KINDS, parse_kinds
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.record.client import INSTALL_HINT, _split_lines, load_configuration
from kaudit.record.writer import TraceWriter, format_rfc3339
from kaudit.tracegen.builders import make_node, make_pod
from tests.record.conftest import (
    FakeCluster,
    Recording,
    names,
    read_events,
    read_header,
    read_lines,
    wait_until,
    write_kubeconfig,
)

RFC3339_US = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
Start = Callable[..., Recording]


def _pod(name: str, namespace: str = "default", cpu: str = "100m") -> dict[str, Any]:
    return make_pod(name, namespace).req(cpu=cpu).obj()


def _node(name: str) -> dict[str, Any]:
    return make_node(name).capacity(cpu="4", memory="8Gi").obj()


def _bind(node: str) -> Callable[[dict[str, Any]], None]:
    def change(pod: dict[str, Any]) -> None:
        pod["spec"]["nodeName"] = node
    return change


def _label(obj: dict[str, Any]) -> None:
    obj["metadata"].setdefault("labels", {})["changed"] = "yes"


def test_initial_objects_come_first_then_live_changes_in_order(cluster: FakeCluster,
                                                               recording: Start) -> None:
    cluster.create("pods", _pod("p1"))
    cluster.create("pods", _pod("p2"))
    cluster.create("nodes", _node("n1"))
    run = recording("pods,nodes")
    cluster.wait_watching("pods", "nodes")
    cluster.create("pods", _pod("p3"))
    cluster.update("pods", "p1", _bind("n1"), namespace="default")
    cluster.delete("pods", "p2", namespace="default")
    run.wait_events(6)
    cluster.update("nodes", "n1", _label)
    run.wait_events(7)
    summary = run.stop()

    events = run.events()
    assert names(events) == [
        ("ADDED", "Node", "n1"), ("ADDED", "Pod", "p1"), ("ADDED", "Pod", "p2"),
        ("ADDED", "Pod", "p3"), ("MODIFIED", "Pod", "p1"), ("DELETED", "Pod", "p2"),
        ("MODIFIED", "Node", "n1")]
    assert all(RFC3339_US.match(e["ts"]) for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert events[0]["object"]["apiVersion"] == "v1"  # filled in for list items
    assert events[4]["object"]["spec"]["nodeName"] == "n1"
    assert events[5]["object"]["spec"]["containers"]  # a watched deletion keeps the object
    assert summary.events == 7 and summary.kinds == {"Node": 2, "Pod": 5}
    assert summary.relists == 0 and not summary.warnings
    assert len(cluster.lists("pods")) == 1


def test_list_is_paged_with_continue(cluster: FakeCluster, recording: Start) -> None:
    for i in range(5):
        cluster.create("pods", _pod(f"p{i}"))
    run = recording("pods", page_size=2)
    cluster.wait_watching("pods")
    run.stop()
    assert names(run.events()) == [("ADDED", "Pod", f"p{i}") for i in range(5)]
    lists = cluster.lists("pods")
    assert [r.params.get("limit") for r in lists] == ["2", "2", "2"]
    assert "continue" not in lists[0].params and all("continue" in r.params for r in lists[1:])
    assert cluster.watches("pods")[0].params["resourceVersion"] == "105"


def test_expired_continue_token_lists_again_without_paging(cluster: FakeCluster,
                                                           recording: Start) -> None:
    for i in range(5):
        cluster.create("pods", _pod(f"p{i}"))
    cluster.expire_continue = True
    run = recording("pods", page_size=2)
    cluster.wait_watching("pods")
    run.stop()
    assert names(run.events()) == [("ADDED", "Pod", f"p{i}") for i in range(5)]
    assert [r.params.get("limit") for r in cluster.lists("pods")] == ["2", "2", None]


def test_watch_resumes_from_the_last_resource_version(cluster: FakeCluster,
                                                      recording: Start) -> None:
    cluster.create("pods", _pod("p1"))
    run = recording("pods")
    cluster.wait_watching("pods")
    p2 = cluster.create("pods", _pod("p2"))
    run.wait_events(2)
    cluster.end_watches("pods")  # as the server's timeoutSeconds does
    cluster.wait_watching("pods", count=2)
    cluster.create("pods", _pod("p3"))
    run.wait_events(3)
    summary = run.stop()

    assert names(run.events()) == [("ADDED", "Pod", "p1"), ("ADDED", "Pod", "p2"),
                                   ("ADDED", "Pod", "p3")]
    watches = cluster.watches("pods")
    assert watches[1].params["resourceVersion"] == p2["metadata"]["resourceVersion"]
    assert watches[0].params["allowWatchBookmarks"] == "true"
    assert int(watches[0].params["timeoutSeconds"]) == 30
    assert len(cluster.lists("pods")) == 1 and summary.relists == 0


def test_bookmarks_are_counted_and_move_the_resume_point(cluster: FakeCluster,
                                                         recording: Start) -> None:
    cluster.create("pods", _pod("p1"))
    run = recording("pods")
    cluster.wait_watching("pods")
    cluster.create("nodes", _node("n1"))  # moves the global resourceVersion, not watched
    cluster.bookmark("pods")
    wait_until(lambda: run.recorder.summary().bookmarks == 1, "a bookmark")
    cluster.end_watches("pods")
    cluster.wait_watching("pods", count=2)
    summary = run.stop()

    assert cluster.watches("pods")[1].params["resourceVersion"] == str(cluster.rv)
    assert summary.bookmarks == 1
    assert [e["type"] for e in run.events()] == ["ADDED"]


@pytest.mark.parametrize("answer", ["error-event", "http-410"])
def test_relist_after_410_reconciles_what_changed_meanwhile(cluster: FakeCluster,
                                                            recording: Start,
                                                            answer: str) -> None:
    for name in ("p1", "p2", "p3", "p4"):
        cluster.create("pods", _pod(name))
    run = recording("pods")
    cluster.wait_watching("pods")
    old_p4 = cluster.store["pods"][("default", "p4")]["metadata"]["uid"]
    quiet = answer == "error-event"  # changes left out of the history: the watch is too old
    cluster.delete("pods", "p1", namespace="default", notify=not quiet)
    cluster.update("pods", "p2", _bind("n1"), namespace="default", notify=not quiet)
    cluster.create("pods", _pod("p5"), notify=not quiet)
    cluster.delete("pods", "p4", namespace="default", notify=not quiet)
    new_p4 = cluster.create("pods", _pod("p4", cpu="200m"), notify=not quiet)
    if quiet:
        cluster.end_watches("pods")
    else:  # the recorder missed nothing yet: end its watch before it sees these changes
        run.wait_events(9)
        cluster.fail_next_watch("pods", 410)
        cluster.end_watches("pods")
    wait_until(lambda: run.recorder.summary().relists == 1, "a relist")
    cluster.wait_watching("pods", count=3)  # the first, the refused one, the one after
    cluster.create("pods", _pod("p6"))
    run.wait_events(10)
    summary = run.stop()

    events = run.events()
    if quiet:
        after = names(events[4:])
        assert sorted(after[:-1]) == sorted([
            ("DELETED", "Pod", "p1"), ("MODIFIED", "Pod", "p2"), ("ADDED", "Pod", "p5"),
            ("DELETED", "Pod", "p4"), ("ADDED", "Pod", "p4")])
        assert after.index(("DELETED", "Pod", "p4")) < after.index(("ADDED", "Pod", "p4"))
        assert after[-1] == ("ADDED", "Pod", "p6")
        deleted = {e["object"]["metadata"]["name"]: e["object"] for e in events
                   if e["type"] == "DELETED"}
        assert deleted["p4"]["metadata"]["uid"] == old_p4  # the old object, minimal
        assert deleted["p1"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "p1", "namespace": "default", "uid": deleted["p1"]["metadata"]["uid"],
            "resourceVersion": "101"}}
        added_p4 = [e for e in events if names([e]) == [("ADDED", "Pod", "p4")]][-1]
        assert added_p4["object"]["metadata"]["uid"] == new_p4["metadata"]["uid"]
    else:  # everything was seen live: the relist finds nothing new
        assert names(events[9:]) == [("ADDED", "Pod", "p6")]
    relist = cluster.lists("pods")[1]
    assert "resourceVersion" not in relist.params
    last_watch = cluster.watches("pods")[-1]
    assert int(last_watch.params["resourceVersion"]) >= int(new_p4["metadata"]
                                                            ["resourceVersion"])
    assert summary.relists == 1
    assert run.recorder.tracked_objects() == {"pods": 5}  # p2 p3 p4 p5 p6: one record each


def test_forbidden_kind_is_skipped_with_a_warning(cluster: FakeCluster,
                                                  recording: Start) -> None:
    cluster.forbidden.add("nodes")
    cluster.create("pods", _pod("p1"))
    run = recording("pods,nodes")
    cluster.wait_watching("pods")
    summary = run.stop()
    assert names(run.events()) == [("ADDED", "Pod", "p1")]
    assert summary.kinds == {"Pod": 1}
    assert list(summary.skipped) == ["nodes"] and "403" in summary.skipped["nodes"]
    assert any(w.startswith("cannot list nodes: 403 Forbidden") and
               w.endswith("it will not be recorded") for w in run.warnings)
    assert summary.warnings == run.warnings


def test_nothing_listable_is_an_input_error(cluster: FakeCluster, recording: Start) -> None:
    cluster.forbidden.update({"pods", "nodes"})
    run = recording("pods,nodes")
    run.thread.join(3)
    assert isinstance(run.error, InputError)
    assert "cannot list any of the kinds" in str(run.error)
    assert "pods: 403 Forbidden" in str(run.error)


def test_server_errors_are_retried_from_the_last_resource_version(cluster: FakeCluster,
                                                                  recording: Start) -> None:
    p1 = cluster.create("pods", _pod("p1"))
    cluster.fail_next_watch("pods", 500)
    cluster.fail_next_watch("pods", 429)
    run = recording("pods")
    cluster.wait_watching("pods")
    cluster.create("pods", _pod("p2"))
    run.wait_events(2)
    summary = run.stop()
    assert names(run.events()) == [("ADDED", "Pod", "p1"), ("ADDED", "Pod", "p2")]
    assert [w.split(":")[0] for w in summary.warnings] == ["watching pods failed"] * 2
    assert "500" in summary.warnings[0] and "429" in summary.warnings[1]
    assert {r.params["resourceVersion"] for r in cluster.watches("pods")} == {
        p1["metadata"]["resourceVersion"]}
    assert summary.relists == 0


def test_cut_stream_is_resumed_after_a_warning(cluster: FakeCluster,
                                               recording: Start) -> None:
    cluster.create("pods", _pod("p1"))
    run = recording("pods")
    cluster.wait_watching("pods")
    p2 = cluster.create("pods", _pod("p2"))
    run.wait_events(2)
    cluster.end_watches("pods", abruptly=True)
    cluster.wait_watching("pods", count=2)
    cluster.create("pods", _pod("p3"))
    run.wait_events(3)
    summary = run.stop()
    assert names(run.events()) == [("ADDED", "Pod", f"p{i}") for i in (1, 2, 3)]
    assert len(summary.warnings) == 1 and summary.warnings[0].startswith("watching pods failed")
    assert cluster.watches("pods")[1].params["resourceVersion"] == p2["metadata"][
        "resourceVersion"]
    assert summary.relists == 0 and len(cluster.lists("pods")) == 1


def test_stop_while_listing_is_not_an_error(cluster: FakeCluster, recording: Start) -> None:
    cluster.create("nodes", _node("n1"))
    cluster.list_delay = 0.3
    run = recording("nodes,pods")
    wait_until(lambda: bool(cluster.lists("nodes")), "the first list")
    summary = run.stop()
    assert summary.events <= 1 and not summary.skipped and not summary.warnings
    assert not cluster.watches("nodes")


def test_namespace_restricts_namespaced_kinds_only(cluster: FakeCluster,
                                                   recording: Start) -> None:
    cluster.create("pods", _pod("a1", namespace="a"))
    cluster.create("pods", _pod("b1", namespace="b"))
    cluster.create("nodes", _node("n1"))
    run = recording("pods,nodes", namespace="a")
    cluster.wait_watching("pods", "nodes")
    cluster.create("pods", _pod("b2", namespace="b"))
    cluster.create("pods", _pod("a2", namespace="a"))
    run.wait_events(3)
    run.stop()
    assert names(run.events()) == [("ADDED", "Node", "n1"), ("ADDED", "Pod", "a1"),
                                   ("ADDED", "Pod", "a2")]
    assert {r.namespace for r in cluster.watches("pods")} == {"a"}
    assert {r.namespace for r in cluster.watches("nodes")} == {None}


def test_stop_finishes_the_file_cleanly(cluster: FakeCluster, recording: Start) -> None:
    cluster.create("pods", _pod("p1"))
    run = recording("pods", flush_interval=60)
    cluster.wait_watching("pods")
    for i in range(20):
        cluster.create("pods", _pod(f"q{i}"))
    run.wait_events(21)
    summary = run.stop()  # what Ctrl-C does in `kaudit record`
    assert len(run.events()) == summary.events == 21


def test_recorded_trace_ingests(cluster: FakeCluster, recording: Start, engine: Engine) -> None:
    cluster.create("nodes", _node("n1"))
    cluster.create("pods", _pod("p1"))
    run = recording("pods,nodes", name="trace.jsonl.gz")
    cluster.wait_watching("pods", "nodes")
    cluster.update("pods", "p1", _bind("n1"), namespace="default")
    cluster.delete("pods", "p1", namespace="default")
    run.wait_events(4)
    run.stop()
    result = ingest_trace(engine, [TraceInput(run.path)])
    assert result.events == 4 and not result.rejected
    assert result.kind_counts == {"Node": 1, "Pod": 3}


def test_the_trace_opens_with_the_api_servers_release_which_ingest_stores(
        cluster: FakeCluster, recording: Start, engine: Engine) -> None:
    cluster.git_version = "v1.35.4"
    cluster.create("pods", _pod("p1"))
    run = recording("pods", name="trace.jsonl.gz")
    cluster.wait_watching("pods")
    run.wait_events(1)
    summary = run.stop()
    header = read_header(run.path)
    assert header is not None and header["type"] == "BOOKMARK"
    assert header["object"]["kind"] == "Recording"
    assert header["object"]["metadata"]["annotations"]["kaudit.io/kubernetes-version"] == \
        "v1.35.4"
    assert RFC3339_US.match(header["ts"]) and header["ts"] <= read_events(run.path)[0]["ts"]
    assert summary.events == 1 and summary.kubernetes_version == "v1.35.4"
    assert summary.as_json()["kubernetesVersion"] == "v1.35.4"
    result = ingest_trace(engine, [TraceInput(run.path)])
    assert result.events == 1 and result.kubernetes_version == "v1.35.4"
    assert result.sources[0]["bookmarks"] == 0  # the header is no bookmark


def test_no_header_when_the_server_does_not_say_its_release(cluster: FakeCluster,
                                                            recording: Start) -> None:
    cluster.git_version = None
    cluster.create("pods", _pod("p1"))
    run = recording("pods")
    cluster.wait_watching("pods")
    run.wait_events(1)
    summary = run.stop()
    assert read_header(run.path) is None and len(read_lines(run.path)) == 1
    assert summary.kubernetes_version is None


def test_a_header_alone_is_no_recording(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    writer.write_header(1_767_000_000_000_000, "v1.34.2")
    assert writer.events == 0  # `kaudit record` removes a file that recorded no event
    writer.discard()
    assert not path.exists()


def test_deleted_stubs_ingest(tmp_path: Path, engine: Engine) -> None:
    path = tmp_path / "stub.jsonl"
    with TraceWriter(path) as writer:
        writer.write(1_767_000_000_000_000, "ADDED", _pod("p1"))
        writer.write(1_766_000_000_000_000, "DELETED", {  # earlier: written at the same time
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1", "namespace": "default", "resourceVersion": "7"}})
    assert [e["ts"] for e in read_events(path)] == ["2025-12-29T09:20:00.000000Z"] * 2
    assert ingest_trace(engine, [TraceInput(path)]).events == 2


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    from kaudit.record.client import KubeClient
    from kaudit.record.recorder import Recorder

    recorder = Recorder(KubeClient(load_configuration(config)), parse_kinds("pods"),
                        attempts=2, backoff_initial=0.01)
    with TraceWriter(tmp_path / "t.jsonl") as writer, pytest.raises(
            InputError, match=r"cannot reach the API server at http://127\.0\.0\.1:9: "):
        recorder.run(writer)


def test_wrong_token_is_a_clear_error(cluster: FakeCluster, tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", cluster.url, token="wrong")
    from kaudit.record.client import KubeClient
    from kaudit.record.recorder import Recorder

    recorder = Recorder(KubeClient(load_configuration(config)), parse_kinds("pods"))
    with TraceWriter(tmp_path / "t.jsonl") as writer, pytest.raises(
            InputError, match="refused the credentials: 401 Unauthorized"):
        recorder.run(writer)


def test_missing_client_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    with pytest.raises(InputError) as caught:
        load_configuration(tmp_path / "kubeconfig")
    assert str(caught.value) == INSTALL_HINT


def test_lines_are_reassembled_from_any_chunks() -> None:
    pieces = [b'{"a":', b"1}\n", b'{"b":2}\n{"c"', b":3}", b"\n\n", b'{"d":4}']
    assert list(_split_lines(iter(pieces))) == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}']


def test_kinds_table_and_paths() -> None:
    assert len(KINDS) == 19 and KINDS[-1].resource == "pods"
    assert {"csidrivers", "devicetaintrules"} <= {s.resource for s in KINDS}
    assert [s.resource for s in parse_kinds("Pods, nodes")] == ["nodes", "pods"]
    pdb = parse_kinds("poddisruptionbudgets")[0]
    assert pdb.path() == "/apis/policy/v1/poddisruptionbudgets"
    assert pdb.path("a") == "/apis/policy/v1/namespaces/a/poddisruptionbudgets"
    assert parse_kinds("nodes")[0].path("a") == "/api/v1/nodes"
    with pytest.raises(ValueError, match="unknown kind 'pod'; valid kinds: namespaces, "):
        parse_kinds("pod,nodes")
    assert format_rfc3339(1_795_428_000_123_456) == "2026-11-23T10:00:00.123456Z"
