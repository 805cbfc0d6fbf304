"""The Alibaba GPU trace end to end: the real node and pod lists ingested with the paper's
protocol and replayed with kube-scheduler's default profile (skipped without the data)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

CSV = (Path(__file__).parents[2] / ".." / "shared" / "traces" / "alibaba-gpu-v2023"
       / "csv").resolve()
NODES = CSV / "openb_node_list_gpu_node.csv"
PODS = CSV / "openb_pod_list_default.csv"

pytestmark = pytest.mark.skipif(not (NODES.is_file() and PODS.is_file()),
                                reason="the Alibaba trace is not beside the project")


def test_a_light_sample_of_the_trace_all_fits(run_kaudit: Callable[..., Result]) -> None:
    ingested = run_kaudit("ingest", str(NODES), str(PODS), "--shuffle", "--seed", "42",
                          "--gpu-load", "0.05", "--no-deletions", "--gpu-sharing", "milli",
                          "--name", "openb", "--json")
    assert ingested.exit_code == 0, ingested.output
    trace = json.loads(ingested.output)["trace"]
    assert trace["kinds"]["Node"] == 1213
    details = trace["sources"][1]["details"]
    assert details["gpu_capacity"] == 6212 and details["tuned"]
    pods = trace["kinds"]["Pod"]
    assert pods == details["pods"] and 300 < pods < 1000
    assert trace["spanSeconds"] == pytest.approx((pods - 1) * 0.01)

    replayed = run_kaudit("replay", "openb", "--name", "r", "--json")
    assert replayed.exit_code == 0, replayed.output
    summary = json.loads(replayed.output)["summary"]
    # 5 % of the GPUs: each pod is tried once and bound, but for the rare pod whose CPU and
    # memory no GPU node has (openb-pod-5724 in this sample).
    assert summary["attempts"] == pods
    assert summary["podsScheduled"] + summary["podsUnschedulable"] == pods
    assert summary["podsUnschedulable"] <= 2
    requested = details["gpu_request_milli"] / (1000 * details["gpu_capacity"])
    reached = summary["allocation"]["alibabacloud.com/gpu-milli"]["peak"]
    assert requested - 0.002 <= reached <= requested


def test_time_protocol_keeps_creation_and_deletion(run_kaudit: Callable[..., Result]) -> None:
    ingested = run_kaudit("ingest", str(NODES), str(PODS), "--json")
    assert ingested.exit_code == 0, ingested.output
    trace = json.loads(ingested.output)["trace"]
    assert trace["kinds"] == {"Node": 1213, "Pod": 2 * 8152}  # every pod is created, deleted
    assert trace["spanSeconds"] == pytest.approx(12_902_960, abs=1)
