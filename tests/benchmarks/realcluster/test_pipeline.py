"""The fidelity pipeline's options, checked before anything is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.realcluster.__main__ import main
from benchmarks.realcluster.pipeline import (
    AUDIT_WINDOW_SECONDS,
    STAGES,
    PipelineError,
    audit_window,
    run_fidelity,
)


def test_the_stages_run_in_order_and_replay_is_last() -> None:
    assert STAGES == ("ingest", "audit", "replay")


def test_an_unknown_stage_is_refused_before_the_control_plane_starts(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match="unknown stage 'record'; choose from ingest"):
        run_fidelity(tmp_path, 1, 1, 1, until="record")
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_names_the_stages(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--until", "everything"])
    assert "choose from 'ingest', 'audit', 'replay'" in capsys.readouterr().err


def test_the_audit_window_covers_the_measured_lags_99th_percentile() -> None:
    # The 1,000-node run: p99 461.6 ms; the 20-node runs: 27-55 ms.
    assert audit_window({"p50Ms": 20.5, "p99Ms": 461.6, "maxMs": 660.1}) == 0.5
    assert audit_window({"p99Ms": 55.0}) == AUDIT_WINDOW_SECONDS == 0.1
    assert audit_window({"p99Ms": 100.0}) == 0.1
    assert audit_window({"p99Ms": 100.1}) == 0.2
    # No decision matched a logged cycle: the floor.
    assert audit_window({"decisions": 0, "withoutCycle": 3}) == AUDIT_WINDOW_SECONDS
