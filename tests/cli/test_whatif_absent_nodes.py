"""``kaudit whatif`` for a pod whose PreFilterResult names only nodes that do not exist (a
DaemonSet pod whose node left): upstream's FitError, no node filtered, no preemption."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from kaudit.cli import cli
from kaudit.tracegen.builders import make_node, make_pod
from tests.framework.fakes import daemonset_pod


@pytest.mark.parametrize(("release", "dra_says"), [
    ("v1.34.2", "no new claims to deallocate, "),
    ("v1.37.2", ""),  # DynamicResources' PostFilter is quiet without claims (v1.37)
])
def test_whatif_for_a_pod_whose_node_left(tmp_path: Path, release: str, dra_says: str) -> None:
    low = make_pod("low").req(cpu="4").node("node-a").obj()
    nodes = [make_node(name).capacity(cpu="4", memory="8Gi").obj()
             for name in ("node-a", "node-b")]
    state = tmp_path / "state.json"
    state.write_bytes(orjson.dumps({"kind": "List", "items": [*nodes, low]}))
    pod = tmp_path / "pod.json"
    pod.write_bytes(orjson.dumps(daemonset_pod("gone-node", priority=1000)))
    result = CliRunner().invoke(cli, ["whatif", "--cluster", str(state), "--pod", str(pod),
                                      "--json", "--kubernetes-version", release],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["message"] == (
        "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        f"{dra_says}preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
        "scheduling.")
    assert report["nodes"] == {} and report["selectedNode"] is None
    assert report["preFilter"]["NodeAffinity"] == {"code": "Success", "reasons": [],
                                                   "nodeNames": ["gone-node"]}
    assert (report["preemption"]["potentialNodes"], report["preemption"]["candidates"]) == (0, 0)


def test_whatif_text_says_prefilter_narrowed_to_a_missing_node(tmp_path: Path) -> None:
    """PreFilter succeeded (NodeAffinity named gone-node): the text must not say it rejected
    the pod, and says which node the candidates were narrowed to."""
    nodes = [make_node(name).capacity(cpu="4", memory="8Gi").obj()
             for name in ("node-a", "node-b")]
    state = tmp_path / "state.json"
    state.write_bytes(orjson.dumps({"kind": "List", "items": nodes}))
    pod = tmp_path / "pod.json"
    pod.write_bytes(orjson.dumps(daemonset_pod("gone-node", priority=1000)))
    args = ["whatif", "--cluster", str(state), "--pod", str(pod)]
    text = CliRunner().invoke(cli, args, catch_exceptions=False).output
    report = json.loads(CliRunner().invoke(cli, [*args, "--json"],
                                           catch_exceptions=False).output)
    counts = report["sentences"]["nodeCounts"]
    assert counts == ("0 of 2 nodes evaluated, 0 feasible, 0 rejected (PreFilter narrowed the "
                      "candidates to gone-node, not a node of the cluster)")
    assert counts in text
    assert "PreFilter rejected" not in text and "refused" not in text
