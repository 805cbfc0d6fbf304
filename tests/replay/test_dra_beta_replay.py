"""DRA's beta device features replayed: partitionable GPUs sharing counters, and devices
tainted by their driver or by a DeviceTaintRule, at the releases that turn them on (v1.36 for
partitionable devices and device taints, v1.37 for DeviceTaintRules) and at one that does not.

One node publishes an 80 GiB GPU as two ResourceSlices of one pool: its counters (memory 80Gi,
compute 7) and its devices, the GPU whole and three ``3g`` partitions of 40 GiB and 3 compute
each. Two partitions fit in the counters, a third does not, and the whole GPU no longer does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.models import Run, RunEvent
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.tracegen.dra import claim_spec, claim_template, device_class, with_claims
from tests.conftest import gates_at, write_trace

JSON = dict[str, Any]
DRIVER = "gpu.example.com"
API = "resource.k8s.io/v1"


def _partitioned_gpu(node: str) -> list[JSON]:
    pool = {"name": node, "generation": 1, "resourceSliceCount": 2}

    def device(name: str, profile: str, memory: int, compute: int) -> JSON:
        return {"name": name, "attributes": {"profile": {"string": profile}},
                "consumesCounters": [{"counterSet": "gpu-0", "counters": {
                    "memory": {"value": f"{memory}Gi"}, "compute": {"value": str(compute)}}}]}
    return [
        {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{node}-counters"},
         "spec": {"driver": DRIVER, "nodeName": node, "pool": pool, "sharedCounters": [
             {"name": "gpu-0", "counters": {"memory": {"value": "80Gi"},
                                            "compute": {"value": "7"}}}]}},
        {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
         "spec": {"driver": DRIVER, "nodeName": node, "pool": pool, "devices": [
             device("gpu-0", "whole", 80, 7),
             *(device(f"gpu-0-3g-{k}", "3g", 40, 3) for k in range(3))]}},
    ]


def _template(name: str, profile: str, tolerations: list[JSON] | None = None) -> JSON:
    exactly: JSON = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1,
                     "selectors": [{"cel": {"expression":
                                            f'device.attributes["{DRIVER}"].profile == '
                                            f'"{profile}"'}}]}
    if tolerations:
        exactly["tolerations"] = tolerations
    return claim_template(name, claim_spec({"name": "gpu", "exactly": exactly}))


def _pod(name: str, template: str) -> JSON:
    return with_claims(make_pod(name).req(cpu="1").obj(), gpu=("template", template))


def _base() -> list[tuple[float, str, JSON]]:
    return [(0.0, "ADDED", device_class("gpu", f'device.driver == "{DRIVER}"')),
            (0.0, "ADDED", make_node("n1").capacity(cpu="16", memory="64Gi").obj()),
            *((0.0, "ADDED", piece) for piece in _partitioned_gpu("n1")),
            (0.0, "ADDED", _template("part", "3g")),
            (0.0, "ADDED", _template("whole", "whole"))]


Fates = dict[str, tuple[str | None, JSON, int]]


def _replay(engine: Engine, tmp_path: Path, name: str, release: str,
            *events: tuple[float, str, JSON]) -> Fates:
    """Each pod attempted: ``(node bound to or None, the bind's data, attempts)``."""
    path = write_trace(tmp_path / f"{name}.jsonl", *_base(), *events)
    trace = ingest_trace(engine, [TraceInput(path)], name=name)
    config, registry = load(None, gates_at(release))
    replay_trace(engine, get_trace(engine, str(trace.trace_id)), config, registry, name=name)
    with engine.connect() as connection:
        run_id = connection.execute(select(Run.id).where(Run.name == name)).scalar_one()
        rows = connection.execute(select(RunEvent.kind, RunEvent.pod, RunEvent.node,
                                         RunEvent.data).where(
            RunEvent.run_id == run_id, RunEvent.kind.in_(("bind", "attempt")))
            .order_by(RunEvent.seq)).all()
    fates: Fates = {}
    for kind, pod, node, data in rows:
        bound, bind, attempts = fates.get(pod, (None, {}, 0))
        if kind == "bind":
            fates[pod] = (node, orjson.loads(data), attempts)
        else:
            fates[pod] = (bound, bind, attempts + 1)
    return fates


def test_partitions_share_the_gpus_counters_from_v1_36(engine: Engine, tmp_path: Path) -> None:
    pods = [(1.0 + k, "ADDED", _pod(f"part-{k}", "part")) for k in range(3)]
    pods.append((5.0, "ADDED", _pod("whole-0", "whole")))
    fates = _replay(engine, tmp_path, "partitions", "v1.37.2", *pods)
    placed = {pod: data["claims"][0]["device"] for pod, (node, data, _) in fates.items()
              if node}
    assert placed == {"default/part-0": "gpu-0-3g-0", "default/part-1": "gpu-0-3g-1"}
    assert fates["default/part-2"][0] is None and fates["default/whole-0"][0] is None
    # At v1.35 the gate is off: no device that consumes counters is allocated.
    earlier = _replay(engine, tmp_path, "partitions-v135", "v1.35.4", *pods)
    assert all(node is None for node, _, _ in earlier.values())


def _rule(effect: str = "NoSchedule") -> JSON:
    return {"apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": "drain-n1"},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": "n1"},
                     "taint": {"key": "example.com/maintenance", "effect": effect}}}


def test_a_device_taint_rule_keeps_pods_off_until_it_is_deleted(
        engine: Engine, tmp_path: Path) -> None:
    """v1.37: the rule taints the pool's devices; the pod that does not tolerate it waits,
    the one that does is placed; deleting the rule (the slices' update) requeues the first."""
    tolerant = [{"key": "example.com/maintenance", "operator": "Exists"}]
    events = [(0.5, "ADDED", _rule()),
              (0.5, "ADDED", _template("tolerant", "3g", tolerant)),
              (1.0, "ADDED", _pod("plain", "part")),
              (2.0, "ADDED", _pod("tolerant", "tolerant")),
              (30.0, "DELETED", _rule())]
    fates = _replay(engine, tmp_path, "rule", "v1.37.2", *events)
    node, data, attempts = fates["default/tolerant"]
    assert (node, data["claims"][0]["device"], attempts) == ("n1", "gpu-0-3g-0", 1)
    node, data, attempts = fates["default/plain"]
    # placed after the rule went (tried on arrival and when it went), on the other partition
    assert (node, data["claims"][0]["device"], attempts) == ("n1", "gpu-0-3g-1", 2)
    # v1.36 keeps DeviceTaintRules off by default: the plain pod is placed at once.
    earlier = _replay(engine, tmp_path, "rule-v136", "v1.36.3", *events)
    assert earlier["default/plain"][0] == "n1" and earlier["default/plain"][2] == 1


def test_a_rule_whose_effect_is_none_taints_nothing_that_matters(
        engine: Engine, tmp_path: Path) -> None:
    fates = _replay(engine, tmp_path, "none", "v1.37.2", (0.5, "ADDED", _rule("None")),
                    (1.0, "ADDED", _pod("plain", "part")))
    assert fates["default/plain"][0] == "n1"


def test_an_upgrade_preview_names_the_dra_gates_behind_the_pods_it_places(
        engine: Engine, tmp_path: Path, run_kaudit: Any) -> None:
    pods = [(1.0 + k, "ADDED", _pod(f"part-{k}", "part")) for k in range(2)]
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "up.jsonl", *_base(), *pods))],
                 name="up")
    result = run_kaudit("compare", "up", "--kubernetes-version", "1.34",
                        "--kubernetes-version", "1.37", "--json")
    assert result.exit_code == 0, result.output
    changes = {c["pod"]: c for c in orjson.loads(result.stdout)["changes"]}
    assert set(changes) == {"default/part-0", "default/part-1"}
    for change in changes.values():
        assert change["change"] == "scheduled-only-in-b"
        assert "rejected by DynamicResources: cannot allocate all claims" in change["reason"]
        assert "v1.36.3: DRAPartitionableDevices on" in change["releaseCause"]
