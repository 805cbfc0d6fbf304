"""The resourceclaim controller's part in a replay (:mod:`kaudit.replay.claims`): claims
generated from templates, released when their pod goes, and kaudit's status kept over a
trace's."""

from __future__ import annotations

from typing import Any

from kaudit.cluster.objects import apply_object
from kaudit.cluster.state import ClusterState
from kaudit.model import dra
from kaudit.replay.claims import ClaimController, claims_record
from kaudit.tracegen.builders import make_pod
from kaudit.tracegen.dra import claim, claim_spec, claim_template, exact_request, with_claims

JSON = dict[str, Any]


def _controller() -> tuple[ClusterState, ClaimController, list[tuple[str, bool]]]:
    cluster = ClusterState()
    writes: list[tuple[str, bool]] = []

    def write(obj: JSON, deleted: bool) -> None:
        writes.append((obj["metadata"]["name"], deleted))
        apply_object(cluster, obj, deleted)
    return cluster, ClaimController(cluster, write), writes


def _allocation(device: str) -> JSON:
    return {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1",
                                     "device": device}]}}


def test_a_template_claim_is_generated_once_owned_by_the_pod_and_named_like_upstream() -> None:
    cluster, controller, writes = _controller()
    apply_object(cluster, claim_template("one-gpu", claim_spec(exact_request("gpu", "c"))))
    pod = with_claims(make_pod("train-1").obj(), gpu=("template", "one-gpu"))
    updated = controller.generate(pod)
    statuses = updated["status"]["resourceClaimStatuses"]
    assert len(statuses) == 1 and statuses[0]["name"] == "gpu"
    name = statuses[0]["resourceClaimName"]
    assert name.startswith("train-1-gpu-") and len(name) == len("train-1-gpu-") + 5
    generated = cluster.objects["ResourceClaim"][f"default/{name}"]
    assert dra.is_for_pod(updated, generated) is None
    assert generated["metadata"]["annotations"][dra.POD_CLAIM_NAME_ANNOTATION] == "gpu"
    assert generated["spec"] == {"devices": {"requests": [exact_request("gpu", "c")]}}
    assert controller.generate(updated) is updated and len(writes) == 1
    again = controller.generate(pod)  # the same pod again: the same (deterministic) name
    assert again["status"]["resourceClaimStatuses"][0]["resourceClaimName"] == name
    no_template = with_claims(make_pod("train-2").obj(), gpu=("template", "missing"))
    assert controller.generate(no_template) is no_template  # the controller waits for it


def test_release_deallocates_unused_claims_and_deletes_generated_ones() -> None:
    cluster, controller, writes = _controller()
    apply_object(cluster, claim_template("one-gpu", claim_spec(exact_request("gpu", "c"))))
    pod = controller.generate(with_claims(make_pod("a").obj(), gpu=("template", "one-gpu")))
    uid = pod["metadata"]["uid"]
    generated = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    shared = claim("shared", claim_spec(exact_request("gpu", "c")))
    shared["metadata"]["finalizers"] = [dra.FINALIZER]  # the scheduler allocated it
    other = make_pod("b").obj()["metadata"]["uid"]
    shared["status"] = {"allocation": _allocation("g1"), "reservedFor": [
        {"resource": "pods", "name": "a", "uid": uid},
        {"resource": "pods", "name": "b", "uid": other}]}
    apply_object(cluster, shared)
    mine = cluster.objects["ResourceClaim"][f"default/{generated}"]
    apply_object(cluster, {**mine, "status": {"allocation": _allocation("g0"), "reservedFor": [
        {"resource": "pods", "name": "a", "uid": uid}]}})
    writes.clear()
    controller.release(uid)
    assert f"default/{generated}" not in cluster.objects["ResourceClaim"]
    # Deallocated (an update waiting pods hear of), then deleted.
    assert [w for w in writes if w[0] == generated] == [(generated, False), (generated, True)]
    kept = cluster.objects["ResourceClaim"]["default/shared"]
    assert kept["status"]["allocation"] == _allocation("g1")
    assert [ref["uid"] for ref in kept["status"]["reservedFor"]] == [other]
    controller.release(other)
    freed = cluster.objects["ResourceClaim"]["default/shared"]  # a user's claim stays
    assert "allocation" not in freed["status"] and not freed["metadata"]["finalizers"]
    # Without the scheduler's finalizer the controller does not deallocate (upstream's
    # syncClaim), and a pod the claim was not reserved for changes nothing.
    foreign = claim("foreign", claim_spec(exact_request("gpu", "c")))
    foreign["status"] = {"allocation": _allocation("g2"), "reservedFor": [
        {"resource": "pods", "name": "b", "uid": other}]}
    apply_object(cluster, foreign)
    writes.clear()
    controller.release("nobody")
    assert writes == []
    controller.release(other)
    kept = cluster.objects["ResourceClaim"]["default/foreign"]
    assert kept["status"] == {"allocation": _allocation("g2"), "reservedFor": []}


def test_a_trace_status_of_a_claim_kaudit_decides_is_not_applied() -> None:
    cluster, controller, _ = _controller()
    mine = claim("c", claim_spec(exact_request("gpu", "x")))
    mine["status"] = {"allocation": _allocation("g0"),
                      "reservedFor": [{"resource": "pods", "name": "k", "uid": "kaudit-pod"}]}
    apply_object(cluster, mine)
    controller.written(mine)
    recorded = claim("c", claim_spec(exact_request("gpu", "x")))
    recorded["metadata"]["labels"] = {"new": "label"}
    recorded["status"] = {"allocation": _allocation("g7"), "reservedFor": [
        {"resource": "pods", "name": "k", "uid": "kaudit-pod"}]}
    kept = controller.from_trace(recorded, {"kaudit-pod"})
    assert kept["status"] == mine["status"] and kept["metadata"]["labels"] == {"new": "label"}
    # A claim of pods kaudit does not schedule keeps the trace's status.
    theirs = claim("t", claim_spec(exact_request("gpu", "x")))
    theirs["status"] = {"allocation": _allocation("g3"), "reservedFor": [
        {"resource": "pods", "name": "o", "uid": "other"}]}
    assert controller.from_trace(theirs, {"kaudit-pod"}) is theirs
    # Reserved in the trace for a pod kaudit schedules: kaudit's (here: no) status.
    fresh = claim("f", claim_spec(exact_request("gpu", "x")))
    fresh["status"] = {"allocation": _allocation("g4"), "reservedFor": [
        {"resource": "pods", "name": "k", "uid": "kaudit-pod"}]}
    assert controller.from_trace(fresh, {"kaudit-pod"})["status"] == {}


def test_the_bind_record_lists_the_devices_the_pods_claims_hold() -> None:
    cluster = ClusterState()
    pod = with_claims(make_pod("a").obj(), gpu=("claim", "c"))
    held = claim("c", claim_spec(exact_request("gpu", "x")))
    held["status"] = {"allocation": _allocation("g0"), "reservedFor": [
        {"resource": "pods", "name": "a", "uid": pod["metadata"]["uid"]}]}
    apply_object(cluster, held)
    assert claims_record(cluster, pod) == {"claims": [
        {"claim": "c", "podClaim": "gpu", "request": "gpu", "driver": "d", "pool": "n1",
         "device": "g0"}]}
    assert claims_record(cluster, make_pod("b").obj()) == {}
