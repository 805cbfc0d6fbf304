"""``kaudit record`` on the command line: options, summary, files, errors and signals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from kaudit.cli import KauditGroup, cli
from kaudit.cli.record import record
from kaudit.model.kinds import KINDS
from kaudit.record.client import INSTALL_HINT
from kaudit.tracegen.builders import make_node, make_pod
from tests.record.conftest import FakeCluster, names, read_events, wait_until

ROOT = Path(__file__).resolve().parents[2]
# The command as the CLI group will run it (errors become messages and exit codes).
group = KauditGroup(name="kaudit", commands={"record": record})


def _run(*args: str) -> Result:
    return CliRunner().invoke(group, ["record", *args], catch_exceptions=False)


@pytest.fixture
def populated(cluster: FakeCluster) -> FakeCluster:
    cluster.create("nodes", make_node("n1").capacity(cpu="4", memory="8Gi").obj())
    for i in range(3):
        cluster.create("pods", make_pod(f"p{i}").req(cpu="100m").obj())
    cluster.create("namespaces", {"metadata": {"name": "default"}})
    return cluster


def test_duration_records_a_trace_that_ingests(populated: FakeCluster, kubeconfig: Path,
                                               tmp_path: Path) -> None:
    output = tmp_path / "trace.jsonl"
    result = _run(str(output), "--kubeconfig", str(kubeconfig), "--duration", "0.3", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert set(summary) >= {"output", "seconds", "events", "kinds", "bookmarks", "relists",
                            "warnings"}
    assert summary["output"] == str(output) and summary["events"] == 5
    assert summary["kinds"]["Pod"] == 3 and summary["kinds"]["Node"] == 1
    assert summary["kinds"]["CSINode"] == 0  # recorded, nothing happened
    assert 0.3 <= summary["seconds"] < 2 and summary["warnings"] == []
    assert {r.resource for r in populated.requests} == {spec.resource for spec in KINDS}
    events = read_events(output)
    assert names(events)[0] == ("ADDED", "Namespace", "default")  # table order
    assert names(events)[-1] == ("ADDED", "Pod", "p2")  # pods come last

    ingested = CliRunner().invoke(cli, ["ingest", str(output), "--db",
                                        f"sqlite:///{tmp_path / 'k.db'}", "--json"])
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.output)["trace"]["events"] == 5
    # The API server's /version, in the trace's header, stored with the trace.
    assert summary["kubernetesVersion"] == "v1.34.0-fake"
    assert json.loads(ingested.output)["trace"]["kubernetesVersion"] == "v1.34.0-fake"


def test_gzip_output_and_text_summary(populated: FakeCluster, kubeconfig: Path,
                                      tmp_path: Path) -> None:
    output = tmp_path / "trace.jsonl.gz"
    result = _run(str(output), "--kubeconfig", str(kubeconfig), "--kinds", "pods,nodes",
                  "--duration", "0.2")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("recorded 4 events in ")
    assert "  Pod 3, Node 1\n" in result.stdout
    assert "  API server: Kubernetes v1.34.0-fake (in the trace's header" in result.stdout
    assert result.stdout.endswith(f"next: kaudit ingest {output}\n")
    assert output.read_bytes()[:2] == b"\x1f\x8b"
    assert names(read_events(output)) == [("ADDED", "Node", "n1")] + [
        ("ADDED", "Pod", f"p{i}") for i in range(3)]


def test_existing_output_is_refused_without_force(populated: FakeCluster, kubeconfig: Path,
                                                  tmp_path: Path) -> None:
    output = tmp_path / "trace.jsonl"
    output.write_text("precious\n")
    refused = _run(str(output), "--kubeconfig", str(kubeconfig), "--duration", "0.1")
    assert refused.exit_code == 2
    assert f"{output} exists: give --force to overwrite it" in refused.stderr
    assert output.read_text() == "precious\n"
    forced = _run(str(output), "--kubeconfig", str(kubeconfig), "--kinds", "nodes",
                  "--duration", "0.1", "--force")
    assert forced.exit_code == 0, forced.output
    assert names(read_events(output)) == [("ADDED", "Node", "n1")]


def test_unknown_kind_is_a_usage_error(kubeconfig: Path, tmp_path: Path) -> None:
    result = _run(str(tmp_path / "t.jsonl"), "--kubeconfig", str(kubeconfig),
                  "--kinds", "pods,deployments")
    assert result.exit_code == 2
    assert "unknown kind 'deployments'; valid kinds: namespaces, priorityclasses" in result.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_missing_kubeconfig_is_a_clear_error(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    output = tmp_path / "t.jsonl"
    result = _run(str(output), "--kubeconfig", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert f"kaudit: error: kubeconfig {tmp_path / 'nope.yaml'}: no such file" in result.stderr
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = _run(str(output))
    assert result.exit_code == 2
    assert "no Kubernetes configuration found: give --kubeconfig FILE" in result.stderr
    assert not output.exists()


def test_kubeconfig_from_environment(populated: FakeCluster, kubeconfig: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}{os.pathsep}{kubeconfig}")
    result = _run(str(tmp_path / "t.jsonl"), "--kinds", "nodes", "--duration", "0.1",
                  "--context", "fake")
    assert result.exit_code == 0, result.output
    bad = _run(str(tmp_path / "u.jsonl"), "--kinds", "nodes", "--context", "nope")
    assert bad.exit_code == 2 and "nope" in bad.stderr


def test_no_listable_kind_fails_and_leaves_no_file(populated: FakeCluster, kubeconfig: Path,
                                                   tmp_path: Path) -> None:
    populated.forbidden.update({"pods", "nodes"})
    output = tmp_path / "t.jsonl"
    result = _run(str(output), "--kubeconfig", str(kubeconfig), "--kinds", "pods,nodes")
    assert result.exit_code == 2
    assert "kaudit: warning: cannot list pods: 403 Forbidden" in result.stderr
    assert "kaudit: error: cannot list any of the kinds to record" in result.stderr
    assert not output.exists()


def test_missing_client_is_a_clear_error(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    result = _run(str(tmp_path / "t.jsonl"))
    assert result.exit_code == 2
    assert f"kaudit: error: {INSTALL_HINT}" in result.stderr


def test_status_line_when_interactive(populated: FakeCluster, kubeconfig: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kaudit.cli.record.interactive", lambda: True)
    result = _run(str(tmp_path / "t.jsonl"), "--kubeconfig", str(kubeconfig), "--kinds",
                  "pods", "--duration", "0.7")
    assert result.exit_code == 0, result.output
    assert re.search(r"recording: \d+ events, (listing|watching), ", result.stderr)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_cleanly(populated: FakeCluster, kubeconfig: Path, tmp_path: Path,
                              signum: int) -> None:
    output = tmp_path / "trace.jsonl"
    script = ("from kaudit.cli import KauditGroup; from kaudit.cli.record import record; "
              "KauditGroup(commands={'record': record})(prog_name='kaudit')")
    process = subprocess.Popen(
        [sys.executable, "-c", script, "record", str(output), "--kubeconfig", str(kubeconfig),
         "--kinds", "pods,nodes"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        wait_until(lambda: bool(populated.open_watches.get("pods")
                                and populated.open_watches.get("nodes"))
                   or process.poll() is not None,
                   "the recording to watch", timeout=10)
        populated.create("pods", make_pod("late").req(cpu="1").obj())
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert stdout.startswith("recorded ") and "next: kaudit ingest" in stdout
    events = read_events(output)
    assert names(events)[0] == ("ADDED", "Node", "n1")
    assert len(events) in (4, 5)  # the late pod, unless the signal came first


def test_help_explains_the_command() -> None:
    text = CliRunner().invoke(group, ["record", "--help"]).output
    assert "ADDED" in text and "kaudit ingest OUTPUT" in text and "--duration" in text
    assert isinstance(record, click.Command) and record.name == "record"
