"""The shipped sample trace: in sync with its generator, and covering every feature."""

from __future__ import annotations

from collections import Counter, defaultdict

import orjson

from kaudit.datadirs import sample_trace
from kaudit.replay.sample_history import render_sample


def _events() -> list[dict]:
    return [orjson.loads(line) for line in sample_trace().read_bytes().splitlines()]


def test_committed_sample_matches_generator() -> None:
    assert sample_trace().read_bytes() == render_sample(), (
        "traces/sample.jsonl is stale: python -m kaudit.replay.sample_history "
        "traces/sample.jsonl")


def test_sample_covers_the_features_later_commands_explain() -> None:
    events = _events()
    at_start = [e["object"] for e in events if e["ts"] == events[0]["ts"]]
    nodes = [o for o in at_start if o["kind"] == "Node"]
    zones = Counter(n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes)
    assert len(nodes) == 12 and len(zones) == 3
    assert any(n["spec"].get("unschedulable") for n in nodes)
    gpu = [n for n in nodes if "nvidia.com/gpu" in n["status"]["allocatable"]]
    assert gpu and gpu[0]["spec"]["taints"][0]["effect"] == "NoSchedule"
    assert any(e["type"] == "DELETED" and e["object"]["kind"] == "Node" for e in events)
    assert sum(1 for e in events if e["type"] == "ADDED" and e["object"]["kind"] == "Node") == 13

    pods = [e["object"] for e in events if e["object"]["kind"] == "Pod"]
    specs = [p["spec"] for p in pods]
    assert any("nodeAffinity" in s.get("affinity", {}) for s in specs)
    assert any("podAntiAffinity" in s.get("affinity", {}) for s in specs)
    assert any(s.get("topologySpreadConstraints") for s in specs)
    assert any(s.get("schedulingGates") for s in specs)
    assert any(p.get("hostPort") for s in specs for c in s["containers"]
               for p in c.get("ports", []))
    assert any(s.get("schedulerName") != "default-scheduler" for s in specs)
    nominated = [p for p in pods if p["status"].get("nominatedNodeName")]
    assert nominated and any(p["spec"]["priority"] > 1000 for p in nominated)
    victims = [p for p in pods if any(c.get("reason") == "PreemptionByScheduler"
                                      for c in p["status"].get("conditions", []))]
    assert victims

    kinds = {e["object"]["kind"] for e in events}
    assert {"PriorityClass", "PodDisruptionBudget", "PersistentVolume", "PersistentVolumeClaim",
            "StorageClass", "CSINode", "Service", "ReplicaSet", "StatefulSet",
            "Namespace"} <= kinds


def test_recorded_placements_never_overcommit() -> None:
    from kaudit.quantity import parse_quantity

    allocatable: dict[str, int] = {}
    used: dict[str, int] = defaultdict(int)
    placed: dict[str, tuple[str, int]] = {}
    for event in _events():
        obj = event["object"]
        if obj["kind"] == "Node" and event["type"] != "DELETED":
            allocatable[obj["metadata"]["name"]] = parse_quantity(
                obj["status"]["allocatable"]["cpu"]).milli_value()
        if obj["kind"] != "Pod":
            continue
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        gone = event["type"] == "DELETED" or obj["status"].get("phase") == "Succeeded"
        if gone and key in placed:
            node, cpu = placed.pop(key)
            used[node] -= cpu
        elif not gone and obj["spec"].get("nodeName") and key not in placed:
            cpu = sum(parse_quantity(c["resources"].get("requests", {}).get("cpu", "0"))
                      .milli_value() for c in obj["spec"]["containers"])
            placed[key] = (obj["spec"]["nodeName"], cpu)
            used[obj["spec"]["nodeName"]] += cpu
            assert used[obj["spec"]["nodeName"]] <= allocatable[obj["spec"]["nodeName"]], key


def test_the_recorded_history_is_kube_schedulers(sample_runs) -> None:  # type: ignore[no-untyped-def]
    """Recorded with the default configuration: replaying with it lands most pods where the
    recording put them; the rest differ by timing or coin flips, which the diff names."""
    from kaudit.queries.diff import diff_runs

    report = diff_runs(sample_runs, "recorded", "default")
    counts = report["counts"]
    assert counts["same"] >= 0.8 * report["compared"], counts
    assert counts["scheduledOnlyInA"] == counts["scheduledOnlyInB"] == 0
    assert counts["preemptedOnlyInA"] == counts["preemptedOnlyInB"] == 0


def test_first_fit_stands_in_without_a_scheduler() -> None:
    from kaudit.tracegen.sample import render

    events = [orjson.loads(line) for line in render().splitlines()]
    bound = [e for e in events if e["object"]["kind"] == "Pod" and e["type"] == "MODIFIED"
             and e["object"]["spec"].get("nodeName")]
    assert len(bound) > 40
