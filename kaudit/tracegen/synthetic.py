"""Synthetic traces of any size, for benchmarks: nodes, then pods created, bound and deleted.

Events are realistic Kubernetes objects (built with :mod:`kaudit.tracegen.builders`), one
per line in kaudit's native format, written as a stream so memory stays small whatever the size.
"""

from __future__ import annotations

import copy
import gzip
from collections.abc import Iterator
from pathlib import Path

import orjson

from kaudit.tracegen.builders import make_node, make_pod, stable_uid

ZONES = ("zone-a", "zone-b", "zone-c")


def synthetic_events(total: int, nodes: int = 1000) -> Iterator[bytes]:
    """``total`` native-format lines: ``nodes`` Node ADDED events, then pod lifecycles
    (ADDED, MODIFIED with a node, DELETED), one second of trace time per 100 events."""
    nodes = min(nodes, total)
    for index in range(nodes):
        node = (make_node(f"node-{index:05d}").zone(ZONES[index % 3], "region-1")
                .capacity(cpu="32", memory="128Gi", ephemeral_storage="500Gi").obj())
        yield orjson.dumps({"ts": 0, "type": "ADDED", "object": node})
    template = (make_pod("template", "bench").req(cpu="500m", memory="1Gi")
                .labels(app="bench", tier="batch").priority(1000, "standard").obj())
    emitted = nodes
    pod_index = 0
    while emitted < total:
        pod = copy.deepcopy(template)
        name = f"pod-{pod_index:07d}"
        pod["metadata"]["name"] = name
        pod["metadata"]["uid"] = stable_uid("pod", "bench", name)
        for phase in ("ADDED", "MODIFIED", "DELETED"):
            if emitted >= total:
                break
            if phase == "MODIFIED":
                pod["spec"]["nodeName"] = f"node-{pod_index % nodes:05d}"
                pod["status"] = {"phase": "Running"}
            ts = emitted / 100
            yield orjson.dumps({"ts": ts, "type": phase, "object": pod})
            emitted += 1
        pod_index += 1


def write_synthetic(path: Path, total: int, nodes: int = 1000) -> int:
    """Write a synthetic trace to ``path`` (gzip when it ends in .gz); returns its size."""
    with (gzip.open(path, "wb", compresslevel=1) if path.suffix == ".gz"
          else path.open("wb")) as handle:
        for line in synthetic_events(total, nodes):
            handle.write(line + b"\n")
    return path.stat().st_size
