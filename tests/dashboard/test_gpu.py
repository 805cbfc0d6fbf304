"""The GPU-sharing page and API, and the per-GPU allocation of a node on the history page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine

from kaudit.dashboard import create_app
from kaudit.queries.explain import explain_pod
from tests.conftest import replay_gpu_policies


@pytest.fixture
def gpu_client(engine: Engine, db_url: str, tmp_path: Path) -> Iterator[FlaskClient]:
    replay_gpu_policies(engine, tmp_path)
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    yield app.test_client()
    app.extensions["kaudit.engine"].dispose()


def test_the_api_answers_the_report_of_several_runs(gpu_client: FlaskClient) -> None:
    answer = gpu_client.get("/api/v1/gpu-sharing?run=fgd&run=bestfit")
    assert answer.status_code == 200
    runs = answer.get_json()["runs"]
    assert [r["run"] for r in runs] == ["fgd", "bestfit"]
    assert len(runs[0]["curves"]["unallocated"]) == 131
    assert gpu_client.get("/api/v1/gpu-sharing?run=fgd,bestfit").get_json() == \
        answer.get_json()
    page = gpu_client.get("/gpu?run=fgd&run=bestfit")
    assert page.status_code == 200 and b'data-runs="fgd,bestfit"' in page.data


def test_bad_requests_name_the_parameter(gpu_client: FlaskClient) -> None:
    missing = gpu_client.get("/api/v1/gpu-sharing")
    assert missing.status_code == 400 and "run:" in missing.get_json()["error"]
    unknown = gpu_client.get("/api/v1/gpu-sharing?run=nope")
    assert unknown.status_code == 404
    many = gpu_client.get("/api/v1/gpu-sharing?run=" + ",".join(["fgd"] * 21))
    assert many.status_code == 400 and "at most 20 runs" in many.get_json()["error"]


def test_a_node_shows_what_each_of_its_gpus_holds(gpu_client: FlaskClient,
                                                  engine: Engine) -> None:
    shared = explain_pod(engine, "fgd", "default/job-00")["verdict"]
    node, devices = shared["node"], shared["gpus"]["devices"]
    answer = gpu_client.get(f"/api/v1/runs/fgd/nodes/{node}?t=4.7")
    assert answer.status_code == 200
    gpus = answer.get_json()["gpus"]
    assert len(gpus) in (4, 8)
    assert {"pod": "default/job-00", "milli": 500} in gpus[devices[0]]["pods"]
    for gpu in gpus:
        assert gpu["heldMilli"] == sum(p["milli"] for p in gpu["pods"]) <= 1000
        assert gpu["freeMilli"] == 1000 - gpu["heldMilli"]
    before = gpu_client.get(f"/api/v1/runs/fgd/nodes/{node}?t=0.5").get_json()["gpus"]
    assert all(gpu["heldMilli"] == 0 for gpu in before)  # no pod has arrived yet


def test_the_node_panel_holds_the_gpus_the_allocation_chart_counts(client: FlaskClient) -> None:
    """``/nodes/NODE?t=`` lists a pod of whole GPUs (``nvidia.com/gpu: 2``) on as many devices
    as it requests, and the GPU nodes' held devices make the run's allocation chart at t."""
    gpu = "nvidia.com/gpu"
    state = client.get("/api/v1/runs/default/state?t=240").get_json()["nodes"]
    gpu_nodes = [name for name, count in zip(state["name"], state["extended"][gpu]
                                             ["allocatable"], strict=True) if count]
    held = allocatable = 0
    for name in gpu_nodes:
        node = client.get(f"/api/v1/runs/default/nodes/{name}?t=240").get_json()
        for pod in node["pods"]:
            devices = [g["device"] for g in node["gpus"]
                       if any(p["pod"] == pod["pod"] for p in g["pods"])]
            assert len(devices) == pod["extended"].get(gpu, 0), (pod, node["gpus"])
        held += sum(g["heldMilli"] for g in node["gpus"]) / 1000
        allocatable += node["allocatable"][gpu]
    chart = client.get("/api/v1/runs/default/timeline").get_json()["series"]
    last = max(i for i, t in enumerate(chart["t"]) if t <= 240)
    assert held > 0 and held / allocatable == chart["allocation"][gpu][last]
