"""Benchmark kaudit's start-up: whole ``kaudit`` processes, as a user waits for them.

    python -m benchmarks.startup                      # whatif on a 60-node cluster, --version
    python -m benchmarks.startup --baseline HEAD~1    # the same with HEAD~1's kaudit, and ratios

``kaudit whatif`` evaluates one pod against a 60-node cluster of 180 pods (every plugin on
every node); each command runs ``--repeat`` times as a child process (``python -m kaudit``)
and the median and fastest wall times are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.baseline import checkout, ratio, run_there
from kaudit.tracegen.builders import make_node, make_pod

NODES = 60
POD = """apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""


def _cluster() -> dict[str, Any]:
    items = [make_node(f"node-{i:03d}").capacity(cpu="8", memory="32Gi", pods="110")
             .zone(f"zone-{i % 3}").obj() for i in range(NODES)]
    items += [make_pod(f"p{i}").node(f"node-{i % NODES:03d}").req(cpu="1", memory="2Gi").obj()
              for i in range(3 * NODES)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _timed(argv: list[str], repeat: int, cwd: Path) -> dict[str, float]:
    seconds = []
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kaudit", *argv], cwd=cwd, check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ))
        seconds.append(time.perf_counter() - began)
    return {"medianSeconds": round(statistics.median(seconds), 3),
            "fastestSeconds": round(min(seconds), 3)}


def measure(repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kaudit-startup-") as tmp:
        cluster, pod = Path(tmp) / "cluster.json", Path(tmp) / "pod.yaml"
        cluster.write_text(json.dumps(_cluster()))
        pod.write_text(POD)
        return {
            "whatif": _timed(["whatif", "--cluster", str(cluster), "--pod", str(pod)],
                             repeat, Path(tmp)),
            "version": _timed(["--version"], repeat, Path(tmp)),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command")
    parser.add_argument("--baseline", metavar="GIT_REF",
                        help="also measure kaudit at this revision and print the ratios")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"current": measure(args.repeat)}
    if args.baseline:
        with checkout(args.baseline) as directory:
            result["baseline"] = run_there(directory, "benchmarks.startup",
                                           ["--repeat", str(args.repeat)])["current"]
            result["baselineRef"] = args.baseline
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for command, figures in result["current"].items():
        line = (f"kaudit {command}: median {figures['medianSeconds']:.3f} s, fastest "
                f"{figures['fastestSeconds']:.3f} s")
        if "baseline" in result:
            before = result["baseline"][command]
            line += (f" (at {args.baseline}: median {before['medianSeconds']:.3f} s; ratio "
                     f"{ratio(before['medianSeconds'], figures['medianSeconds'])}x faster)")
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
