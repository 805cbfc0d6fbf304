"""What-if in the dashboard: a pasted manifest evaluated against the run's cluster at time t,
with the same evidence as ``kaudit whatif``, and nothing stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner, Result
from flask.testing import FlaskClient
from sqlalchemy import Engine

from kaudit.cli import cli as main_cli
from tests.conftest import database_contents

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: web}
spec:
  containers:
  - name: app
    resources: {requests: {cpu: "2", memory: 4Gi}}
"""


def test_the_answer_is_kaudit_whatifs_on_the_cluster_at_t(
        client: FlaskClient, sample_runs: Engine, run_kaudit: Callable[..., Result],
        tmp_path: Path) -> None:
    before = database_contents(sample_runs)
    answer = client.post("/api/v1/runs/default/whatif?t=240", data=MANIFEST)
    assert answer.status_code == 200, answer.get_json()
    body = answer.get_json()
    assert body["t"] == 240.0 and body["pod"] == "web/probe"
    evaluation = body["evaluation"]
    assert evaluation["selectedNode"] is None
    assert evaluation["message"].startswith("0/11 nodes are available:")
    assert body["preemption"]["victims"]
    assert database_contents(sample_runs) == before  # read-only

    # the same cluster exported at 240 s and evaluated by the CLI gives the same answer
    snapshot = tmp_path / "at-240.json"
    assert run_kaudit("export", "default", "--format", "simulator-snapshot", "--at", "240",
                      "-o", str(snapshot)).exit_code == 0
    exported = json.loads(snapshot.read_text())
    objects = [{"kind": kind, "apiVersion": "v1", **obj}
               for key, kind in (("nodes", "Node"), ("pods", "Pod"),
                                 ("priorityClasses", "PriorityClass"),
                                 ("namespaces", "Namespace"))
               for obj in exported[key]]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    pod = tmp_path / "pod.yaml"
    pod.write_text(MANIFEST)
    cli = CliRunner().invoke(main_cli, ["whatif", "--cluster", str(cluster), "--pod", str(pod),
                                        "--json", "--kubernetes-version",
                                        body["kubernetesVersion"]])
    assert cli.exit_code == 0, cli.output
    from_cli = json.loads(cli.output)
    assert from_cli["message"] == evaluation["message"]
    assert {n: v["filter"] for n, v in from_cli["nodes"].items()} == \
        {n: v["filter"] for n, v in evaluation["nodes"].items()}

    early = client.post("/api/v1/runs/default/whatif?t=30", data=MANIFEST).get_json()
    assert early["evaluation"]["selectedNode"]  # the cluster had room then


def test_bad_manifests_and_times_are_refused_clearly(client: FlaskClient) -> None:
    cases = [
        ("", "pod manifest: empty; expected one Pod"),
        ("kind: Service\nmetadata: {name: x}\n", "document.kind: 'Service', expected 'Pod'"),
        ("kind: Pod\nmetadata: {name: [\n", "not valid YAML or JSON at line"),
        ("kind: Pod\nmetadata: {name: p}\nspec: {}\n",
         "document.spec.containers: a Pod needs at least one container"),
        ("kind: Pod\nspec: {containers: [{name: c}]}\n", "document.metadata: missing"),
        ("---\nkind: Pod\n---\nkind: Pod\n", "expected one Pod, found 2 objects"),
        ("x" * 300_000, "larger than 256 KiB"),
    ]
    for body, words in cases:
        answer = client.post("/api/v1/runs/default/whatif?t=10", data=body)
        assert answer.status_code == 400, (body[:40], answer.get_json())
        assert words in answer.get_json()["error"], (words, answer.get_json())
    outside = client.post("/api/v1/runs/default/whatif?t=100000", data=MANIFEST)
    assert outside.status_code == 400 and "outside the run" in outside.get_json()["error"]
    other = MANIFEST.replace("containers:", "schedulerName: nobody\n  containers:")
    answer = client.post("/api/v1/runs/default/whatif", data=other)
    assert answer.status_code == 400 and "'nobody' has no profile" in answer.get_json()["error"]
    assert client.get("/api/v1/runs/default/whatif").status_code == 405


MALFORMED = {
    "cpu-lots": MANIFEST.replace('cpu: "2"', "cpu: lots"),
    "memory-bad": MANIFEST.replace("memory: 4Gi", "memory: 4 gigs"),
    "cpu-negative": MANIFEST.replace('cpu: "2"', 'cpu: "-1"'),
    "tolerations-a-map": MANIFEST.replace("  containers:", "  tolerations: {key: a}\n"
                                          "  containers:"),
    "toleration-seconds-a-string": MANIFEST.replace(
        "  containers:", "  tolerations: [{key: a, tolerationSeconds: soon}]\n  containers:"),
    "affinity-a-string": MANIFEST.replace("  containers:", "  affinity: zone-a\n  containers:"),
    "requests-key-a-number": MANIFEST.replace('{cpu: "2", memory: 4Gi}', "{1: 2}"),
    "a-deployment": "kind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2}\n",
    "a-list-of-two": json.dumps({"kind": "List", "items": [{"kind": "Pod"}, {"kind": "Pod"}]}),
    "yaml-bomb": "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
        for p, c in zip("abcdefghi", "bcdefghij", strict=True)),
    "300-kb": MANIFEST + "#" * 300_000,
    "bad-json": '{"kind": "Pod", "metadata": {"name": "p"},}',
}


def test_malformed_manifests_get_the_clis_message_and_a_4xx(
        client: FlaskClient, tmp_path: Path) -> None:
    """Both doors read a manifest with one parser: the API answers 400 with the message the
    CLI prints for the same file (each naming its input), never a 500."""
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"kind": "List", "items": []}))
    for case, text in MALFORMED.items():
        answer = client.post("/api/v1/runs/default/whatif?t=10", data=text)
        assert answer.status_code == 400, (case, answer.get_json())
        api_reason = answer.get_json()["error"].removeprefix("pod manifest: ")
        pod = tmp_path / f"{case}.yaml"
        pod.write_text(text)
        cli = CliRunner().invoke(main_cli, ["whatif", "--cluster", str(cluster), "--pod",
                                            str(pod)])
        assert cli.exit_code == 2, (case, cli.output)
        assert cli.output.strip().splitlines()[-1] == f"kaudit: error: {pod}: {api_reason}", \
            case


def _deep_field(levels: int) -> str:
    pod = {"kind": "Pod", "metadata": {"name": "probe"},
           "spec": {"containers": [{"name": "app"}], "deep": 0}}
    text = json.dumps(pod)
    return text.replace('"deep": 0', '"deep": ' + "[" * levels + "]" * levels)


HOSTILE = {
    "json-3000-deep": '{"kind":"Pod","spec":' + "[" * 3000 + "]" * 3000 + "}",
    "json-300-deep-field": _deep_field(300),
    "yaml-300-deep-field": MANIFEST + "  deep: " + "[" * 300 + "]" * 300 + "\n",
    "5000-digit-priority": MANIFEST + "  priority: " + "9" * 5000 + "\n",
    "25-digit-number": MANIFEST + "  deep: " + "9" * 25 + "\n",
    "binary-tag": MANIFEST + "  deep: !!binary aGVsbG8=\n",
}


def test_hostile_manifests_are_refused_with_a_400_naming_the_limit(
        client: FlaskClient) -> None:
    """Nesting, tags, huge numbers and quantities meet the limits every other input meets:
    a 400 with the reason, never a 500."""
    for case, text in HOSTILE.items():
        answer = client.post("/api/v1/runs/default/whatif?t=10", data=text)
        assert answer.status_code == 400, (case, answer.status_code)
        assert answer.get_json()["error"].startswith("pod manifest: "), case


def test_a_request_beyond_int64_once_converted_is_a_400_naming_the_field(
        client: FlaskClient, tmp_path: Path) -> None:
    """1e18 cores are 10**21 millicores: refused at both doors (it used to reach the JSON
    encoder and answer 500); so is a 5,001-digit quantity (it used to reach int())."""
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"kind": "List", "items": []}))
    for cpu in ("1e18", "1Ei", "1" + "0" * 5000):
        text = MANIFEST.replace('cpu: "2"', f'cpu: "{cpu}"')
        answer = client.post("/api/v1/runs/default/whatif?t=10", data=text)
        assert answer.status_code == 400, (cpu[:8], answer.status_code)
        error = answer.get_json()["error"]
        assert "spec.containers[0].resources.requests.cpu: quantity '" in error
        assert "is too large" in error
        pod = tmp_path / "pod.yaml"
        pod.write_text(text)
        cli = CliRunner().invoke(main_cli, ["whatif", "--cluster", str(cluster), "--pod",
                                            str(pod), "--json"])
        assert cli.exit_code == 2, (cpu[:8], cli.output[-300:])
        assert "is too large" in cli.output
