"""GPU devices in the cluster state: demands, fitting, assignments, forks, and a whole replay
that never over-commits a device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest
from sqlalchemy import Engine

from kaudit.cluster.gpus import GpuDevices, GpuOvercommit
from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.errors import InputError
from kaudit.eventlog.sink import MemorySink
from kaudit.fgd.paper import POLICIES, paper_configuration
from kaudit.model.gpu import GpuDemand, gpu_demand
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.replay.workload import workload_shapes
from kaudit.scheduler.build import load, load_object_config, scheduler_factory
from kaudit.store.traces import get_trace, iter_events
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace

MODEL = "alibabacloud.com/gpu-card-model"


def _gpu_node(name: str, gpus: int, model: str = "V100M16") -> dict:  # type: ignore[type-arg]
    return (make_node(name).capacity(cpu="64", memory="256Gi", pods="110")
            .extended("nvidia.com/gpu", str(gpus)).label(MODEL, model).obj())


def _gpu_pod(name: str, milli: int, count: int = 1, models: str = "") -> dict:  # type: ignore[type-arg]
    pod = make_pod(name).req(cpu="1", memory="1Gi").extended("nvidia.com/gpu", str(count))
    pod = pod.annotation("alibabacloud.com/gpu-milli", str(milli)).annotation(
        "alibabacloud.com/gpu-count", str(count))
    if models:
        pod = pod.annotation(MODEL, models)
    return pod.obj()


def test_demands_are_read_from_the_annotations() -> None:
    share = gpu_demand({"alibabacloud.com/gpu-milli": "300", "alibabacloud.com/gpu-count": "1"})
    assert share == GpuDemand(300, 1) and share.shares and share.total_milli == 300
    whole = gpu_demand({"alibabacloud.com/gpu-milli": "1000", "alibabacloud.com/gpu-count": "2",
                        MODEL: "V100M16|V100M32"})
    assert whole is not None and not whole.shares and whole.total_milli == 2000
    assert whole.accepts("V100M32") and not whole.accepts("T4")
    assert gpu_demand({}) is None and gpu_demand({"alibabacloud.com/gpu-count": "0"}) is None
    for bad, words in (({"alibabacloud.com/gpu-milli": "half"}, "is not a whole number"),
                       ({"alibabacloud.com/gpu-milli": "1500"}, "more than one GPU")):
        with pytest.raises(ValueError, match=words):
            gpu_demand(bad)


def test_devices_fit_assign_release_and_check() -> None:
    devices = GpuDevices(4)
    devices.set_node(0, 2, "V100M16")
    devices.set_node(1, 8, "T4")
    slots = np.array([0, 1, 2, 9])
    assert devices.fits(slots, GpuDemand(600, 1)).tolist() == [True, True, False, False]
    assert devices.fits(slots, GpuDemand(1000, 3)).tolist() == [False, True, False, False]
    assert devices.fits(slots, GpuDemand(500, 1, frozenset({"T4"}))).tolist() == [
        False, True, False, False]
    devices.assign("a", 0, (0,), 600)
    devices.assign("b", 0, (1,), 1000)
    assert devices.first_fit(0, GpuDemand(400, 1)) == (0,)
    assert devices.first_fit(0, GpuDemand(500, 1)) is None
    assert not devices.fits(np.array([0]), GpuDemand(1000, 1))[0]
    with pytest.raises(GpuOvercommit, match="GPU 0 of slot 0 has 400 milli free, asked 500"):
        devices.assign("c", 0, (0,), 500)
    devices.check()
    assert devices.release("b") is not None and devices.release("b") is None
    assert devices.first_fit(0, GpuDemand(1000, 1)) == (1,)
    devices.free[0, 0] = 1000  # a corrupted table is caught
    with pytest.raises(GpuOvercommit, match="GPU 0 of slot 0: 1000 milli free, but its pods "
                                            "hold 600"):
        devices.check()


def test_a_node_keeps_what_its_pods_hold_across_updates_and_removal() -> None:
    devices = GpuDevices(2)
    devices.set_node(0, 4, "V100M16")
    devices.assign("a", 0, (3,), 250)
    devices.set_node(0, 4, "V100M32")  # a label change: devices untouched
    assert devices.models[0] == "V100M32" and devices.free[0, 3] == 750
    devices.set_node(0, 2, "V100M32")  # shrinks, but device 3 is still held
    assert devices.free[0].tolist()[:4] == [1000, 1000, -1, 750]
    devices.clear_node(0)
    devices.check()
    devices.set_node(0, 4, "V100M32")  # back: the pod still holds its share
    assert devices.free[0, 3] == 750
    devices.check()


def test_a_fork_copies_on_its_first_write() -> None:
    devices = GpuDevices(2)
    devices.set_node(0, 2, "V100M16")
    clone = devices.fork()
    assert clone.free is devices.free  # nothing copied until the dry run writes
    clone.assign("dry-run", 0, (0,), 1000)
    assert devices.free[0, 0] == 1000 and "dry-run" not in devices.assigned
    clone.release("dry-run")
    devices.assign("real", 0, (1,), 500)
    assert "real" not in clone.assigned
    devices.check()
    clone.check()


def test_the_cluster_state_holds_and_gives_back_devices() -> None:
    cluster = ClusterState()
    cluster.add_node(_gpu_node("g1", 2))
    slot = cluster.slot_of["g1"]
    assert cluster.gpus.count(slot) == 2 and cluster.gpus.models[slot] == "V100M16"
    shared = pod_info(cluster, {**_gpu_pod("share", 300), "spec": {
        **_gpu_pod("share", 300)["spec"], "nodeName": "g1"}})
    assert shared.gpu == GpuDemand(300, 1)
    cluster.add_pod(shared)
    assert cluster.gpus.assigned[shared.uid].devices == (0,)
    fork = cluster.fork(slot)
    fork.remove_pod(shared.uid)
    assert cluster.gpus.free[slot, 0] == 700 and fork.gpus.free[slot, 0] == 1000
    cluster.remove_pod(shared.uid)
    assert cluster.gpus.free[slot].tolist()[:2] == [1000, 1000]
    cluster.gpus.check()


@pytest.mark.parametrize("policy", [None, *POLICIES])
def test_a_whole_replay_never_overcommits_a_gpu(engine: Engine, tmp_path: Path,
                                                policy: str | None) -> None:
    events = [(0.0, "ADDED", _gpu_node(f"g{i}", 4 if i % 2 else 8,
                                       "V100M16" if i < 3 else "V100M32")) for i in range(6)]
    shapes = [(250, 1, ""), (500, 1, ""), (1000, 1, ""), (1000, 2, ""), (300, 1, "V100M32"),
              (1000, 4, "V100M16")]
    for j in range(60):
        milli, count, models = shapes[j % len(shapes)]
        events.append((1.0 + j * 0.5, "ADDED", _gpu_pod(f"p{j:02d}", milli, count, models)))
    for j in range(0, 60, 4):
        events.append((40.0 + j * 0.1, "DELETED", _gpu_pod(f"p{j:02d}", *shapes[j % 6])))
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "gpus.jsonl", *events))],
                 name="gpus")
    if policy is None:
        config, registry = load()
        options = options_for(config)
    else:  # the FGD paper's policies choose devices themselves, each pod tried once
        config, registry = load_object_config(paper_configuration(policy), policy)
        options = options_for(config, one_try=True, gpu_report=True,
                              tie_break="shuffled-name")
    sink = MemorySink()
    workload = workload_shapes(iter_events(engine, get_trace(engine, "gpus").id))
    replay = Replay(scheduler_factory(config, registry, tie_break=options.tie_break), sink,
                    options, workload=workload)
    checked = 0
    original_add = replay.cluster.add_pod

    def add_and_check(pod):  # type: ignore[no-untyped-def]
        nonlocal checked
        original_add(pod)
        replay.cluster.gpus.check()  # after every placement, not only at the end
        checked += 1

    replay.cluster.add_pod = add_and_check  # type: ignore[method-assign]
    replay.run(iter_events(engine, get_trace(engine, "gpus").id))
    cluster = replay.cluster
    assert checked > (30 if policy is None else 15)  # one try each places fewer
    cluster.gpus.check()
    gpu_pods = {uid: pod for uid, pod in cluster.pods.items() if pod.gpu is not None}
    assert set(cluster.gpus.assigned) == set(gpu_pods)
    held = np.zeros_like(cluster.gpus.free)
    for uid, pod in gpu_pods.items():
        assignment = cluster.gpus.assigned[uid]
        assert assignment.slot == cluster.slot_of[pod.node_name]
        assert len(assignment.devices) == pod.gpu.count and assignment.milli == pod.gpu.milli
        for device in assignment.devices:
            held[assignment.slot, device] += assignment.milli
    present = cluster.gpus.free >= 0
    assert (cluster.gpus.free[present] == 1000 - held[present]).all()
    # the event log records each binding's devices: the live pods' match the final state
    bound = {}
    for _seq, _ts, kind, pod, _node, data, _blob in sink.records:
        if kind == "bind":
            bound[pod] = orjson.loads(data).get("gpus")
    assert all(bound[key] is not None for key in bound)
    for uid, pod in gpu_pods.items():
        held_now = cluster.gpus.assigned[uid]
        assert bound[pod.key] == {"devices": list(held_now.devices), "milli": held_now.milli}


def test_explain_shows_the_devices_a_pod_holds(engine: Engine, tmp_path: Path,
                                               run_kaudit) -> None:  # type: ignore[no-untyped-def]
    from kaudit.queries.explain import explain_pod

    path = write_trace(tmp_path / "two.jsonl", (0.0, "ADDED", _gpu_node("g1", 2)),
                       (1.0, "ADDED", _gpu_pod("whole", 1000, 2)),
                       (2.0, "ADDED", _gpu_pod("share", 300, 1, "V100M16")))
    ingest_trace(engine, [TraceInput(path)], name="two")
    assert run_kaudit("replay", "two", "--name", "two").exit_code == 0
    whole = explain_pod(engine, "two", "default/whole")["verdict"]
    assert whole["gpus"] == {"devices": [0, 1], "milli": 1000}
    assert whole["headline"].endswith("; GPUs 0, 1 (1000 milli each)")
    assert whole["inputs"]["gpu"] == "2 whole GPUs"
    share = explain_pod(engine, "two", "default/share")["verdict"]
    assert share["inputs"]["gpu"] == "300 milli of one GPU (shared), models V100M16"
    text = run_kaudit("explain", "two", "default/whole").output
    assert "GPU devices  2 whole GPUs" in text


def test_ingest_refuses_malformed_gpu_annotations(engine: Engine, tmp_path: Path) -> None:
    bad = _gpu_pod("bad", 300)
    bad["metadata"]["annotations"]["alibabacloud.com/gpu-milli"] = "lots"
    path = write_trace(tmp_path / "bad.jsonl", (0.0, "ADDED", _gpu_node("g1", 2)),
                       (1.0, "ADDED", bad))
    with pytest.raises(InputError, match=r"bad.jsonl:2: .*gpu-milli\]: 'lots' is not a whole "
                                         "number"):
        ingest_trace(engine, [TraceInput(path)], name="bad")


def test_an_absurd_gpu_count_is_modelled_with_a_bounded_table() -> None:
    from kaudit.cluster.gpus import MAX_DEVICES

    devices = GpuDevices(1)
    devices.set_node(0, 10**6, "V100M16")
    assert devices.count(0) == MAX_DEVICES and devices.free.shape[1] == MAX_DEVICES
