"""Micro-benchmark of one scheduling cycle (filter + score) with the default profile.

    python -m benchmarks.scheduler                 # 500 and 5,000 nodes
    python -m benchmarks.scheduler --nodes 5000 --pods 2000 --json

Builds a cluster of N nodes over three zones with existing pods (two per node, in a few
deployments), then schedules pods shaped like upstream's scheduler_perf SchedulingBasic
workload, binding each to the chosen node so the cluster fills as it would. Reports the time
per scheduling cycle (median, p95) and pods per second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod


def build_cluster(nodes: int, existing_per_node: int = 2) -> ClusterState:
    cluster = ClusterState()
    for i in range(nodes):
        cluster.add_node(make_node(f"node-{i:05d}").zone(f"zone-{i % 3}", "region")
                         .capacity(cpu="32", memory="128Gi").obj())
    for i in range(nodes * existing_per_node):
        pod = (make_pod(f"existing-{i:06d}", "bench").req(cpu="100m", memory="500Mi")
               .labels(app=f"app-{i % 10}").node(f"node-{i % nodes:05d}").obj())
        cluster.add_pod(pod_info(cluster, pod))
    return cluster


def run(nodes: int, pods: int, config_path: Path | None = None) -> dict[str, float]:
    config, registry = load(config_path)
    scheduler = build_scheduler(config, registry, seed=1)
    cluster = build_cluster(nodes)
    template = make_pod("measured", "bench").req(cpu="100m", memory="500Mi").labels(app="m")
    timings = []
    for i in range(pods):
        obj = template.obj()
        obj["metadata"]["name"] = f"measured-{i:06d}"
        obj["metadata"]["uid"] = f"uid-{i}"
        pod = pod_info(cluster, obj)
        began = time.perf_counter()
        attempt = scheduler.schedule(cluster, pod)
        timings.append(time.perf_counter() - began)
        if attempt.selected is None:
            raise SystemExit(f"pod {i} did not fit: {attempt.message}")
        cluster.add_pod(replace(pod, node_name=attempt.selected))
    timings.sort()
    return {
        "nodes": nodes, "pods": pods,
        "medianMs": round(statistics.median(timings) * 1000, 3),
        "p95Ms": round(timings[int(len(timings) * 0.95)] * 1000, 3),
        "podsPerSecond": round(len(timings) / sum(timings), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, action="append",
                        help="cluster size (repeatable) [default: 500 and 5000]")
    parser.add_argument("--pods", type=int, default=1000, help="pods to schedule per size")
    parser.add_argument("--config", type=Path, help="a KubeSchedulerConfiguration "
                        "[default: kube-scheduler's defaults]")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [run(n, args.pods, args.config) for n in (args.nodes or [500, 5000])]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(f"{r['nodes']:>6} nodes: {r['medianMs']:.3f} ms median, {r['p95Ms']:.3f} ms "
                  f"p95 per pod (filter + score), {r['podsPerSecond']:.0f} pods/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
