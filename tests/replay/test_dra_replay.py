"""A GPU cluster with dynamic resource allocation, replayed end to end and checked through the
event log and ``kaudit explain``.

The trace is ``traces/dra-gpu.jsonl`` (``python -m kaudit.tracegen.dra``): four nodes, each
publishing eight GPUs in one ResourceSlice (A100s with 80 GiB on even nodes, L4s with 24 GiB on
odd ones; PCIe root ``pci-0`` for gpu-0..3 and ``pci-1`` for gpu-4..7), four fabric links that
a node selector makes reachable from rack-0 (nodes 0 and 3), and 48 pods asking through
templates for one GPU, two GPUs on one PCIe root, an A100 else any GPU, a GPU with 40 GiB or
more, a GPU and a fabric link, or sharing one claim. Demand exceeds the 32 GPUs; every fifth
template pod is deleted 20 s after it arrives, so waiting pods get its devices.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import Result
from sqlalchemy import Engine, select

from kaudit.plugins.dynamic_resources.plugin import DynamicResources
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.services.whatif import evaluate_pod_at
from kaudit.store.models import Run, RunEvent
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_pod
from kaudit.tracegen.dra import with_claims
from tests.conftest import stored_digest

TRACE = Path(__file__).resolve().parents[2] / "traces" / "dra-gpu.jsonl"
A100_NODES = {"gpu-node-0000", "gpu-node-0002"}
RACK_0 = {"gpu-node-0000", "gpu-node-0003"}


def _records(engine: Engine, run: str, *kinds: str) -> list[tuple[str, str | None, str | None,
                                                                  dict[str, Any]]]:
    with engine.connect() as connection:
        run_id = connection.execute(select(Run.id).where(Run.name == run)).scalar_one()
        rows = connection.execute(select(RunEvent.kind, RunEvent.pod, RunEvent.node,
                                         RunEvent.data).where(
            RunEvent.run_id == run_id, RunEvent.kind.in_(kinds)).order_by(RunEvent.seq)).all()
    return [(kind, pod, node, orjson.loads(data)) for kind, pod, node, data in rows]


def _run_id(engine: Engine, name: str) -> int:
    with engine.connect() as connection:
        run_id: int = connection.execute(select(Run.id).where(Run.name == name)).scalar_one()
    return run_id


@pytest.fixture
def dra_trace(engine: Engine) -> Engine:
    ingest_trace(engine, [TraceInput(TRACE)], name="dra")
    return engine


def _replay(engine: Engine, name: str) -> Any:
    config, registry = load()
    return replay_trace(engine, get_trace(engine, "dra"), config, registry, name=name)[1]


def test_devices_are_allocated_as_the_claims_ask_and_never_twice(
        dra_trace: Engine, run_kaudit: Callable[..., Result]) -> None:
    engine = dra_trace
    summary = _replay(engine, "dra")
    assert summary.pods_scheduled > 0 and summary.pods_unschedulable > 0  # demand > supply
    held: dict[tuple[str, str, str], str] = {}
    by_pod: dict[str, list[dict[str, Any]]] = {}
    reused = 0
    for kind, pod, node, data in _records(engine, "dra", "bind", "delete"):
        assert pod is not None
        if kind == "delete":
            for device, holder in list(held.items()):
                if holder == pod:
                    del held[device]
            continue
        claims = data.get("claims") or []
        assert claims, f"{pod} was bound without devices"
        by_pod[pod] = claims
        for entry in claims:
            device = (entry["driver"], entry["pool"], entry["device"])
            if entry["claim"] == "shared-gpu":
                continue
            assert device not in held, f"{device} given to {pod} while {held.get(device)} holds it"
            reused += device in {d for p, c in by_pod.items() if p != pod
                                 for d in ((e["driver"], e["pool"], e["device"]) for e in c)}
            held[device] = pod
            if entry["driver"] == "gpu.example.com":
                assert entry["pool"] == node  # node-local GPUs
            else:
                assert node in RACK_0 and entry["pool"] == "rack-0"  # network-attached links
    assert reused, "no pod got the devices of a deleted pod"

    def template_of(pod: str) -> str:
        index = int(pod.rsplit("-", 1)[1])
        if index % 10 == 9 and index < 80:
            return "shared"
        return ["one-gpu", "two-gpus-one-root", "a100-else-any", "big-memory",
                "gpu-and-fabric"][index % 5]

    shared = set()
    for pod, claims in by_pod.items():
        kind = template_of(pod)
        if kind == "two-gpus-one-root":
            indexes = [int(c["device"].split("-")[1]) for c in claims]
            assert len(indexes) == 2 and indexes[0] // 4 == indexes[1] // 4  # one PCIe root
        elif kind == "big-memory":
            assert claims[0]["pool"] in A100_NODES
        elif kind == "a100-else-any":
            assert claims[0]["request"] == ("gpu/a100" if claims[0]["pool"] in A100_NODES
                                            else "gpu/any")
        elif kind == "gpu-and-fabric":
            assert sorted(c["request"] for c in claims) == ["gpu", "link"]
        elif kind == "shared":
            shared.add((claims[0]["pool"], claims[0]["device"]))
    assert len(shared) == 1  # one claim, one device, for every pod that shares it

    # A pod that never got devices: explain says why, in upstream's words and with kaudit's
    # count of the devices its requests could use.
    waiting = [pod for kind, pod, node, data in _records(engine, "dra", "attempt")
               if pod not in by_pod]
    assert waiting
    story = orjson.loads(run_kaudit("explain", "dra", waiting[-1], "--json").output)
    attempt = story["attempts"][-1]
    assert "cannot allocate all claims" in attempt["message"]
    notes = attempt["pluginNotes"]["DynamicResources"]
    assert notes["claims"][0]["allocated"] is False
    assert all(request["free"] == 0 and request["matching"] > 0 for request in notes["requests"])
    text = run_kaudit("explain", "dra", waiting[-1]).output
    assert " match, 0 free" in text
    bound = sorted(by_pod)[0]
    text = run_kaudit("explain", "dra", bound).output
    assert f"gpu.example.com pool {by_pod[bound][0]['pool']} device" in text

    # The exported run carries the claims as kaudit allocated them (and the pods their
    # generated claims), so a what-if at an instant of the run sees the devices taken.
    exported = [orjson.loads(line) for line in run_kaudit("export", "dra").output.splitlines()]
    claims = {e["object"]["metadata"]["name"]: e["object"] for e in exported
              if e["object"]["kind"] == "ResourceClaim" and e["type"] != "DELETED"}
    name = by_pod[bound][0]["claim"]
    results = claims[name]["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == [c["device"] for c in by_pod[bound]]
    pods = {e["object"]["metadata"]["name"]: e["object"] for e in exported
            if e["object"]["kind"] == "Pod"}
    statuses = pods[bound.split("/")[1]]["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpu", "resourceClaimName": name}]
    probe = with_claims(make_pod("probe").req(cpu="1").obj(), gpu=("template", "one-gpu"))
    evaluation = evaluate_pod_at(engine, "dra", None, probe)["evaluation"]
    supply = evaluation["pluginNotes"]["DynamicResources"]["requests"]
    assert evaluation["selectedNode"] is None and supply[0]["free"] == 0


def test_the_replay_repeats_and_the_node_answer_cache_changes_nothing(
        dra_trace: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = dra_trace
    _replay(engine, "first")
    _replay(engine, "again")
    first = stored_digest(engine, _run_id(engine, "first"))
    assert stored_digest(engine, _run_id(engine, "again")) == first

    def uncached(self: DynamicResources, found: Any, cluster: Any, node: Any) -> Any:
        return found.allocator.allocate(node, found.to_allocate)

    monkeypatch.setattr(DynamicResources, "_allocate", uncached)
    _replay(engine, "uncached")
    assert stored_digest(engine, _run_id(engine, "uncached")) == first


def test_a_template_that_comes_late_and_a_claim_that_never_comes(
        engine: Engine, tmp_path: Path, run_kaudit: Callable[..., Result]) -> None:
    """The controller makes a pod's claim once its template arrives (the pod is then tried
    and placed); a pod whose claim never exists is held back by DynamicResources' PreEnqueue,
    and explain says so."""
    from kaudit.tracegen.builders import make_node
    from kaudit.tracegen.dra import (
        claim_spec,
        claim_template,
        device_class,
        gpu,
        resource_slice,
    )
    from tests.conftest import write_trace
    events = [
        (0.0, "ADDED", device_class("gpu.example.com", 'device.driver == "gpu.example.com"')),
        (0.0, "ADDED", make_node("n1").capacity(cpu="8", memory="32Gi").obj()),
        (0.0, "ADDED", resource_slice("n1-gpus", "gpu.example.com", "n1",
                                      [gpu(0, "A100", "80Gi", "pci-0")], node="n1")),
        (1.0, "ADDED", with_claims(make_pod("early").req(cpu="1").obj(),
                                   gpu=("template", "one-gpu"))),
        (1.0, "ADDED", with_claims(make_pod("orphan").req(cpu="1").obj(),
                                   gpu=("claim", "nope"))),
        (3.0, "ADDED", claim_template("one-gpu", claim_spec(
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                        "allocationMode": "ExactCount", "count": 1}}))),
        (9.0, "ADDED", make_pod("tick").req(cpu="1").obj()),
    ]
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "late.jsonl", *events))],
                 name="late")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "late"), config, registry, name="late")
    binds = {pod: (node, data) for kind, pod, node, data in _records(engine, "late", "bind")}
    node, data = binds["default/early"]
    assert node == "n1" and data["claims"][0]["device"] == "gpu-0"
    verdict = orjson.loads(run_kaudit("explain", "late", "default/orphan", "--json").output)[
        "verdict"]
    assert verdict["state"] == "gated"
    assert verdict["headline"] == ('Never attempted: held back by DynamicResources: could not '
                                   'find ResourceClaim "default/nope"')


def _late_events() -> list[tuple[float, str, dict[str, Any]]]:
    from kaudit.tracegen.builders import make_node
    from kaudit.tracegen.dra import claim_spec, claim_template, device_class, gpu, resource_slice
    return [
        (0.0, "ADDED", device_class("gpu.example.com", 'device.driver == "gpu.example.com"')),
        (0.0, "ADDED", make_node("n1").capacity(cpu="2", memory="32Gi").obj()),
        (0.0, "ADDED", resource_slice("n1-gpus", "gpu.example.com", "n1",
                                      [gpu(0, "A100", "80Gi", "pci-0"),
                                       gpu(1, "A100", "80Gi", "pci-0")], node="n1")),
        (0.5, "ADDED", claim_template("one-gpu", claim_spec(
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                        "allocationMode": "ExactCount", "count": 1}}))),
    ]


def test_a_preempted_pods_replacement_gets_its_own_claim(
        engine: Engine, tmp_path: Path, run_kaudit: Callable[..., Result]) -> None:
    """Preemption deletes the victim, whose generated claim goes with it; the ReplicaSet's
    replacement gets a claim of its own and waits for CPU like any pod (not held back)."""
    from tests.conftest import write_trace
    victim = with_claims(make_pod("web-a").req(cpu="2").owner("ReplicaSet", "web").obj(),
                         gpu=("template", "one-gpu"))
    events = [*_late_events(), (1.0, "ADDED", victim),
              (5.0, "ADDED", make_pod("urgent").req(cpu="2").priority(1000).obj()),
              (60.0, "ADDED", make_pod("tick").req(cpu="100m").obj())]
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "pre.jsonl", *events))],
                 name="pre")
    config, registry = load()
    summary = replay_trace(engine, get_trace(engine, "pre"), config, registry, name="pre")[1]
    assert summary.pods_preempted == 1 and summary.pods_recreated == 1
    claims = [(data["type"], data["object"]["metadata"]["name"], pod)
              for kind, pod, node, data in _records(engine, "pre", "claim")]
    created = [name for kind, name, pod in claims if kind == "ADDED"]
    assert len(created) == 2 and created[0].startswith("web-a-gpu-") and \
        created[1].startswith("web-r1-gpu-")
    assert ("DELETED", created[0], "default/web-a") in claims  # went with its pod
    verdict = orjson.loads(run_kaudit("explain", "pre", "default/web-r1", "--json").output)[
        "verdict"]
    assert verdict["state"] == "pending" and "lack cpu" in verdict["headline"]
    snapshot = run_kaudit("export", "pre", "--format", "simulator-snapshot").output
    assert json.loads(snapshot)["resourceClaims"]


def test_the_export_holds_kaudits_claims_not_the_recorded_ones(
        engine: Engine, tmp_path: Path, run_kaudit: Callable[..., Result]) -> None:
    """A recording carries the recorded cluster's own claim for a pod kaudit schedules (with
    the recorded scheduler's allocation): the replay and its export hold kaudit's claim, and
    the recorded one is never shown allocated, nor back after kaudit deleted its own."""
    from kaudit.tracegen.dra import claim, claim_spec
    from tests.conftest import write_trace
    pod = with_claims(make_pod("p").req(cpu="1").obj(), gpu=("template", "one-gpu"))
    uid = pod["metadata"]["uid"]
    recorded = claim("p-gpu-abcde", claim_spec(
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                    "allocationMode": "ExactCount", "count": 1}}))
    recorded["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid, "controller": True}]
    allocated = json.loads(json.dumps(recorded))
    allocated["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": uid}]}
    named = json.loads(json.dumps(pod))
    named["status"]["resourceClaimStatuses"] = [{"name": "gpu",
                                                 "resourceClaimName": "p-gpu-abcde"}]
    bound = json.loads(json.dumps(named))
    bound["spec"]["nodeName"] = "n1"
    done = json.loads(json.dumps(bound))
    done["status"]["phase"] = "Succeeded"
    events = [*_late_events(), (1.0, "ADDED", pod), (1.1, "ADDED", recorded),
              (1.2, "MODIFIED", named), (1.3, "MODIFIED", allocated), (1.4, "MODIFIED", bound),
              (20.0, "MODIFIED", done), (21.0, "MODIFIED", allocated),
              (23.0, "DELETED", recorded), (30.0, "ADDED", make_pod("tick").obj())]
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "rec.jsonl", *events))],
                 name="rec")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "rec"), config, registry, name="rec")
    exported = [orjson.loads(line) for line in run_kaudit("export", "rec").output.splitlines()]
    holders: dict[str, dict[str, Any]] = {}
    for event in exported:
        obj = event["object"]
        if obj["kind"] != "ResourceClaim":
            continue
        name = obj["metadata"]["name"]
        if event["type"] == "DELETED":
            holders.pop(name, None)
        else:
            holders[name] = obj
        held = [c for c in holders.values() if (c.get("status") or {}).get("allocation")]
        assert len(held) <= 1, f"two claims hold devices at {event['ts']}"
        assert name != "p-gpu-abcde" or not (obj.get("status") or {}).get("allocation")
    mine = [e["object"] for e in exported if e["object"]["kind"] == "Pod"
            and e["object"]["metadata"]["name"] == "p"]
    assert all(s["resourceClaimName"].startswith("p-gpu-") and
               s["resourceClaimName"] != "p-gpu-abcde"
               for pod_obj in mine[1:]
               for s in (pod_obj.get("status") or {}).get("resourceClaimStatuses") or [])
