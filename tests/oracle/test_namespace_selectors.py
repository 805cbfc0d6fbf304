"""Incoming pod (anti-)affinity terms with a ``namespaceSelector``, decided by upstream's own
cycle at the oracle's release and by kaudit as that release.

Up to v1.36 upstream's ``mergeAffinityTermNamespacesIfNotEmpty`` keeps the selector it means to
replace (a value receiver), and ``Matches`` tries it on an empty label set: a selector of only
``NotIn`` / ``DoesNotExist`` requirements then matches pods in every namespace. v1.37 fixed it.
The random cycle scenarios do not build such selectors; these do, one per operator mix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaudit.tracegen.builders import make_node, make_pod
from tests.oracle.compare import compare_cycle, differences, whatif_report
from tests.oracle.conftest import run_cycles
from tests.oracle.generators import cycle_request

SELECTORS = {
    "not-in": [{"key": "env", "operator": "NotIn", "values": ["prod"]}],
    "does-not-exist": [{"key": "team", "operator": "DoesNotExist"}],
    "in": [{"key": "env", "operator": "In", "values": ["dev"]}],
    "not-in-and-exists": [{"key": "env", "operator": "NotIn", "values": ["prod"]},
                          {"key": "env", "operator": "Exists"}],
}


def scenario(selector: list[dict[str, Any]], anti: bool) -> dict[str, Any]:
    def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "uid": f"ns-{name}", "labels": labels}}

    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj() for i in (1, 2)]
    existing = make_pod("db", "prod").node("n1").label("app", "db").obj()
    pod = make_pod("web", "dev").obj()
    term = {"labelSelector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchExpressions": selector},
            "topologyKey": "kubernetes.io/hostname"}
    kind = "podAntiAffinity" if anti else "podAffinity"
    pod["spec"]["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {"objects": [namespace("prod", {"env": "prod"}), namespace("dev", {"env": "dev"}),
                        *nodes, existing], "pod": pod, "config": None}


CASES = [(name, anti) for name in SELECTORS for anti in (False, True)]
IDS = [f"{name}-{'anti' if anti else 'affinity'}" for name, anti in CASES]


@pytest.fixture(scope="module")
def answers(oracle: dict[str, Path]) -> dict[str, dict[str, Any]]:
    return run_cycles(oracle["cycle"], [cycle_request(case_id, scenario(SELECTORS[name], anti))
                                        for case_id, (name, anti) in zip(IDS, CASES,
                                                                         strict=True)])


@pytest.mark.parametrize(("case_id", "name", "anti"),
                         [(i, n, a) for i, (n, a) in zip(IDS, CASES, strict=True)])
def test_namespace_selector_terms_agree_with_upstream(case_id: str, name: str, anti: bool,
                                                      answers: dict[str, dict[str, Any]]
                                                      ) -> None:
    answer = answers[case_id]
    assert "error" not in answer, answer["error"]
    diff = compare_cycle(answer["expect"], whatif_report(scenario(SELECTORS[name], anti)))
    assert not any(diff.values()), f"{case_id}: {differences(diff)}"
