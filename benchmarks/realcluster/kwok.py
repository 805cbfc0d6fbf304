"""Nodes that behave like nodes, through KWOK (``sigs.k8s.io/kwok``): the stages KWOK runs
and the Node objects the harness registers for it to keep.

KWOK's own stages are read from its module (``kustomize/stage/`` of ``sigs.k8s.io/kwok`` in
the Go module cache, at the version the harness builds), not copied here:

- ``node/fast/node-initialize`` and ``node/heartbeat-with-lease``: a node turns Ready at once
  and its lease is renewed, so the node lifecycle controller never taints it;
- ``pod/fast/pod-ready``: a bound pod becomes Running and Ready;
- ``pod/fast/pod-complete``: a Job's pod succeeds, here after the run time in its
  :data:`RUN_SECONDS_ANNOTATION` annotation (KWOK's stage completes it at once);
- and the harness's own ``pod-delete``: a pod being deleted goes away at its
  ``deletionTimestamp``, so its grace period is honoured and preemption's victims
  terminate as a kubelet would make them (KWOK's fast stage deletes them at once).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from benchmarks.realcluster.build import GO_DIR, go_env

KWOK_MODULE = "sigs.k8s.io/kwok"
#: The annotation KWOK is told to manage nodes by (``--manage-nodes-with-annotation-selector``).
NODE_ANNOTATION = "kwok.x-k8s.io/node"
#: A Job pod's run time, as a Go duration ("45s"); KWOK marks it Succeeded after it.
RUN_SECONDS_ANNOTATION = "kaudit.test/run-duration"
KWOK_STAGES = ("node/fast/node-initialize.yaml",
               "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
               "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml")

POD_DELETE_STAGE: dict[str, Any] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "pod-delete"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {"matchExpressions": [
            {"key": ".metadata.deletionTimestamp", "operator": "Exists"}]},
        # A timestamp as a duration means "until then": the end of the grace period.
        "delay": {"durationMilliseconds": 0,
                  "durationFrom": {"expressionFrom": ".metadata.deletionTimestamp"}},
        "next": {"delete": True},
    },
}


def kwok_version() -> str:
    """The KWOK version the harness's ``go/kwok`` module requires."""
    for line in (GO_DIR / "kwok" / "go.mod").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[-2] == KWOK_MODULE:
            return parts[-1]
        if len(parts) == 2 and parts[0] == KWOK_MODULE:
            return parts[1]
    raise RuntimeError(f"{GO_DIR / 'kwok' / 'go.mod'} does not require {KWOK_MODULE}")


def kwok_source() -> Path:
    """KWOK's module directory in the Go module cache (downloaded if missing)."""
    env = go_env()
    env["GOFLAGS"] = ""
    done = subprocess.run(["go", "mod", "download", "-json", f"{KWOK_MODULE}@{kwok_version()}"],
                          cwd=GO_DIR / "kwok", env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"go mod download {KWOK_MODULE} failed: {done.stderr or done.stdout}")
    return Path(json.loads(done.stdout)["Dir"])


def stages() -> list[dict[str, Any]]:
    """The stage documents KWOK runs in the harness."""
    root = kwok_source() / "kustomize" / "stage"
    documents = [yaml.safe_load((root / stage).read_text()) for stage in KWOK_STAGES]
    for document in documents:
        if document["metadata"]["name"] == "pod-complete":
            document["spec"]["delay"] = {
                "durationMilliseconds": 0,
                "durationFrom": {"expressionFrom":
                                 f'.metadata.annotations["{RUN_SECONDS_ANNOTATION}"]'}}
            # Only pods with a run time complete (KWOK's stage completes every Job pod).
            document["spec"]["selector"]["matchExpressions"].append(
                {"key": f'.metadata.annotations["{RUN_SECONDS_ANNOTATION}"]',
                 "operator": "Exists"})
    return [*documents, POD_DELETE_STAGE]


def write_stages(path: Path) -> Path:
    """Write KWOK's configuration (the stages) to ``path``."""
    path.write_text(yaml.safe_dump_all(stages(), sort_keys=False))
    return path


def node_object(name: str, cpu: str, memory: str, pods: int = 110,
                labels: dict[str, str] | None = None,
                taints: list[dict[str, str]] | None = None,
                extended: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node for KWOK to keep: capacity and allocatable as given, labels as a kubelet would
    set them (hostname, os, arch) plus ``labels``."""
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extended or {})}
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "type": "kwok", **(labels or {})}
    node: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": all_labels,
                     "annotations": {NODE_ANNOTATION: "fake",
                                     "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {},
        "status": {"capacity": resources, "allocatable": dict(resources),
                   "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                                "kubeletVersion": "fake", "kubeProxyVersion": "fake",
                                "bootID": "", "containerRuntimeVersion": "", "kernelVersion": "",
                                "machineID": "", "osImage": "", "systemUUID": ""},
                   "phase": "Running"},
    }
    if taints:
        node["spec"]["taints"] = taints
    return node

