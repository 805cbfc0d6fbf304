"""Event-log digests of reference replays: a refactoring that changes none of kaudit's
behaviour leaves every digest identical.

    python -m benchmarks.digests                         # print the digests as JSON
    python -m benchmarks.digests --write                 # record them in benchmarks/digests.json
    python -m benchmarks.digests --check                 # compare with the recorded ones

The references: the sample trace under kube-scheduler's defaults and under the sample
bin-packing configuration, with two seeds, and each scheduler_perf-shaped workload of
``benchmarks.replay`` at a reduced size (``--scale`` multiplies it). Each digest is sha256 over
every record of the run's event log, in order (``digest`` in the replay sink).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.replay import WORKLOADS, events
from kaudit import versions
from kaudit.config import parse_feature_gates
from kaudit.eventlog.sink import MemorySink, digest
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).with_name("digests.json")
#: The release every digest is replayed as: the digests guard v1.34.2's behaviour, whatever the
#: default release.
RELEASE = "v1.34.2"
SIZES = {"SchedulingBasic": (300, 100, 600), "SchedulingPodAntiAffinity": (300, 100, 300),
         "SchedulingNodeAffinity": (300, 300, 600), "TopologySpreading": (300, 100, 600),
         "PreemptionBasic": (100, 400, 100), "PreemptionAsync": (200, 800, 200)}


def _replay(engine: Any, trace_name: str, config_path: Path | None, seed: int) -> str:
    config, registry = load(config_path, parse_feature_gates("", versions.get(RELEASE)))
    sink = MemorySink()
    replay_trace(engine, get_trace(engine, trace_name), config, registry, seed=seed, sink=sink)
    return digest(iter(sink.records))


def compute(scale: float) -> dict[str, str]:
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kaudit-digests-") as tmp:
        engine = open_database(f"sqlite:///{Path(tmp) / 'kaudit.db'}")
        ingest_trace(engine, [TraceInput(ROOT / "traces" / "sample.jsonl")], name="sample")
        for seed in (0, 7):
            found[f"sample/default/seed{seed}"] = _replay(engine, "sample", None, seed)
            found[f"sample/bin-packing/seed{seed}"] = _replay(
                engine, "sample", ROOT / "traces" / "sample-bin-packing.yaml", seed)
        for workload in WORKLOADS:
            nodes, initial, measured = (max(1, round(n * scale)) for n in SIZES[workload])
            path = Path(tmp) / f"{workload}.jsonl"
            path.write_bytes(b"".join(line + b"\n" for line in
                                      events(workload, nodes, initial, measured)))
            ingest_trace(engine, [TraceInput(path)], name=workload)
            found[f"{workload}/{nodes}x{initial + measured}"] = _replay(engine, workload,
                                                                       None, 0)
        engine.dispose()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"record into {RECORDED.name}")
    action.add_argument("--check", action="store_true", help=f"compare with {RECORDED.name}")
    parser.add_argument("--scale", type=float, default=1.0, help="workload size multiplier")
    args = parser.parse_args()
    began = time.perf_counter()
    found = compute(args.scale)
    print(f"{len(found)} replays in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    if args.write:
        RECORDED.write_text(json.dumps(found, indent=2) + "\n")
    if args.check:
        recorded = json.loads(RECORDED.read_text())
        differ = sorted(key for key in recorded.keys() | found.keys()
                        if recorded.get(key) != found.get(key))
        for key in differ:
            print(f"differs: {key}: recorded {recorded.get(key)}, now {found.get(key)}")
        print("all digests identical" if not differ else f"{len(differ)} digests differ")
        return 1 if differ else 0
    print(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
