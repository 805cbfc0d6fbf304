"""Benchmark DRA pods: a GPU cluster whose devices are published as ResourceSlices.

    python -m benchmarks.dra                       # 1,000 nodes of 8 GPUs, 2,000 pods
    python -m benchmarks.dra --nodes 200 --pods 500 --json

The trace is :func:`kaudit.tracegen.dra.gpu_cluster_events` (one slice of 8 GPUs per node,
pods asking through templates for one GPU, two GPUs on one PCIe root, an A100 else any GPU, a
GPU with 40 GiB, a GPU and a rack's fabric link, and a shared claim), replayed on SQLite with
the default plugins and the full event log. It reports the replay's pods/s, the scheduling
cycles' share of it, and how many pods got devices.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.tracegen.dra import gpu_cluster_events, write_events


def run(nodes: int, pods: int, gpus: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kaudit-bench-dra-") as tmp:
        trace_path = Path(tmp) / "dra.jsonl"
        write_events(trace_path, gpu_cluster_events(nodes, pods, gpus))
        engine = open_database(f"sqlite:///{os.path.join(tmp, 'bench.db')}")
        ingest_trace(engine, [TraceInput(trace_path)], name="dra")
        trace = get_trace(engine, "dra")
        config, registry = load()
        began = time.perf_counter()
        _, summary = replay_trace(engine, trace, config, registry, name="dra")
        seconds = time.perf_counter() - began
        engine.dispose()
    return {"nodes": nodes, "gpusPerNode": gpus, "pods": pods,
            "podsScheduled": summary.pods_scheduled,
            "podsPendingAtEnd": summary.pods_unschedulable,
            "attempts": summary.attempts, "seconds": round(seconds, 2),
            "podsPerSecond": round(summary.pods_scheduled / seconds, 1),
            "attemptsPerSecond": round(summary.attempts / seconds, 1),
            "schedulingSeconds": round(summary.scheduling_seconds, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = run(args.nodes, args.pods, args.gpus_per_node)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['nodes']} nodes x {figures['gpusPerNode']} GPUs, {figures['pods']} DRA "
          f"pods (SQLite, full event log)")
    print(f"  {figures['podsPerSecond']:,.1f} pods/s ({figures['podsScheduled']:,} scheduled, "
          f"{figures['podsPendingAtEnd']:,} pending at the end, {figures['attempts']:,} "
          f"attempts in {figures['seconds']:.2f} s; scheduling cycles "
          f"{figures['schedulingSeconds']:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
