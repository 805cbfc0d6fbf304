"""A replayed pod whose PreFilterResult names only nodes that are gone: the shape of a
DaemonSet pod whose node left (``matchFields metadata.name In [gone-node]``). Upstream's
``findNodesThatFitPod`` filters no node, every node gets the absent-nodes status, and the
pod waits in unschedulablePods as rejected by NodeAffinity: only the flush of pods waiting
five minutes, or a node NodeAffinity's queueing hint accepts, brings it back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from kaudit.tracegen.builders import make_node
from tests.conftest import write_trace
from tests.framework.fakes import daemonset_pod

#: At the default release (v1.37), DynamicResources' PostFilter says nothing for a pod without
#: claims (v1.34 said "no new claims to deallocate, ").
NOT_HELPFUL = ("preemption: 0/{n} nodes are available: {n} Preemption is not helpful for "
               "scheduling.")


def test_daemonset_pod_waits_for_its_node(run_kaudit: Callable[..., Result],
                                          tmp_path: Path) -> None:
    def node(name: str) -> dict:
        return make_node(name).capacity(cpu="4", memory="8Gi").obj()

    trace = write_trace(tmp_path / "node-left.jsonl",
                        (0, "ADDED", node("a")), (0, "ADDED", node("b")),
                        (0, "ADDED", node("gone-node")), (1, "DELETED", node("gone-node")),
                        (2, "ADDED", daemonset_pod("gone-node")),
                        (60, "ADDED", node("c")),
                        (400, "ADDED", node("gone-node")))
    assert run_kaudit("ingest", str(trace), "--name", "node-left").exit_code == 0
    replayed = run_kaudit("replay", "node-left", "--json")
    assert replayed.exit_code == 0, replayed.output
    run = json.loads(replayed.output)
    told = run_kaudit("explain", run["name"], "default/ds", "--json")
    assert told.exit_code == 0, told.output
    story = json.loads(told.output)
    failed = [(a["t"], a["message"], a["nodes"]) for a in story["attempts"][:-1]]
    absent = "0/{n} nodes are available: {n} node(s) didn't satisfy plugin(s) [NodeAffinity]. "
    # Node c (60 s) does not match the pod's affinity: NodeAffinity's hint skips it. The
    # flush after five minutes in unschedulablePods (30 s period) retries the pod at 330 s.
    assert failed == [(2.0, (absent + NOT_HELPFUL).format(n=2), {}),
                      (330.0, (absent + NOT_HELPFUL).format(n=3), {})]
    assert (story["boundNode"], story["attempts"][-1]["t"]) == ("gone-node", 400.0)
