"""An upgrade preview on a generated cluster: the same trace replayed as two Kubernetes
releases, and what the upgrade changes pod by pod (``kaudit compare --kubernetes-version``).

    python -m benchmarks.upgrade_preview                        # 1,000 nodes, 4,000 pods
    python -m benchmarks.upgrade_preview --nodes 200 --pods 800 --to 1.36

The trace is seeded: nodes of three sizes over three zones, some tainted PreferNoSchedule or
labelled ``disktype=ssd``; pods of eight shapes (requests, priorities, preferred node
affinity, zone spreading, hostname anti-affinity) created over ten minutes, a quarter of them
deleted later. It prints the compare's counts, its changed pods grouped by the release change
behind them (``releaseCause``), and the wall time.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from kaudit.tracegen.builders import make_node, make_pod

ZONES = ("zone-a", "zone-b", "zone-c")


def _pod(rng: random.Random, index: int) -> dict[str, Any]:
    shape = index % 8
    cpu, memory = rng.choice([("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi")])
    builder = make_pod(f"app{shape}-{index:05d}", f"team-{shape % 3}").req(
        cpu=cpu, memory=memory).label("app", f"app{shape}").priority(rng.choice([0, 100, 1000]))
    if shape in (1, 5):
        builder = builder.preferred_node_affinity(10, "disktype", "In", ["ssd"])
    if shape in (2, 6):
        builder = builder.spread("topology.kubernetes.io/zone", 1, "ScheduleAnyway",
                                 {"app": f"app{shape}"})
    obj = builder.obj()
    if shape == 3:
        obj["spec"]["affinity"] = {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50,
             "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "app3"}},
                                 "topologyKey": "kubernetes.io/hostname"}}]}}
    return obj


def write_trace(path: Path, nodes: int, pods: int, seed: int) -> None:
    rng = random.Random(seed)
    lines = []
    for i in range(nodes):
        cpu, memory = rng.choice([("8", "32Gi"), ("16", "64Gi"), ("32", "128Gi")])
        node = make_node(f"node-{i:05d}").zone(ZONES[i % 3], "region-1").capacity(
            cpu=cpu, memory=memory, pods="110")
        if rng.random() < 0.2:
            node = node.label("disktype", "ssd")
        if rng.random() < 0.1:
            node = node.taint("maintenance", None, "PreferNoSchedule")
        lines.append({"ts": 0, "type": "ADDED", "object": node.obj()})
    created = []
    for i in range(pods):
        at = round(1 + 600 * i / pods, 3)
        obj = _pod(rng, i)
        lines.append({"ts": at, "type": "ADDED", "object": obj})
        created.append((at, obj))
    for at, obj in rng.sample(created, pods // 4):
        lines.append({"ts": at + rng.uniform(60, 300), "type": "DELETED", "object": obj})
    lines.sort(key=lambda line: line["ts"])
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--from", dest="older", default="1.34")
    parser.add_argument("--to", dest="newer", default="1.37")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "cluster.jsonl"
        write_trace(trace, args.nodes, args.pods, args.seed)
        env = {**os.environ, "KAUDIT_DB": f"sqlite:///{folder}/kaudit.db"}
        kaudit = [sys.executable, "-m", "kaudit.cli"]
        subprocess.run([*kaudit, "ingest", str(trace), "--name", "preview"], check=True,
                       capture_output=True, env=env)
        started = time.perf_counter()
        done = subprocess.run([*kaudit, "compare", "preview", "--kubernetes-version",
                               args.older, "--kubernetes-version", args.newer,
                               "--format", "json"], capture_output=True, text=True,
                              check=False, env=env)
        seconds = time.perf_counter() - started
    if not done.stdout.strip():
        print(done.stderr, file=sys.stderr)
        return 1
    report = json.loads(done.stdout)
    causes = collections.Counter((c["change"], c.get("releaseCause") or "")
                                 for c in report["changes"])
    print(f"{args.nodes} nodes, {args.pods} pods, seed {args.seed}: "
          f"{report['kubernetesVersions']['a']} → {report['kubernetesVersions']['b']}, "
          f"{report['compared']} pods compared in {seconds:.0f} s (two replays and the diff)")
    print("counts: " + ", ".join(f"{k} {v}" for k, v in report["counts"].items() if v))
    for (change, cause), count in causes.most_common():
        print(f"  {count:5d}  {change}: {cause}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
