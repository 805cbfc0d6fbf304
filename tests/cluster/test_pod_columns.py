"""Selectors over the pod rows at once (``kaudit.cluster.pod_columns``) answer what
``Requirement.matches`` answers pod by pod, and the rows InterPodAffinity reads include
terminating pods but not pods of removed nodes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kaudit.cluster.objects import apply_object
from kaudit.cluster.pod_columns import pods_in_namespaces, pods_matching
from kaudit.cluster.state import ClusterState
from kaudit.model.selectors import LabelSelector, Requirement
from kaudit.tracegen.builders import make_node, make_pod

KEYS = ("app", "tier", "rank")
VALUES = ("a", "b", "1", "7", "-3", "x1")


def _cluster(seed: int) -> ClusterState:
    rng = random.Random(seed)
    cluster = ClusterState()
    for i in range(4):
        apply_object(cluster, make_node(f"n{i}").capacity(cpu="64", memory="64Gi").obj())
    for i in range(60):
        labels = {key: rng.choice(VALUES) for key in KEYS if rng.random() < 0.6}
        pod = make_pod(f"p{i}", rng.choice(("default", "other"))).labels(**labels) \
            .req(cpu="10m").node(f"n{i % 4}")
        apply_object(cluster, pod.obj())
    return cluster


def _requirement(rng: random.Random) -> Requirement:
    operator = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if operator in ("Exists", "DoesNotExist"):
        values: frozenset[str] = frozenset()
    elif operator in ("Gt", "Lt"):
        values = frozenset([rng.choice(("0", "2", "-5"))])
    else:
        values = frozenset(rng.sample(VALUES, rng.randint(1, 3)))
    return Requirement(rng.choice(KEYS), operator, values)


@pytest.mark.parametrize("seed", range(8))
def test_a_selector_over_the_rows_matches_the_pods_matches_does(seed: int) -> None:
    rng = random.Random(seed)
    cluster = _cluster(seed)
    # Rows of removed pods stay behind: a pod that leaves must not be found.
    for pod in list(cluster.pods.values())[:5]:
        cluster.remove_pod(pod.uid)
    rows = pods_in_namespaces(cluster, None)
    for _ in range(30):
        selectors = [LabelSelector(tuple(_requirement(rng) for _ in range(rng.randint(0, 2))))
                     for _ in range(rng.randint(1, 2))]
        found = pods_matching(cluster, selectors, rows)
        expected = [row for row in rows.tolist()
                    if all(s.matches(cluster.pod_row_labels[row]) for s in selectors)]
        assert found.tolist() == expected


def test_a_missing_selector_matches_nothing_and_an_empty_one_everything() -> None:
    cluster = _cluster(1)
    rows = pods_in_namespaces(cluster, None)

    assert len(pods_matching(cluster, [LabelSelector(nothing=True)], rows)) == 0
    assert pods_matching(cluster, [LabelSelector()], rows).tolist() == rows.tolist()


def test_the_rows_hold_terminating_pods_and_leave_out_removed_nodes() -> None:
    cluster = ClusterState()
    for name in ("n1", "n2"):
        apply_object(cluster, make_node(name).capacity(cpu="4", memory="8Gi").obj())
    apply_object(cluster, make_pod("live").node("n1").obj())
    leaving = make_pod("leaving", "other").node("n1").obj()
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    apply_object(cluster, leaving)
    apply_object(cluster, make_pod("gone-node").node("n2").obj())
    cluster.remove_node("n2")

    def names(rows: np.ndarray) -> list[str]:
        return sorted(cluster.pods[uid].name for uid, row in cluster.pod_row.items()
                      if row in set(rows.tolist()))

    assert names(pods_in_namespaces(cluster, None)) == ["leaving", "live"]
    assert names(pods_in_namespaces(cluster, ["other"])) == ["leaving"]
    assert names(pods_in_namespaces(cluster, ["nowhere"])) == []
    # PodTopologySpread's column leaves terminating pods out.
    count = cluster.pod_rows
    assert (cluster.pod_row_namespace[:count] >= 0).sum() == 2  # live, and gone-node's row
