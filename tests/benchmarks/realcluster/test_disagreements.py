"""``python -m benchmarks.realcluster.disagreements`` on a small synthetic trace: each
disagreement of an audit judged on kaudit's state by upstream's own cycle (the oracle; skipped
without it, like ``tests/oracle``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from benchmarks.realcluster import disagreements
from benchmarks.realcluster.disagreements import (
    TIMING,
    Answer,
    Explainer,
    agrees_with_upstream,
    audit_answer,
    equal_rank_victims,
    fold,
    main,
    pending_pod,
    scenario,
    shows_another_state,
    stored,
)
from kaudit.store.schema import open_database
from kaudit.tracegen.builders import make_pod
from tests.oracle.conftest import oracle_programs
from tests.replay.test_audit import audit_steps, deletion_just_before


@pytest.fixture
def oracle() -> dict[str, Path]:
    return oracle_programs()


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Any:
    engine = open_database(f"sqlite:///{tmp_path / 'kaudit.db'}")
    yield engine
    engine.dispose()


def audited_late_deletion(engine: Engine, directory: Path) -> str:
    """The audit (10 ms window) of a trace where old's deletion from n2 is recorded 50 ms
    before p's binding to n1: kaudit, seeing n2 free, puts p there; so would upstream. A pod
    that succeeded still stands on n2 (3 of its 4 CPU): neither scheduler counts it."""
    steps = deletion_just_before(0.05)
    done = make_pod("done").req(cpu="3").node("n2").obj()
    done["status"]["phase"] = "Succeeded"
    steps.insert(4, (0.0, "ADDED", done))
    return str(audit_steps(engine, directory, steps, window_s=0.01)["run"])


def test_a_disagreement_upstream_shares_on_that_state_is_timing(
        oracle: dict[str, Path], sqlite_engine: Engine, tmp_path: Path) -> None:
    run = audited_late_deletion(sqlite_engine, tmp_path)
    (explained,) = Explainer(sqlite_engine, run, cycle_program=oracle["cycle"],
                             repeats=2).explain_all()

    assert (explained.pod, explained.audit_class) == ("default/p", "scoredLower")
    assert explained.recorded.node == "n1"
    assert explained.audit.node == explained.kaudit.node == "n2"
    # Upstream on the same state (the succeeded pod left out, as its informer does).
    assert [u.ties for u in explained.upstream] == [("n2",), ("n2",)]
    assert explained.verdict == TIMING
    # The state just before old's deletion gives the recorded answer, to both schedulers.
    assert explained.nearest_state == {
        "events": -1, "single": True, "as": "not yet seen",
        "changes": ["DELETED Pod default/old (on n2) at -50.0 ms"],
        "kaudit": "bind n1", "upstream": "bind n1"}


def test_disagreements_are_judged_a_batch_at_a_time(
        oracle: dict[str, Path], sqlite_engine: Engine, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    run = audited_late_deletion(sqlite_engine, tmp_path)
    explainer = Explainer(sqlite_engine, run, cycle_program=oracle["cycle"], repeats=1,
                          nearest=False)
    (record,) = explainer.disagreements()
    monkeypatch.setattr(explainer, "disagreements", lambda: [record, record, record])
    monkeypatch.setattr(disagreements, "BATCH", 2)
    sent: list[int] = []
    real_run_cycles = disagreements.run_cycles

    def counting(program: Path, requests: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(len(requests))
        return real_run_cycles(program, requests)

    monkeypatch.setattr(disagreements, "run_cycles", counting)
    progress: list[tuple[int, int]] = []
    explained = explainer.explain_all(progress=lambda done, total: progress.append((done, total)))

    assert sent == [2, 1]
    assert progress == [(2, 3), (3, 3)]
    assert [e.verdict for e in explained] == [TIMING] * 3
    assert {e.upstream[0].ties for e in explained} == {("n2",)}


def test_the_command_prints_every_disagreement_as_json(
        oracle: dict[str, Path], sqlite_engine: Engine, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    run = audited_late_deletion(sqlite_engine, tmp_path)

    assert main(["--db", f"sqlite:///{tmp_path / 'kaudit.db'}", "--run", run, "--json",
                 "--repeats", "1"]) == 0
    (explained,) = json.loads(capsys.readouterr().out)
    assert explained["verdict"] == TIMING
    assert explained["recorded"]["text"] == "bind n1"
    assert [u["text"] for u in explained["upstream"]] == ["bind n2"]
    # --pod keeps only that pod's disagreements.
    db = f"sqlite:///{tmp_path / 'kaudit.db'}"
    assert main(["--db", db, "--run", run, "--json", "--repeats", "1",
                 "--pod", "default/other"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["--db", db, "--run", run, "--json", "--repeats", "1",
                 "--pod", "default/p"]) == 0
    assert [e["pod"] for e in json.loads(capsys.readouterr().out)] == ["default/p"]


def test_an_unknown_run_is_refused_naming_it(sqlite_engine: Engine, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", f"sqlite:///{tmp_path / 'kaudit.db'}", "--run", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_kaudits_pick_among_upstreams_tied_candidates_agrees_with_it() -> None:
    # Upstream ties n1 and n2 for the preemption and happened to pick n2 this run; kaudit
    # picked n1 with the victims upstream found there.
    upstream = Answer("preemption", "n2", ("default/b",), ("n1", "n2"))
    expect = {"preemption": {"nominatedNode": "n2", "tiedNodes": ["n1", "n2"],
                             "candidates": {"n1": {"victims": ["default/a"]},
                                            "n2": {"victims": ["default/b"]}}}}
    assert agrees_with_upstream(Answer("preemption", "n1", ("default/a",), ("n1", "n2")),
                                upstream, expect, {})
    assert not agrees_with_upstream(Answer("preemption", "n1", ("default/c",), ("n1", "n2")),
                                    upstream, expect, {})


def test_a_binding_to_the_nominated_node_is_read_as_a_binding() -> None:
    # The audit of a pod bound elsewhere than its nominated node, which fits: kaudit binds
    # it to the nominated node (evaluateNominatedNode), and names that nomination.
    record = {"kaudit": {"node": "node-0017", "nominatedNode": "node-0017"}}
    assert audit_answer(record) == Answer("bind", "node-0017", (), ("node-0017",))
    preemption = {"kaudit": {"node": None, "nominatedNode": "n1", "victims": ["a/v"]}}
    assert audit_answer(preemption) == Answer("preemption", "n1", ("a/v",), ("n1",))
    assert audit_answer({"kaudit": {"node": None, "nominatedNode": "n1"}}).victims == ()


def test_the_state_has_start_times_in_whole_seconds_as_the_api_server_stores_them() -> None:
    pod = {"kind": "Pod", "status": {"startTime": "2026-11-27T23:21:46.109689262Z"}}
    assert stored(pod)["status"]["startTime"] == "2026-11-27T23:21:46Z"
    offset = {"kind": "Pod", "status": {"startTime": "2026-11-27T23:21:46.5+01:00"}}
    assert stored(offset)["status"]["startTime"] == "2026-11-27T23:21:46+01:00"
    whole = {"kind": "Pod", "status": {"startTime": "2026-11-27T23:21:46Z"}}
    assert stored(whole) is whole


def test_each_probe_state_equals_the_trace_folded_afresh(
        sqlite_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The probes fold from a state kept per moment (and moved forward or started again as the
    # probes ask); with probe reaches of one to five events the kept state starts at each
    # point of this small trace, and every shifted or toggled state must still be the one the
    # whole trace, folded afresh with that change, leaves.
    run = audited_late_deletion(sqlite_engine, tmp_path)
    events = Explainer(sqlite_engine, run, cycle_program=tmp_path / "unused").events
    for reach in range(1, 6):
        monkeypatch.setattr(disagreements, "PROBE_EVENTS", reach)
        explainer = Explainer(sqlite_engine, run, cycle_program=tmp_path / "unused")
        (record,) = explainer.disagreements()
        at = next(i for i, e in enumerate(events) if e.seq >= record["momentSeq"])
        pod = pending_pod(events, record["momentSeq"], record["pod"])
        own = {i for i, e in enumerate(events)
               if e.kind == "Pod" and f"{e.namespace}/{e.name}" == record["pod"]}

        def afresh(seen: list[int], at: int = at, pod: Any = pod, own: set[int] = own,
                   record: Any = record, config: str = explainer.config) -> Any:
            chosen = sorted((set(seen) - own) | {i for i in own if i < at})
            return scenario(fold(events[i] for i in chosen), pod, config,
                            record.get("decidedAfter") or ())

        for shift in range(-reach, reach + 1):
            if 0 <= at + shift <= len(events):
                assert explainer._case(record, shift) == afresh(list(range(at + shift)))
        for toggled in range(max(0, at - reach), min(at + reach, len(events))):
            seen = [i for i in range(at) if i != toggled] + ([toggled] if toggled >= at else [])
            assert explainer._case(record, toggled=toggled) == afresh(seen)


def test_a_candidate_of_a_sampling_dry_run_is_one_of_upstreams_outcomes() -> None:
    # 101 candidates: upstream's dry run examines 100 of them from a random offset and
    # nominated n2 this time; kaudit's n7, with the victims upstream found there, is another
    # offset's outcome. With 100 candidates or fewer every one is examined: n7 is no outcome.
    def expect(count: int) -> dict[str, Any]:
        return {"preemption": {"nominatedNode": "n2", "tiedNodes": ["n2"], "candidates": {
            f"n{i}": {"victims": [f"default/v{i}"]} for i in range(count)}}}

    upstream = Answer("preemption", "n2", ("default/v2",), ("n2",))
    assert agrees_with_upstream(Answer("preemption", "n7", ("default/v7",), ("n7",)),
                                upstream, expect(101), {})
    assert not agrees_with_upstream(Answer("preemption", "n7", ("default/v8",), ("n7",)),
                                    upstream, expect(101), {})
    assert not agrees_with_upstream(Answer("preemption", "n7", ("default/v7",), ("n7",)),
                                    upstream, expect(100), {})


def test_two_nominations_of_a_sampling_dry_run_show_no_other_state() -> None:
    # The audit nominated n5 and kaudit, on the state rebuilt from the trace, n7: both are
    # candidates upstream found there with those victims, and with 101 candidates its dry
    # run samples, so each is an outcome of some offset. With 100 candidates (no sampling)
    # only upstream's tied pick is, and the audit's n5 shows another state.
    def expect(count: int) -> dict[str, Any]:
        return {"preemption": {"nominatedNode": "n7", "tiedNodes": ["n7"], "candidates": {
            f"n{i}": {"victims": [f"default/v{i}"]} for i in range(count)}}}

    audit = Answer("preemption", "n5", ("default/v5",), ("n5",))
    kaudit = upstream = Answer("preemption", "n7", ("default/v7",), ("n7",))
    assert not shows_another_state(audit, kaudit, {}, [(upstream, expect(101))])
    assert shows_another_state(audit, kaudit, {}, [(upstream, expect(100))])
    assert not shows_another_state(kaudit, kaudit, {}, [(upstream, expect(100))])
    other_victims = Answer("preemption", "n5", ("default/v6",), ("n5",))
    assert shows_another_state(other_victims, kaudit, {}, [(upstream, expect(101))])


def test_victims_of_equal_rank_on_the_audits_node_are_named() -> None:
    # The audit evicted h on n3; upstream, on the rebuilt state, finds z and s there: h and z
    # share priority 100 and a start time, and their order on the node decides which goes.
    ranks = {"a/h": (100, "T1"), "a/z": (100, "T1"), "a/s": (0, "T2"), "a/o": (100, "T0")}
    audit = Answer("preemption", "n3", ("a/h",), ("n3",))
    expect = {"preemption": {"nominatedNode": "n1", "candidates": {
        "n1": {"victims": ["a/o"]}, "n3": {"victims": ["a/z", "a/s"]}}}}
    upstream = Answer("preemption", "n1", ("a/o",), ("n1",))
    assert equal_rank_victims(audit, [(upstream, expect)], ranks) == ["a/h", "a/z"]
    # Victims of distinct ranks: nothing to name; the same victims: nothing either.
    assert equal_rank_victims(audit, [(upstream, expect)],
                              {**ranks, "a/z": (100, "T0")}) == []
    same = Answer("preemption", "n3", ("a/s", "a/z"), ("n3",))
    assert equal_rank_victims(same, [(upstream, expect)], ranks) == []
