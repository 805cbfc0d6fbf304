"""JSON Lines watch streams: native and kubectl formats, bookmarks, and rejected lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from kaudit.errors import TraceError
from kaudit.readers.events import Rejected, WatchEvent
from kaudit.readers.snapshot import read_snapshot
from kaudit.readers.watch import KUBECTL_WATCH, NATIVE, StreamStats, UntimedClock, read_watch_stream
from kaudit.tracegen.builders import make_node, make_pod


def _write(path: Path, lines: list[object]) -> Path:
    path.write_bytes(b"".join((line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n"
                              for line in lines))
    return path


def _read(path: Path, start: int = 0, step: int = 0) -> tuple[list, StreamStats]:
    stats = StreamStats()
    return list(read_watch_stream(path, UntimedClock(start, step), stats)), stats


def test_native_lines(tmp_path: Path) -> None:
    node = make_node("n1").capacity(cpu="4").obj()
    path = _write(tmp_path / "t.jsonl", [
        {"ts": "2026-01-02T03:04:05Z", "type": "ADDED", "object": node},
        b"",
        {"ts": 1767323046, "type": "BOOKMARK", "object": {"kind": "Node", "metadata": {}}},
        {"ts": 1767323046.5, "type": "DELETED", "object": node},
    ])
    items, stats = _read(path)
    assert [type(i) for i in items] == [WatchEvent, WatchEvent]
    assert [i.ts_us for i in items] == [1767323045_000000, 1767323046_500000]
    assert [i.line for i in items] == [1, 4]
    assert stats.format == NATIVE and stats.bookmarks == 1


def test_kubectl_watch_output_uses_arrival_order(tmp_path: Path) -> None:
    pod = make_pod("p").obj()
    path = _write(tmp_path / "w.jsonl", [{"type": "ADDED", "object": pod},
                                         {"type": "MODIFIED", "object": pod},
                                         {"type": "DELETED", "object": pod}])
    items, stats = _read(path, start=10_000_000, step=500_000)
    assert stats.format == KUBECTL_WATCH
    assert [i.ts_us for i in items] == [10_000_000, 10_500_000, 11_000_000]


@pytest.mark.parametrize(("line", "reason"), [
    (b"{not json", "invalid JSON"),
    (b"[1, 2]", "not a watch event"),
    (orjson.dumps({"kind": "List", "items": []}), "pass it with --snapshot"),
    (orjson.dumps(make_pod("p").obj()), "a bare object"),
    (orjson.dumps({"ts": 1, "type": "UPSERT", "object": {}}), "type: 'UPSERT' is not one of"),
    (orjson.dumps({"ts": "soon", "type": "ADDED", "object": make_pod("p").obj()}), "ts: "),
    (orjson.dumps({"ts": 1, "type": "ERROR", "object": {"code": 410, "reason": "Gone",
                                                       "message": "too old"}}),
     "watch ERROR event: 410 Gone: too old"),
    (orjson.dumps({"ts": 1, "type": "ADDED", "object": {"metadata": {"name": "x"}}}),
     "object.kind: missing"),
])
def test_rejected_lines(tmp_path: Path, line: bytes, reason: str) -> None:
    path = _write(tmp_path / "bad.jsonl", [line])
    items, _ = _read(path)
    assert len(items) == 1 and isinstance(items[0], Rejected)
    assert reason in items[0].reason
    assert items[0].line == 1


def test_mixing_timed_and_untimed_lines_is_rejected(tmp_path: Path) -> None:
    pod = make_pod("p").obj()
    path = _write(tmp_path / "mix.jsonl", [{"ts": 1, "type": "ADDED", "object": pod},
                                           {"type": "MODIFIED", "object": pod}])
    items, _ = _read(path)
    assert isinstance(items[1], Rejected) and "ts: missing" in items[1].reason


def test_indented_json_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "pretty.json"
    path.write_text('{\n  "kind": "Pod"\n}\n')
    items, _ = _read(path)
    assert "not JSON Lines" in items[0].reason


def test_truncated_gzip_names_the_line(tmp_path: Path) -> None:
    lines = b"".join(orjson.dumps({"ts": i, "type": "ADDED", "object": make_pod(f"p{i}").obj()})
                     + b"\n" for i in range(200))
    data = gzip.compress(lines)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=r"cut\.jsonl\.gz:\d+: truncated gzip stream") as caught:
        _read(path)
    assert caught.value.line is not None and 1 < caught.value.line < 200


def test_snapshot_list_json_and_yaml(tmp_path: Path) -> None:
    items = [make_node("n1").capacity(cpu="4").obj(), make_pod("p", "ns").node("n1").obj()]
    json_path = tmp_path / "state.json"
    json_path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    events = list(read_snapshot(json_path, 5))
    assert [(e.kind, e.name, e.ts_us, e.type, e.line) for e in events] == [
        ("Node", "n1", 5, "ADDED", 1), ("Pod", "p", 5, "ADDED", 2)]

    import yaml
    yaml_path = tmp_path / "state.yaml"
    yaml_path.write_text(yaml.safe_dump({"kind": "List", "items": items}))
    assert [e.name for e in read_snapshot(yaml_path, 0)] == ["n1", "p"]


def test_snapshot_errors_name_the_item(tmp_path: Path) -> None:
    bad = make_pod("p").obj()
    bad["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "x1"}
    path = tmp_path / "state.json"
    path.write_bytes(orjson.dumps({"kind": "List", "items": [make_node("n").obj(), bad]}))
    rejected = [e for e in read_snapshot(path, 0) if isinstance(e, Rejected)]
    assert rejected[0].reason.startswith("items[1].spec.containers[0].resources.requests.cpu")

    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "List",\n "items": [\n}')
    with pytest.raises(TraceError, match=r"broken\.json:3: invalid JSON"):
        list(read_snapshot(broken, 0))
