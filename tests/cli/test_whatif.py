"""``kaudit whatif`` on the sample trace's cluster, and ``kaudit config show``; ``whatif`` as
v1.34.2, whose messages and plugins the cases spell out."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from kaudit.cli import cli
from kaudit.datadirs import sample_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import V1_34


def run(*args: str) -> Result:
    pinned = ("--kubernetes-version", V1_34) if args[0] == "whatif" else ()
    return CliRunner().invoke(cli, [*args, *pinned], catch_exceptions=False)


@pytest.fixture(scope="module")
def sample_state(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sample trace's cluster just before the business-critical pod arrives."""
    objects: dict[tuple, dict] = {}
    for line in sample_trace().read_bytes().splitlines():
        event = orjson.loads(line)
        obj = event["object"]
        if event["type"] == "BOOKMARK":
            continue  # the sample's header
        if event["ts"] >= "2026-01-05T09:04:00.050Z":
            break
        key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if event["type"] == "DELETED":
            objects.pop(key, None)
        else:
            objects[key] = obj
    folder = tmp_path_factory.mktemp("state")
    bound = [o for o in objects.values() if o["kind"] != "Pod" or o["spec"].get("nodeName")]
    paths = {"state": folder / "state.json"}
    paths["state"].write_bytes(orjson.dumps({"kind": "List", "items": bound}))
    for key, obj in objects.items():
        if key[0] == "Pod" and key[2] in ("payments-0", "ssd-cache"):
            paths[key[2]] = folder / f"{key[2]}.json"
            paths[key[2]].write_bytes(orjson.dumps(obj))
    small = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "small", "namespace": "web"},
             "spec": {"containers": [{"name": "c", "image": "registry.example.com/web/"
                                      "frontend:1.4.2", "resources": {"requests": {
                                          "cpu": "200m", "memory": "256Mi"}}}]}}
    paths["small"] = folder / "small.yaml"
    paths["small"].write_text(json.dumps(small))
    return paths


def test_unschedulable_pod_gets_upstreams_message(sample_state: dict[str, Path]) -> None:
    result = run("whatif", "--cluster", str(sample_state["state"]), "--pod",
                 str(sample_state["ssd-cache"]), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["selectedNode"] is None
    assert report["message"] == (
        "0/11 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were "
        "unschedulable, 9 node(s) didn't match Pod's node affinity/selector. no new claims to "
        "deallocate, preemption: 0/11 nodes are available: 11 Preemption is not helpful for "
        "scheduling.")
    # Every filter ran on every node, not only up to the first failure.
    cordoned = report["nodes"]["node-b4"]["filter"]
    assert cordoned["NodeUnschedulable"]["code"] == "UnschedulableAndUnresolvable"
    assert cordoned["NodeAffinity"]["code"] == "UnschedulableAndUnresolvable"
    assert "score" not in report["nodes"]["node-b4"]


def test_schedulable_pod_gets_a_per_plugin_breakdown(sample_state: dict[str, Path]) -> None:
    result = run("whatif", "--cluster", str(sample_state["state"]), "--pod",
                 str(sample_state["small"]), "--json", "--seed", "3")
    report = json.loads(result.output)
    assert report["message"] is None and report["selectedNode"] in report["tiedNodes"]
    winner = report["nodes"][report["selectedNode"]]
    assert winner["total"] == sum(s["weighted"] for s in winner["score"].values())
    configured = ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                  "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"]
    scored = list(winner["score"])
    assert scored == [p for p in configured if p in scored]  # configured order, skips left out
    assert "NodeAffinity" not in scored  # its PreScore skipped: no preferred terms
    assert all(n["total"] <= winner["total"] for n in report["nodes"].values() if "total" in n)
    text = run("whatif", "--cluster", str(sample_state["state"]), "--pod",
               str(sample_state["small"]), "--seed", "3")
    # the same sentence as --json carries, with the reason explain gives a placement
    assert report["sentences"]["headline"] in text.output
    assert f"web/small would go to {report['selectedNode']}: " in text.output


def test_candidates_restrict_evaluation(sample_state: dict[str, Path]) -> None:
    result = run("whatif", "--cluster", str(sample_state["state"]), "--pod",
                 str(sample_state["small"]), "--candidates", "node-c3,node-b3", "--json")
    report = json.loads(result.output)
    assert set(report["nodes"]) == {"node-c3", "node-b3"}
    bad = run("whatif", "--cluster", str(sample_state["state"]), "--pod",
              str(sample_state["small"]), "--candidates", "nope")
    assert bad.exit_code == 2 and "no such node(s): nope" in bad.output


def test_preemption_is_reported(sample_state: dict[str, Path]) -> None:
    args = ("whatif", "--cluster", str(sample_state["state"]), "--pod",
            str(sample_state["payments-0"]))
    result = run(*args)
    assert result.exit_code == 0
    assert "0/11 nodes are available:" in result.output
    report = json.loads(run(*args, "--json").output)
    preemption = report["preemption"]
    assert report["postFilter"] == {"code": "Success", "reasons": []}
    assert preemption["eligible"] and preemption["nominatedNode"]
    assert preemption["victims"] and preemption["pdbViolations"] == 1
    assert preemption["candidates"] == len(preemption["candidateNodes"]) >= 1
    chosen = next(c for c in preemption["candidateNodes"]
                  if c["node"] == preemption["nominatedNode"])
    assert chosen["victims"] == preemption["victims"]
    # The text says the same as the JSON.
    sentence = report["sentences"]["preemption"]
    assert sentence in result.output
    assert sentence.startswith(f"Preemption would nominate {preemption['nominatedNode']}, "
                               f"evicting {preemption['victims'][0]}")
    assert sentence.endswith(", violating 1 PodDisruptionBudget.")


def _write(path: Path, *objects: dict) -> Path:
    path.write_bytes(orjson.dumps({"kind": "List", "items": list(objects)}))
    return path


def test_preemption_never_is_reported_as_not_eligible(tmp_path: Path) -> None:
    state = _write(tmp_path / "state.json",
                   make_node("n1").capacity(cpu="2", memory="4Gi").obj(),
                   make_pod("low").node("n1").req(cpu="2").priority(0).obj())
    pod = make_pod("high").req(cpu="2").priority(1000).obj()
    pod["spec"]["preemptionPolicy"] = "Never"
    report = json.loads(run("whatif", "--cluster", str(state), "--pod",
                            str(_write(tmp_path / "pod.json", pod)), "--json").output)
    assert report["message"].endswith(
        "preemption: not eligible due to preemptionPolicy=Never.")
    assert report["preemption"] == {
        "eligible": False, "nominatedNode": None, "victims": [], "pdbViolations": None,
        "candidates": 0, "potentialNodes": 0, "examinedNodes": 0, "tiedNodes": [],
        "victimTies": [], "candidateNodes": []}


def test_a_cluster_with_no_nodes_gets_upstreams_answer(tmp_path: Path) -> None:
    state = _write(tmp_path / "state.json",
                   make_pod("orphan").node("gone").req(cpu="1").obj())
    pod = _write(tmp_path / "pod.json", make_pod("p").req(cpu="1").obj())
    report = json.loads(run("whatif", "--cluster", str(state), "--pod", str(pod),
                            "--json").output)
    assert report["message"] == "no nodes available to schedule pods"
    assert report["nodes"] == {} and report["selectedNode"] is None
    assert "postFilter" not in report  # upstream returns before PostFilter
    text = run("whatif", "--cluster", str(state), "--pod", str(pod))
    assert text.exit_code == 0 and "0 nodes" in text.output
    assert "no nodes available to schedule pods" in text.output


def test_a_pod_bound_without_its_extended_resource_is_counted(tmp_path: Path) -> None:
    """A GPU pod bound to a node that does not advertise GPUs (its device plugin went away):
    upstream counts the request on the node, which is then short of GPUs."""
    state = _write(tmp_path / "state.json",
                   make_node("cpu-only").capacity(cpu="4", memory="8Gi").obj(),
                   make_node("gpu").capacity(cpu="4", memory="8Gi")
                   .extended("nvidia.com/gpu", "1").obj(),
                   make_pod("stale").node("cpu-only").req(cpu="1")
                   .extended("nvidia.com/gpu", "1").obj())
    gpu_pod = _write(tmp_path / "gpu.json",
                     make_pod("g").req(cpu="1").extended("nvidia.com/gpu", "1").obj())
    report = json.loads(run("whatif", "--cluster", str(state), "--pod", str(gpu_pod),
                            "--json").output)
    assert report["selectedNode"] == "gpu"
    assert report["nodes"]["cpu-only"]["filter"]["NodeResourcesFit"] == {
        "code": "UnschedulableAndUnresolvable", "reasons": ["Insufficient nvidia.com/gpu"]}
    cpu_pod = _write(tmp_path / "cpu.json", make_pod("c").req(cpu="3").obj())
    report = json.loads(run("whatif", "--cluster", str(state), "--pod", str(cpu_pod),
                            "--json").output)
    assert report["nodes"]["cpu-only"]["feasible"] and report["nodes"]["gpu"]["feasible"]


def test_bad_inputs_exit_2_naming_the_file(sample_state: dict[str, Path], tmp_path: Path) -> None:
    bad_pod = tmp_path / "pod.json"
    bad_pod.write_text('{"kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": '
                       '[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}')
    result = run("whatif", "--cluster", str(sample_state["state"]), "--pod", str(bad_pod))
    assert result.exit_code == 2
    assert f"{bad_pod}: " in result.output and "requests.cpu: invalid quantity" in result.output
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: "
                      "KubeSchedulerConfiguration\npercentageOfNodesToScore: 120\n")
    result = run("whatif", "--cluster", str(sample_state["state"]), "--pod",
                 str(sample_state["small"]), "--config", str(config))
    assert result.exit_code == 2 and "percentageOfNodesToScore" in result.output
    gates = run("whatif", "--cluster", str(sample_state["state"]), "--pod",
                str(sample_state["small"]), "--feature-gates", "NoSuchGate=true")
    assert gates.exit_code == 2


def test_config_show_prints_the_effective_defaults() -> None:
    result = run("config", "show", "--json")
    assert result.exit_code == 0
    config = json.loads(result.output)
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["profiles"][0]["schedulerName"] == "default-scheduler"
