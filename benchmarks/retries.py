"""How often the replay retries pods: attempts per pod on the sample trace and on
scheduler_perf-shaped workloads (the queue's requeueing rules decide these numbers).

    python -m benchmarks.retries             # the sample (both configurations) and the workloads
    python -m benchmarks.retries --nodes 200 --json

For each trace it reports the pods kaudit tried, their attempts, attempts per pod, the pods
tried more than once and the largest number of attempts of one pod. Replays run in memory.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.replay import events
from kaudit.datadirs import sample_config, sample_trace
from kaudit.eventlog.sink import MemorySink
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.scheduler.build import load, scheduler_factory
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace, iter_events

#: Nodes, initial pods and measured pods per workload: small enough to run in a minute.
SIZES = {"SchedulingBasic": (500, 100, 1000), "SchedulingPodAntiAffinity": (500, 100, 200),
         "SchedulingNodeAffinity": (500, 500, 1000), "TopologySpreading": (500, 100, 500),
         "PreemptionBasic": (200, 800, 200)}


def retries(path: Path, config_path: Path | None, label: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kaudit-retries-") as tmp:
        engine = open_database(f"sqlite:///{tmp}/retries.db")
        trace = get_trace(engine, ingest_trace(engine, [TraceInput(path)], name="t").trace_id)
        config, registry = load(config_path)
        sink = MemorySink()
        summary = Replay(scheduler_factory(config, registry), sink, options_for(config)).run(
            iter_events(engine, trace.id))
        engine.dispose()
    per_pod = Counter(record[3] for record in sink.records if record[2] == "attempt")
    pods = len(per_pod)
    attempts = sum(per_pod.values())
    return {"trace": label, "podsTried": pods, "attempts": attempts,
            "attemptsPerPod": round(attempts / pods, 3) if pods else None,
            "podsRetried": sum(1 for n in per_pod.values() if n > 1),
            "maxAttempts": max(per_pod.values(), default=0),
            "scheduled": summary.pods_scheduled, "unschedulable": summary.pods_unschedulable,
            "preempted": summary.pods_preempted}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, help="nodes of every workload (default: per workload)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [retries(sample_trace(), None, "sample (defaults)"),
               retries(sample_trace(), sample_config(), "sample (bin packing)")]
    with tempfile.TemporaryDirectory(prefix="kaudit-retries-trace-") as tmp:
        for workload in SIZES:  # PreemptionAsync is PreemptionBasic at a larger size
            nodes, initial, measured = SIZES[workload]
            nodes = args.nodes or nodes
            print(f"{workload}: {nodes} nodes, {initial} + {measured} pods ...", file=sys.stderr)
            path = Path(tmp) / f"{workload}.jsonl"
            path.write_bytes(b"\n".join(events(workload, nodes, initial, measured)) + b"\n")
            results.append(retries(path, None, f"{workload} ({nodes} nodes)"))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    width = max(len(r["trace"]) for r in results)
    print(f"{'trace':{width}}  pods  attempts  per pod  retried  max  scheduled  unschedulable  "
          "preempted")
    for r in results:
        print(f"{r['trace']:{width}}  {r['podsTried']:4d}  {r['attempts']:8d}  "
              f"{r['attemptsPerPod']:7.3f}  {r['podsRetried']:7d}  {r['maxAttempts']:3d}  "
              f"{r['scheduled']:9d}  {r['unschedulable']:13d}  {r['preempted']:9d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
