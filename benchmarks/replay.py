"""Benchmark ``kaudit replay`` on traces shaped like upstream's scheduler_perf workloads.

    python -m benchmarks.replay                          # SchedulingBasic on SQLite
    python -m benchmarks.replay --workload SchedulingPodAntiAffinity --nodes 500 --pods 1000
    python -m benchmarks.replay --postgres postgresql://postgres@127.0.0.1/test
    python -m benchmarks.replay --baseline HEAD~1        # and the ratio against the parent
    python -m benchmarks.replay --workload PreemptionAsync --full-log-only

Workloads (``test/integration/scheduler_perf/config/performance-config.yaml`` upstream):
SchedulingBasic (5,000 nodes, 1,000 initial and 10,000 measured pods, 100m CPU / 500Mi),
SchedulingPodAntiAffinity (pods with required anti-affinity on hostname, per group),
SchedulingNodeAffinity (nodes labelled by zone, pods with required node affinity),
TopologySpreading (zone-labelled nodes, pods spread by zone with DoNotSchedule),
PreemptionBasic (low-priority pods fill the cluster, high-priority pods preempt them) and
PreemptionAsync (the same pods at 5,000 nodes, 20,000 initial and 5,000 measured pods, as
upstream's ``PreemptionAsync/5000Nodes`` without its churn of extra preemptors; asynchronous
preemption is kube-scheduler's default since v1.33).

Each run ingests the generated trace and replays it three times: logging off, the full event
log, logging off again (``--full-log-only``: once, with the full log); it reports pods/s, the
audit overhead (full ÷ the faster logging-off run), bytes of database per attempt and the
peak memory of the process. ``--baseline GIT_REF`` first runs the same with kaudit at that
revision and prints the ratios, so that a change is measured against its parent in one
invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import func, select

from benchmarks.baseline import checkout, ratio, run_there, without_baseline
from benchmarks.ingest import fresh_postgres_database
from kaudit.eventlog.sink import NullSink
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace, store_recorded_utilisation
from kaudit.scheduler.build import load
from kaudit.store.models import RunEvent
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod

WORKLOADS = ("SchedulingBasic", "SchedulingPodAntiAffinity", "SchedulingNodeAffinity",
             "TopologySpreading", "PreemptionBasic", "PreemptionAsync")
DEFAULTS = {"SchedulingBasic": (5000, 1000, 10000),
            "SchedulingPodAntiAffinity": (5000, 1000, 2000),
            "SchedulingNodeAffinity": (5000, 5000, 10000),
            "TopologySpreading": (5000, 1000, 5000),
            "PreemptionBasic": (1000, 4000, 1000),
            "PreemptionAsync": (5000, 20000, 5000)}
ZONES = ("zone1", "zone2", "zone3")


def _node(i: int, workload: str) -> dict[str, Any]:
    builder = make_node(f"node-{i:05d}").capacity(cpu="4", memory="32Gi", pods="110")
    if workload == "SchedulingNodeAffinity":
        builder.zone("zone1")  # upstream labels every node zone1
    elif workload == "TopologySpreading":
        builder.zone(ZONES[i % 3])
    return builder.obj()


def _pod(i: int, workload: str, measured: bool) -> dict[str, Any]:
    namespace = "sched-1" if measured else "sched-0"
    builder = make_pod(f"pod-{namespace}-{i:06d}", namespace).req(cpu="100m", memory="500Mi")
    # The pod templates of upstream's scheduler_perf (config/pod-with-*.yaml).
    if workload == "SchedulingPodAntiAffinity":
        builder.label("color", "green")
        obj = builder.obj()
        obj["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"color": "green"}},
                "topologyKey": "kubernetes.io/hostname",
                "namespaces": ["sched-test", "sched-setup"]}]}}
        return obj
    if workload == "SchedulingNodeAffinity":
        builder.required_node_affinity("topology.kubernetes.io/zone", "In", ["zone1", "zone2"])
    elif workload == "TopologySpreading":
        builder.label("color", "blue").spread("topology.kubernetes.io/zone", 5, "DoNotSchedule",
                                              {"color": "blue"})
    elif workload in ("PreemptionBasic", "PreemptionAsync"):
        # pod-low-priority / pod-high-priority: four low pods fill a node (3.6 of 4 CPU), a
        # high-priority pod needs 3 CPU, so it must preempt three of them.
        if measured:
            builder.priority(10).req(cpu="3", memory="500Mi")
        else:
            builder.priority(1).req(cpu="900m", memory="500Mi")
    return builder.obj()


def events(workload: str, nodes: int, initial: int, measured: int) -> Iterator[bytes]:
    for i in range(nodes):
        yield orjson.dumps({"ts": 0, "type": "ADDED", "object": _node(i, workload)})
    for i in range(initial):
        yield orjson.dumps({"ts": 1, "type": "ADDED", "object": _pod(i, workload, False)})
    for i in range(measured):
        yield orjson.dumps({"ts": 2, "type": "ADDED", "object": _pod(i, workload, True)})


def run(workload: str, nodes: int, initial: int, measured: int, db: str,
        full_log_only: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kaudit-bench-") as tmp:
        path = Path(tmp) / f"{workload}.jsonl"
        with path.open("wb") as handle:
            for line in events(workload, nodes, initial, measured):
                handle.write(line + b"\n")
        engine = open_database(db)
        result = ingest_trace(engine, [TraceInput(path)], name=f"{workload}-{time.time_ns()}")
    trace = get_trace(engine, result.trace_id)
    config, registry = load()
    # Once per trace (the ``recorded`` pseudo-run's allocation), by the trace's first replay:
    # measured on its own so that the replays below time the replay alone.
    began = time.perf_counter()
    store_recorded_utilisation(engine, trace, config, registry)
    recorded_seconds = time.perf_counter() - began
    def timed(**kwargs: Any) -> tuple[float, Any, Any]:
        began = time.perf_counter()
        run_id, summary = replay_trace(engine, trace, config, registry, **kwargs)
        return time.perf_counter() - began, run_id, summary

    # Logging off before and after the full log, so warm-up does not bias the ratio.
    if full_log_only:
        full_seconds, run_id, full = timed()
        off, off_seconds = None, None
    else:
        first_off, _, off = timed(sink=NullSink())
        full_seconds, run_id, full = timed()
        second_off, _, _ = timed(sink=NullSink())
        off_seconds = min(first_off, second_off)
    with engine.connect() as connection:
        stored = connection.execute(
            select(func.count(), func.sum(func.length(RunEvent.data)),
                   func.sum(func.coalesce(func.length(RunEvent.blob), 0)))
            .where(RunEvent.run_id == run_id, RunEvent.kind == "attempt")).one()
    engine.dispose()
    attempts, json_bytes, blob_bytes = stored
    pods = full.pods_scheduled
    return {
        "workload": workload, "nodes": nodes, "initialPods": initial, "measuredPods": measured,
        "database": db.split(":", 1)[0],
        "podsScheduled": pods, "attempts": full.attempts,
        "fullLogSeconds": round(full_seconds, 2),
        "podsPerSecondFullLog": round(pods / full_seconds, 1),
        "podsPerSecondLogOff": (round(off.pods_scheduled / off_seconds, 1) if off_seconds
                                else None),
        "auditOverhead": round(full_seconds / off_seconds, 2) if off_seconds else None,
        "bytesPerAttempt": round(((json_bytes or 0) + (blob_bytes or 0)) / max(attempts, 1)),
        "recordedUtilisationSeconds": round(recorded_seconds, 2),
        "peakRSSMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=WORKLOADS, action="append")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--initial", type=int)
    parser.add_argument("--pods", type=int, help="measured pods")
    parser.add_argument("--postgres", metavar="SERVER_URL",
                        help="benchmark PostgreSQL (a database is created for the run)")
    parser.add_argument("--full-log-only", action="store_true",
                        help="replay once, with the full event log (no logging-off runs)")
    parser.add_argument("--baseline", metavar="GIT_REF",
                        help="first run the same with kaudit at this revision, then print "
                             "the ratios (current ÷ baseline)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    baseline: list[dict[str, Any]] | None = None
    if args.baseline:
        forwarded = without_baseline(sys.argv[1:])
        print(f"baseline: kaudit at {args.baseline} ...", file=sys.stderr)
        with checkout(args.baseline) as directory:
            baseline = run_there(directory, "benchmarks.replay", forwarded)
    results = []
    for workload in args.workload or ["SchedulingBasic"]:
        nodes, initial, measured = DEFAULTS[workload]
        nodes, initial = args.nodes or nodes, args.initial if args.initial is not None else initial
        measured = args.pods or measured
        print(f"{workload}: {nodes} nodes, {initial} + {measured} pods ...", file=sys.stderr)
        if args.postgres:
            with fresh_postgres_database(args.postgres) as url:
                results.append(run(workload, nodes, initial, measured, url,
                                   args.full_log_only))
        else:
            with tempfile.TemporaryDirectory(prefix="kaudit-bench-db-") as tmp:
                results.append(run(workload, nodes, initial, measured,
                                   f"sqlite:///{os.path.join(tmp, 'bench.db')}",
                                   args.full_log_only))
    if baseline is not None:
        for result, before in zip(results, baseline, strict=True):
            result["baseline"] = {"ref": args.baseline, **before}
            result["ratioFullLog"] = ratio(result["podsPerSecondFullLog"],
                                           before["podsPerSecondFullLog"])
            result["ratioLogOff"] = ratio(result["podsPerSecondLogOff"],
                                          before["podsPerSecondLogOff"])
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            line = (f"{r['workload']} ({r['database']}, {r['nodes']} nodes): "
                    f"{r['podsPerSecondFullLog']:.0f} pods/s with the full event log")
            if r["podsPerSecondLogOff"] is not None:
                line += (f", {r['podsPerSecondLogOff']:.0f} with logging off (overhead "
                         f"{r['auditOverhead']}x)")
            line += f", {r['bytesPerAttempt']} bytes/attempt, peak {r['peakRSSMiB']} MiB"
            print(line)
            if "baseline" in r:
                before = r["baseline"]
                print(f"  at {args.baseline}: {before['podsPerSecondFullLog']:.0f} pods/s with "
                      f"the full event log; ratio {r['ratioFullLog']}x"
                      + (f" (logging off: {r['ratioLogOff']}x)" if r["ratioLogOff"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
