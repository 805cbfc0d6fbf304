"""PodDisruptionBudget violations in preemption's column path (``pdb_violators``): the
budget index must find exactly what matching every pod against every budget finds."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kaudit.model.pod import PodInfo, parse_pod
from kaudit.plugins.preemption_columns import Budget, parse_budgets, pdb_violators

APPS = ["web", "db", "cache", "queue"]
TIERS = ["front", "back"]


def brute_force(ranked: list[PodInfo], node: np.ndarray, firsts: np.ndarray,
                where: np.ndarray, budgets: list[Budget]) -> np.ndarray:
    violating = np.zeros(len(ranked), dtype=bool)
    for budget in budgets:
        counts = np.array([bool(where[i]) and budget.counts(pod)
                           for i, pod in enumerate(ranked)], dtype=bool)
        running = np.cumsum(counts)
        before = np.concatenate(([0], running))[firsts[node]]
        violating |= counts & (running - before > budget.allowed)
    return violating


def random_budget(rng: random.Random, index: int) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    shape = rng.randrange(5)
    if shape == 0:
        selector["matchLabels"] = {"app": rng.choice(APPS)}
    elif shape == 1:
        selector["matchLabels"] = {"app": rng.choice(APPS), "tier": rng.choice(TIERS)}
    elif shape == 2:
        selector["matchExpressions"] = [{"key": "app", "operator": "In",
                                         "values": rng.sample(APPS, 2)}]
    elif shape == 3:
        selector["matchExpressions"] = [{"key": "tier", "operator": "NotIn",
                                         "values": [rng.choice(TIERS)]}]
    else:
        selector["matchExpressions"] = [{"key": "app", "operator": "Exists"}]
    return {"metadata": {"name": f"pdb-{index}", "namespace": rng.choice(["a", "b"])},
            "spec": {"selector": selector},
            "status": {"disruptionsAllowed": rng.randrange(3)}}


def random_pod(rng: random.Random, index: int) -> PodInfo:
    labels = {key: rng.choice(values) for key, values in (("app", APPS), ("tier", TIERS))
              if rng.random() < 0.8}
    return parse_pod({"metadata": {"name": f"p{index}", "namespace": rng.choice(["a", "b"]),
                                   "uid": f"u{index}", "labels": labels},
                      "spec": {"containers": [{"name": "c"}]}})


def test_the_budget_index_finds_what_matching_everything_finds() -> None:
    for seed in range(40):
        rng = random.Random(seed)
        budgets = parse_budgets([random_budget(rng, i) for i in range(rng.randrange(1, 12))])
        sizes = [rng.randrange(1, 6) for _ in range(rng.randrange(1, 6))]
        ranked = [random_pod(rng, i) for i in range(sum(sizes))]
        node = np.repeat(np.arange(len(sizes)), sizes)
        firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        where = np.array([rng.random() < 0.8 for _ in ranked], dtype=bool)
        expected = brute_force(ranked, node, firsts, where, budgets)
        assert pdb_violators(ranked, node, firsts, where, budgets).tolist() == \
            expected.tolist(), seed


def test_budgets_are_parsed_again_only_when_a_pdb_object_is_replaced() -> None:
    rng = random.Random(5)
    pdbs = [random_budget(rng, i) for i in range(3)]
    first = parse_budgets(pdbs)

    assert parse_budgets(list(pdbs)) is first  # the same objects: one preemption's nodes
    replaced = [*pdbs[:2], {**pdbs[2], "status": {"disruptionsAllowed": 7}}]
    again = parse_budgets(replaced)
    assert again is not first and again[2].allowed == 7 and again[:2] == first[:2]
    assert parse_budgets(pdbs[:2]) == first[:2]
