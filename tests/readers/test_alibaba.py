"""Alibaba cluster-trace-gpu-v2023 ("openb") CSVs: mapping, replay order, tuning, bad input."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from kaudit.errors import InputError, TraceError
from kaudit.readers.alibaba import (
    ALIBABA,
    DROP_TUNED_DOWN,
    AlibabaOptions,
    AlibabaSummary,
    is_node_list,
    is_pod_list,
    read_alibaba,
)
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.validate import validate_object

TRACE = (Path(__file__).parents[2] / ".." / "shared" / "traces" / "alibaba-gpu-v2023"
         / "csv").resolve()

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time")
MULTI_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli"

NODES = [
    "openb-node-0000,64000,262144,2,P100",
    "openb-node-0022,128000,786432,8,G3",
    "openb-node-0025,32000,131072,4,V100M16",
    "openb-node-0227,32000,262144,0,",
]
# Real rows (default list and README samples), some times changed to test the ordering.
PODS = [
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0",
    "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061",
    "openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497",
    "openb-pod-0022,4000,15258,1,220,,BE,Running,9679175,9973826,9679175",
    "openb-pod-0035,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063",
    "openb-pod-0040,8000,0,0,0,,BE,Pending,200,200,",
]
# (10 GPUs of requests on 14 GPUs of capacity)
MULTI = [
    "openb-pod-0000,12000,16384,1,1000",
    "openb-pod-0001,6000,12288,1,460",
    "openb-pod-0002,88000,327680,8,1000",
    "openb-pod-0003,4000,15258,1,220",
    "openb-pod-0004,8000,30517,0,0",
    "openb-pod-0005,16000,32768,1,1000",
]


def _csv(path: Path, header: str, rows: list[str], *, gz: bool = False,
         newline: str = "\n") -> Path:
    data = newline.join([header, *rows]).encode() + newline.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.fixture
def nodes(tmp_path: Path) -> Path:
    return _csv(tmp_path / "nodes.csv", NODE_HEADER, NODES)


@pytest.fixture
def pods(tmp_path: Path) -> Path:
    return _csv(tmp_path / "pods.csv", POD_HEADER, PODS)


def _read(nodes: Path, pods: Path, options: AlibabaOptions | None = None
          ) -> tuple[list[tuple[int, WatchEvent | Rejected]], StreamStats, StreamStats,
                     AlibabaSummary]:
    node_stats, pod_stats, summary = StreamStats(), StreamStats(), AlibabaSummary()
    items = list(read_alibaba(nodes, pods, options or AlibabaOptions(), node_stats, pod_stats,
                              summary=summary))
    return items, node_stats, pod_stats, summary


def _events(items: list[tuple[int, WatchEvent | Rejected]], source: int = 1) -> list[WatchEvent]:
    return [item for index, item in items if index == source and isinstance(item, WatchEvent)]


def _rejected(items: list[tuple[int, WatchEvent | Rejected]]) -> list[tuple[int, Rejected]]:
    return [(index, item) for index, item in items if isinstance(item, Rejected)]


def _by_name(events: list[WatchEvent]) -> dict[str, dict]:
    return {event.name: event.object for event in events if event.type == "ADDED"}


def _requests(pod: dict) -> dict[str, str]:
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"]
    return resources["requests"]


def _gpu_milli(event: WatchEvent) -> int:
    annotations = event.object["metadata"].get("annotations", {})
    return (int(annotations.get("alibabacloud.com/gpu-milli", 0))
            * int(annotations.get("alibabacloud.com/gpu-count", 0)))


# ----------------------------------------------------------------------------- mapping

def test_nodes_become_ready_nodes_at_start(nodes: Path, pods: Path) -> None:
    items, node_stats, _, summary = _read(nodes, pods, AlibabaOptions(start_us=5_000_000))
    events = _events(items, 0)
    assert [(e.type, e.kind, e.namespace, e.name, e.line, e.ts_us) for e in events] == [
        ("ADDED", "Node", "", name, line, 5_000_000)
        for name, line in [("openb-node-0000", 2), ("openb-node-0022", 3),
                           ("openb-node-0025", 4), ("openb-node-0227", 5)]]
    p100 = events[0].object
    assert p100["metadata"]["labels"] == {"kubernetes.io/hostname": "openb-node-0000",
                                          "kubernetes.io/os": "linux",
                                          "alibabacloud.com/gpu-card-model": "P100"}
    assert p100["metadata"]["uid"] == events[0].uid
    expected = {"cpu": "64000m", "memory": "262144Mi", "pods": "1001", "nvidia.com/gpu": "2"}
    assert p100["status"]["capacity"] == expected
    assert p100["status"]["allocatable"] == expected
    assert p100["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    cpu_node = events[3].object
    assert "alibabacloud.com/gpu-card-model" not in cpu_node["metadata"]["labels"]
    assert cpu_node["status"]["capacity"] == {"cpu": "32000m", "memory": "262144Mi",
                                              "pods": "1001"}
    assert node_stats.format == ALIBABA and node_stats.lines == 5
    assert (summary.nodes, summary.gpu_capacity) == (4, 14)
    for event in events:
        assert validate_object(event.object, "ADDED") == ("Node", "", event.name, event.uid)


def test_pods_whole_gpu_mode(nodes: Path, pods: Path) -> None:
    items, _, pod_stats, _ = _read(nodes, pods)
    assert not _rejected(items)
    objects = _by_name(_events(items))
    share = objects["openb-pod-0001"]
    assert share["apiVersion"] == "v1" and share["kind"] == "Pod"
    assert share["metadata"]["namespace"] == "default"
    assert "creationTimestamp" not in share["metadata"]
    assert share["status"] == {"phase": "Pending"}
    assert [c["name"] for c in share["spec"]["containers"]] == ["main"]
    # A GPU-sharing pod asks a whole GPU, as with the NVIDIA device plugin.
    assert _requests(share) == {"cpu": "6000m", "memory": "12288Mi", "nvidia.com/gpu": "1"}
    assert share["metadata"]["annotations"] == {"alibabacloud.com/gpu-milli": "460",
                                                "alibabacloud.com/gpu-count": "1"}
    assert share["metadata"]["labels"] == {"alibabacloud.com/qos": "LS"}
    assert "affinity" not in share["spec"]
    eight = objects["openb-pod-0017"]
    assert _requests(eight) == {"cpu": "88000m", "memory": "327680Mi", "nvidia.com/gpu": "8"}
    assert eight["metadata"]["annotations"]["alibabacloud.com/gpu-count"] == "8"
    cpu_only = objects["openb-pod-0040"]
    assert _requests(cpu_only) == {"cpu": "8000m"}  # memory 0 is left out
    assert "annotations" not in cpu_only["metadata"]
    assert cpu_only["metadata"]["labels"] == {"alibabacloud.com/qos": "BE"}
    assert pod_stats.format == ALIBABA and pod_stats.lines == 7


def test_gpu_spec_becomes_annotation_and_required_affinity(nodes: Path, pods: Path) -> None:
    items, *_ = _read(nodes, pods)
    pod = _by_name(_events(items))["openb-pod-0035"]
    assert pod["metadata"]["annotations"]["alibabacloud.com/gpu-card-model"] == "V100M16|V100M32"
    assert pod["spec"]["affinity"] == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "alibabacloud.com/gpu-card-model",
                                   "operator": "In", "values": ["V100M16", "V100M32"]}]}]}}}


def test_pods_and_nodes_milli_mode(nodes: Path, pods: Path) -> None:
    items, *_ = _read(nodes, pods, AlibabaOptions(gpu_sharing="milli"))
    node = _events(items, 0)[1].object
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node["status"]["capacity"]["alibabacloud.com/gpu-milli"] == "8000"
    assert "alibabacloud.com/gpu-milli" not in _events(items, 0)[3].object["status"]["capacity"]
    objects = _by_name(_events(items))
    assert _requests(objects["openb-pod-0001"]) == {
        "cpu": "6000m", "memory": "12288Mi", "alibabacloud.com/gpu-milli": "460"}
    assert _requests(objects["openb-pod-0000"]) == {
        "cpu": "12000m", "memory": "16384Mi", "nvidia.com/gpu": "1",
        "alibabacloud.com/gpu-milli": "1000"}
    assert _requests(objects["openb-pod-0017"])["alibabacloud.com/gpu-milli"] == "8000"
    assert _requests(objects["openb-pod-0040"]) == {"cpu": "8000m"}


def test_every_object_is_valid(nodes: Path, pods: Path) -> None:
    for mode in ("whole", "milli"):
        items, *_ = _read(nodes, pods, AlibabaOptions(gpu_sharing=mode))
        for event in _events(items, 0) + _events(items):
            assert validate_object(event.object, event.type) == (
                event.kind, event.namespace, event.name, event.uid)


# ----------------------------------------------------------------------------- time order

def test_replay_by_time_sorts_stably_and_deletes(tmp_path: Path, nodes: Path) -> None:
    pods = _csv(tmp_path / "p.csv", POD_HEADER, [
        "openb-pod-0002,1000,100,0,0,,LS,Running,50,80,50",
        "openb-pod-0000,1000,100,0,0,,LS,Running,10,60,10",
        "openb-pod-0001,1000,100,0,0,,LS,Running,50,60,50",
        "openb-pod-0003,1000,100,0,0,,LS,Running,70,70,70",
        "openb-pod-0004,1000,100,0,0,,LS,Running,70,,70",
    ])
    items, *_ = _read(nodes, pods, AlibabaOptions(start_us=1_000_000))
    events = _events(items)
    assert [(e.ts_us, e.type, e.name, e.line) for e in events] == [
        (11_000_000, "ADDED", "openb-pod-0000", 3),
        (51_000_000, "ADDED", "openb-pod-0002", 2),   # same time: file order
        (51_000_000, "ADDED", "openb-pod-0001", 4),
        (61_000_000, "DELETED", "openb-pod-0000", 3),
        (61_000_000, "DELETED", "openb-pod-0001", 4),
        (71_000_000, "ADDED", "openb-pod-0003", 5),
        (71_000_000, "DELETED", "openb-pod-0003", 5),  # zero lifetime: deleted at once
        (71_000_000, "ADDED", "openb-pod-0004", 6),   # no deletion_time: stays
        (81_000_000, "DELETED", "openb-pod-0002", 2),
    ]
    deleted = events[3]
    assert validate_object(deleted.object, "DELETED")[2] == "openb-pod-0000"
    assert all(event.ts_us >= 1_000_000 for event in _events(items, 0))


def test_no_deletions(nodes: Path, pods: Path) -> None:
    items, *_ = _read(nodes, pods, AlibabaOptions(deletions=False))
    events = _events(items)
    assert {event.type for event in events} == {"ADDED"} and len(events) == len(PODS)
    assert [event.ts_us for event in events] == sorted(event.ts_us for event in events)


def test_lists_without_times_replay_in_file_order(tmp_path: Path, nodes: Path) -> None:
    pods = _csv(tmp_path / "multigpu.csv", MULTI_HEADER, list(reversed(MULTI)))
    items, *_ = _read(nodes, pods, AlibabaOptions(start_us=7, step_us=500_000))
    events = _events(items)
    assert [e.name for e in events] == [f"openb-pod-000{i}" for i in range(5, -1, -1)]
    assert [e.ts_us for e in events] == [7 + i * 500_000 for i in range(6)]
    assert {e.type for e in events} == {"ADDED"}
    assert "labels" not in _by_name(events)["openb-pod-0000"]["metadata"]  # no qos column


# ----------------------------------------------------------------------------- shuffle

def _key(items: list[tuple[int, WatchEvent | Rejected]]) -> list[tuple]:
    return [(index, item.ts_us, item.type, item.name, item.object)
            for index, item in items if isinstance(item, WatchEvent)]


def test_shuffle_is_seeded_and_keeps_lifetimes(nodes: Path, pods: Path) -> None:
    options = AlibabaOptions(shuffle=True, seed=7, step_us=10_000_000, start_us=100)
    items, *_ = _read(nodes, pods, options)
    assert _key(items) == _key(_read(nodes, pods, options)[0])
    expected = sorted(row.split(",")[0] for row in PODS)
    random.Random(7).shuffle(expected)  # sort by name, then a seeded shuffle
    added = [e for e in _events(items) if e.type == "ADDED"]
    assert [e.name for e in added] == expected
    arrival = {e.name: e.ts_us for e in added}
    assert sorted(arrival.values()) == [100 + i * 10_000_000 for i in range(len(PODS))]
    deleted = {e.name: e.ts_us for e in _events(items) if e.type == "DELETED"}
    assert deleted["openb-pod-0035"] - arrival["openb-pod-0035"] == (9968575 - 9967058) * 10**6
    assert deleted["openb-pod-0040"] == arrival["openb-pod-0040"]
    events = _events(items)
    assert [e.ts_us for e in events] == sorted(e.ts_us for e in events)


def test_shuffle_seeds_differ(tmp_path: Path, nodes: Path) -> None:
    rows = [f"openb-pod-{i:04d},1000,100,1,500,,BE,Running,{i},{i + 5},{i}" for i in range(30)]
    pods = _csv(tmp_path / "p.csv", POD_HEADER, rows)
    orders = [[e.name for e in _events(_read(nodes, pods, AlibabaOptions(
        shuffle=True, seed=seed, deletions=False))[0])] for seed in (42, 43)]
    assert orders[0] != orders[1] and sorted(orders[0]) == sorted(orders[1])


def test_shuffle_accepts_rows_without_times(tmp_path: Path, nodes: Path) -> None:
    row = "openb-pod-0009,1000,100,0,0,,BE,Pending,,,"
    pods = _csv(tmp_path / "p.csv", POD_HEADER, [*PODS, row])
    items, *_ = _read(nodes, pods)
    assert [(i, r.line, r.reason) for i, r in _rejected(items)] == [
        (1, 8, "creation_time: empty (a replay by time needs it; --shuffle replays without)")]
    items, *_ = _read(nodes, pods, AlibabaOptions(shuffle=True))
    assert not _rejected(items)
    assert [e.type for e in _events(items) if e.name == "openb-pod-0009"] == ["ADDED"]


# ----------------------------------------------------------------------------- gpu_load

def test_gpu_load_up_appends_tuned_copies(tmp_path: Path, nodes: Path) -> None:
    pods = _csv(tmp_path / "multigpu.csv", MULTI_HEADER, MULTI)
    options = AlibabaOptions(shuffle=True, seed=3, gpu_load=3.0, step_us=1)
    items, _, pod_stats, summary = _read(nodes, pods, options)
    events = _events(items)
    originals, copies = events[:len(MULTI)], events[len(MULTI):]
    assert sorted(e.name for e in originals) == [row.split(",")[0] for row in MULTI]
    assert copies and all("-tuned-" in e.name for e in copies)
    assert [e.name.rsplit("-", 1)[1] for e in copies] == [str(i) for i in range(len(copies))]
    lines = {row.split(",")[0]: number for number, row in enumerate(MULTI, start=2)}
    assert all(e.line == lines[e.name.split("-tuned-")[0]] for e in copies)
    assert [e.ts_us for e in events] == list(range(len(events)))  # copies arrive after
    total = sum(_gpu_milli(e) for e in events)
    target = 3.0 * 14 * 1000
    assert target - 1000 < total <= target + 7000  # within one pod's request
    assert (summary.pods, summary.copies, summary.dropped) == (len(events), len(copies), 0)
    assert (summary.gpu_request_read_milli, summary.gpu_request_milli) == (10680, total)
    assert pod_stats.dropped_count == 0
    assert summary.describe().startswith(f"tuned to {len(events)} pods, GPU request ")
    assert _key(items) == _key(_read(nodes, pods, options)[0])


def test_gpu_load_copies_keep_times_without_shuffle(nodes: Path, pods: Path) -> None:
    items, *_ = _read(nodes, pods, AlibabaOptions(gpu_load=2.0))
    events = _events(items)
    times = {(e.name, e.type): e.ts_us for e in events}
    copies = [e for e in events if "-tuned-" in e.name and e.type == "ADDED"]
    assert copies
    for copy in copies:
        source = copy.name.split("-tuned-")[0]
        assert copy.ts_us == times[(source, "ADDED")]
        assert times[(copy.name, "DELETED")] == times[(source, "DELETED")]
    assert [e.ts_us for e in events] == sorted(e.ts_us for e in events)


def test_gpu_load_down_drops_random_pods(tmp_path: Path, nodes: Path) -> None:
    pods = _csv(tmp_path / "multigpu.csv", MULTI_HEADER, MULTI)
    items, _, pod_stats, summary = _read(nodes, pods, AlibabaOptions(gpu_load=0.3, seed=1))
    events = _events(items)
    assert 0 < len(events) < len(MULTI)
    assert not any("-tuned-" in e.name for e in events)
    assert sum(_gpu_milli(e) for e in events) <= 0.3 * 14 * 1000
    dropped = len(MULTI) - len(events)
    assert pod_stats.dropped == {DROP_TUNED_DOWN: [dropped, pod_stats.dropped[DROP_TUNED_DOWN][1]]}
    assert (summary.dropped, summary.copies, summary.pods) == (dropped, 0, len(events))
    assert summary.tuned and summary.describe().startswith(f"tuned to {len(events)} pods")
    file_order = [row.split(",")[0] for row in MULTI]
    assert [e.name for e in events] == [name for name in file_order
                                        if name in {e.name for e in events}]


def test_gpu_load_needs_gpus(tmp_path: Path, nodes: Path) -> None:
    cpu_nodes = _csv(tmp_path / "cpu-nodes.csv", NODE_HEADER, ["openb-node-0000,32000,1024,0,"])
    pods = _csv(tmp_path / "multigpu.csv", MULTI_HEADER, MULTI)
    with pytest.raises(TraceError, match="the node list has no GPU"):
        _read(cpu_nodes, pods, AlibabaOptions(gpu_load=1.3))
    cpu_pods = _csv(tmp_path / "cpu-pods.csv", MULTI_HEADER, ["openb-pod-0000,1000,1,0,0"])
    with pytest.raises(TraceError, match="no pod of the list requests a GPU"):
        _read(nodes, cpu_pods, AlibabaOptions(gpu_load=1.3))


@pytest.mark.parametrize("options", [
    {"gpu_sharing": "shared"}, {"gpu_load": 0.0}, {"gpu_load": -1.0},
    {"gpu_load": float("nan")}, {"gpu_load": 1e9}, {"step_us": -1},
])
def test_bad_options(options: dict) -> None:
    with pytest.raises(InputError):
        AlibabaOptions(**options)


# ----------------------------------------------------------------------------- input forms

def test_gzip_crlf_and_blank_lines(tmp_path: Path) -> None:
    nodes = _csv(tmp_path / "n.csv.gz", NODE_HEADER, [*NODES, "", ""], gz=True, newline="\r\n")
    pods = _csv(tmp_path / "p.gz", POD_HEADER, [PODS[0], "", PODS[1], "", ""], gz=True)
    items, node_stats, pod_stats, _ = _read(nodes, pods)
    assert not _rejected(items)
    assert len(_events(items, 0)) == 4 and [e.line for e in _events(items)][:2] == [2, 4]
    assert (node_stats.lines, pod_stats.lines) == (7, 6)


def test_header_sniffing() -> None:
    assert is_node_list(NODE_HEADER.split(","))
    assert is_node_list(["\ufeffsn", " cpu_milli", "memory_mib", "gpu", "model"])
    assert not is_node_list(POD_HEADER.split(","))
    assert is_pod_list(POD_HEADER.split(",")) and is_pod_list(MULTI_HEADER.split(","))
    assert not is_pod_list(NODE_HEADER.split(","))


def test_columns_in_any_order(tmp_path: Path) -> None:
    nodes = _csv(tmp_path / "n.csv", "model,gpu,sn,memory_mib,cpu_milli,extra",
                 ["T4,1,openb-node-0001,1024,2000,x"])
    pods = _csv(tmp_path / "p.csv", "gpu_milli,num_gpu,name,memory_mib,cpu_milli",
                ["500,1,openb-pod-0000,1024,1000"])
    items, *_ = _read(nodes, pods)
    node = _events(items, 0)[0].object
    assert node["status"]["capacity"]["cpu"] == "2000m"
    assert _by_name(_events(items))["openb-pod-0000"]["metadata"]["annotations"] == {
        "alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "1"}


# ----------------------------------------------------------------------------- bad input

def test_missing_columns_raise_on_line_1(tmp_path: Path, pods: Path) -> None:
    nodes = _csv(tmp_path / "n.csv", "sn,cpu_milli,memory", ["openb-node-0000,1,1"])
    with pytest.raises(TraceError) as caught:
        _read(nodes, pods)
    assert (caught.value.source, caught.value.line) == (str(nodes), 1)
    assert caught.value.reason == ("missing column(s) memory_mib, gpu, model; expected an "
                                   "openb node list (sn,cpu_milli,memory_mib,gpu,model)")
    with pytest.raises(TraceError, match=r"missing column\(s\) sn, .*this is a pod list"):
        _read(pods, pods)
    good_nodes = _csv(tmp_path / "good.csv", NODE_HEADER, NODES)
    with pytest.raises(TraceError) as caught:
        _read(good_nodes, good_nodes)
    assert caught.value.line == 1
    assert caught.value.reason.startswith("missing column(s) name, num_gpu, gpu_milli; "
                                          "expected an openb pod list (name,cpu_milli,")


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "empty file"),
    (b"sn,cpu_milli,memory_mib,gpu,model,gpu\n", "column 'gpu' appears twice"),
    (b"\xff\xfe,sn\n", "unreadable header"),
    (b"sn,\"cpu_milli\n", "unreadable header"),
])
def test_bad_node_headers(tmp_path: Path, pods: Path, content: bytes, reason: str) -> None:
    nodes = tmp_path / "n.csv"
    nodes.write_bytes(content)
    with pytest.raises(TraceError, match=reason) as caught:
        _read(nodes, pods)
    assert caught.value.line == 1


def test_deletion_time_needs_creation_time(tmp_path: Path, nodes: Path) -> None:
    pods = _csv(tmp_path / "p.csv", MULTI_HEADER + ",deletion_time", [MULTI[0] + ",5"])
    with pytest.raises(TraceError, match="deletion_time without creation_time"):
        _read(nodes, pods)


POD_ROW = "openb-pod-0100,6000,12288,1,460,,LS,Running,100,200,100"


@pytest.mark.parametrize(("row", "reason"), [
    ("openb-pod-0100,6000,12288,1,460", "row: 5 fields, the header has 11"),
    ("openb-pod-0100,6000,12288,1,460,,LS,Running,100,200,100,7",
     "row: 12 fields, the header has 11"),
    (POD_ROW.replace("6000", "6 cores"), "cpu_milli: '6 cores' is not a non-negative integer"),
    (POD_ROW.replace("6000", "6000.5"), "cpu_milli: '6000.5' is not a non-negative integer"),
    (POD_ROW.replace("12288", "-5"), "memory_mib: -5 is negative"),
    (POD_ROW.replace("12288", ""), "memory_mib: empty"),
    (POD_ROW.replace(",1,460,", ",9,1000,"), "num_gpu: 9 is outside 0..8"),
    (POD_ROW.replace(",1,460,", ",1,1001,"), "gpu_milli: 1001 is outside 0..1000"),
    (POD_ROW.replace(",1,460,", ",0,460,"), "gpu_milli: 460 with num_gpu 0"),
    (POD_ROW.replace(",1,460,", ",1,0,"), "gpu_milli: 0 with num_gpu 1"),
    (POD_ROW.replace(",1,460,", ",2,500,"), "gpu_milli: 500 with num_gpu 2"),
    (POD_ROW.replace(",100,200,", ",300,200,"),
     "deletion_time: 200 is before creation_time 300"),
    (POD_ROW.replace(",100,200,100", ",100,200,soon"),
     "scheduled_time: 'soon' is not a non-negative integer"),
    (POD_ROW.replace(",100,200,", ",100,99999999999999999999,"),
     "deletion_time: 99999999999999999999 is larger than 1,000,000,000,000"),
    (POD_ROW.replace("openb-pod-0100", "Openb_Pod"),
     "name: 'Openb_Pod' is not a valid Kubernetes object name"),
    (POD_ROW.replace("openb-pod-0100", ""), "name: empty"),
    (POD_ROW.replace(",,LS,", ",V100 16GB,LS,"),
     "gpu_spec: 'V100 16GB' is not a valid Kubernetes label value"),
    (POD_ROW.replace(",LS,", ",L/S,"), "qos: 'L/S' is not a valid Kubernetes label value"),
    ('openb-pod-0100,"6000,12288,1,460,,LS,Running,100,200,100', "row: not CSV"),
    ("openb-pod-0000,1000,100,0,0,,LS,Running,10,60,10", "name: duplicate of line 2"),
])
def test_bad_pod_rows_are_rejected(tmp_path: Path, nodes: Path, row: str, reason: str) -> None:
    pods = _csv(tmp_path / "p.csv", POD_HEADER, [PODS[0], row, PODS[1]])
    items, *_ = _read(nodes, pods)
    rejected = _rejected(items)
    assert len(rejected) == 1
    source, item = rejected[0]
    assert (source, item.line, item.text) == (1, 3, row)
    assert item.reason.startswith(reason), item.reason
    assert [e.name for e in _events(items) if e.type == "ADDED"] == [
        "openb-pod-0000", "openb-pod-0001"]
    first_event = next(i for i, (source, item) in enumerate(items) if source == 1
                       and isinstance(item, WatchEvent))
    assert items.index(rejected[0]) < first_event  # rejections come before the pod events


@pytest.mark.parametrize(("row", "reason"), [
    ("openb-node-0100,64000,262144,two,P100", "gpu: 'two' is not a non-negative integer"),
    ("openb-node-0100,-64000,262144,2,P100", "cpu_milli: -64000 is negative"),
    ("openb-node-0000,64000,262144,2,P100", "sn: duplicate of line 2"),
    ("openb-node-0100,64000,262144,2,P 100", "model: 'P 100' is not a valid"),
    ("openb-node-0100,64000,262144", "row: 3 fields, the header has 5"),
])
def test_bad_node_rows_are_rejected(tmp_path: Path, pods: Path, row: str, reason: str) -> None:
    nodes = _csv(tmp_path / "n.csv", NODE_HEADER, [NODES[0], row])
    items, *_ = _read(nodes, pods)
    assert [(source, item.line, item.text) for source, item in _rejected(items)] == [
        (0, 3, row)]
    assert _rejected(items)[0][1].reason.startswith(reason)
    assert len(_events(items, 0)) == 1


def test_non_utf8_row_is_rejected(tmp_path: Path, nodes: Path) -> None:
    pods = tmp_path / "p.csv"
    pods.write_bytes(f"{POD_HEADER}\n{PODS[0]}\nopenb-pod-\xe9,1,1,0,0,,,,1,2,1\n".encode(
        "latin-1"))
    items, *_ = _read(nodes, pods)
    [(_, item)] = _rejected(items)
    assert item.line == 3 and item.reason.startswith("row: not UTF-8 text")


# ----------------------------------------------------------------------------- real trace

DEFAULT_PODS = TRACE / "openb_pod_list_default.csv"
GPU_NODES = TRACE / "openb_node_list_gpu_node.csv"


@pytest.fixture(scope="module")
def real_trace() -> tuple[Path, Path]:
    if not (DEFAULT_PODS.is_file() and GPU_NODES.is_file()):
        pytest.skip(f"the openb trace is not in {TRACE}")
    return GPU_NODES, DEFAULT_PODS


def test_real_default_list(real_trace: tuple[Path, Path]) -> None:
    items, node_stats, pod_stats, summary = _read(*real_trace)
    assert not _rejected(items)
    nodes, pods = _events(items, 0), _events(items)
    assert (len(nodes), sum(e.type == "ADDED" for e in pods)) == (1213, 8152)
    assert (node_stats.lines, pod_stats.lines) == (1214, 8153)
    assert sum(int(n.object["status"]["capacity"].get("nvidia.com/gpu", 0)) for n in nodes) \
        == 6212 == summary.gpu_capacity
    assert sum(_gpu_milli(e) for e in pods if e.type == "ADDED") == 6_086_800
    assert summary.gpu_request_read_milli == summary.gpu_request_milli == 6_086_800
    assert summary.describe() == "read 8,152 pods, GPU request 6,086.8 of 6,212 GPUs (98.0 %)"
    assert [e.ts_us for e in pods] == sorted(e.ts_us for e in pods)
    for event in nodes + pods:
        assert validate_object(event.object, event.type)[2] == event.name


def test_real_paper_protocol(real_trace: tuple[Path, Path]) -> None:
    options = AlibabaOptions(shuffle=True, seed=42, gpu_load=1.3, deletions=False,
                             gpu_sharing="milli")
    items, _, _, summary = _read(*real_trace, options)
    pods = _events(items)
    assert {e.type for e in pods} == {"ADDED"}
    total = sum(_gpu_milli(e) for e in pods)
    assert abs(total - 1.3 * 6212 * 1000) <= 8 * 1000  # within one pod's request
    assert summary.gpu_request_milli == total and summary.pods == len(pods)
    assert summary.copies == len(pods) - 8152
    assert all("-tuned-" in e.name for e in pods[8152:])
    assert not any("-tuned-" in e.name for e in pods[:8152])
    for event in pods:
        assert validate_object(event.object, "ADDED")[2] == event.name
