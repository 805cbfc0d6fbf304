"""The sequence oracle's history: what upstream's scheduler did, as a trace kaudit reads.

For a few fixed seeds of :func:`sequence_scenario` (with preemption, with pods no node takes,
with every pod bound), upstream's ``sequence`` program runs with ``"history": true``
(:func:`tests.oracle.recorded.run_with_history`). The history must end in the program's own
``pods`` answer, be in the fake API server's order, bind pods as the API server's binding
storage does, and make a trace (:func:`tests.oracle.recorded.write_recorded_trace`) that
``kaudit ingest`` accepts, ``kaudit replay --lifetime recorded`` runs through, and whose
recorded placements are upstream's.
"""

from __future__ import annotations

import copy
import random
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kaudit.cli import cli
from kaudit.model.topology_labels import with_topology_labels
from kaudit.queries.outcomes import RECORDED, run_outcomes
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace, iter_events
from tests.oracle.generators import sequence_scenario
from tests.oracle.recorded import recorded_trace, run_with_history, write_recorded_trace
from tests.oracle.release import release_gate

JSON = dict[str, Any]

#: (seed, synchronous preemption). 4: preemption, and pods no node takes (9 pending pods);
#: 5: every pod bound at its first try; 1 and 6: larger, both; 4 again with the victims
#: deleted inside PostFilter.
CASES = [(1, False), (4, False), (5, False), (6, False), (4, True)]
IDS = [f"sequence-{seed}{'-sync' if sync else ''}" for seed, sync in CASES]


@cache
def scenario(seed: int) -> JSON:
    return sequence_scenario(random.Random(seed))


def _key(pod: JSON) -> str:
    return f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"


def _unscheduled_message(pod: JSON) -> str | None:
    messages = [c.get("message") for c in (pod.get("status") or {}).get("conditions") or []
                if c.get("type") == "PodScheduled" and c.get("status") == "False"]
    return messages[-1] if messages else None


@pytest.fixture(scope="module")
def answers(oracle: dict[str, Path]) -> dict[tuple[int, bool], JSON]:
    """Upstream's answer, with its history, for every case (the runs in parallel)."""
    def ask(case: tuple[int, bool]) -> JSON:
        seed, sync = case
        return run_with_history(oracle["sequence"], scenario(seed), sync_preemption=sync)

    with ThreadPoolExecutor(len(CASES)) as pool:
        results = list(pool.map(ask, CASES))
    for case, answer in zip(CASES, results, strict=True):
        assert "error" not in answer, f"{case}: the oracle failed: {answer['error']}"
    return dict(zip(CASES, results, strict=True))


def final_fates(scen: JSON, history: list[JSON]) -> dict[str, JSON]:
    """Each pod's fate in the oracle's ``pods`` shape, folded from the scenario's pods and
    the history: its last state's node, its last PodScheduled=False message and nomination
    (none once deleted), whether it was deleted."""
    states = {_key(p): p for p in scen["objects"] if p.get("kind") == "Pod"}
    messages = {key: m for key, p in states.items() if (m := _unscheduled_message(p))}
    deleted: set[str] = set()
    for event in history:
        pod = event["object"]
        key = _key(pod)
        states[key] = pod
        if event["type"] == "DELETED":
            deleted.add(key)
        if (message := _unscheduled_message(pod)) is not None:
            messages[key] = message
    fates = {}
    for key, pod in states.items():
        gone = key in deleted
        fates[key] = {"node": pod["spec"].get("nodeName") or None,
                      "message": None if gone else messages.get(key),
                      "nominated": None if gone else
                      (pod.get("status") or {}).get("nominatedNodeName") or None,
                      "deleted": gone}
    return fates


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_history_ends_in_the_answer(case: tuple[int, bool],
                                    answers: dict[tuple[int, bool], JSON]) -> None:
    answer = answers[case]
    assert final_fates(scenario(case[0]), answer["history"]) == answer["pods"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_history_is_in_the_api_servers_order(case: tuple[int, bool],
                                             answers: dict[tuple[int, bool], JSON]) -> None:
    """Pending pods are created first, in order; nothing follows a pod's deletion; every
    write carries a newer resourceVersion than the one before; times never go back."""
    history = answers[case]["history"]
    pending = [_key(p) for p in scenario(case[0])["pending"]]
    assert [_key(e["object"]) for e in history[:len(pending)]] == pending
    assert {e["type"] for e in history[:len(pending)]} == {"ADDED"}
    assert "ADDED" not in {e["type"] for e in history[len(pending):]}
    gone: set[str] = set()
    versions = []
    for event in history:
        key = _key(event["object"])
        assert key not in gone, f"{key} changed after its deletion"
        if event["type"] == "DELETED":
            gone.add(key)
        else:
            versions.append(int(event["object"]["metadata"]["resourceVersion"]))
    assert versions == sorted(set(versions))
    times = [e["us"] for e in history]
    assert times == sorted(times)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_binding_sets_node_and_pod_scheduled_only(case: tuple[int, bool],
                                                  answers: dict[tuple[int, bool], JSON]) -> None:
    """A binding changes what the API server's binding storage changes
    (``setPodNodeAndMetadata``): ``spec.nodeName`` and a ``PodScheduled=True`` condition,
    and the write's resourceVersion; from v1.35 it also clears ``nominatedNodeName``
    (``ClearingNominatedNodeNameAfterBinding``) and carries the node's topology labels
    (the ``PodTopologyLabels`` admission, :func:`kaudit.scheduler.binding.with_topology_labels`)."""
    node_labels = {o["metadata"]["name"]: o["metadata"].get("labels") or {}
                   for o in scenario(case[0])["objects"] if o.get("kind") == "Node"}
    last: dict[str, JSON] = {}
    bindings = 0
    for event in answers[case]["history"]:
        pod = event["object"]
        key = _key(pod)
        before = last.get(key)
        last[key] = pod
        if before is None or before["spec"].get("nodeName") or not pod["spec"].get("nodeName"):
            continue
        bindings += 1
        scheduled = [c for c in (pod.get("status") or {}).get("conditions") or []
                     if c["type"] == "PodScheduled"]
        assert len(scheduled) == 1 and scheduled[0]["status"] == "True", scheduled
        assert scheduled[0].get("lastTransitionTime"), scheduled
        expected = copy.deepcopy(before)
        expected["spec"]["nodeName"] = pod["spec"]["nodeName"]
        if release_gate("PodTopologyLabelsAdmission"):
            expected = with_topology_labels(expected, node_labels[pod["spec"]["nodeName"]]) \
                or expected
        if release_gate("ClearingNominatedNodeNameAfterBinding"):
            expected.get("status", {}).pop("nominatedNodeName", None)
        expected["metadata"]["resourceVersion"] = pod["metadata"]["resourceVersion"]
        # upstream's UpdatePodCondition: the condition replaced in place, else appended
        had = (before.get("status") or {}).get("conditions") or []
        expected.setdefault("status", {})["conditions"] = (
            [scheduled[0] if c["type"] == "PodScheduled" else c for c in had]
            if any(c["type"] == "PodScheduled" for c in had) else [*had, scheduled[0]])
        assert pod == expected
    assert bindings > 0


def test_cases_cover_preemption_and_unschedulable_pods(
        answers: dict[tuple[int, bool], JSON]) -> None:
    """The histories keep showing what they are for (regenerate :data:`CASES` if the
    generators change): a victim marked ``DisruptionTarget`` and deleted, a preemptor
    nominated and later bound, a pod left with a ``PodScheduled=False`` message."""
    victims, nominated, bound, refused = set(), set(), set(), set()
    for answer in answers.values():
        for event in answer["history"]:
            pod = event["object"]
            key = _key(pod)
            conditions = {c["type"] for c in (pod.get("status") or {}).get("conditions") or []}
            if event["type"] == "DELETED" and "DisruptionTarget" in conditions:
                victims.add(key)
            if (pod.get("status") or {}).get("nominatedNodeName") and not pod["spec"].get(
                    "nodeName"):
                nominated.add(key)
            if pod["spec"].get("nodeName"):
                bound.add(key)
                refused.discard(key)
            elif _unscheduled_message(pod):
                refused.add(key)
    assert victims
    assert nominated & bound
    assert refused


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_recorded_trace_ingests_and_replays(case: tuple[int, bool], tmp_path: Path,
                                            answers: dict[tuple[int, bool], JSON]) -> None:
    """``kaudit ingest`` stores the trace as written (times included), ``kaudit replay
    --lifetime recorded`` runs it, and the recorded placements are upstream's."""
    answer = answers[case]
    path = write_recorded_trace(tmp_path / "upstream.jsonl", scenario(case[0]), answer)
    db = f"sqlite:///{tmp_path / 'kaudit.db'}"
    runner = CliRunner()
    ingested = runner.invoke(cli, ["ingest", str(path), "--name", "upstream", "--db", db],
                             catch_exceptions=False)
    assert ingested.exit_code == 0, ingested.output
    replayed = runner.invoke(cli, ["replay", "upstream", "--lifetime", "recorded",
                                   "--db", db], catch_exceptions=False)
    assert replayed.exit_code == 0, replayed.output

    engine = open_database(db)
    try:
        trace = get_trace(engine, "upstream")
        stored = list(iter_events(engine, trace.id))
        recorded = run_outcomes(engine, RECORDED, "upstream").pods
    finally:
        engine.dispose()
    lines = recorded_trace(scenario(case[0]), answer)
    assert [(e.ts_us, e.type, e.kind, e.namespace, e.name) for e in stored] == [
        (round(line["ts"] * 1_000_000), line["type"], line["object"]["kind"],
         line["object"]["metadata"].get("namespace") or "",
         line["object"]["metadata"]["name"]) for line in lines]
    final_node = {f"{e.namespace}/{e.name}": e.object["spec"].get("nodeName") or None
                  for e in stored if e.kind == "Pod"}
    assert final_node == {key: fate["node"] for key, fate in answer["pods"].items()}
    pending = [_key(p) for p in scenario(case[0])["pending"]]
    assert {key: recorded[key].node for key in pending} == {
        key: answer["pods"][key]["node"] for key in pending}


def test_recorded_trace_refuses_an_answer_without_history() -> None:
    with pytest.raises(ValueError, match="'history'"):
        recorded_trace(scenario(5), {"pods": {}})


def test_recorded_trace_refuses_times_going_back() -> None:
    pod = scenario(5)["pending"][0]
    history = [{"us": 20, "type": "ADDED", "object": pod},
               {"us": 10, "type": "MODIFIED", "object": pod}]
    with pytest.raises(ValueError, match=r"history\[1\]\.us"):
        recorded_trace(scenario(5), {"pods": {}, "history": history})
