"""The partitioned-GPU trace (``python -m kaudit.tracegen.dra_partitions``) replayed: at v1.37
no GPU's counters and no shared GPU's memory are ever taken beyond what they have, the
tainted GPU and the drained pool get only what tolerates them, and more pods are placed than
at v1.35, where these features are off and only the shared GPUs, each taken whole, serve."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.quantity import parse_quantity
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.models import Run, RunEvent
from kaudit.store.traces import get_trace
from kaudit.tracegen.dra import write_events
from kaudit.tracegen.dra_partitions import PROFILES, partitioned_cluster_events
from tests.conftest import gates_at

JSON = dict[str, Any]
GI = 2**30
#: memory (Gi) a device of each profile consumes of its GPU's counters.
MEMORY = {profile: memory for profile, memory, _, _ in PROFILES}


def _records(engine: Engine, run: str) -> list[tuple[str, int, str, str | None, JSON]]:
    with engine.connect() as connection:
        run_id = connection.execute(select(Run.id).where(Run.name == run)).scalar_one()
        rows = connection.execute(select(RunEvent.kind, RunEvent.ts_us, RunEvent.pod,
                                         RunEvent.node, RunEvent.data).where(
            RunEvent.run_id == run_id, RunEvent.kind.in_(("bind", "delete")))
            .order_by(RunEvent.seq)).all()
    return [(kind, ts, pod, node, orjson.loads(data)) for kind, ts, pod, node, data in rows]


def _replay(engine: Engine, tmp_path: Path, release: str) -> list[Any]:
    path = tmp_path / "partitions.jsonl"
    if not path.exists():
        write_events(path, partitioned_cluster_events(nodes=4, pods=48))
    trace = ingest_trace(engine, [TraceInput(path)], name="partitions")
    config, registry = load(None, gates_at(release))
    replay_trace(engine, get_trace(engine, str(trace.trace_id)), config, registry,
                 name=f"p-{release}")
    return _records(engine, f"p-{release}")


def _profile(device: str) -> str:
    parts = device.split("-")
    return "whole" if len(parts) == 2 else parts[2]


def test_partitions_never_take_more_than_their_gpu_has(engine: Engine, tmp_path: Path) -> None:
    held: dict[str, list[JSON]] = {}
    placed = 0
    for kind, ts, pod, _node, data in _replay(engine, tmp_path, "v1.37.2"):
        if kind == "delete":
            held.pop(pod, None)
            continue
        placed += 1
        held[pod] = data["claims"]
        gpus: dict[tuple[str, str], int] = defaultdict(int)
        shared: dict[str, int] = defaultdict(int)
        for pod_claims in held.values():
            for device in pod_claims:
                if device["device"].startswith("infer"):
                    shared[device["pool"]] += parse_quantity(
                        device["consumedCapacity"]["memory"]).nanos // 10**9
                    assert device["shareID"]
                else:
                    gpu = device["device"].split("-")[1]
                    gpus[(device["pool"], gpu)] += MEMORY[_profile(device["device"])] * GI
        assert all(used <= 80 * GI for used in gpus.values()), (pod, gpus)
        assert all(used <= 80 * GI for used in shared.values()), (pod, shared)
        for device in data["claims"]:
            # gpu-0 of node 0 is tainted NoSchedule (ecc) and nothing tolerates it.
            assert not (device["pool"] == "gpu-node-0000"
                        and device["device"].split("-")[1] == "0"), (pod, device)
            if device["pool"] == "gpu-node-0001" and _in_drain(ts):
                assert _profile(device["device"]) == "1g", (pod, device)  # the tolerant one
    assert placed > 20


def _in_drain(ts_us: int) -> bool:
    """Whether the time is within the DeviceTaintRule's 30 s to 90 s from the trace start."""
    seconds = (ts_us // 10**6) % 60 + ((ts_us // 10**6) // 60 % 60) * 60
    return 30 <= seconds < 90


def test_v1_35_serves_only_the_shared_gpus_each_whole(engine: Engine, tmp_path: Path) -> None:
    earlier = _replay(engine, tmp_path, "v1.35.4")
    binds = [data for kind, _, _, _, data in earlier if kind == "bind"]
    assert binds and all(d["claims"][0]["device"] == "infer-0" and "shareID" not in
                         d["claims"][0] for d in binds)
    later = _replay(engine, tmp_path, "v1.37.2")
    assert sum(kind == "bind" for kind, *_ in later) > len(binds)
