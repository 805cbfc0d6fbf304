"""Benchmark ingest and replay of the Alibaba GPU trace (cluster-trace-gpu-v2023, "openb").

    python -m benchmarks.alibaba                      # paper protocol, both GPU modes
    python -m benchmarks.alibaba --protocol time      # creation and deletion times
    python -m benchmarks.alibaba --pods openb_pod_list_gpushare40.csv --seed 43
    python -m benchmarks.alibaba --gpu-sharing whole --baseline HEAD~1   # and the speed-up

The CSVs are read from ``--data`` (default: ``shared/traces/alibaba-gpu-v2023/csv`` beside
the project). The paper protocol is ``--shuffle --gpu-load 1.3 --no-deletions``. For each
GPU mode it reports the seconds to ingest and to replay with kube-scheduler's default
profile, the pods scheduled, and the GPU allocation reached. That allocation is given twice:
when the arrived GPU requests reach 100 % of the cluster's GPUs, and at the end. It can be
compared with the FGD paper's published tables, with one caveat: ``milli`` counts each node's
GPU share as one total, so it ignores fragmentation inside a node.
"""

from __future__ import annotations

import argparse
import bisect
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import select

from benchmarks.baseline import checkout, ratio, run_there, without_baseline
from kaudit.readers.alibaba import AlibabaOptions
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.models import RunSeries
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace, iter_events

DATA = Path(__file__).resolve().parents[2] / "shared" / "traces" / "alibaba-gpu-v2023" / "csv"
GPU_RESOURCE = {"whole": "nvidia.com/gpu", "milli": "alibabacloud.com/gpu-milli"}


def _arrivals(engine: Any, trace_id: int) -> tuple[list[int], list[float]]:
    """Times of pod arrivals and the GPUs requested so far (annotations of the converter)."""
    times: list[int] = []
    cumulative: list[float] = []
    total = 0.0
    for event in iter_events(engine, trace_id):
        if event.kind != "Pod" or event.type != "ADDED":
            continue
        notes = event.object["metadata"].get("annotations") or {}
        total += int(notes.get("alibabacloud.com/gpu-milli", 0)) * int(
            notes.get("alibabacloud.com/gpu-count", 0)) / 1000
        times.append(event.ts_us)
        cumulative.append(total)
    return times, cumulative


def _allocation(engine: Any, run_id: int, resource_name: str) -> list[tuple[int, float]]:
    with engine.connect() as connection:
        rows = connection.execute(select(RunSeries.ts_us, RunSeries.allocation)
                                  .where(RunSeries.run_id == run_id)
                                  .order_by(RunSeries.ts_us)).all()
    return [(ts, orjson.loads(a).get(resource_name, 0.0)) for ts, a in rows]


def measure(db: str, nodes: Path, pods: Path, options: AlibabaOptions, gpus: int) -> dict:
    engine = open_database(db)
    began = time.perf_counter()
    result = ingest_trace(engine, [TraceInput(nodes), TraceInput(pods)], alibaba=options,
                          name=f"openb-{options.gpu_sharing}")
    ingest_seconds = time.perf_counter() - began
    config, registry = load()
    began = time.perf_counter()
    run_id, summary = replay_trace(engine, get_trace(engine, result.name), config, registry,
                                   name=f"default-{options.gpu_sharing}")
    replay_seconds = time.perf_counter() - began
    s = summary.as_json()
    series = _allocation(engine, run_id, GPU_RESOURCE[options.gpu_sharing])
    times, arrived = _arrivals(engine, result.trace_id)
    at_full = None
    position = bisect.bisect_left(arrived, gpus)
    if position < len(times):
        moment = times[position]
        before = [value for ts, value in series if ts <= moment]
        at_full = before[-1] if before else 0.0
    engine.dispose()
    return {
        "gpuSharing": options.gpu_sharing, "events": result.events,
        "pods": result.sources[1]["details"]["pods"],
        "ingestSeconds": round(ingest_seconds, 2),
        "replaySeconds": round(replay_seconds, 2),
        "podsScheduled": s["podsScheduled"], "podsUnschedulable": s["podsUnschedulable"],
        "attempts": s["attempts"],
        "arrivedGpuShare": round(arrived[-1] / gpus, 4) if arrived else 0.0,
        "gpuAllocationAt100PercentArrived": None if at_full is None else round(at_full, 4),
        "gpuAllocationAtEnd": round(series[-1][1], 4) if series else 0.0,
        "gpuAllocationPeak": max((value for _, value in series), default=0.0),
        "gpuResource": GPU_RESOURCE[options.gpu_sharing],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--nodes", default="openb_node_list_gpu_node.csv")
    parser.add_argument("--pods", default="openb_pod_list_default.csv")
    parser.add_argument("--protocol", choices=("paper", "time"), default="paper")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--gpu-sharing", choices=("whole", "milli", "both"), default="both")
    parser.add_argument("--db", help="database URL [default: a new SQLite file]")
    parser.add_argument("--baseline", metavar="GIT_REF",
                        help="first run the same with kaudit at this revision, then print "
                             "the ratios of the replay times (baseline ÷ current)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    nodes, pods = args.data / args.nodes, args.data / args.pods
    if not nodes.is_file() or not pods.is_file():
        print(f"benchmark data not found under {args.data}", file=sys.stderr)
        return 2
    gpus = sum(int(line.split(",")[3] or 0) for line in nodes.read_text().splitlines()[1:]
               if line.strip())
    modes = ("whole", "milli") if args.gpu_sharing == "both" else (args.gpu_sharing,)
    baseline = None
    if args.baseline:
        forwarded = without_baseline(list(argv if argv is not None else sys.argv[1:]))
        if "--data" not in forwarded:
            forwarded += ["--data", str(args.data.resolve())]
        print(f"baseline: kaudit at {args.baseline} ...", file=sys.stderr)
        with checkout(args.baseline) as directory:
            baseline = run_there(directory, "benchmarks.alibaba", forwarded)["results"]
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for mode in modes:
            paper = args.protocol == "paper"
            options = AlibabaOptions(shuffle=paper, seed=args.seed,
                                     gpu_load=1.3 if paper else None, deletions=not paper,
                                     gpu_sharing=mode)
            db = args.db or f"sqlite:///{scratch}/{mode}.db"
            results.append(measure(db, nodes, pods, options, gpus))
    if baseline is not None:
        for result, before in zip(results, baseline, strict=True):
            result["baseline"] = {"ref": args.baseline, **before}
            result["replaySpeedup"] = ratio(before["replaySeconds"], result["replaySeconds"])
    report = {"nodes": args.nodes, "pods": args.pods, "protocol": args.protocol,
              "seed": args.seed, "clusterGpus": gpus, "results": results,
              "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.pods} on {args.nodes} ({gpus:,} GPUs), protocol {args.protocol}, "
          f"seed {args.seed}")
    for r in results:
        full = r["gpuAllocationAt100PercentArrived"]
        print(f"  {r['gpuSharing']:>5}: {r['pods']:,} pods, ingest {r['ingestSeconds']} s, "
              f"replay {r['replaySeconds']} s; {r['podsScheduled']:,} scheduled, "
              f"{r['podsUnschedulable']:,} unschedulable; {r['gpuResource']} allocated "
              f"{'-' if full is None else f'{100 * full:.2f} %'} at 100 % arrived, "
              f"{100 * r['gpuAllocationAtEnd']:.2f} % at the end, "
              f"{100 * r['gpuAllocationPeak']:.2f} % at the peak "
              f"({100 * r['arrivedGpuShare']:.1f} % arrived)")
        if "baseline" in r:
            print(f"         at {args.baseline}: replay {r['baseline']['replaySeconds']} s; "
                  f"{r['replaySpeedup']}x faster now")
    print(f"  peak RSS {report['peakRssMiB']} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
