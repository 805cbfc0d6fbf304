"""``kaudit record`` against a real kube-apiserver that restarts mid-recording: it reconnects,
lists again where the new server no longer serves its resourceVersion (410 Gone) and
reconciles, so the recording holds every write of the API server's audit log once, no more
(benchmarks/realcluster/trace_compare.py compares the two).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes
import orjson
import pytest

from benchmarks.realcluster.controlplane import WRITERS, ControlPlane
from benchmarks.realcluster.kwok import node_object
from benchmarks.realcluster.pipeline import Recording, kaudit_command, stored_events
from benchmarks.realcluster.trace_compare import compare_traces

pytestmark = pytest.mark.realcluster


def _pod(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}


def _wait_for_service_account(core: kubernetes.client.CoreV1Api) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            core.read_namespaced_service_account("default", "default")
            return
        except kubernetes.client.ApiException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _record_through_a_restart(control_plane: ControlPlane, recording: Recording,
                              api: kubernetes.client.ApiClient,
                              core: kubernetes.client.CoreV1Api) -> dict[str, Any]:
    """Record while pods are created, kube-apiserver restarts, and more pods come and go."""
    recording.start(api)
    for index in range(3):
        core.create_node(body=node_object(f"node-{index}", "8", "16Gi"))
    _wait_for_service_account(core)
    for index in range(8):
        core.create_namespaced_pod("default", body=_pod(f"before-{index}"))
    time.sleep(2)

    control_plane.restart_apiserver(down_seconds=3)

    for index in range(8):
        core.create_namespaced_pod("default", body=_pod(f"after-{index}"))
    for index in range(4):
        core.delete_namespaced_pod(f"before-{index}", "default")
    core.patch_node("node-0", {"spec": {"unschedulable": True}})
    time.sleep(5)  # bindings, KWOK's status writes and the graceful deletions land
    control_plane.pause_writers()
    return recording.stop()


def test_record_survives_an_apiserver_restart(control_plane: ControlPlane,
                                              tmp_path: Path) -> None:
    api = kubernetes.config.new_client_from_config(
        config_file=str(control_plane.kubeconfigs["admin"]))
    core = kubernetes.client.CoreV1Api(api)
    output = tmp_path / "recording.jsonl"
    recording = Recording(control_plane, output)
    try:
        summary = _record_through_a_restart(control_plane, recording, api, core)
    finally:
        recording.kill()
        api.close()
    for name in WRITERS:  # paused, so that nothing happened after the recording stopped
        process = control_plane.components[name].process
        assert process is not None
        state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state == "T", (name, state)
    lines = [orjson.loads(line) for line in output.read_bytes().splitlines() if line.strip()]
    header, lines = lines[0], [e for e in lines if e["type"] != "BOOKMARK"]
    # The recording opens with the API server's release (kaudit.model.recording).
    assert header["type"] == "BOOKMARK" and header["object"]["metadata"]["annotations"][
        "kaudit.io/kubernetes-version"].startswith("v1.34.2")
    seen = Counter((e["object"]["kind"], e["object"]["metadata"].get("namespace", ""),
                    e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"],
                    e["type"]) for e in lines)
    duplicated = [key for key, count in seen.items() if count > 1]
    assert not duplicated, f"events recorded twice: {duplicated[:10]}"
    names = {e["object"]["metadata"]["name"] for e in lines if e["object"]["kind"] == "Pod"}
    assert {f"after-{i}" for i in range(8)} <= names, "pods created after the restart missing"

    db = f"sqlite:///{tmp_path / 'kaudit.db'}"
    kaudit_command("ingest", str(output), "--name", "recording", db=db)
    kaudit_command("ingest", str(control_plane.audit_log), "--format", "audit",
                   "--name", "audit-log", db=db)
    comparison = compare_traces(stored_events(db, "recording"),
                                stored_events(db, "audit-log", until_us=recording.stopped_at_us))
    assert comparison.agree, orjson.dumps(comparison.as_json(), option=orjson.OPT_INDENT_2).decode()
    assert comparison.objects.get("Pod") == 16
    # The restart did break the watches: the API server's new watch cache no longer serves the
    # old resourceVersions, so the recorder listed again and reconciled (client-go's
    # reflector does the same), and the comparison above shows nothing was lost or doubled.
    assert summary["relists"] > 0 or summary["warnings"], summary
