"""The Kubernetes release a trace was recorded from: a `kaudit record` header in the watch
format, kube-scheduler's user agent in an audit log, kept as the source says it and stored with
the trace (whether kaudit mirrors it or not)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import Engine

from kaudit.model.recording import header_object, recorded_release, user_agent_release
from kaudit.readers.events import StreamStats
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.readers.watch import UntimedClock, read_watch_stream
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.data.audit.make_audit_log import event, node, pod

AUDIT_LOG = Path(__file__).parents[1] / "data" / "audit" / "audit.log"


def _lines(path: Path, docs: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(doc) + b"\n" for doc in docs))
    return path


def _events(header: dict[str, Any] | None = None, *, ts: bool = True) -> list[dict[str, Any]]:
    stamp = {"ts": "2026-01-05T09:00:00Z"} if ts else {}
    docs = [] if header is None else [{**stamp, "type": "BOOKMARK", "object": header}]
    return [*docs,
            {**stamp, "type": "ADDED", "object": make_node("n1").capacity(cpu="4").obj()},
            {**stamp, "type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                                                      "metadata": {"resourceVersion": "9"}}},
            {**stamp, "type": "ADDED", "object": make_pod("p1").req(cpu="1").obj()}]


@pytest.mark.parametrize("ts", [True, False])
def test_a_recording_header_names_the_release_and_is_no_bookmark(tmp_path: Path,
                                                                  ts: bool) -> None:
    path = _lines(tmp_path / "t.jsonl", _events(header_object("v1.35.0-rc.1", "kaudit/x"),
                                                 ts=ts))
    stats = StreamStats()
    events = list(read_watch_stream(path, UntimedClock(0, 0), stats))
    assert [e.kind for e in events] == ["Node", "Pod"]  # no rejected line
    assert stats.kubernetes_version == "v1.35.0-rc.1"
    assert stats.bookmarks == 1  # the real bookmark only
    assert stats.format == ("native" if ts else "kubectl-watch")


def test_a_header_without_a_release_names_none(tmp_path: Path) -> None:
    for bad in ("", "latest", "v" * 40, 1.34):
        header = header_object("x", "kaudit/x")
        header["metadata"]["annotations"]["kaudit.io/kubernetes-version"] = bad
        stats = StreamStats()
        list(read_watch_stream(_lines(tmp_path / "t.jsonl", _events(header)),
                               UntimedClock(0, 0), stats))
        assert stats.kubernetes_version is None, bad
    # A bookmark of another kaudit kind, or none at all, is just a bookmark.
    stats = StreamStats()
    list(read_watch_stream(_lines(tmp_path / "t.jsonl", _events()), UntimedClock(0, 0), stats))
    assert stats.kubernetes_version is None and stats.bookmarks == 1


def test_ingest_stores_the_recorded_release_even_one_kaudit_does_not_mirror(
        engine: Engine, tmp_path: Path) -> None:
    path = _lines(tmp_path / "old.jsonl", _events(header_object("v1.29.3", "kaudit/x")))
    result = ingest_trace(engine, [TraceInput(path)])
    assert result.kubernetes_version == "v1.29.3" and result.events == 2
    trace = get_trace(engine, result.trace_id)
    assert trace.kubernetes_version == "v1.29.3"
    assert trace.as_json()["kubernetesVersion"] == "v1.29.3"
    (source,) = trace.sources
    assert source["kubernetesVersion"] == "v1.29.3" and source["bookmarks"] == 1
    again = ingest_trace(engine, [TraceInput(path)])  # identical content: the stored trace
    assert again.duplicate and again.kubernetes_version == "v1.29.3"
    plain = ingest_trace(engine, [TraceInput(_lines(tmp_path / "plain.jsonl", _events()))])
    assert plain.kubernetes_version is None
    assert get_trace(engine, plain.trace_id).kubernetes_version is None


def test_the_first_input_that_says_wins(engine: Engine, tmp_path: Path) -> None:
    first = _lines(tmp_path / "a.jsonl", _events(header_object("v1.34.2", "kaudit/x")))
    later = _events(header_object("v1.35.4", "kaudit/x"))
    for doc in later:
        doc["ts"] = "2026-01-05T10:00:00Z"
        if doc["type"] == "ADDED":
            doc["object"]["metadata"]["name"] += "-b"
    second = _lines(tmp_path / "b.jsonl", later)
    result = ingest_trace(engine, [TraceInput(first), TraceInput(second)])
    assert result.kubernetes_version == "v1.34.2"
    assert [s.get("kubernetesVersion") for s in result.sources] == ["v1.34.2", "v1.35.4"]


@pytest.mark.parametrize(("agent", "release"), [
    ("kube-scheduler/v1.34.2 (linux/amd64) kubernetes/9d4b3a1", "v1.34.2"),
    ("kube-scheduler/v1.33.5-eks-113cf36 (linux/amd64) kubernetes/113cf36/leader-election",
     "v1.33.5-eks-113cf36"),
    ("kube-scheduler/v1.34.2", "v1.34.2"),
    ("kube-scheduler/unknown (linux/amd64)", None),
    ("kube-controller-manager/v1.34.2 (linux/amd64) kubernetes/9d4b3a1", None),
    ("my-kube-scheduler/v1.20.0 (linux/amd64)", None),
    ("kubectl/v1.34.1 (linux/amd64) kube-scheduler/v1.20.0", None),
    (None, None),
])
def test_kube_schedulers_release_from_its_user_agent(agent: Any, release: str | None) -> None:
    assert user_agent_release(agent) == release


def test_recorded_releases_are_kept_as_written() -> None:
    assert recorded_release(" v1.34.2+k3s1 ") == "v1.34.2+k3s1"
    assert recorded_release("1.34") == "1.34"
    assert recorded_release("v1.34.2-" + "x" * 30) is None  # longer than the store keeps
    assert recorded_release("v1") is None and recorded_release(134) is None


def test_an_audit_log_says_kube_schedulers_release(engine: Engine) -> None:
    result = ingest_trace(engine, [TraceInput(AUDIT_LOG)])
    # Its first events are the kubelet's and kubectl's; the scheduler's lease says v1.34.1.
    assert get_trace(engine, result.trace_id).kubernetes_version == "v1.34.1"


def test_the_first_kube_scheduler_event_of_an_audit_log_names_the_release(
        engine: Engine, tmp_path: Path) -> None:
    kubelet = "kubelet/v1.31.0 (linux/amd64) kubernetes/abc"
    n = node("node-0", "z")
    p = pod("web-0", "1", "1Gi", uid="uid-web-0")
    log = _lines(tmp_path / "audit.log", [
        event(1, "create", "nodes", name="node-0", level="RequestResponse", request=n,
              response=n, user="system:node:node-0", agent=kubelet),
        event(2, "create", "pods", name="web-0", namespace="shop", level="RequestResponse",
              request=p, response=p),
        # A read the reader leaves out still names the scheduler's release.
        event(3, "get", "pods", name="web-0", namespace="shop", user="system:kube-scheduler",
              agent="kube-scheduler/v1.32.4 (linux/amd64) kubernetes/abc"),
        event(4, "update", "leases", name="kube-scheduler", namespace="kube-system",
              group="coordination.k8s.io", user="system:kube-scheduler",
              agent="kube-scheduler/v1.33.0 (linux/amd64) kubernetes/abc"),
    ])
    result = ingest_trace(engine, [TraceInput(log)])
    assert result.kubernetes_version == "v1.32.4"
    assert result.sources[0]["kubernetesVersion"] == "v1.32.4"
