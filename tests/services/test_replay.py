"""One rule for the configuration of a replay of a stored trace, whichever command replays it.

The kube-scheduler-simulator export in ``tests/data`` carries a scheduler configuration that
scores with ``MostAllocated`` (its three pending pods pack onto the node already in use, where
kube-scheduler's defaults spread them): a command that replayed it under the defaults would
place them elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from kaudit.cli import cli
from kaudit.errors import InputError
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.services.replay import (
    FROM_DEFAULTS,
    FROM_TRACE,
    ConfigChoice,
    replay_stored_trace,
    resolve_config,
)
from kaudit.store.traces import get_trace
from tests.conftest import DATA

EXPORT = DATA / "simulator" / "export.json"


def _placements(summary: dict[str, Any]) -> dict[str, str | None]:
    return {pod: outcome["node"] for pod, outcome in summary["pods"].items()}


def test_the_stored_configuration_is_used_unless_another_is_named(engine: Engine) -> None:
    trace = get_trace(engine, ingest_trace(engine, [TraceInput(EXPORT)], name="sim").trace_id)
    stored = resolve_config(trace, ConfigChoice())
    assert stored.origin == FROM_TRACE and stored.label == "trace"
    assert stored.notices == ("using the scheduler configuration stored with trace 'sim' "
                              "(--defaults to ignore it)",)
    defaults = resolve_config(trace, ConfigChoice(defaults=True))
    assert defaults.origin == FROM_DEFAULTS and not defaults.notices
    assert stored.config.to_dict() != defaults.config.to_dict()
    packed = replay_stored_trace(engine, trace, stored, name="packed")
    assert packed.run.name == "packed" and packed.summary.pods_scheduled == 3
    with pytest.raises(InputError, match="--config and --defaults exclude each other"):
        ConfigChoice(file=EXPORT, defaults=True)


def test_replay_check_and_compare_replay_a_stored_trace_alike(
        run_kaudit: Callable[..., Result], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    replayed, spread = tmp_path / "replayed.json", tmp_path / "spread.json"
    assert run_kaudit("ingest", str(EXPORT), "--name", "sim").exit_code == 0
    assert run_kaudit("replay", "sim", "--summary-out", str(replayed)).exit_code == 0
    assert run_kaudit("replay", "sim", "--defaults", "--summary-out", str(spread)).exit_code == 0
    by_replay = json.loads(replayed.read_text())
    by_defaults = json.loads(spread.read_text())
    assert _placements(by_replay) != _placements(by_defaults)  # the configuration matters

    checked = tmp_path / "checked.json"
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["check", str(EXPORT), "--baseline", str(replayed),
                                      "--baseline-out", str(checked), "--fail-on", "changed>0"])
    assert result.exit_code == 0, result.output
    by_check = json.loads(checked.read_text())
    assert by_check["configuration"] == by_replay["configuration"]
    assert _placements(by_check) == _placements(by_replay)
    assert by_check["aggregates"] == by_replay["aggregates"]

    compared = run_kaudit("compare", "sim", "--config", "trace", "--config", "default",
                          "--format", "json")
    assert compared.exit_code == 0, compared.output
    report = json.loads(compared.output[compared.output.index("{"):])
    assert report["aggregates"]["a"] == by_replay["aggregates"]
    assert report["aggregates"]["b"]["nodesInUse"] == by_defaults["aggregates"]["nodesInUse"]
