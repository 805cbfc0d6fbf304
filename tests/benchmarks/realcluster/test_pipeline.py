"""The fidelity pipeline's options, checked before anything is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.realcluster.__main__ import main
from benchmarks.realcluster.pipeline import STAGES, PipelineError, run_fidelity


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
