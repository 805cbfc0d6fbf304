"""``OpenGpuShare``: the GPU-share filter and device selection of the FGD authors' simulator,
through an ordinary configuration and a real replay."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.fgd.gpu_share import choose_devices
from kaudit.model.gpu import GpuDemand
from kaudit.queries.explain import explain_pod
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace

MODEL = "alibabacloud.com/gpu-card-model"
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    preFilter: {{enabled: [{{name: OpenGpuShare}}]}}
    filter: {{enabled: [{{name: OpenGpuShare}}]}}
    reserve: {{enabled: [{{name: OpenGpuShare}}]}}
  pluginConfig:
  - name: OpenGpuShare
    args: {{gpuSelMethod: {method}}}
"""


def test_device_selection_rules() -> None:
    free = np.array([1000, 400, 700, 400, -1])
    share = GpuDemand(300, 1)
    assert choose_devices(free, share, "best") == (1,)  # least left; lowest among equals
    assert choose_devices(free, share, "worst") == (0,)
    assert choose_devices(free, GpuDemand(800, 1), "best") == (0,)
    assert choose_devices(free, GpuDemand(1000, 2), "best") is None
    assert choose_devices(np.array([1000, 0, 1000, 1000]), GpuDemand(1000, 2), "worst") == (0, 2)
    import random
    picks = {choose_devices(free, share, "random", random.Random(seed)) for seed in range(40)}
    assert picks == {(0,), (1,), (2,), (3,)}


def _pod(name: str, milli: int, count: int = 1, models: str = "") -> dict:  # type: ignore[type-arg]
    pod = make_pod(name).req(cpu="1", memory="1Gi").extended(
        "alibabacloud.com/gpu-milli", str(milli * count))
    pod = pod.annotation("alibabacloud.com/gpu-milli", str(milli)).annotation(
        "alibabacloud.com/gpu-count", str(count))
    return (pod.annotation(MODEL, models) if models else pod).obj()


@pytest.fixture
def shares(engine: Engine, tmp_path: Path) -> Engine:
    """One node of two V100 GPUs (2000 GPU-milli) and one T4 node; share pods."""
    v100 = (make_node("v100").capacity(cpu="32", memory="128Gi", pods="110")
            .extended("nvidia.com/gpu", "2").extended("alibabacloud.com/gpu-milli", "2000")
            .label(MODEL, "V100M16").obj())
    t4 = (make_node("t4").capacity(cpu="32", memory="128Gi", pods="110")
          .extended("nvidia.com/gpu", "1").extended("alibabacloud.com/gpu-milli", "1000")
          .label(MODEL, "T4").obj())
    events = [(0.0, "ADDED", v100), (0.0, "ADDED", t4),
              (1.0, "ADDED", _pod("a", 600, models="V100M16")),
              (2.0, "ADDED", _pod("b", 300, models="V100M16")),
              (3.0, "ADDED", _pod("c", 600, models="V100M16")),
              (4.0, "ADDED", _pod("d", 450, models="V100M16"))]
    ingest_trace(engine, [TraceInput(write_trace(tmp_path / "shares.jsonl", *events))],
                 name="shares")
    return engine


@pytest.mark.parametrize(("method", "b_device"), [("best", 0), ("worst", 1)])
def test_the_filter_sees_devices_and_reserve_picks_by_the_method(
        shares: Engine, run_kaudit: Callable[..., Result], tmp_path: Path, method: str,
        b_device: int) -> None:
    config = tmp_path / f"{method}.yaml"
    config.write_text(CONFIG.format(method=method))
    result = run_kaudit("replay", "shares", "--config", str(config), "--name", method)
    assert result.exit_code == 0, result.output
    a = explain_pod(shares, method, "default/a")["verdict"]
    assert a["node"] == "v100" and a["gpus"] == {"devices": [0], "milli": 600}
    b = explain_pod(shares, method, "default/b")["verdict"]
    assert b["gpus"] == {"devices": [b_device], "milli": 300}
    # best leaves GPU 1 whole (0: 100 left); worst leaves 700 on GPU 1 (0: 400 left): c fits
    # on GPU 1 either way.
    c = explain_pod(shares, method, "default/c")["verdict"]
    assert c["gpus"] == {"devices": [1], "milli": 600}
    # 500 GPU-milli are left on the node in all, enough for d's 450 by NodeResourcesFit,
    # but split 100 + 400 (best) or 400 + 100 (worst): no one device holds it.
    d = explain_pod(shares, method, "default/d")
    assert d["verdict"]["state"] == "pending"
    causes = {cause["cause"] for cause in d["verdict"]["causes"]}
    assert "rejected by OpenGpuShare: node(s) had no GPU device with room for the pod" in causes
    assert "rejected by OpenGpuShare: node(s) had no GPU of the pod's model" in causes
    assert "1 node(s) had no GPU device with room for the pod" in \
        d["attempts"][0]["message"]


def test_bad_arguments_are_refused_with_the_field(run_kaudit: Callable[..., Result],
                                                  shares: Engine, tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(CONFIG.format(method="fastest"))
    result = run_kaudit("replay", "shares", "--config", str(config))
    assert result.exit_code == 2
    assert "pluginConfig[0].args.gpuSelMethod: Invalid value: \"fastest\"" in result.output \
        or "gpuSelMethod: Invalid value: 'fastest'" in result.output, result.output
