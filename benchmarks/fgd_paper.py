"""Reproduce the FGD paper's table: unallocated GPU at 100 % arrived workload, per policy.

    python -m benchmarks.fgd_paper                              # default list, seeds 42–51
    python -m benchmarks.fgd_paper --seeds 42 --policies FGD    # one run
    python -m benchmarks.fgd_paper --pods openb_pod_list_gpushare40.csv --policies FGD BestFit

Each run ingests the pod list with the paper's protocol (``--shuffle --seed S --gpu-load 1.3
--no-deletions --gpu-sharing milli``) into a new SQLite database and replays it with the
policy's configuration (:mod:`kaudit.fgd.paper`), each pod tried once, ties broken by a seeded
order of node names, with the full event log. The authors' own results are read from
``fgd-expected-results/analysis_allo_discrete.csv`` beside the CSVs; the report gives, per
policy, kaudit's mean and spread over the seeds next to the authors', and the seconds each
replay took. ``--jobs`` runs replays in parallel processes.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from kaudit.fgd.paper import POLICIES, paper_configuration
from kaudit.readers.alibaba import AlibabaOptions
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load_object_config
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace

TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "alibaba-gpu-v2023"
POLICY_DIRS = {"Random": "01-Random", "DotProd": "02-DotProd",
               "GpuClustering": "03-GpuClustering", "GpuPacking": "04-GpuPacking",
               "BestFit": "05-BestFit", "FGD": "06-FGD"}


def expected(trace: Path, workload: str, seeds: list[int]) -> dict[str, list[float]]:
    """The authors' unallocated GPU % at 100 % arrived, per policy, for ``seeds``."""
    path = trace / "fgd-expected-results" / "analysis_allo_discrete.csv"
    out: dict[str, list[float]] = {}
    if not path.is_file():
        return out
    with path.open() as handle:
        for row in csv.DictReader(handle):
            if row["workload"] != workload or int(row["seed"]) not in seeds:
                continue
            for policy, directory in POLICY_DIRS.items():
                if row["sc_policy"] == directory and row["100"]:
                    out.setdefault(policy, []).append(round(100 - float(row["100"]), 2))
    return out


def one_run(job: tuple[str, str, str, int, str]) -> dict[str, Any]:
    data, pods, policy, seed, scratch = job
    db = f"sqlite:///{scratch}/{Path(pods).stem}-{policy}-{seed}.db"
    engine = open_database(db)
    options = AlibabaOptions(shuffle=True, seed=seed, gpu_load=1.3, deletions=False,
                             gpu_sharing="milli")
    result = ingest_trace(engine, [TraceInput(Path(data) / "openb_node_list_gpu_node.csv"),
                                   TraceInput(Path(data) / pods)],
                          alibaba=options, name=f"{Path(pods).stem}-{seed}")
    config, registry = load_object_config(paper_configuration(policy), f"{policy} (paper)")
    began = time.perf_counter()
    _, summary = replay_trace(engine, get_trace(engine, result.name), config, registry,
                              name=f"{policy}-{seed}", seed=seed, one_try=True,
                              gpu_report=True, tie_break="shuffled-name")
    seconds = time.perf_counter() - began
    engine.dispose()
    Path(db.removeprefix("sqlite:///")).unlink(missing_ok=True)
    curves = (summary.gpu_sharing or {}).get("curves") or {}
    return {"pods": pods, "policy": policy, "seed": seed, "replaySeconds": round(seconds, 2),
            "unallocatedAt100": curves["unallocated"][100] if curves else None,
            "fragAmountAt100": curves["fragAmount"][100] if curves else None,
            "scheduled": summary.pods_scheduled}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--pods", nargs="+", default=["openb_pod_list_default.csv"])
    parser.add_argument("--policies", nargs="+", choices=list(POLICIES), default=list(POLICIES))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(42, 52)))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    data = args.trace / "csv"
    if not (data / "openb_node_list_gpu_node.csv").is_file():
        print(f"trace not found under {data}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        jobs = [(str(data), pods, policy, seed, scratch) for pods in args.pods
                for policy in args.policies for seed in args.seeds]
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            runs = list(pool.map(one_run, jobs))
    table = []
    for pods in args.pods:
        workload = Path(pods).stem
        theirs = expected(args.trace, workload, args.seeds)
        for policy in args.policies:
            mine = [r["unallocatedAt100"] for r in runs
                    if r["pods"] == pods and r["policy"] == policy]
            paper = theirs.get(policy, [])
            table.append({
                "workload": workload, "policy": policy, "seeds": len(mine),
                "kaudit": round(statistics.fmean(mine), 2),
                "kauditSpread": round(statistics.pstdev(mine), 2),
                "paper": round(statistics.fmean(paper), 2) if paper else None,
                "paperSpread": round(statistics.pstdev(paper), 2) if paper else None,
                "replaySecondsMax": max(r["replaySeconds"] for r in runs
                                        if r["pods"] == pods and r["policy"] == policy)})
    if args.json:
        print(json.dumps({"table": table, "runs": runs}, indent=2))
        return 0
    print("unallocated GPU % at 100 % arrived workload (mean ± spread over seeds "
          f"{', '.join(map(str, args.seeds))})")
    print(f"{'workload':<24} {'policy':<14} {'kaudit':>14} {'paper':>14} {'diff':>6} "
          f"{'replay s (max)':>15}")
    for row in table:
        paper = (f"{row['paper']:.2f} ± {row['paperSpread']:.2f}"
                 if row["paper"] is not None else "-")
        diff = f"{row['kaudit'] - row['paper']:+.2f}" if row["paper"] is not None else "-"
        print(f"{row['workload']:<24} {row['policy']:<14} "
              f"{row['kaudit']:>6.2f} ± {row['kauditSpread']:.2f} {paper:>14} {diff:>6} "
              f"{row['replaySecondsMax']:>15.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
