"""The upstream-oracle suite: ``kaudit whatif --json --kubernetes-version v1.34.2`` against what
kube-scheduler v1.34's own framework code decided on random realistic clusters, field by field.

``../shared/conformance/upstream-oracle/`` holds the scenario generator (``gen.py``, fixed seeds)
and ``expected.jsonl.gz``: for every scenario, upstream's per-node first failing filter (plugin,
code, reasons), weighted scores and totals, the top-scoring node set, the exact ``0/N nodes are
available`` message, the PostFilter code and DefaultPreemption's outcome. The scenarios are
regenerated here (byte-identical for the same seed) and every case is one test; the module skips
when the folder is absent. The comparison follows that folder's README.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kaudit.cli import cli
from tests.conftest import SHARED, V1_34
from tests.oracle.compare import node_verdict

ORACLE = SHARED / "conformance" / "upstream-oracle"
#: The README's sets: name → (generator kind, seed, count).
SETS = {"default": ("default", 11, 200), "most": ("default", 12, 100),
        "rtcr": ("default", 13, 100), "preempt": ("preempt", 14, 150)}


def _cases() -> list[Any]:
    expected = ORACLE / "expected.jsonl.gz"
    if not expected.is_file():
        return [pytest.param(None, id="no-upstream-oracle",
                             marks=pytest.mark.skip(reason=f"{ORACLE} not present"))]
    with gzip.open(expected, "rt") as lines:
        cases = [json.loads(line) for line in lines]
    return [pytest.param(case, id=f"{case['set']}/{case['scenario']}") for case in cases]


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("upstream-oracle")
    for name, (kind, seed, count) in SETS.items():
        subprocess.run([sys.executable, str(ORACLE / "gen.py"), str(root / name),
                        "--seed", str(seed), "--count", str(count), "--kind", kind],
                       check=True, capture_output=True)
    return root


def whatif(scenario: Path, config: str | None) -> dict[str, Any]:
    args = ["whatif", "--cluster", str(scenario / "state.json"),
            "--pod", str(scenario / "pod.json"), "--json", "--kubernetes-version", V1_34]
    if config:
        args += ["--config", str(ORACLE / config)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("case", _cases())
def test_agrees_with_upstream(case: dict[str, Any], scenarios: Path) -> None:
    report = whatif(scenarios / case["set"] / case["scenario"], case["config"])
    expect = case["expect"]

    # 1-2. Every node's verdict; for feasible nodes every weighted score and the total.
    got_nodes = {name: node_verdict(report, name) for name in expect["nodes"]}
    assert got_nodes == expect["nodes"]
    assert set(report["nodes"]) <= set(expect["nodes"])

    # 3. The tie set among top scores, and the chosen node within it.
    assert sorted(report["tiedNodes"]) == sorted(expect["maxNodes"])
    if expect["maxNodes"]:
        assert report["selectedNode"] in expect["maxNodes"]
        selected = report["nodes"][report["selectedNode"]]
        assert selected["total"] == expect["maxScore"]
    else:
        assert report["selectedNode"] is None

    # 4. The FitError message, byte for byte.
    assert report["message"] == expect["message"]

    # 5. PostFilter and DefaultPreemption.
    if "postFilterCode" not in expect:
        assert "postFilter" not in report and "preemption" not in report
        return
    assert report["postFilter"]["code"] == expect["postFilterCode"]
    want = expect["preemption"]
    got = report["preemption"]
    assert got["eligible"] == want["eligible"]
    assert got["nominatedNode"] == want["nominatedNode"] == expect.get("nominatedNode")
    if want["nominatedNode"] is not None:
        assert got["nominatedNode"] in want["tiedNodes"]
    assert sorted(got["tiedNodes"]) == sorted(want["tiedNodes"])
    assert got["victims"] == want["victims"]
    assert got["pdbViolations"] == want["numPDBViolations"]
    assert got["candidates"] == len(want["candidates"])
    assert {c["node"]: {"victims": c["victims"], "numPDBViolations": c["pdbViolations"]}
            for c in got["candidateNodes"]} == want["candidates"]
