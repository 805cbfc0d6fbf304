"""``python -m benchmarks.realcluster``: the fidelity certificate's benchmark.

Starts a real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler at
the release kaudit mirrors, KWOK nodes), drives a seeded workload of ``--pods`` pods over
``--nodes`` nodes, records it with ``kaudit record`` and the API server's audit log, and
reports how often kaudit agrees with the real scheduler (``kaudit audit`` of every decision,
in both traces) and whether the two traces agree with each other. One run per
``--config``; a Markdown row per run for ``docs/fidelity.md`` with ``--markdown``.

    python -m benchmarks.realcluster --nodes 20 --pods 300 --seed 1
    python -m benchmarks.realcluster --nodes 1000 --pods 10000 --seed 1 --config default
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.realcluster.pipeline import (
    AUDIT_WINDOW_SECONDS,
    CONFIGURATIONS,
    STAGES,
    FidelityRun,
    run_fidelity,
)


def figures(run: FidelityRun, trace: str = "recording") -> dict[str, Any]:
    """The certificate's figures of one audit of ``run``."""
    audit = run.audits[trace]
    classes = audit.get("classes", {})
    judged = int(audit.get("judged") or 0)
    agree = int(audit.get("agreeOrTie") or 0)
    by_reason = {f"{g['class']}: {g['cause']}" if g.get("cause") else g["class"]: g["count"]
                 for g in audit.get("groups", [])
                 if g["class"] not in ("agrees", "tie", "unschedulableSame", "preemptionSame")}
    return {"version": run.version, "nodes": run.nodes, "pods": run.pods, "seed": run.seed,
            "configuration": run.configuration, "trace": trace,
            "decisions": audit.get("decisions"), "judged": judged, "agreeOrTie": agree,
            "agreeOrTieShare": round(agree / judged, 5) if judged else None,
            "agrees": classes.get("agrees", 0) + classes.get("unschedulableSame", 0)
            + classes.get("preemptionSame", 0),
            "ties": classes.get("tie", 0), "sampled": classes.get("sampled", 0),
            "disagreementsByReason": by_reason, "notJudged": classes.get("notJudged", 0),
            "tracesAgree": run.comparison.agree}


def markdown_row(row: dict[str, Any]) -> str:
    reasons = "; ".join(f"{k} {v}" for k, v in row["disagreementsByReason"].items()) or "none"
    share = f"{row['agreeOrTieShare']:.2%}" if row["agreeOrTieShare"] is not None else "n/a"
    return (f"| {row['version']} | {row['nodes']:,} | {row['pods']:,} | {row['seed']} | "
            f"{row['configuration']} | {row['trace']} | {row['judged']:,} | "
            f"{row['agrees']:,} | {row['ties']:,} | {row['sampled']:,} | {reasons} | "
            f"{row['notJudged']:,} | {share} |")


def _progress(configuration: str) -> Callable[[str], None]:
    def say(message: str) -> None:
        print(f"[{configuration}] {message}", file=sys.stderr, flush=True)
    return say


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.realcluster",
        description="Run a real control plane, record it, and audit kaudit against its "
                    "scheduler.")
    parser.add_argument("--nodes", type=int, default=20, help="initial nodes (default 20)")
    parser.add_argument("--pods", type=int, default=300, help="pods created (default 300)")
    parser.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    parser.add_argument("--config", action="append", choices=sorted(CONFIGURATIONS),
                        help="scheduler configuration; repeat for several "
                             "(default: default and binpacking)")
    parser.add_argument("--version", default="v1.34", help="release to run (default v1.34)")
    parser.add_argument("--duration", type=float,
                        help="seconds over which the workload is applied "
                             "(default: 0.2 s per pod, at least 20 s)")
    parser.add_argument("--window", type=float,
                        help="kaudit audit --window: how far the scheduler's view may lag "
                             "the recording (default: the 99th percentile of the run's "
                             "measured decision lags, rounded up to 0.1 s, at least "
                             f"{AUDIT_WINDOW_SECONDS} s)")
    parser.add_argument("--until", choices=STAGES, default="replay",
                        help="stop after this stage: ingest (record and ingest both traces), "
                             "audit (also audit them), replay (also replay the recording and "
                             "diff it with the real placements; the default)")
    parser.add_argument("--workdir", type=Path,
                        help="keep the cluster's files, traces and database here "
                             "(default: a temporary folder, removed afterwards)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the docs/fidelity.md rows")
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = parser.parse_args(argv)
    configurations = args.config or ["default", "binpacking"]
    root = args.workdir or Path(tempfile.mkdtemp(prefix="kaudit-realcluster-"))
    results = []
    try:
        for configuration in configurations:
            workdir = root / f"{configuration}-n{args.nodes}-p{args.pods}-s{args.seed}"
            if workdir.exists():
                shutil.rmtree(workdir)
            workdir.mkdir(parents=True)
            run = run_fidelity(workdir, args.nodes, args.pods, args.seed, configuration,
                               args.version, progress=_progress(configuration),
                               window_s=args.window, duration_s=args.duration,
                               until=args.until)
            rows = [figures(run, trace) for trace in ("recording", "audit-log")
                    if trace in run.audits]
            results.append({"run": run.as_json(), "rows": rows})
            if not args.json:
                for row in rows:
                    print(markdown_row(row) if args.markdown else
                          f"{configuration} {row['trace']}: {row['judged']:,} judged, "
                          f"{row['agreeOrTie']:,} agree or tie "
                          f"({row['agreeOrTieShare']:.2%}), by reason "
                          f"{row['disagreementsByReason'] or 'none'}, "
                          f"not judged {row['notJudged']}")
                print(f"{configuration}: traces agree: {run.comparison.agree}; "
                      f"decision lags behind their cycles {run.lags}; "
                      f"timings {run.timings}; peak memory (KiB) {run.memory_kib}")
    finally:
        if args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
