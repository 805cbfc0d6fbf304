"""``kaudit ingest``: all-or-nothing storage, FILE:LINE errors, duplicates, sorting, formats."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from click.testing import Result
from sqlalchemy import Engine, func, select

from kaudit.queries.traces import rejected_lines
from kaudit.readers.ingest import SNAPSHOT, TraceInput, ingest_trace
from kaudit.store.models import TraceEvent
from kaudit.store.traces import iter_events
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import database_contents


def _events(count: int, start: float = 0.0) -> list[dict]:
    events: list[dict] = [{"ts": start, "type": "ADDED",
                           "object": make_node("n1").capacity(cpu="4", memory="8Gi").obj()}]
    events += [{"ts": start + 1 + i, "type": "ADDED",
                "object": make_pod(f"p{i}").req(cpu="100m").obj()} for i in range(count)]
    return events


def _write(path: Path, events: list[object]) -> Path:
    path.write_bytes(b"".join((e if isinstance(e, bytes) else orjson.dumps(e)) + b"\n"
                              for e in events))
    return path


def test_ingest_sample_trace(run_kaudit: Callable[..., Result], sample_path: Path) -> None:
    result = run_kaudit("ingest", str(sample_path), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    trace = report["trace"]
    lines = sum(1 for line in sample_path.read_bytes().splitlines() if line.strip())
    assert trace["events"] == lines - 1  # the header is no event
    assert trace["kubernetesVersion"] == "v1.34.2"
    assert trace["kinds"]["Node"] == 14 and trace["kinds"]["Pod"] > 100
    assert trace["start"] == "2026-01-05T09:00:00Z"
    assert trace["name"] == "sample" and not report["duplicate"]

    listing = json.loads(run_kaudit("traces", "--json").output)
    assert [t["name"] for t in listing] == ["sample"]
    assert listing[0]["kinds"] == trace["kinds"]


def test_identical_content_is_not_stored_twice(run_kaudit: Callable[..., Result],
                                               engine: Engine, tmp_path: Path) -> None:
    plain = _write(tmp_path / "t.jsonl", _events(5))
    compressed = tmp_path / "t.jsonl.gz"
    compressed.write_bytes(gzip.compress(plain.read_bytes()))
    first = run_kaudit("ingest", str(plain))
    assert first.exit_code == 0 and "ingested trace 't'" in first.output
    before = database_contents(engine)
    again = run_kaudit("ingest", str(compressed), "--name", "other")
    assert again.exit_code == 0
    assert "already ingested as trace 't'" in again.output
    assert database_contents(engine) == before


MALFORMED = {
    "bad-json": (lambda: [b'{"ts": 1, "type": "ADDED", "object": {'], 3, "invalid JSON"),
    "missing-kind": (lambda: [{"ts": 9, "type": "ADDED", "object": {"metadata": {"name": "x"}}}],
                     3, "object.kind: missing"),
    "bad-quantity": (lambda: [{"ts": 9, "type": "ADDED", "object": make_pod("q").req(
        cpu="2 cores").obj()}], 3, "requests.cpu: invalid quantity '2 cores'"),
    "time-backwards": (lambda: [{"ts": 0.5, "type": "ADDED", "object": make_pod("q").obj()}],
                       3, "time goes backwards"),
    "bad-type": (lambda: [{"ts": 9, "type": "PATCHED", "object": make_pod("q").obj()}], 3,
                 "type: 'PATCHED'"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_trace_stores_nothing(case: str, run_kaudit: Callable[..., Result],
                                        engine: Engine, tmp_path: Path,
                                        sample_path: Path) -> None:
    assert run_kaudit("ingest", str(sample_path)).exit_code == 0
    before = database_contents(engine)
    extra, line, reason = MALFORMED[case]
    path = _write(tmp_path / f"{case}.jsonl", [*_events(1), *extra(), *_events(2, start=10)])
    result = run_kaudit("ingest", str(path))
    assert result.exit_code == 2
    assert result.output.startswith(f"kaudit: error: {path}:{line}: ")
    assert reason in result.output
    assert database_contents(engine) == before


def test_truncated_gzip_stores_nothing(run_kaudit: Callable[..., Result], engine: Engine,
                                       tmp_path: Path) -> None:
    data = gzip.compress(b"".join(orjson.dumps(e) + b"\n" for e in _events(400)))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    before = database_contents(engine)
    result = run_kaudit("ingest", str(path))
    assert result.exit_code == 2
    assert f"{path}:" in result.output and "truncated gzip stream" in result.output
    assert database_contents(engine) == before


def test_skip_invalid_keeps_valid_lines_and_records_rejections(
        run_kaudit: Callable[..., Result], engine: Engine, tmp_path: Path) -> None:
    path = _write(tmp_path / "mixed.jsonl", [
        *_events(2), b"garbage",
        {"ts": 5, "type": "ADDED", "object": make_pod("bad").req(memory="lots").obj()},
        {"ts": 6, "type": "ADDED", "object": make_pod("good").obj()},
    ])
    result = run_kaudit("ingest", str(path), "--skip-invalid", "--json")
    assert result.exit_code == 0, result.output
    trace = json.loads(result.output)["trace"]
    assert trace["events"] == 4 and trace["rejected"] == 2
    rejected = rejected_lines(engine, trace["id"])
    assert [(r["line"], r["reason"].split(":")[0]) for r in rejected] == [
        (4, "invalid JSON"), (5, "object.spec.containers[0].resources.requests.memory")]
    detail = run_kaudit("traces", "mixed")
    assert f"{path}:4: invalid JSON" in detail.output


def test_sort_orders_by_time_keeping_arrival_order(engine: Engine, tmp_path: Path) -> None:
    pods = [make_pod(f"p{i}").obj() for i in range(5)]
    path = _write(tmp_path / "unsorted.jsonl", [
        {"ts": 3, "type": "ADDED", "object": pods[0]},
        {"ts": 1, "type": "ADDED", "object": pods[1]},
        {"ts": 3, "type": "ADDED", "object": pods[2]},
        {"ts": 2, "type": "ADDED", "object": pods[3]},
        {"ts": 1, "type": "ADDED", "object": pods[4]},
    ])
    result = ingest_trace(engine, [TraceInput(path)], sort=True)
    names = [e.name for e in iter_events(engine, result.trace_id)]
    assert names == ["p1", "p4", "p3", "p0", "p2"]
    with engine.connect() as connection:
        seqs = connection.scalars(select(TraceEvent.seq).where(
            TraceEvent.trace_id == result.trace_id).order_by(TraceEvent.seq)).all()
    assert seqs == [0, 1, 2, 3, 4]


def test_snapshot_then_kubectl_watch_events(run_kaudit: Callable[..., Result], engine: Engine,
                                            tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_bytes(orjson.dumps({"kind": "List", "items": [
        make_node("n1").capacity(cpu="4").obj(), make_pod("running").node("n1").obj()]}))
    pod = make_pod("new").obj()
    watch = _write(tmp_path / "watch.jsonl", [{"type": "ADDED", "object": pod},
                                              {"type": "DELETED", "object": pod}])
    result = run_kaudit("ingest", str(watch), "--snapshot", str(state), "--start",
                        "2026-03-01T00:00:00Z", "--step", "2", "--json")
    assert result.exit_code == 0, result.output
    trace = json.loads(result.output)["trace"]
    assert [s["format"] for s in trace["sources"]] == ["list", "kubectl-watch"]
    events = list(iter_events(engine, trace["id"]))
    start = 1772323200_000000
    assert [(e.name, e.type, e.ts_us - start) for e in events] == [
        ("n1", "ADDED", 0), ("running", "ADDED", 0), ("new", "ADDED", 0),
        ("new", "DELETED", 2_000_000)]


def test_snapshot_takes_the_first_event_time(engine: Engine, tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    state.write_text("kind: List\nitems:\n- kind: Node\n  metadata: {name: n1}\n")
    events = _write(tmp_path / "e.jsonl", _events(1, start=100))
    result = ingest_trace(engine, [TraceInput(state, SNAPSHOT), TraceInput(events)])
    assert [e.ts_us for e in iter_events(engine, result.trace_id)] == [
        100_000_000, 100_000_000, 101_000_000]


def test_names_are_unique(run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    first = _write(tmp_path / "day.jsonl", _events(1))
    (tmp_path / "sub").mkdir()
    second = _write(tmp_path / "sub" / "day.jsonl", _events(2))
    assert run_kaudit("ingest", str(first)).exit_code == 0
    auto = run_kaudit("ingest", str(second))
    assert auto.exit_code == 0 and "trace 'day-2'" in auto.output
    clash = run_kaudit("ingest", str(first), "--name", "day-2", "--sort")
    assert clash.exit_code == 2 and "already exists" in clash.output


def test_usage_errors(run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    assert run_kaudit("ingest").exit_code == 2
    missing = run_kaudit("ingest", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and "nope.jsonl: no such file" in missing.output
    path = _write(tmp_path / "ok.jsonl", _events(1))
    bad_start = run_kaudit("ingest", str(path), "--start", "noon")
    assert bad_start.exit_code == 2 and "--start" in bad_start.output


def test_ingest_streams_with_bounded_memory(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    template = make_pod("p").req(cpu="250m", memory="512Mi").label("app", "x" * 200).obj()
    with path.open("wb") as handle:
        for i in range(20_000):
            template["metadata"]["name"] = f"pod-{i}"
            handle.write(orjson.dumps({"ts": i, "type": "ADDED", "object": template}) + b"\n")
    tracemalloc.start()
    try:
        result = ingest_trace(engine, [TraceInput(path)], batch_size=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.events == 20_000
    size = path.stat().st_size
    assert peak < size / 2, f"peak {peak} bytes for a {size}-byte file: not streaming"
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(TraceEvent)) == 20_000


def test_a_trace_of_nothing_is_refused(run_kaudit: Callable[..., Result], engine: Engine,
                                       tmp_path: Path) -> None:
    before = database_contents(engine)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n  \n")
    for path in (empty, blank):
        result = run_kaudit("ingest", str(path))
        assert result.exit_code == 2, result.output
        assert result.output == f"kaudit: error: {path}: the file holds no events: it is empty\n"
    reads = tmp_path / "reads.log"  # an audit log of read requests only: nothing to replay
    reads.write_bytes(b"".join(orjson.dumps({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
        "auditID": f"id-{i}", "stage": "ResponseComplete", "requestURI": "/api/v1/pods",
        "verb": "list", "objectRef": {"resource": "pods", "apiVersion": "v1"},
        "responseStatus": {"code": 200},
        "stageTimestamp": f"2026-01-05T09:00:0{i}.000000Z"}) + b"\n" for i in range(3)))
    result = run_kaudit("ingest", str(reads))
    assert result.exit_code == 2, result.output
    assert f"{reads}: nothing to replay: no event was kept (3 record(s) left out" in result.output
    assert database_contents(engine) == before
