"""A trace replayed through live HTTP extenders on 127.0.0.1, then through their recorded
answers: the event log, the ``0/N nodes are available`` message and the scores against
values worked out by hand from ``schedule_one.go`` and ``preemption.go`` (Kubernetes v1.34).

The scenario (three empty 4-CPU nodes n1, n2, n3; extenders listed B, C, A and called C, A, B
as upstream orders them, ignorable last):

* A (``nodeCacheCapable``; filter, prioritize with weight 2, bind, preempt) fails n3 for every
  pod ("no GPU left") and n1 as unresolvable for pods labelled ``rack: b`` ("wrong rack"); it
  scores n1 3 and n2 7, so n1 gets 3 × 2 × 10 = 60 and n2 140 on top of the plugins';
* B (ignorable, filter) always answers HTTP 500: skipped;
* C (manages ``example.com/foo``, ignored by the scheduler, filter, not ignorable) answers
  HTTP 500: a pod requesting ``example.com/foo`` fails with an error, others never call it.

p1 (1 CPU, priority 0) fits n1 and n2 after A, where the two nodes' plugin scores are equal,
so A's scores put it on n2, and A binds it. p2 (3.5 CPU, priority 100, rack b) fits nowhere:
n2 lacks CPU, A fails n3 and n1; preemption finds n2 (evicting p1), A agrees, and p2 lands on
n2 next, the only node left, bound by A. p3 asks for example.com/foo and errors on C.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import Result
from sqlalchemy import Engine, select

from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.store.models import Run, RunEvent
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import stored_digest, write_trace
from tests.extender_service import FakeExtender

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: {url}b
  filterVerb: filter
  ignorable: true
- urlPrefix: {url}c
  filterVerb: filter
  managedResources:
  - name: example.com/foo
    ignoredByScheduler: true
- urlPrefix: {url}a
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 2
  bindVerb: bind
  preemptVerb: preempt
  nodeCacheCapable: true
"""


def _a_filter(body: dict[str, Any]) -> tuple[int, Any]:
    names = body["NodeNames"]
    rack_b = (body["Pod"]["metadata"].get("labels") or {}).get("rack") == "b"
    failed = {"n3": "no GPU left"} if "n3" in names else {}
    unresolvable = {"n1": "wrong rack"} if rack_b and "n1" in names else {}
    passing = [n for n in names if n not in failed and n not in unresolvable]
    return 200, {"NodeNames": passing, "FailedNodes": failed,
                 "FailedAndUnresolvableNodes": unresolvable, "Error": ""}


def _a_prioritize(body: dict[str, Any]) -> tuple[int, Any]:
    scores = {"n1": 3, "n2": 7}
    return 200, [{"Host": n, "Score": scores.get(n, 0)} for n in body["NodeNames"]]


def _a_preempt(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"NodeNameToMetaVictims": body["NodeNameToMetaVictims"]}


def _events(*nodes: str) -> list[tuple[float, str, dict[str, Any]]]:
    events: list[tuple[float, str, dict[str, Any]]] = [
        (0.0, "ADDED", make_node(name).capacity(cpu="4", memory="8Gi", pods="110")
         .extended("example.com/foo", "4").obj())
        for name in ("n1", "n2", "n3", *nodes)]
    p3 = make_pod("p3").uid("uid-p3").req(cpu="100m").extended("example.com/foo", "1").obj()
    return [*events,
            (1.0, "ADDED", make_pod("p1").uid("uid-p1").req(cpu="1", memory="1Gi").obj()),
            (2.0, "ADDED", make_pod("p2").uid("uid-p2").req(cpu="3500m", memory="1Gi")
             .priority(100).label("rack", "b").obj()),
            (3.0, "ADDED", p3), (30.0, "DELETED", p3)]


@pytest.fixture
def scenario(engine: Engine, tmp_path: Path, extender_service: FakeExtender) -> Path:
    service = extender_service
    service.routes.update({
        "a/filter": _a_filter, "a/prioritize": _a_prioritize, "a/preempt": _a_preempt,
        "a/bind": lambda body: (200, {"Error": ""}),
        "b/filter": lambda body: (500, b"overloaded"),
        "c/filter": lambda body: (500, b"down"),
    })
    events = _events()
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "ext.jsonl", *events))],
                 name="ext")
    config = tmp_path / "extenders.yaml"
    config.write_text(CONFIG.format(url=service.url))
    return config


def _attempts(engine: Engine, run: str, pod: str) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        run_id = connection.execute(select(Run.id).where(Run.name == run)).scalar_one()
        rows = connection.execute(select(RunEvent.data).where(
            RunEvent.run_id == run_id, RunEvent.kind == "attempt",
            RunEvent.pod == f"default/{pod}").order_by(RunEvent.seq)).scalars()
        return [orjson.loads(row) for row in rows]


def _records(engine: Engine, run: str, kind: str) -> list[tuple[str | None, str | None,
                                                                 dict[str, Any]]]:
    with engine.connect() as connection:
        run_id = connection.execute(select(Run.id).where(Run.name == run)).scalar_one()
        rows = connection.execute(select(RunEvent.pod, RunEvent.node, RunEvent.data).where(
            RunEvent.run_id == run_id, RunEvent.kind == kind).order_by(RunEvent.seq)).all()
    return [(pod, node, orjson.loads(data)) for pod, node, data in rows]


def _run_id(engine: Engine, name: str) -> int:
    with engine.connect() as connection:
        run_id: int = connection.execute(select(Run.id).where(Run.name == name)).scalar_one()
    return run_id


def test_a_replay_calls_extenders_records_them_and_replays_their_answers(
        engine: Engine, scenario: Path, extender_service: FakeExtender,
        run_kaudit: Callable[..., Result]) -> None:
    url = extender_service.url
    a, b, c = f"{url}a", f"{url}b", f"{url}c"
    result = run_kaudit("replay", "ext", "--config", str(scenario), "--name", "live", "--json")
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.output)["summary"]
    assert summary["podsScheduled"] == 2 and summary["podsPreempted"] == 1

    # p1: A then B (ignorable, failed, skipped); A's scores decide between n1 and n2.
    first = _attempts(engine, "live", "p1")[0]
    assert first["selectedNode"] == "n2" and first["feasibleNodes"] == 2
    calls = [(c_["extender"], c_["step"], c_["nodes"], c_["error"]) for c_ in first["extenders"]]
    assert calls == [
        (a, "filter", ["n1", "n2", "n3"], None),
        (b, "filter", ["n1", "n2"], f"failed filter with extender at URL {b}/filter, code 500"),
        (a, "prioritize", ["n1", "n2"], None),
    ]
    assert first["extenders"][0]["passing"] == ["n1", "n2"]
    assert first["extenderWeights"] == {a: 2}
    assert first["rejectedBy"] == {"Extender": 1}
    assert all(call["latencyUs"] > 0 for call in first["extenders"])

    explain = orjson.loads(run_kaudit("explain", "live", "default/p1", "--json").output)
    nodes = explain["attempts"][0]["nodes"]
    assert nodes["n3"]["filter"][a] == {"code": "Unschedulable", "reasons": ["no GPU left"],
                                         "extender": True}
    assert nodes["n3"]["feasible"] is False and "score" not in nodes["n3"]
    assert nodes["n1"]["filter"][b]["ignored"] is True and nodes["n1"]["feasible"] is True
    assert nodes["n1"]["score"][a] == {"raw": 3, "normalized": 30, "weight": 2,
                                       "weighted": 60, "extender": True}
    assert nodes["n2"]["score"][a]["weighted"] == 140
    plugins = {name: sum(v["weighted"] for p, v in nodes[name]["score"].items() if p != a)
               for name in ("n1", "n2")}
    assert plugins["n1"] == plugins["n2"]  # two empty, identical nodes
    assert nodes["n1"]["total"] == plugins["n1"] + 60
    assert nodes["n2"]["total"] == plugins["n2"] + 140
    assert explain["attempts"][0]["tiedNodes"] == ["n2"]
    text = run_kaudit("explain", "live", "default/p1").output
    assert f"extender filter {a} (3 node(s), " in text and "): 2 passed" in text
    assert f"{a}: no GPU left" in text  # the rejected node's cause, grouped
    assert f"extender bind {a} (1 node(s), " in text

    # A bound p1 (and later p2) instead of the default binder.
    binds = _records(engine, "live", "bind")
    assert [(pod, node, data["binder"]) for pod, node, data in binds] == [
        ("default/p1", "n2", a), ("default/p2", "n2", a)]
    assert binds[0][2]["extenders"][0]["step"] == "bind"
    assert binds[0][2]["extenders"][0]["nodes"] == ["n2"]

    # p2: n2 lacks CPU, A fails n3 (Unschedulable) and n1 (unresolvable): counted per node
    # with the extender's message as the reason, as FitError.Error() counts them.
    p2_attempts = _attempts(engine, "live", "p2")
    failed, retried = p2_attempts[0], p2_attempts[-1]
    # v1.37 (the default) adds the preemption's outcome to the message.
    assert failed["message"] == ("0/3 nodes are available: 1 Insufficient cpu, "
                                 "1 no GPU left, 1 wrong rack. preemption: found a potential "
                                 "placement for pod on node n2, preempting 1 victims")
    assert failed["feasibleNodes"] == 0
    assert failed["rejectedBy"] == {"NodeResourcesFit": 1, "Extender": 2}
    preempt = [call for call in failed["extenders"] if call["step"] == "preempt"]
    assert [call["nodes"] for call in preempt] == [["n2"]]
    assert orjson.loads(preempt[0]["body"]) == {"NodeNameToMetaVictims": {
        "n2": {"Pods": [{"UID": "uid-p1"}], "NumPDBViolations": 0}}}
    assert failed["preemption"]["nominatedNode"] == "n2"
    assert failed["preemption"]["afterExtenders"] == [
        {"node": "n2", "victims": ["default/p1"], "pdbViolations": 0}]
    assert _records(engine, "live", "preempt")[0][0] == "default/p1"
    # Upstream only narrows the candidates by the dry run's potential nodes: n3 (Unschedulable
    # by A) had no victims, n1 (unresolvable) was never a candidate.
    assert failed["preemption"]["potentialNodes"] == 2
    # While p1 terminates p2 waits (not eligible to preempt again); then only n2 is left after
    # A, so it is chosen without prioritize.
    assert len(p2_attempts) == 3 and "terminating pod" in p2_attempts[1]["message"]
    assert retried["selectedNode"] == "n2" and retried["feasibleNodes"] == 1
    assert [call["step"] for call in retried["extenders"]] == ["filter", "filter"]

    # p3: C, interested in example.com/foo and not ignorable, fails the cycle.
    errored = _attempts(engine, "live", "p3")
    assert errored and all(doc["result"] == "error" for doc in errored)
    assert errored[0]["message"] == f"failed filter with extender at URL {c}/filter, code 500"
    assert [call["extender"] for call in errored[0]["extenders"]] == [c]
    # Every call of B and C failed, none of A's.
    every = [call for pod in ("p1", "p2", "p3") for doc in _attempts(engine, "live", pod)
             for call in doc["extenders"]]
    assert summary["extenderErrors"] == sum(call["extender"] != a for call in every) > 0
    assert sum(summary["extenderCalls"].values()) == len(every) + 2  # and two binds

    # The same trace from the recorded answers, with the service gone: the same event log.
    seen = len(extender_service.seen)
    extender_service.close()
    result = run_kaudit("replay", "ext", "--config", str(scenario), "--name", "recorded-answers",
                        "--extender-answers", "live", "--json")
    assert result.exit_code == 0, result.output
    replayed = orjson.loads(result.output)
    assert replayed["summary"]["extenderAnswers"]["missing"] == 0
    with engine.connect() as connection:
        options = orjson.loads(connection.execute(select(Run.options).where(
            Run.name == "recorded-answers")).scalar_one())
    assert options["extenderAnswers"] == "run 'live'"
    assert len(extender_service.seen) == seen
    assert stored_digest(engine, _run_id(engine, "recorded-answers")) == stored_digest(
        engine, _run_id(engine, "live"))


def test_a_question_without_a_recorded_answer_is_reported_not_invented(
        engine: Engine, scenario: Path, extender_service: FakeExtender,
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    assert run_kaudit("replay", "ext", "--config", str(scenario), "--name", "live").exit_code == 0
    extender_service.close()
    # The same pods with a fourth node: A is asked about n1..n4, which it never answered.
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "n4.jsonl", *_events("n4")))],
                 name="ext-n4")
    result = run_kaudit("replay", "ext-n4", "--config", str(scenario), "--extender-answers",
                        "live", "--name", "other-questions")
    assert result.exit_code == 0, result.output
    assert "extender call(s) had no recorded answer in run 'live' and failed" in result.output
    p1 = _attempts(engine, "other-questions", "p1")[0]
    assert p1["result"] == "error"
    assert p1["message"].startswith("no recorded answer in run 'live' for filter with "
                                     f"extender at URL {extender_service.url}a/filter")
    assert p1["extenders"][0]["nodes"] == ["n1", "n2", "n3", "n4"]
    with engine.connect() as connection:
        stored = orjson.loads(connection.execute(select(Run.summary).where(
            Run.name == "other-questions")).scalar_one())
    missing = stored["extenderAnswers"]
    assert missing["missing"] > 0 and missing["recorded"] > 0
    by_call = missing["missingByCall"]
    assert sum(by_call.values()) == missing["missing"]
    assert by_call[f"{extender_service.url}a filter"] > 0

    result = run_kaudit("replay", "ext", "--config", str(scenario), "--extender-answers",
                        "nope")
    assert result.exit_code != 0 and "no run named 'nope'" in result.output
    result = run_kaudit("replay", "ext", "--extender-answers", "live")
    assert result.exit_code != 0 and "has no extenders to answer for" in result.output


def test_the_pod_page_and_whatif_show_extender_verdicts_and_scores(
        engine: Engine, db_url: str, scenario: Path, extender_service: FakeExtender,
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    from kaudit.dashboard.app import create_app

    a = f"{extender_service.url}a"
    assert run_kaudit("replay", "ext", "--config", str(scenario), "--name", "live").exit_code == 0
    client = create_app({"KAUDIT_DB": db_url, "TESTING": True}).test_client()
    detail = client.get("/api/v1/runs/live/pods/default/p1/attempts/1").get_json()
    filters = detail["filter"]
    row = filters["plugins"].index(a)
    n3 = filters["nodes"].index("n3")
    assert filters["codes"][filters["verdicts"][n3][row]] == "Unschedulable"
    assert filters["reasons"][n3][str(row)] == ["no GPU left"]
    scores = detail["scores"]
    column = scores["plugins"].index(a)
    assert scores["weights"][a] == 2
    assert dict(zip(scores["nodes"], (w[column] for w in scores["weighted"]), strict=True)) == {
        "n1": 60, "n2": 140}
    assert detail["decision"]["winner"] == "n2" and detail["decision"]["deltas"][a] == 80
    assert [call["step"] for call in detail["extenderCalls"]] == [
        "filter", "filter", "prioritize"]
    listed = client.get("/api/v1/runs/live/events?plugin=Extender").get_json()
    assert {event["pod"] for event in listed["items"]} == {"default/p1", "default/p2"}

    # whatif calls the live extenders on a cluster state and shows them beside the plugins.
    state = tmp_path / "state.json"
    state.write_bytes(orjson.dumps({"kind": "List", "items": [
        make_node(n).capacity(cpu="4", memory="8Gi", pods="110").obj()
        for n in ("n1", "n2", "n3")]}))
    pod = tmp_path / "pod.json"
    pod.write_bytes(orjson.dumps(make_pod("w").req(cpu="1").obj()))
    result = run_kaudit("whatif", "--cluster", str(state), "--pod", str(pod), "--config",
                        str(scenario), "--json",
                        db=False)
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.output)
    assert report["nodes"]["n3"]["filter"][a]["reasons"] == ["no GPU left"]
    assert report["nodes"]["n3"]["feasible"] is False
    assert report["nodes"]["n2"]["score"][a]["weighted"] == 140
    assert report["selectedNode"] == "n2"
    text = run_kaudit("whatif", "--cluster", str(state), "--pod", str(pod), "--config",
                      str(scenario), db=False)
    assert f"extender filter {a} (3 node(s)" in text.output and "2 passed" in text.output


def test_a_bind_call_for_a_pod_deleted_while_binding_is_kept(
        engine: Engine, scenario: Path, extender_service: FakeExtender,
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    """With --bind-latency the pod may go before its binding completes: the bind call was
    made all the same, is kept in an ``extender`` record, and answers it again."""
    nodes = [event for event in _events() if event[2]["kind"] == "Node"]
    p1 = make_pod("p1").uid("uid-p1").req(cpu="1", memory="1Gi").obj()
    trace = write_trace(tmp_path / "gone.jsonl", *nodes, (1.0, "ADDED", p1),
                        (1.2, "DELETED", p1))
    ingest_trace(engine, [TraceInput(trace)], name="gone")
    assert run_kaudit("replay", "gone", "--config", str(scenario), "--bind-latency", "0.5",
                      "--name", "live-gone").exit_code == 0
    kept = _records(engine, "live-gone", "extender")
    assert [(pod, data["reason"], data["extenders"][0]["step"]) for pod, _, data in kept] == [
        ("default/p1", "deleted while binding", "bind")]
    extender_service.close()
    result = run_kaudit("replay", "gone", "--config", str(scenario), "--bind-latency", "0.5",
                        "--extender-answers", "live-gone", "--name", "again", "--json")
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.output)["summary"]["extenderAnswers"]["missing"] == 0
    assert stored_digest(engine, _run_id(engine, "again")) == stored_digest(
        engine, _run_id(engine, "live-gone"))


def test_an_extender_error_clears_the_pods_nomination(
        engine: Engine, scenario: Path, extender_service: FakeExtender,
        run_kaudit: Callable[..., Result], tmp_path: Path) -> None:
    """p3 preempts ``low`` on n1 and is nominated there; its next attempt fails on C (an
    error, not a FitError), which clears the nomination as upstream's cycle does: p4 then
    finds n1's CPU free instead of held for p3."""
    calls = []

    def c_filter(body: dict[str, Any]) -> tuple[int, Any]:
        calls.append(body)
        if len(calls) == 1:
            names = [item["metadata"]["name"] for item in body["Nodes"]["items"]]
            return 200, {"Nodes": {"items": []}, "FailedNodes": dict.fromkeys(names, "busy")}
        return 500, b"down"

    extender_service.routes["c/filter"] = c_filter
    nodes = [event for event in _events() if event[2]["kind"] == "Node"]
    trace = write_trace(
        tmp_path / "nominated.jsonl", *nodes,
        (0.5, "ADDED", make_pod("low").uid("uid-low").node("n1").req(cpu="3").obj()),
        (3.0, "ADDED", make_pod("p3").uid("uid-p3").req(cpu="3").priority(100)
         .extended("example.com/foo", "1").obj()),
        (20.0, "ADDED", make_pod("p4").uid("uid-p4").req(cpu="2").obj()))
    ingest_trace(engine, [TraceInput(trace)], name="nominated")
    assert run_kaudit("replay", "nominated", "--config", str(scenario),
                      "--name", "nominated-run").exit_code == 0
    p3 = _attempts(engine, "nominated-run", "p3")
    assert p3[0]["preemption"]["nominatedNode"] == "n1"
    assert p3[1]["result"] == "error"
    story = orjson.loads(run_kaudit("explain", "nominated-run", "default/p4", "--json").output)
    n1 = story["attempts"][0]["nodes"]["n1"]
    assert n1["filter"]["NodeResourcesFit"]["code"] == "Success"


def test_a_failed_extender_bind_is_a_binding_cycle_failure(
        engine: Engine, scenario: Path, extender_service: FakeExtender,
        run_kaudit: Callable[..., Result]) -> None:
    """A's bind answers an error: the binding cycle fails (bindfail with A as binder and
    upstream's status), the pod is forgotten and retried, and binds once A accepts."""
    answers = iter([{"Error": "conflict"}])
    extender_service.routes["a/bind"] = lambda body: (200, next(answers, {"Error": ""}))
    assert run_kaudit("replay", "ext", "--config", str(scenario), "--name", "binds").exit_code == 0
    failed = _records(engine, "binds", "bindfail")
    assert [(pod, node, data["code"], data["reasons"], data["binder"])
            for pod, node, data in failed] == [
        ("default/p1", "n2", "Error", ["conflict"], f"{extender_service.url}a")]
    assert "default/p1" in [pod for pod, _, _ in _records(engine, "binds", "bind")]
    attempts = _attempts(engine, "binds", "p1")
    assert len(attempts) >= 2 and attempts[-1]["result"] == "scheduled"
