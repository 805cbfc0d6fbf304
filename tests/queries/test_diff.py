"""``kaudit diff``: reasons that agree with ``kaudit explain``, tie flips told from changes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.queries import units
from kaudit.queries.diff import rejecting_filter
from kaudit.queries.explain import explain_pod
from kaudit.readers.ingest import TraceInput, ingest_trace

MOST_ALLOCATED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 3}
        - {name: memory, weight: 1}
"""


@pytest.fixture
def runs(engine: Engine, sample_path: Path, tmp_path: Path,
         run_kaudit: Callable[..., Result]) -> Engine:
    ingest_trace(engine, [TraceInput(sample_path)])
    config = tmp_path / "most.yaml"
    config.write_text(MOST_ALLOCATED)
    for args in (("--name", "least"), ("--name", "least-seed7", "--seed", "7"),
                 ("--name", "most", "--config", str(config))):
        assert run_kaudit("replay", "sample", *args).exit_code == 0
    return engine


def test_config_change_reasons_agree_with_explain(runs: Engine,
                                                  run_kaudit: Callable[..., Result]) -> None:
    result = run_kaudit("diff", "least", "most", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert not report["sameConfiguration"] and report["counts"]["moved"] > 0
    moved = [c for c in report["changes"] if c["change"] == "moved"]
    for change in moved:
        assert explain_pod(runs, "least", change["pod"])["boundNode"] == change["a"]["node"]
        story = explain_pod(runs, "most", change["pod"])
        binding = [a for a in story["attempts"] if a["selectedNode"]][-1]
        winner, other = change["b"]["node"], change["a"]["node"]
        assert binding["selectedNode"] == winner
        if "rejected" in change["reason"]:
            _assert_rejection_worded_as_explain(story, binding, change["reason"], other)
        elif "chose" in change["reason"]:
            scores = binding["nodes"]
            for plugin, delta in change["scoreDeltas"].items():
                assert delta == (scores[winner]["score"][plugin]["weighted"]
                                 - scores[other]["score"][plugin]["weighted"])
            assert scores[winner]["total"] > scores[other]["total"]
        else:
            assert "did not evaluate" in change["reason"]
            assert other not in binding["nodes"]
    text = run_kaudit("diff", "least", "most")
    assert "Changed pods:" in text.output


def _assert_rejection_worded_as_explain(story: dict[str, Any], binding: dict[str, Any],
                                        reason: str, other: str) -> None:
    """The diff words the other node's rejection as explain's cause group holding that node,
    with the pod's exact request and that node's exact free amount at the attempt."""
    assert rejecting_filter(binding, other) is not None
    assert story["attempts"].index(binding) + 1 == story["verdict"]["decisiveAttempt"]
    group = next(g for g in story["verdict"]["causes"] if other in g["nodes"])
    assert reason.startswith(f"{story['run']} rejected {other}"), reason
    assert reason.endswith(group["cause"].removeprefix("rejected by ")) or \
        f": {group['cause']} (" in reason, reason
    for facts in group["facts"].get("resources", ()):
        name = facts["resource"]
        free = f"free {units.quantity(name, story['decisiveFreeCapacity'][other][name])}"
        if facts["requested"] is not None:  # None: a replacement the trace has no object of
            free = f"needs {units.quantity(name, facts['requested'])}, {free}"
        assert free in reason, reason


def test_moved_pods_reasons_carry_exact_amounts(runs: Engine,
                                                run_kaudit: Callable[..., Result]) -> None:
    """A move decided by a resource rejection says the request and the node's free amount
    in every format, and its cause group names the resource without the amounts."""
    report = json.loads(run_kaudit("diff", "least", "most", "--json").output)
    lacking = [c for c in report["changes"] if c["cause"].startswith(
        "the other node no longer fit: lack ")]
    assert lacking, report["causes"]
    for change in lacking:
        assert re.search(r" rejected \S+: lack \S+ \((needs [^,]+, )?free [^)]+\)$",
                         change["reason"]), change["reason"]
    assert any("needs" in c["reason"] for c in lacking)
    text = run_kaudit("diff", "least", "most", "--limit", "1000").output
    assert lacking[0]["reason"] in text and "Insufficient" not in text


def test_seeds_alone_change_nothing_real(runs: Engine,
                                         run_kaudit: Callable[..., Result]) -> None:
    report = json.loads(run_kaudit("diff", "least", "least-seed7", "--json").output)
    assert report["sameConfiguration"]
    counts = report["counts"]
    real = ("moved", "scheduledOnlyInA", "scheduledOnlyInB", "preemptedOnlyInA",
            "preemptedOnlyInB", "pendingTimeChanged")
    assert all(counts[k] == 0 for k in real), counts
    assert counts["tieFlips"] > 0
    assert {c["change"] for c in report["changes"]} <= {"tie-flip", "tie-consequence"}


def test_recorded_pseudo_run(runs: Engine, run_kaudit: Callable[..., Result]) -> None:
    report = json.loads(run_kaudit("diff", "recorded", "least", "--json").output)
    assert report["a"] == "recorded" and report["compared"] > 50
    assert report["aggregates"]["a"]["attempts"] is None
    # the sample was recorded with the default scheduler: the preemptor lands where it did
    assert "web/payments-0" not in {c["pod"] for c in report["changes"]}
    story = explain_pod(runs, "least", "web/payments-0")
    assert story["recordedNode"] == story["boundNode"] == "node-c3"
    for change in report["changes"]:
        if change["change"] == "moved":
            assert explain_pod(runs, "least", change["pod"])["recordedNode"] == \
                change["a"]["node"]
    bad = run_kaudit("diff", "recorded", "recorded")
    assert bad.exit_code == 2
    missing = run_kaudit("diff", "least", "nope")
    assert missing.exit_code == 2 and "no run named 'nope'" in missing.output


def test_pods_scheduled_in_neither_run_are_counted_apart(
        runs: Engine, run_kaudit: Callable[..., Result]) -> None:
    """A pod no run scheduled did not land where the other run put it: it is not counted
    unchanged, and every compared pod is in exactly one count."""
    report = json.loads(run_kaudit("diff", "recorded", "least", "--json").output)
    counts = report["counts"]
    changed = {c["pod"] for c in report["changes"]}
    for pod in ("web/ssd-cache", "data/scratch-worker"):  # bound by neither
        assert explain_pod(runs, "least", pod)["boundNode"] is None and pod not in changed
    assert report["aggregates"]["a"]["neverScheduled"] == counts["unscheduledInBoth"] == 2
    assert sum(counts.values()) == report["compared"]
    assert counts["same"] == report["compared"] - len(changed) - 2
    text = run_kaudit("diff", "recorded", "least").output
    assert f"{counts['same']} unchanged, 2 scheduled in neither" in text


def test_replacements_are_paired_by_owner_and_order() -> None:
    from kaudit.queries.diff import _pair_replacements
    from kaudit.queries.outcomes import Outcomes, PodOutcome

    def outcomes(name: str, *pods: tuple[str, int]) -> Outcomes:
        return Outcomes(name, 1, None, {k: PodOutcome(k, created_us=t, node="n")
                                        for k, t in pods})

    a = outcomes("a", ("batch/etl-7xk2q", 5), ("batch/etl-b2c4d", 9), ("web/api-1", 1))
    b = outcomes("b", ("batch/etl-r2", 9), ("batch/etl-r1", 5), ("web/api-1", 1),
                 ("batch/other-r3", 2))
    assert _pair_replacements(a, b) == [("batch/etl-7xk2q", "batch/etl-r1"),
                                        ("batch/etl-b2c4d", "batch/etl-r2")]


@pytest.fixture
def sampled(engine: Engine, tmp_path: Path) -> Engine:
    """400 equal nodes: each attempt evaluates a rotating sample of them
    (percentageOfNodesToScore), so bin packing can pick a node the spreading run never saw."""
    import random

    from kaudit.replay.run import replay_trace
    from kaudit.scheduler.build import load
    from kaudit.store.traces import get_trace
    from kaudit.tracegen.builders import make_node, make_pod
    from tests.conftest import V1_34, gates_at, write_trace

    chooser = random.Random(1)
    events = [(0.0, "ADDED", make_node(f"n{i:03d}").capacity(cpu="8", memory="32Gi", pods="110")
               .zone(f"z{i % 3}").obj()) for i in range(400)]
    events += [(1.0 + j // 10, "ADDED", make_pod(f"p{j:03d}").req(
        cpu=str(chooser.choice([1, 2, 3])), memory="2Gi").obj()) for j in range(120)]
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "wide.jsonl", *events))],
                 name="wide")
    most = tmp_path / "most.yaml"
    most.write_text(MOST_ALLOCATED)
    trace = get_trace(engine, "wide")
    for name, path in (("spread", None), ("packed", most)):
        config, registry = load(path, gates_at(V1_34))  # v1.34's scores: Fit alone differs
        replay_trace(engine, trace, config, registry, name=name)
    return engine


def test_changes_are_grouped_by_cause_and_sampling_is_chance(
        sampled: Engine, run_kaudit: Callable[..., Result]) -> None:
    report = json.loads(run_kaudit("diff", "spread", "packed", "--json").output)
    changes = report["changes"]
    assert sum(group["count"] for group in report["causes"]) == len(changes)
    sampling = [c for c in changes if c["change"] == "sampling"]
    assert sampling and report["counts"]["samplingArtifacts"] == len(sampling)
    assert report["counts"]["moved"] == sum(c["change"] == "moved" for c in changes)
    for change in sampling[:5]:
        # the packing run never evaluated the node the spreading run chose
        story = explain_pod(sampled, "packed", change["pod"])
        binding = [a for a in story["attempts"] if a["selectedNode"]][-1]
        assert change["a"]["node"] not in binding["nodes"]
        assert change["cause"] == "chance: the other node was outside the sampled nodes"
    chance = [g for g in report["causes"] if g["chance"]]
    assert report["causes"][-len(chance):] == chance  # chance comes last
    assert {g["cause"] for g in report["causes"] if not g["chance"]} == {
        "scored higher by NodeResourcesFit"}
    # sampling artifacts are not changes for CI, like tie flips
    check = run_kaudit("diff", "spread", "packed")
    assert "sampling artifacts" in check.output and "Changed pods by cause:" in check.output
