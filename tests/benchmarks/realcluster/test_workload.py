"""The real-cluster workload (``benchmarks/realcluster/workload.py``): its plan offline (seeded,
valid for the API's client models and for kaudit's ingest, every kind of churn the issue
lists, the target load, sizes that scale), its driver against an in-memory API server, and a
tiny plan against the real control plane."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from kubernetes import client

from benchmarks.realcluster.controlplane import ControlPlane
from benchmarks.realcluster.kwok import RUN_SECONDS_ANNOTATION
from benchmarks.realcluster.workload import (
    RESOURCES,
    Action,
    Driver,
    ObjectKey,
    Step,
    WorkloadSpec,
    api_client,
    composition,
    plan,
    planned_pods,
    resource_path,
)
from benchmarks.realcluster.workload_objects import (
    GPU_TAINT,
    HOSTNAME_LABEL,
    MAINTENANCE_TAINT,
    ZONE_LABEL,
    pods_of,
)
from kaudit.quantity import parse_quantity
from kaudit.readers.validate import validate_object

CI_SPEC = WorkloadSpec(nodes=20, pods=300, seed=7)
MODELS = {"Namespace": client.V1Namespace, "PriorityClass": client.V1PriorityClass,
          "Node": client.V1Node, "Pod": client.V1Pod, "Deployment": client.V1Deployment,
          "DaemonSet": client.V1DaemonSet, "Job": client.V1Job,
          "PodDisruptionBudget": client.V1PodDisruptionBudget}


def bodies(steps: list[Step]) -> list[dict[str, Any]]:
    return [step.body for step in steps if step.body is not None]


def pods_planned(steps: list[Step]) -> list[dict[str, Any]]:
    return [pod for body in bodies(steps) if (pod := pods_of(body)) is not None]


def cpu_millis(pod: dict[str, Any]) -> int:
    return sum(parse_quantity(c["resources"]["requests"]["cpu"]).nanos // 1_000_000
               for c in pod["spec"]["containers"])


# -- the plan ---------------------------------------------------------------------------------

def test_a_seed_gives_one_plan_and_another_seed_another() -> None:
    first = plan(CI_SPEC)
    assert plan(WorkloadSpec(20, 300, 7)) == first
    other = plan(WorkloadSpec(20, 300, 8))
    assert other != first
    assert bodies(other) != bodies(first)


@pytest.mark.parametrize("spec", [CI_SPEC, WorkloadSpec(20, 300, 8), WorkloadSpec(5, 30, 1)],
                         ids=str)
def test_every_object_and_every_pod_it_makes_passes_kaudits_ingest_validation(
        spec: WorkloadSpec) -> None:
    for body in bodies(plan(spec)):
        kind, namespace, name, _ = validate_object(body, "ADDED")
        assert (kind, namespace, name) == (body["kind"], body["metadata"].get("namespace", ""),
                                           body["metadata"]["name"])
        pod = pods_of(body)
        if pod is not None:
            validate_object(pod, "ADDED")


def test_every_object_round_trips_through_the_official_clients_models() -> None:
    # A misspelt or misplaced field is dropped by the model, so the round trip differs.
    serializer = client.ApiClient()
    for body in bodies(plan(CI_SPEC)):
        model = MODELS[body["kind"]].from_dict(body)
        assert serializer.sanitize_for_serialization(model) == body, body["metadata"]["name"]


def test_every_pod_names_its_scheduler_and_a_short_grace_period() -> None:
    pods = pods_planned(plan(CI_SPEC))
    assert pods
    for pod in pods:
        spec = pod["spec"]
        assert spec["schedulerName"] == "default-scheduler"
        assert 0 <= spec["terminationGracePeriodSeconds"] <= 5
        assert spec["containers"][0]["image"].startswith("registry.k8s.io/pause:")


def test_the_plan_holds_every_kind_of_churn_the_issue_lists() -> None:
    steps = plan(CI_SPEC)
    replicas: dict[ObjectKey, int] = {}
    scaled_up = scaled_down = False
    for step in steps:
        if step.action == Action.CREATE and step.target.kind == "Deployment":
            replicas[step.target] = (step.body or {})["spec"]["replicas"]
        if step.action == Action.SCALE:
            assert step.replicas is not None
            scaled_up |= step.replicas > replicas[step.target]
            scaled_down |= step.replicas < replicas[step.target]
            replicas[step.target] = step.replicas
    assert scaled_up and scaled_down

    pod_deletions = [s for s in steps if s.action in (Action.DELETE, Action.DELETE_POD_OF)
                     and s.target.kind in ("Pod", "Deployment") and s.purpose == "pod-deletion"]
    graces = {s.grace_seconds for s in pod_deletions}
    assert 0 in graces and any(g and g > 0 for g in graces)

    node_steps: dict[str, list[Action]] = {}
    for step in steps:
        if step.target.kind == "Node":
            node_steps.setdefault(step.target.name, []).append(step.action)
    histories = list(node_steps.values())
    assert [Action.CREATE, Action.CORDON, Action.UNCORDON] in histories
    assert [Action.CREATE, Action.TAINT, Action.UNTAINT] in histories
    assert [Action.CREATE, Action.CORDON, Action.DRAIN, Action.DELETE] in histories
    added = [s for s in steps if s.action == Action.CREATE and s.target.kind == "Node"
             and s.at > 0]
    assert added
    taints = [s.taint for s in steps if s.action == Action.TAINT]
    assert taints and all(t and t["effect"] == "NoSchedule" for t in taints)


def test_preemption_waves_ask_for_more_than_a_node_has_free_at_the_target_load() -> None:
    steps = plan(CI_SPEC)
    general = [b for b in bodies(steps) if b["kind"] == "Node" and not b["spec"].get("taints")]
    mean_free = (1 - CI_SPEC.target_utilisation[0]) * sum(
        parse_quantity(n["status"]["allocatable"]["cpu"]).nanos // 1_000_000
        for n in general) / len(general)
    waves = [b for s in steps if s.action == Action.CREATE and (b := s.body) is not None
             and (pod := pods_of(b)) is not None
             and pod["spec"].get("priorityClassName", "").startswith("high")
             and b["kind"] != "DaemonSet"]
    assert {b["kind"] for b in waves} == {"Deployment", "Job"}
    for wave in waves:
        pod = pods_of(wave)
        assert pod is not None and cpu_millis(pod) > mean_free
    classes = {b["metadata"]["name"]: b for b in bodies(steps) if b["kind"] == "PriorityClass"}
    never = {name for name, body in classes.items() if body["preemptionPolicy"] == "Never"}
    assert any((pods_of(w) or {})["spec"]["priorityClassName"] in never for w in waves)
    assert sorted(b["value"] for b in classes.values()) == [100, 1000, 10000, 10000]


def test_some_pods_fit_no_node() -> None:
    steps = plan(CI_SPEC)
    nodes = [b for b in bodies(steps) if b["kind"] == "Node"]
    largest = max(parse_quantity(n["status"]["allocatable"]["cpu"]).nanos // 1_000_000
                  for n in nodes)
    labels = {(key, value) for n in nodes for key, value in n["metadata"]["labels"].items()}
    pods = pods_planned(steps)
    assert any(cpu_millis(p) > largest for p in pods)
    assert any(any(item not in labels for item in p["spec"].get("nodeSelector", {}).items())
               for p in pods)


def test_pods_use_every_scheduling_constraint() -> None:
    steps = plan(CI_SPEC)
    specs = [pod["spec"] for pod in pods_planned(steps)]
    affinities = [s.get("affinity", {}) for s in specs]
    node_affinity = [a.get("nodeAffinity", {}) for a in affinities]
    assert any(s.get("nodeSelector") for s in specs)
    assert any("requiredDuringSchedulingIgnoredDuringExecution" in a for a in node_affinity)
    assert any("preferredDuringSchedulingIgnoredDuringExecution" in a for a in node_affinity)
    for kind in ("podAffinity", "podAntiAffinity"):
        for when in ("required", "preferred"):
            assert any(f"{when}DuringSchedulingIgnoredDuringExecution" in a.get(kind, {})
                       for a in affinities), (kind, when)
    constraints = {(c["topologyKey"], c["whenUnsatisfiable"])
                   for s in specs for c in s.get("topologySpreadConstraints", [])}
    assert constraints == {(key, when) for key in (ZONE_LABEL, HOSTNAME_LABEL)
                           for when in ("DoNotSchedule", "ScheduleAnyway")}
    assert any(port.get("hostPort") for s in specs for c in s["containers"]
               for port in c.get("ports", []))
    gpu_tolerated = [s for s in specs if any(t.get("key") == GPU_TAINT["key"]
                                             for t in s.get("tolerations", []))]
    assert gpu_tolerated
    daemonsets = [b for b in bodies(steps) if b["kind"] == "DaemonSet"]
    assert daemonsets and daemonsets[0]["spec"]["template"]["spec"]["tolerations"]
    jobs = [b for b in bodies(steps) if b["kind"] == "Job"]
    assert jobs and all(RUN_SECONDS_ANNOTATION in j["spec"]["template"]["metadata"]["annotations"]
                        for j in jobs)
    pdbs = {b["metadata"]["name"] for b in bodies(steps) if b["kind"] == "PodDisruptionBudget"}
    deployments = {b["metadata"]["name"] for b in bodies(steps) if b["kind"] == "Deployment"}
    assert pdbs and pdbs < deployments
    zones = Counter(b["metadata"]["labels"][ZONE_LABEL] for b in bodies(steps)
                    if b["kind"] == "Node")
    assert len(zones) == 3
    assert any(b["metadata"]["labels"].get("disktype") == "ssd" for b in bodies(steps)
               if b["kind"] == "Node")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_base_workload_requests_the_target_share_of_the_cpu(seed: int) -> None:
    spec = WorkloadSpec(20, 300, seed)
    steps = plan(spec)
    base = [s.body for s in steps if s.purpose in ("deployment", "job", "bare-pod")
            and s.body is not None]
    general = [b for b in bodies(steps) if b["kind"] == "Node" and not b["spec"].get("taints")
               and b["metadata"]["name"] in {s.target.name for s in steps
                                             if s.purpose == "initial-node"}]
    node_cpu = sum(parse_quantity(n["status"]["allocatable"]["cpu"]).nanos // 1_000_000
                   for n in general)
    asked = 0
    for body in base:
        pod = pods_of(body)
        assert pod is not None
        if "tolerations" in pod["spec"]:
            continue  # the GPU workload runs on the tainted nodes
        count = {"Deployment": body["spec"].get("replicas"), "Job":
                 body["spec"].get("parallelism"), "Pod": 1}[body["kind"]]
        asked += count * cpu_millis(pod)
    low, high = spec.target_utilisation
    assert low - 0.03 <= asked / node_cpu <= high + 0.03


@pytest.mark.parametrize(("nodes", "pods"), [(20, 300), (1000, 10000), (5000, 20000)])
def test_sizes_scale(nodes: int, pods: int) -> None:
    spec = WorkloadSpec(nodes, pods, seed=1)
    steps = plan(spec)
    initial = [s for s in steps if s.action == Action.CREATE and s.target.kind == "Node"
               and s.at == 0]
    assert len(initial) == nodes
    assert 0.8 * pods <= planned_pods(steps) <= 1.2 * pods
    assert spec.duration == pytest.approx(60 * pods / 300)
    assert steps[-1].at <= spec.duration
    counts = composition(steps)
    assert counts["purpose preemption-wave"] >= max(2, pods // 1000)
    assert counts["cordon Node"] >= nodes // 10


@pytest.mark.parametrize(("arguments", "field"), [
    ({"nodes": 2, "pods": 300}, "nodes"), ({"nodes": 20, "pods": 30}, "pods"),
    ({"nodes": 20, "pods": 300, "duration_seconds": 0}, "duration_seconds"),
    ({"nodes": 20, "pods": 300, "target_utilisation": (0.9, 0.5)}, "target_utilisation")])
def test_a_spec_out_of_range_is_refused_naming_the_field(arguments: dict[str, Any],
                                                         field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        WorkloadSpec(seed=1, **arguments)


# -- the driver against an in-memory API server --------------------------------------------

class FakeResponse:
    def __init__(self, status: int, payload: Any) -> None:
        self.status = status
        self.data = json.dumps(payload).encode() if payload is not None else b""

    def read(self) -> bytes:
        return self.data


class FakeApiServer:
    """What :class:`Rest` uses of an ``ApiClient``, over objects kept by path. A Deployment
    makes its replicas' pods at once; a pod is bound at once unless it asks for more cpu than
    ``largest_cpu`` or waits (``waiting``), which then stay unscheduled."""

    def __init__(self, refuse: str = "", waiting: bool = False) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.log: list[tuple[str, str]] = []
        self.refuse = refuse
        self.waiting = waiting
        self.version = 0
        self.lock = threading.Lock()

    def param_serialize(self, method: str, resource_path: str,
                        query_params: list[tuple[str, str]] | None = None,
                        header_params: dict[str, str] | None = None, body: Any = None,
                        auth_settings: list[str] | None = None) -> tuple[Any, ...]:
        url = resource_path + ("?" + urlencode(query_params) if query_params else "")
        return method, url, header_params, body, None

    def call_api(self, method: str, url: str, header_params: Any = None, body: Any = None,
                 post_params: Any = None, _request_timeout: Any = None) -> FakeResponse:
        path, _, query = url.partition("?")
        if method == "POST":
            time.sleep(0.002)  # so that a later step on the object would overtake its create
        with self.lock:  # the driver's threads call at once
            response: FakeResponse = getattr(self, method.lower())(
                path, dict(parse_qsl(query)), body)
            self.log.append((method, f"{path}/{body['metadata']['name']}" if method == "POST"
                             else path))  # once answered
        return response

    def store(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"].update(uid=path, resourceVersion=str(self.version))
        self.objects[path] = stored
        return stored

    def post(self, path: str, query: dict[str, str], body: dict[str, Any]) -> FakeResponse:
        if body["kind"] == self.refuse:
            return FakeResponse(422, {"message": f"{body['kind']} is invalid: spec: Required"})
        stored = self.store(f"{path}/{body['metadata']['name']}", body)
        if body["kind"] == "Pod":
            if self.waiting:
                stored["status"] = {}
            elif cpu_millis(stored) > 16000 or "nvme" in str(stored["spec"]):
                stored["status"] = {"conditions": [{"type": "PodScheduled", "status": "False",
                                                    "reason": "Unschedulable"}]}
            else:
                stored["spec"]["nodeName"] = "bound-elsewhere"
        if body["kind"] == "Deployment":
            namespace = body["metadata"]["namespace"]
            for index in range(body["spec"]["replicas"]):
                template = body["spec"]["template"]
                self.post(f"/api/v1/namespaces/{namespace}/pods", {}, {
                    "kind": "Pod", "metadata": {"name": f"{body['metadata']['name']}-{index}",
                                                "namespace": namespace,
                                                **copy.deepcopy(template["metadata"])},
                    "spec": copy.deepcopy(template["spec"])})
        return FakeResponse(201, stored)

    def pods(self, path: str, query: dict[str, str]) -> Iterator[dict[str, Any]]:
        app = query.get("labelSelector", "app=").removeprefix("app=")
        node = query.get("fieldSelector", "spec.nodeName=").removeprefix("spec.nodeName=")
        for key, pod in self.objects.items():
            if not key.startswith(path.replace("/api/v1/pods", "/api/v1/")) or \
                    pod["kind"] != "Pod":
                continue
            if app and app != pod["metadata"]["labels"].get("app"):
                continue
            if node and node != pod["spec"].get("nodeName"):
                continue
            yield pod

    def get(self, path: str, query: dict[str, str], body: Any) -> FakeResponse:
        if path.endswith("/pods"):
            return FakeResponse(200, {"items": list(self.pods(path, query))})
        if path.endswith("/serviceaccounts/default"):
            namespace = path.split("/")[4]
            found = f"/api/v1/namespaces/{namespace}" in self.objects
            return FakeResponse(200 if found else 404, {"message": "not found"})
        if path in self.objects:
            return FakeResponse(200, self.objects[path])
        return FakeResponse(404, {"message": f"{path} not found"})

    def patch(self, path: str, query: dict[str, str], body: dict[str, Any]) -> FakeResponse:
        if path not in self.objects:
            return FakeResponse(404, {"message": "not found"})
        target = self.objects[path]
        for section, fields in body.items():
            target.setdefault(section, {}).update(fields)
        return FakeResponse(200, target)

    def delete(self, path: str, query: dict[str, str], body: Any) -> FakeResponse:
        if self.objects.pop(path, None) is None:
            return FakeResponse(404, {"message": f"{path} not found"})
        return FakeResponse(200, {})


TINY_SPEC = WorkloadSpec(nodes=5, pods=30, seed=1)


def fake_driver(server: FakeApiServer) -> Driver:
    return Driver(server, TINY_SPEC, workers=4, quiet_seconds=0.05, settle_timeout=2.0,
                  time_scale=0.0, poll_seconds=0.01)


def test_the_driver_applies_every_step_keeping_each_objects_order_and_settles() -> None:
    server = FakeApiServer()
    driver = fake_driver(server)
    summary = driver.run()
    assert summary.failures == []
    assert sum(summary.applied.values()) + summary.already_gone == len(driver.steps)
    assert summary.applied["create Node"] == 6
    first = [path for _, path in server.log[:8]]
    assert all(path.startswith("/api/v1/namespaces/") for path in first[:4])
    assert all("/priorityclasses/" in path for path in first[4:8])
    # Each object's steps in plan order: a Deployment or Node is created before it changes.
    for step in driver.steps:
        if step.target.kind in ("Deployment", "Node") and step.action != Action.CREATE:
            path = resource_path(step.target.kind, step.target.namespace, step.target.name)
            requests = [method for method, logged in server.log if logged == path]
            assert requests[0] == "POST", (step.describe(), requests)
    deleted = [path for method, path in server.log if method == "DELETE" and "/pods/" in path]
    for step in driver.steps:
        if step.action == Action.DELETE_POD_OF:
            prefix = f"/api/v1/namespaces/{step.target.namespace}/pods/{step.target.name}-"
            assert any(path.startswith(prefix) for path in deleted), step.describe()
    assert summary.settled
    assert summary.pods_waiting == 0
    unfit = sum(1 for s in driver.steps if s.purpose == "unschedulable")
    assert summary.pods_unschedulable == unfit
    assert summary.pods_bound > 0


def test_a_refused_create_is_reported_with_the_servers_message_and_a_gone_object_counted(
        ) -> None:
    server = FakeApiServer(refuse="Job")
    summary = fake_driver(server).run()
    assert summary.failures
    assert all("create Job batch/" in f and "422 Job is invalid: spec: Required" in f
               for f in summary.failures)
    driver = fake_driver(server)
    driver.apply_step(Step(0, Action.DELETE, ObjectKey("Pod", "shop", "gone"), "pod-deletion",
                           grace_seconds=0))
    assert driver._already_gone == 1 and driver._failures == []


def test_tainting_keeps_the_nodes_other_taints_and_untainting_removes_only_its_own() -> None:
    server = FakeApiServer()
    server.store("/api/v1/nodes/n1", {"kind": "Node", "metadata": {"name": "n1"},
                                      "spec": {"taints": [dict(GPU_TAINT)]}})
    driver = fake_driver(server)
    key = ObjectKey("Node", "", "n1")
    driver.perform(Step(0, Action.TAINT, key, "taint", taint=dict(MAINTENANCE_TAINT)))
    assert server.objects["/api/v1/nodes/n1"]["spec"]["taints"] == [GPU_TAINT, MAINTENANCE_TAINT]
    driver.perform(Step(0, Action.UNTAINT, key, "untaint", taint=dict(MAINTENANCE_TAINT)))
    assert server.objects["/api/v1/nodes/n1"]["spec"]["taints"] == [GPU_TAINT]


def test_a_drain_leaves_daemonset_pods_which_the_nodes_removal_deletes() -> None:
    server = FakeApiServer()
    server.store("/api/v1/nodes/n1", {"kind": "Node", "metadata": {"name": "n1"}, "spec": {}})
    for name, owner in (("web", "ReplicaSet"), ("agent", "DaemonSet")):
        server.store(f"/api/v1/namespaces/shop/pods/{name}", {
            "kind": "Pod", "metadata": {"name": name, "namespace": "shop", "labels": {},
                                        "ownerReferences": [{"kind": owner, "name": "x"}]},
            "spec": {"nodeName": "n1"}})
    driver = fake_driver(server)
    key = ObjectKey("Node", "", "n1")
    driver.perform(Step(0, Action.DRAIN, key, "node-removal"))
    assert [p for p in server.objects if "/pods/" in p] == ["/api/v1/namespaces/shop/pods/agent"]
    driver.perform(Step(0, Action.DELETE, key, "node-removal"))
    assert server.objects == {}


def test_settling_gives_up_at_its_timeout_while_a_pod_waits() -> None:
    server = FakeApiServer(waiting=True)
    driver = fake_driver(server)
    driver.settle_timeout = 0.2
    summary = driver.run()
    assert not summary.settled
    assert summary.pods_waiting > 0


# -- against the real control plane ---------------------------------------------------------

@pytest.mark.realcluster
def test_a_tiny_plan_runs_on_the_real_control_plane(control_plane: ControlPlane) -> None:
    api = api_client(control_plane.kubeconfigs["admin"])
    driver = Driver(api, WorkloadSpec(nodes=5, pods=30, seed=3), time_scale=0.5)
    summary = driver.run()
    control_plane.check_running()
    assert summary.failures == []
    assert summary.settled
    assert summary.pods_bound >= 20
    events = driver.rest.request("GET", "/api/v1/events")["items"]
    scheduled = [e for e in events if e["reason"] == "Scheduled"]
    assert len(scheduled) >= summary.pods_bound - summary.pods_succeeded
    assert {e.get("reportingComponent") or e["source"].get("component") for e in scheduled} \
        == {"default-scheduler"}
    # The objects as the API server stored them (defaults and controllers' fields added) are
    # what a recording holds: kaudit's ingest accepts every one.
    for kind in ("Namespace", "PriorityClass", "Node", "Pod", "PodDisruptionBudget"):
        prefix, resource, _ = RESOURCES[kind]
        for item in driver.rest.request("GET", f"{prefix}/{resource}")["items"]:
            validate_object({"kind": kind, **item}, "ADDED")
