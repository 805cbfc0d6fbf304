"""Pods scheduled one after another by upstream kube-scheduler v1.34's whole scheduler and by
kaudit's replay, compared pod by pod.

Each case is ``sequence_scenario(Random(seed))`` (:mod:`tests.oracle.generators`): a cluster
filled with prioritised pods and 5 to 40 pods created in order, some needing preemption. kaudit
replays it (:func:`tests.oracle.compare.replay_sequence`); the oracle's ``sequence`` program
runs it through upstream's scheduler (queue, cache, cycles, binding, preemption) over a fake
API server, three times:

* as is: compared exactly, and modulo ties (a pod on another node agrees when kaudit had
  upstream's node tied at the top);
* ``prefer``: upstream takes kaudit's node for each pod when it is among its own top-scored
  ties (so chance no longer decides differently);
* ``prefer`` + ``syncPreemption``: also the victims go before the next pod's cycle, and kaudit
  runs with ``SchedulerAsyncPreemption`` off and no termination delay.

Only the last is asserted: with asynchronous preemption upstream's order of events depends on
goroutine timing. Even then upstream aligns backoff expirations to wall-clock seconds, so a
run now and then orders two retries the other way: a difference is asked again (twice) before
it counts. The others are counted in ``artifacts/oracle-summary.json``. Fixed seeds are
the gate; scenarios known to differ are xfails (``KNOWN_DIVERGENT``); a disagreement a fresh
seed finds is reported as an xfail naming the seed, for pinning, not a failed build.
Compared per pod: its node (a deleted pod's last), the message of its last failed attempt, its
``status.nominatedNodeName`` at the end, whether preemption deleted it.

The oracle harness's fake API server gives every write a new ``resourceVersion``, as the API
server does (upstream's scheduler drops an update of a pending pod whose ``resourceVersion`` did
not change, so the status patches the scheduler itself makes would never reach its queue).
:func:`test_harness_delivers_pending_pod_updates` checks that on a known scenario; should it
break, a disagreement skips (naming the cause) instead of failing.
"""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.compare import (
    FAKE_CLIENTSET,
    SEQUENCE_FIELDS,
    SequenceRun,
    compare_sequence,
    differences,
    harness_excuse,
    replay_sequence,
)
from tests.oracle.conftest import SEED_ENV, Summary, fresh_seeds, run_sequence
from tests.oracle.generators import sequence_request, sequence_scenario

FIXED = 36
FRESH = 3
#: Oracle runs in flight at once (each mostly waits for its quiet period).
PARALLEL = 8
#: How many more times upstream is asked when its answer differs from kaudit's.
RETRIES = 2
#: The probe of the harness: this scenario's first pending pods, where a higher-priority
#: preemptor takes the node ``PROBE_POD`` was nominated to.
PROBE_SEED, PROBE_PENDING, PROBE_POD = 3, 15, "team-a/p02-api"


#: Known disagreements: with prefer and synchronous preemption kaudit retries the pending pods
#: of these scenarios in another order than upstream's queue, and some pods end on other nodes
#: or with another last message. 40 and 46 differed in 12 of 12 upstream runs; 68 in 12 of 12
#: once and agreed on a later run, so upstream's timing plays a part. Not yet understood; each
#: is an xfail (not strict: an upstream run now and then agrees).
KNOWN_DIVERGENT = {
    40: "kaudit retries preemptors in another order than upstream (nodes of 4 pods differ)",
    46: "kaudit retries pending pods in another order than upstream (nodes of 4 pods differ)",
    68: "the last failure message of one pod differs (another cluster state at its last try)",
}


def _plan() -> list[Any]:
    cases = [pytest.param(f"sequence-{seed}", seed, id=f"sequence-{seed}")
             for seed in range(1, FIXED + 1)]
    cases += [pytest.param(f"sequence-{seed}", seed, id=f"sequence-{seed}",
                           marks=pytest.mark.xfail(strict=False, reason=reason))
              for seed, reason in KNOWN_DIVERGENT.items()]
    cases += [pytest.param(f"fresh-sequence-{seed}", seed, id=f"fresh-sequence-{seed}")
              for seed in fresh_seeds(FRESH)]
    return cases[-1:] if SEED_ENV in os.environ else cases


CASES = _plan()


@cache
def scenario(seed: int) -> dict[str, Any]:
    return sequence_scenario(random.Random(seed))


def probe_scenario() -> dict[str, Any]:
    whole = scenario(PROBE_SEED)
    return {**whole, "pending": whole["pending"][:PROBE_PENDING]}


@cache
def kaudit_runs(seed: int) -> tuple[SequenceRun, SequenceRun]:
    """kaudit's replay of a case: (asynchronous preemption, synchronous preemption)."""
    scen = scenario(seed)
    return replay_sequence(scen), replay_sequence(scen, sync_preemption=True)


@pytest.fixture(scope="module")
def answers(oracle: dict[str, Path]) -> dict[tuple[int, str], dict[str, Any]]:
    """Upstream's answers for every case and mode, the runs in parallel."""
    jobs: list[tuple[int, str, dict[str, Any]]] = []
    for case in CASES:
        _case_id, seed = case.values
        plain, synchronous = kaudit_runs(seed)
        scen = scenario(seed)
        jobs += [(seed, "plain", sequence_request(scen)),
                 (seed, "prefer", sequence_request(scen, prefer=plain.prefer())),
                 (seed, "prefer-sync", sequence_request(scen, prefer=synchronous.prefer(),
                                                        sync_preemption=True))]
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda job: run_sequence(oracle["sequence"], job[2]), jobs))
    return {(seed, mode): result for (seed, mode, _), result in zip(jobs, results, strict=True)}


@pytest.fixture(scope="module")
def harness_drops_updates(oracle: dict[str, Path]) -> bool:
    probe = probe_scenario()
    run = replay_sequence(probe, sync_preemption=True)
    answer = run_sequence(oracle["sequence"], sequence_request(
        probe, prefer=run.prefer(), sync_preemption=True))
    assert "error" not in answer, answer["error"]
    want = answer["pods"][PROBE_POD]
    return harness_excuse("nominated", want, run.pods[PROBE_POD]) is not None


def test_probe_scenario_clears_a_lower_priority_nomination() -> None:
    """The harness probe stays meaningful: kaudit clears the probe pod's nomination when a
    higher-priority preemptor takes its node (regenerate the probe if the generators
    change)."""
    run = replay_sequence(probe_scenario(), sync_preemption=True)
    fate = run.pods[PROBE_POD]
    assert fate.cleared and fate.nominated is None, fate


def test_harness_delivers_pending_pod_updates(harness_drops_updates: bool) -> None:
    if harness_drops_updates:
        pytest.skip(f"oracle harness problem: {FAKE_CLIENTSET}")


@pytest.mark.parametrize(("case_id", "seed"), CASES)
def test_sequence_agrees_with_upstream(case_id: str, seed: int, oracle: dict[str, Path],
                                       answers: dict[tuple[int, str], dict[str, Any]],
                                       harness_drops_updates: bool, summary: Summary) -> None:
    plain, synchronous = kaudit_runs(seed)
    for mode in ("plain", "prefer", "prefer-sync"):
        answer = answers[(seed, mode)]
        assert "error" not in answer, (f"{case_id} ({mode}): the oracle failed: "
                                       f"{answer['error']}\nreproduce: {SEED_ENV}={seed}")
    summary.record("sequence/exact", compare_sequence(answers[(seed, "plain")]["pods"], plain))
    summary.record("sequence/modulo-ties", compare_sequence(
        answers[(seed, "plain")]["pods"], plain, modulo_ties=True))
    summary.record("sequence/prefer", compare_sequence(answers[(seed, "prefer")]["pods"], plain))
    excused: list[str] = []
    diff = compare_sequence(answers[(seed, "prefer-sync")]["pods"], synchronous,
                            excused=excused)
    summary.record("sequence/prefer-sync", diff)
    if not any(diff.values()):
        return
    message = (f"{case_id}: with prefer and synchronous preemption kaudit differs from "
               f"upstream in {', '.join(f for f in SEQUENCE_FIELDS if diff[f])}\n"
               f"{differences(diff)}\nreproduce: {SEED_ENV}={seed}")
    if harness_drops_updates or excused:
        pytest.skip(f"oracle harness problem ({FAKE_CLIENTSET}); meanwhile: {message}")
    # Upstream's backoff expirations are aligned to wall-clock seconds: now and then a run
    # orders two retries the other way. Ask again before calling it a difference.
    request = sequence_request(scenario(seed), prefer=synchronous.prefer(), sync_preemption=True)
    for _ in range(RETRIES):
        again = run_sequence(oracle["sequence"], request)
        if "error" not in again and not any(compare_sequence(again["pods"], synchronous).values()):
            summary.record("sequence/prefer-sync, asked again", {"agreed": []})
            return
    if case_id.startswith("fresh-"):
        # A fresh seed explores: a disagreement it finds is reported (xfailed, with the seed
        # to reproduce it and pin it among the fixed or known cases), not a failure of the
        # build; the fixed seeds are the gate.
        summary.record("sequence/prefer-sync, fresh seed found", {"differs": [case_id]})
        pytest.xfail(f"fresh seed found a disagreement: {message}")
    pytest.fail(message, pytrace=False)


def test_replay_is_deterministic() -> None:
    """The same scenario replays to the same fates (the comparison is with one replay)."""
    for seed in (1, 2):
        first = replay_sequence(scenario(seed), sync_preemption=True)
        second = replay_sequence(scenario(seed), sync_preemption=True)
        assert {k: f.as_oracle() for k, f in first.pods.items()} == \
            {k: f.as_oracle() for k, f in second.pods.items()}
        assert any(f.deleted for f in first.pods.values()) or seed != 1
