"""``kaudit whatif`` for a pod whose PreFilterResult names only nodes that do not exist (a
DaemonSet pod whose node left): upstream's FitError, no node filtered, no preemption."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from click.testing import CliRunner

from kaudit.cli import cli
from kaudit.tracegen.builders import make_node, make_pod
from tests.framework.fakes import daemonset_pod


def test_whatif_for_a_pod_whose_node_left(tmp_path: Path) -> None:
    low = make_pod("low").req(cpu="4").node("node-a").obj()
    nodes = [make_node(name).capacity(cpu="4", memory="8Gi").obj()
             for name in ("node-a", "node-b")]
    state = tmp_path / "state.json"
    state.write_bytes(orjson.dumps({"kind": "List", "items": [*nodes, low]}))
    pod = tmp_path / "pod.json"
    pod.write_bytes(orjson.dumps(daemonset_pod("gone-node", priority=1000)))
    result = CliRunner().invoke(cli, ["whatif", "--cluster", str(state), "--pod", str(pod),
                                      "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["message"] == (
        "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new "
        "claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not "
        "helpful for scheduling.")
    assert report["nodes"] == {} and report["selectedNode"] is None
    assert report["preFilter"]["NodeAffinity"] == {"code": "Success", "reasons": [],
                                                   "nodeNames": ["gone-node"]}
    assert (report["preemption"]["potentialNodes"], report["preemption"]["candidates"]) == (0, 0)
