"""The verdict every pod view leads with: computed from the log, the same in every view, and
grouped by cause at any scale."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from click.testing import Result
from sqlalchemy import Engine, select, update

from kaudit.queries.explain import explain_pod
from kaudit.queries.pods import attempt_detail, pod_story
from kaudit.queries.runs import get_run, iter_run_events
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.models import RunNode
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace
from tests.queries.conftest import DoorRuns


def _rejected(attempt: dict) -> int:  # type: ignore[type-arg]
    return sum(1 for node in attempt["nodes"].values() if not node["feasible"])


def test_a_preemptor_is_bound_by_evicting_and_opens_on_its_preempting_attempt(
        sample_runs: Engine) -> None:
    story = explain_pod(sample_runs, "default", "web/payments-0")
    verdict = story["verdict"]
    assert verdict["state"] == "bound"
    decisive = story["attempts"][verdict["decisiveAttempt"] - 1]
    assert decisive["preemption"]["nominatedNode"] == story["boundNode"]
    assert verdict["victims"] == decisive["preemption"]["victims"]
    assert verdict["headline"].startswith(f"Bound to {story['boundNode']} at ")
    assert f"by evicting {decisive['preemption']['victims'][0]}" in verdict["headline"]
    assert "preempted lower priority 100, against the pod's 100000" in verdict["headline"]
    # the decisive attempt is not the last one: the pod was bound by a later attempt
    assert verdict["decisiveAttempt"] < len(story["attempts"])
    # every rejected node is in exactly one cause group
    assert sum(c["count"] for c in verdict["causes"]) == _rejected(decisive)
    for cause in verdict["causes"]:
        for resource in cause["facts"].get("resources", []):
            # "lacks cpu" must be true of the numbers shown: the largest free is short
            assert resource["freeMax"] < resource["requested"]
    assert verdict["inputs"]["requests"] == {"cpu": 3000, "memory": 6 * 2**30}
    assert verdict["inputs"]["priority"] == 100000


def test_an_unschedulable_pod_names_the_concrete_causes(sample_runs: Engine) -> None:
    story = explain_pod(sample_runs, "default", "web/ssd-cache")
    verdict = story["verdict"]
    assert verdict["state"] == "pending"
    assert verdict["decisiveAttempt"] == len(story["attempts"])
    assert verdict["headline"].startswith("Pending 8m30s: no node fits — ")
    texts = [c["text"] for c in verdict["causes"]]
    assert texts == ["10 don't match nodeSelector disktype=ssd", "1 cordoned",
                     "1 tainted nvidia.com/gpu=present:NoSchedule"]
    assert verdict["causes"][0]["detail"] == "nodeSelector disktype=ssd (node has no disktype)"
    assert verdict["inputs"]["nodeSelector"] == {"disktype": "ssd"}
    assert verdict["inputs"]["tolerations"] == []
    # PreFilter refusals are stated as such, not as a per-node cause
    worker = explain_pod(sample_runs, "default", "data/scratch-worker")["verdict"]
    assert worker["headline"].endswith(
        "VolumeBinding refused the pod before any node was tried: pod has unbound immediate "
        "PersistentVolumeClaims")


def test_victims_placements_and_pods_kaudit_did_not_schedule(sample_runs: Engine) -> None:
    run = get_run(sample_runs, "default")
    preempt = next(e for e in iter_run_events(sample_runs, run.id, kind="preempt")
                   if e["preemptor"] == "web/payments-0")
    victim = explain_pod(sample_runs, "default", preempt["pod"])["verdict"]
    assert victim["state"] == "preempted" and victim["preemptor"] == "web/payments-0"
    assert victim["headline"].startswith(f"Preempted at {victim['at']:g} s by web/payments-0 "
                                         f"on {preempt['node']}")
    placed = explain_pod(sample_runs, "default", "data/postgres-0")
    verdict = placed["verdict"]
    assert verdict["state"] == "bound" and verdict["decisiveAttempt"] == 1
    assert verdict["headline"].startswith(f"Placed on {placed['boundNode']} at 25 s: ")
    custom = explain_pod(sample_runs, "default", "default/custom-scheduled")["verdict"]
    assert custom["state"] == "bound-by-trace"
    assert "schedulerName is my-custom-scheduler" in custom["headline"]


def test_text_json_and_page_carry_the_same_verdict(sample_runs: Engine,
                                                   run_kaudit: Callable[..., Result]) -> None:
    for pod in ("web/payments-0", "web/ssd-cache", "data/postgres-1", "data/scratch-worker"):
        explained = explain_pod(sample_runs, "packing", pod)["verdict"]
        as_json = json.loads(run_kaudit("explain", "packing", pod, "--json").output)["verdict"]
        text = run_kaudit("explain", "packing", pod).output.splitlines()
        page = pod_story(sample_runs, "packing", pod)["verdict"]
        assert as_json == explained == page
        assert text[1] == explained["headline"]
        number = explained["decisiveAttempt"]
        if number is not None and explained["causes"]:
            detail = attempt_detail(sample_runs, "packing", pod, number)
            assert detail["causes"] == explained["causes"]
            assert f"#{number} at" in "\n".join(text)


def test_explain_refuses_an_attempt_the_pod_does_not_have(
        sample_runs: Engine, run_kaudit: Callable[..., Result]) -> None:
    result = run_kaudit("explain", "default", "web/ssd-cache", "--attempt", "7")
    assert result.exit_code == 2
    assert ("--attempt: attempts are numbered from 1; web/ssd-cache has 3 attempt(s) in run "
            "default (1 to 3)") in result.output
    zero = run_kaudit("explain", "default", "web/ssd-cache", "--attempt", "0")
    assert zero.exit_code == 2 and "attempts are numbered from 1" in zero.output
    shown = run_kaudit("explain", "default", "web/ssd-cache", "--attempt", "1", "--all-nodes")
    assert shown.exit_code == 0 and "Attempt #1 at" in shown.output
    assert shown.output.count("NodeAffinity") >= 10  # one row per rejected node


@pytest.fixture
def thousands(engine: Engine, tmp_path: Path) -> Engine:
    """2,000 nodes rejecting one pod for three causes."""
    nodes = []
    for i in range(1200):
        nodes.append(make_node(f"small-{i:04d}").capacity(cpu="1", memory="8Gi", pods="110")
                     .label("tier", "gold").obj())
    for i in range(500):
        nodes.append(make_node(f"ml-{i:04d}").capacity(cpu="16", memory="64Gi", pods="110")
                     .label("tier", "gold").taint("dedicated", "ml", "NoSchedule").obj())
    for i in range(300):
        nodes.append(make_node(f"plain-{i:04d}").capacity(cpu="16", memory="64Gi", pods="110")
                     .obj())
    pod = make_pod("wide").req(cpu="2", memory="1Gi").node_selector(tier="gold").obj()
    path = write_trace(tmp_path / "thousands.jsonl", *((0.0, "ADDED", n) for n in nodes),
                       (1.0, "ADDED", pod))
    ingest_trace(engine, [TraceInput(path)], name="thousands")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "thousands"), config, registry, name="thousands")
    return engine


def test_thousands_of_rejections_come_as_a_few_groups(
        thousands: Engine, run_kaudit: Callable[..., Result]) -> None:
    verdict = explain_pod(thousands, "thousands", "default/wide")["verdict"]
    assert [(c["count"], c["cause"]) for c in verdict["causes"]] == [
        (1200, "lack cpu"), (500, "tainted dedicated=ml:NoSchedule"),
        (300, "don't match nodeSelector tier=gold")]
    assert verdict["causes"][0]["detail"] == "needs 2, free 1"
    assert all(len(c["nodes"]) <= 8 and c["moreNodes"] == c["count"] - len(c["nodes"])
               for c in verdict["causes"])
    assert verdict["headline"].endswith(
        "no node fits — 1,200 lack cpu (needs 2, the largest free is 1), "
        "500 tainted dedicated=ml:NoSchedule, 300 don't match nodeSelector tier=gold")
    text = run_kaudit("explain", "thousands", "default/wide").output
    assert len(text.splitlines()) < 40
    rows = [line.split(None, 1)[0] for line in text.splitlines() if "lack cpu" in line]
    assert rows[-1] == "1200"


def test_a_rejection_shows_exact_quantities(engine: Engine, tmp_path: Path,
                                            run_kaudit: Callable[..., Result]) -> None:
    """496m free against 500m requested: rounded to cores both read 0.5 and the rejection
    reads as a fit."""
    busy = make_pod("busy").req(cpu="504m", memory="1Gi").node("n1").obj()
    path = write_trace(tmp_path / "exact.jsonl",
                       (0.0, "ADDED", make_node("n1").capacity(cpu="1", memory="4Gi",
                                                                pods="110").obj()),
                       (0.5, "ADDED", busy),
                       (1.0, "ADDED", make_pod("tolerant").req(cpu="500m", memory="1536Mi")
                        .toleration("dedicated").obj()))
    ingest_trace(engine, [TraceInput(path)], name="exact")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "exact"), config, registry, name="exact")
    verdict = explain_pod(engine, "exact", "default/tolerant")["verdict"]
    assert [(c["count"], c["cause"], c["detail"]) for c in verdict["causes"]] == [
        (1, "lack cpu", "needs 500m, free 496m")]
    assert verdict["headline"].endswith("no node fits — 1 lack cpu (needs 500m, the largest "
                                        "free is 496m)")
    assert verdict["inputs"]["requestsSummary"].startswith("cpu 500m, memory 1536Mi; ")
    text = run_kaudit("explain", "exact", "default/tolerant").output
    assert "needs 500m, free 496m" in text and "0.5 cores" not in text


def test_gated_time_is_not_waiting_for_the_scheduler(sample_runs: Engine) -> None:
    """report-gen is held by a scheduling gate from 50 s to 200 s, then bound at 200.32 s
    (by preempting, as the recording did: its victim started last)."""
    story = explain_pod(sample_runs, "default", "batch/report-gen")
    verdict = story["verdict"]
    gated = [q for q in story["queue"] if q["to"] == "gated" or q["from"] == "gated"]
    held = gated[-1]["t"] - gated[0]["t"]
    assert held == 150
    assert verdict["wait"]["gatedSeconds"] == held
    bound_at = verdict["at"]
    assert verdict["wait"]["waitingSeconds"] == pytest.approx(bound_at - gated[-1]["t"])
    assert "; gated 2m30s, then waited 0.3s over 2 attempts" in verdict["headline"]
    assert any(s.startswith("Held back (schedulingGates or a PreEnqueue plugin) for 2m30s, "
                            "not waiting for the scheduler") for s in verdict["summary"])


def test_a_preemptors_coin_flip_is_in_its_verdict(sample_runs: Engine) -> None:
    # Bin packing leaves two candidate nodes tied for report-gen's preemption.
    story = explain_pod(sample_runs, "packing", "batch/report-gen")
    verdict = story["verdict"]
    nominated = next(e for e in story["events"] if e["kind"] == "nominate")
    tied = nominated["tiedNodes"]
    assert len(tied) > 1 and verdict["preemptedNode"] in tied
    assert (f"{verdict['preemptedNode']} was a coin flip among {len(tied)} tied candidate "
            "nodes") in verdict["headline"]
    chance = next(s for s in verdict["summary"] if s.startswith("Coin flip: "))
    assert f"one of {len(tied)} candidate nodes tied on every criterion" in chance
    assert f"among {len(nominated['tiedVictims'])} equally ranked pods" in chance


def test_a_preempted_pods_decisive_attempt_has_its_causes(sample_runs: Engine) -> None:
    """The victim's own placement rejected most nodes: its verdict groups them, and says no
    node passed that did not."""
    run = get_run(sample_runs, "default")
    victim = next(e["pod"] for e in iter_run_events(sample_runs, run.id, kind="preempt"))
    story = explain_pod(sample_runs, "default", victim)
    verdict = story["verdict"]
    attempt = story["attempts"][verdict["decisiveAttempt"] - 1]
    assert verdict["state"] == "preempted"
    assert verdict["nodes"]["rejected"] == _rejected(attempt) > 0
    assert sum(c["count"] for c in verdict["causes"]) == _rejected(attempt)
    assert verdict["causesNote"] is None
    assert f"Decisive attempt #{verdict['decisiveAttempt']}: {attempt['countsText']}." in \
        verdict["summary"]


def test_the_dra_verdict_states_the_claims_supply_and_selector(sample_runs: Engine,
                                                              tmp_path: Path) -> None:
    engine = sample_runs
    ingest_trace(engine, [TraceInput(Path(__file__).resolve().parents[2] / "traces"
                                     / "dra-gpu.jsonl")], name="dra")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "dra"), config, registry, name="dra")
    run = get_run(engine, "dra")
    waiting = sorted({e["pod"] for e in iter_run_events(engine, run.id, kind="attempt")}
                     - {e["pod"] for e in iter_run_events(engine, run.id, kind="bind")})
    stated = selected = 0
    for pod in waiting:
        story = explain_pod(engine, "dra", pod)
        verdict = story["verdict"]
        notes = story["attempts"][verdict["decisiveAttempt"] - 1].get("pluginNotes", {}).get(
            "DynamicResources") or {}
        for request in notes.get("requests") or []:
            supply = f"{request['matching']} match, {request['free']} free"
            assert any(supply in s for s in verdict["summary"]), verdict["summary"]
            stated += 1
        claims = [e["object"] for e in story["events"] if e["kind"] == "claim"]
        selectors = [s["cel"]["expression"] for c in claims
                     for r in c["spec"]["devices"]["requests"]
                     for s in (r.get("exactly") or {}).get("selectors") or []]
        for expression in selectors:
            assert any(expression in s for s in verdict["summary"])
            assert any(expression in c["detail"] for c in verdict["causes"])
            selected += 1
    assert stated and selected


def test_sampled_nodes_are_said_and_the_winner_leads_the_scores(door_runs: DoorRuns) -> None:
    """At 2,000 nodes filtering stops at percentageOfNodesToScore's share; the verdict says
    so, and the selected node (tied at the top with hundreds) opens the score table."""
    engine = door_runs.engine
    story = explain_pod(engine, "wide", "web/web-0")
    verdict = story["verdict"]
    nodes = verdict["nodes"]
    assert nodes["all"] == 2000 and nodes["evaluated"] < 2000
    assert (f"{nodes['evaluated']:,} of 2,000 nodes evaluated, {nodes['feasible']:,} feasible"
            in verdict["summary"][0])
    assert "(percentageOfNodesToScore: filtering stopped once" in verdict["summary"][0]
    detail = attempt_detail(engine, "wide", "web/web-0", verdict["decisiveAttempt"])
    selected = detail["selectedNode"]
    tied = detail["tiedNodes"]
    assert len(tied) > 20 and sorted(tied).index(selected) >= 20  # not on page one by name
    assert detail["scores"]["nodes"][0] == selected
    assert detail["scores"]["total"][0] == max(detail["scores"]["total"])


def _causes_of(engine: Engine, pod: str) -> dict[str, tuple[str, str]]:
    """The verdict's cause groups of ``pod`` in run ``small``, (cause, detail) by node."""
    verdict = explain_pod(engine, "small", pod)["verdict"]
    return {node: (c["cause"], c["detail"]) for c in verdict["causes"] for node in c["nodes"]}


def test_every_resource_rejection_states_its_exact_amounts(small_run: Engine) -> None:
    """n5 has 1500Mi of ephemeral-storage against 2Gi asked; n4 holds one pod in its one pod
    slot and has no example.com/foo: every NodeResourcesFit reason gets its amounts."""
    causes = _causes_of(small_run, "default/tolerant")
    assert causes["n5"] == ("lack ephemeral-storage and example.com/foo",
                            "ephemeral-storage needs 2Gi, free 1500Mi; "
                            "example.com/foo needs 1, free 0")
    assert causes["n4"] == ("lack pod slots and example.com/foo",
                            "pod slots 1 of 1 pod in use; example.com/foo needs 1, free 0")


def test_an_unrecorded_free_amount_is_never_said_to_be_0(small_run: Engine) -> None:
    """A run stored before ephemeral-storage was kept in the timeline has no amount for it:
    the cause names what the pod needs and says nothing about the free amount."""
    with small_run.begin() as connection:
        for row in connection.execute(select(RunNode.id, RunNode.extended)).all():
            kept = {k: v for k, v in orjson.loads(row.extended).items()
                    if k != "ephemeral-storage"}
            connection.execute(update(RunNode).where(RunNode.id == row.id)
                               .values(extended=orjson.dumps(kept).decode()))
    verdict = explain_pod(small_run, "small", "default/tolerant")["verdict"]
    detail = next(c["detail"] for c in verdict["causes"] if "n5" in c["nodes"])
    assert detail.startswith("ephemeral-storage needs 2Gi; ")
    assert "lack ephemeral-storage (needs 2Gi) and" in verdict["headline"]


def test_a_prefilter_result_naming_an_absent_node_narrows_to_the_real_ones(
        small_run: Engine) -> None:
    """``metadata.name In [gone-node, n3]``: NodeAffinity's PreFilterResult keeps n3 and
    leaves the other 5 nodes out (upstream: ``node(s) didn't satisfy plugin(s)
    [NodeAffinity]``, UnschedulableAndUnresolvable); the 1 evaluated node is no sample."""
    verdict = explain_pod(small_run, "small", "default/ds-mixed")["verdict"]
    assert verdict["summary"][0] == (
        "Decisive attempt #1: 1 of 6 nodes evaluated, 0 feasible, 1 rejected (PreFilter "
        "narrowed the candidates to n3 (gone-node is not a node of the cluster)).")
    assert [(c["count"], c["reasons"], c["nodes"]) for c in verdict["causes"]] == [
        (5, ["node(s) didn't satisfy plugin(s) [NodeAffinity]"], ["n1", "n2", "n4", "n5", "n6"]),
        (1, ["node(s) had untolerated taint(s)"], ["n3"])]
    assert "no node fits — 5 not in NodeAffinity's PreFilter result, 1 tainted" in \
        verdict["headline"]
    placed = explain_pod(small_run, "small", "default/ds-ok")["verdict"]
    assert "PreFilter narrowed the candidates to n5 (gone-node is not" in placed["summary"][0]
    assert "percentageOfNodesToScore" not in placed["summary"][0]


def test_every_dra_rejection_states_the_request_selector_and_supply(
        door_runs: DoorRuns) -> None:
    """Placed or pending, a pod's nodes that could not allocate its claims are worded alike:
    upstream's reason, the request with its selector and how many devices match and are
    free; the pod's claims are among its inputs."""
    engine = door_runs.engine
    placed = pending = 0
    for pod in door_runs.pods["dra"]:
        story = explain_pod(engine, "dra", pod)
        verdict = story["verdict"]
        claims = [e["object"] for e in story["events"] if e["kind"] == "claim"]
        if claims:
            names = {f"{c['metadata']['namespace']}/{c['metadata']['name']}" for c in claims}
            listed = [text for label, text in verdict["inputsLines"]
                      if label.strip() in ("ResourceClaims", "")]
            assert {text.split(":")[0] for text in listed} >= names, verdict["inputsLines"]
        for cause in verdict["causes"]:
            if cause["reasons"] != ["cannot allocate all claims"]:
                continue
            assert cause["cause"] == "; ".join(cause["reasons"])
            for request in cause["detail"].split("; request "):
                assert re.match(r"(request )?\S+: \d+ of class \S+, \d+ match, \d+ free",
                                request), cause
            for claim in claims:
                for entry in claim["spec"]["devices"]["requests"]:
                    for selector in (entry.get("exactly") or {}).get("selectors") or []:
                        assert selector["cel"]["expression"] in cause["detail"]
            if verdict["state"] == "bound":
                placed += 1
            else:
                pending += 1
    assert placed and pending
