"""Sweep specs over the project's sample trace, shared by the sweep tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "traces" / "sample.jsonl"
BIN_PACKING = REPO / "traces" / "sample-bin-packing.yaml"
CRASH_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      filter:
        enabled: [{name: Crash}]
"""


@pytest.fixture
def sample_spec(tmp_path: Path) -> Path:
    """Two configurations × two seeds over the sample trace: four cells."""
    path = tmp_path / "tuning.yaml"
    path.write_text(f"""
name: tuning
traces:
  - name: sample
    files: [{SAMPLE}]
configs:
  - name: default
  - name: bin-packing
    file: {BIN_PACKING}
seeds: [1, 2]
""")
    return path


def write_spec(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
