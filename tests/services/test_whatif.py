"""The what-if use case: one manifest parser and one evaluation for ``kaudit whatif`` and the
history page's what-if."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from kaudit.errors import InputError
from kaudit.eventlog.codec import rejects
from kaudit.queries import units
from kaudit.queries.decision_inputs import free_capacity, pod_object_at, trace_id_of
from kaudit.queries.explain import explain_pod
from kaudit.queries.runs import get_run
from kaudit.queries.timeline import run_span
from kaudit.queries.whatif import run_moment
from kaudit.scheduler.build import load_object_config
from kaudit.services.whatif import (
    MAX_MANIFEST,
    evaluate_pod,
    evaluate_pod_at,
    parse_pod_manifest,
    read_pod_manifest,
)
from kaudit.tracegen.builders import make_pod
from tests.conftest import V1_34, gates_at

QUERIES = Path(__file__).resolve().parents[2] / "kaudit" / "queries"

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: web}
spec:
  nodeName: node-a1
  containers:
  - name: app
    resources: {requests: {cpu: "2", memory: 4Gi}}
"""


@pytest.mark.parametrize(("text", "reason"), [
    (POD.replace('cpu: "2"', "cpu: lots"),
     "document.spec.containers[0].resources.requests.cpu: invalid quantity 'lots'"),
    (POD.replace("memory: 4Gi", "memory: 4GB/s"),
     "document.spec.containers[0].resources.requests.memory: invalid quantity '4GB/s'"),
    (POD.replace('cpu: "2"', 'cpu: "-2"'),
     "document.spec.containers[0].resources.requests.cpu: quantity '-2' must not be negative"),
    (POD.replace("  containers:", "  tolerations: all\n  containers:"),
     "document.spec.tolerations: must be a list, not a string"),
    (POD.replace("  containers:", "  affinity: [zone-a]\n  containers:"),
     "document.spec.affinity: must be an object, not a list"),
    (POD.replace("{cpu: \"2\", memory: 4Gi}", "{1: 2}"),
     "document.spec.containers[0].resources.requests: key 1 must be a string, not a number"),
    ("kind: Deployment\nmetadata: {name: web}\n", "document.kind: 'Deployment', expected 'Pod'"),
    ("kind: List\nitems: [{kind: Deployment, metadata: {name: web}}]\n",
     "items[0].kind: 'Deployment', expected 'Pod'"),
    ("kind: List\nitems: []\n", "expected one Pod, found 0 objects"),
    ("a: &a [x, x]\nb: &b [*a, *a]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 40)}]\n"
        for p, c in zip("bcdefg", "cdefgh", strict=True)),
     "expands to more than 2,000,000 nodes"),
    ("", "empty; expected one Pod as JSON or YAML"),
    ("x" * (MAX_MANIFEST + 1), "larger than 256 KiB"),
])
def test_the_parser_refuses_what_ingest_refuses_naming_the_field(text: str, reason: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_pod_manifest(text, "pod.yaml")
    assert str(refused.value).startswith("pod.yaml: ")
    assert reason in str(refused.value)


def test_a_pod_or_a_list_of_it_becomes_a_newcomer(tmp_path: Path) -> None:
    pod = parse_pod_manifest(POD, "pod.yaml")
    assert pod["metadata"]["uid"] and "nodeName" not in pod["spec"]  # not already bound
    listed = tmp_path / "pod.json"
    listed.write_text(json.dumps({"kind": "List", "items": [make_pod("p").node("n1").obj()]}))
    assert "nodeName" not in read_pod_manifest(listed)["spec"]
    big = tmp_path / "big.yaml"
    big.write_text(POD + "#" * MAX_MANIFEST)
    with pytest.raises(InputError, match=f"^{big}: larger than 256 KiB"):
        read_pod_manifest(big)


def test_a_run_at_t_is_evaluated_as_its_objects_with_its_configuration(
        sample_runs: Engine) -> None:
    pod = parse_pod_manifest(POD, "pod manifest")
    answer = evaluate_pod_at(sample_runs, "default", "240", pod)
    moment = run_moment(sample_runs, "default", "240")
    assert moment.kubernetes_version == V1_34  # the sample's header names it
    config, registry = load_object_config(moment.config, "stored",
                                          gates_at(V1_34, moment.feature_gates))
    direct = evaluate_pod(moment.objects, pod, config, registry, pod_source="pod manifest")
    assert answer == {"run": "default", "t": 240.0, "time": moment.time, **direct.as_json(),
                      "notices": []}
    assert answer["kubernetesVersion"] == V1_34
    assert answer["pod"] == "web/probe" and answer["nodes"] == 11
    assert answer["evaluation"]["message"].startswith("0/11 nodes are available:")
    assert answer["preemption"]["victims"]


def test_a_what_if_words_its_causes_as_explain_words_the_replayed_attempt(
        sample_runs: Engine) -> None:
    """The same pod at the same moment: the what-if's cause groups and node counts are the
    replayed decisive attempt's, word for word (one renderer, one grouping by concrete
    cause: the unmatched selector, the cordon, the untolerated taint)."""
    story = explain_pod(sample_runs, "default", "web/ssd-cache")
    verdict = story["verdict"]
    decisive = story["attempts"][verdict["decisiveAttempt"] - 1]
    assert verdict["causes"], "the sample's ssd-cache pod fits nowhere"
    run = get_run(sample_runs, "default")
    obj = pod_object_at(sample_runs, trace_id_of(sample_runs, run.id), "web/ssd-cache",
                        run_span(sample_runs, run.id).at(decisive["t"]))
    assert obj is not None
    answer = evaluate_pod_at(sample_runs, "default", str(decisive["t"]), obj)
    assert [c["text"] for c in answer["causes"]] == [c["text"] for c in verdict["causes"]]
    assert [c["detail"] for c in answer["causes"]] == [c["detail"] for c in verdict["causes"]]
    assert answer["sentences"]["nodeCounts"] == decisive["countsText"]
    assert answer["sentences"]["headline"] == (
        f"web/ssd-cache would not fit: {answer['evaluation']['message']}")


def test_a_what_if_states_exact_free_amounts_as_the_run_accounted_them(
        sample_runs: Engine) -> None:
    """A pod too big for every node: the what-if names the exact request and the largest
    free amount, and that amount is what the run's own accounting has free at that moment."""
    pod = parse_pod_manifest(POD.replace('cpu: "2"', "cpu: 63500m"), "pod manifest")
    answer = evaluate_pod_at(sample_runs, "default", "240", pod)
    run = get_run(sample_runs, "default")
    free = free_capacity(sample_runs, run.id, run_span(sample_runs, run.id).at(240.0))
    fit_first = [name for name, node in answer["evaluation"]["nodes"].items()
                 if [p for p, v in node["filter"].items() if rejects(v)][:1]
                 == ["NodeResourcesFit"]]
    largest = max(free[name]["cpu"] for name in fit_first)
    (lacking,) = [c for c in answer["causes"] if c["cause"] == "lack cpu"]
    assert lacking["text"] == (f"{len(fit_first)} lack cpu (needs 63500m, the largest free "
                               f"is {units.quantity('cpu', largest)})")


def test_a_manifest_meets_the_limits_every_input_meets() -> None:
    """JSON nested past the limit, integers beyond int64 and non-JSON YAML tags are refused
    naming the field, as ingest refuses them."""
    deep = '{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]' \
        ', "x": ' + "[" * 300 + "]" * 300 + "}}"
    with pytest.raises(InputError, match=r"^pod: spec\.x\[0\].*: nested more than 200"):
        parse_pod_manifest(deep, "pod")
    big = "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  x: " + "9" * 25
    with pytest.raises(InputError, match=r"^pod: spec\.x: integer 9999999999…\(25 digits\) is "
                                         "beyond the 64-bit range$"):
        parse_pod_manifest(big, "pod")
    tagged = "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  x: !!set {}"
    with pytest.raises(InputError, match="tag !!set is not allowed"):
        parse_pod_manifest(tagged, "pod")


@pytest.mark.parametrize(("cpu", "reason"), [
    ("1e18", "requests.cpu: quantity '1e18' is too large (beyond int64) once converted to "
             "millicores"),
    ("1Ei", "requests.cpu: quantity '1Ei' is too large (beyond int64) once converted to "
            "millicores"),
    ("1" + "0" * 5000, "requests.cpu: quantity '1000000000000000…' (5001 characters) is too "
                       "large"),
])
def test_a_request_beyond_int64_once_converted_is_refused(cpu: str, reason: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_pod_manifest(POD.replace('cpu: "2"', f'cpu: "{cpu}"'), "pod.yaml")
    assert reason in str(refused.value)
