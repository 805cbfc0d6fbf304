"""One model of time: every time argument (CLI options, API parameters, pages) names the same
instant for the same text, a number counting seconds from the run's start, and refuses an
instant outside the run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from flask import Flask
from sqlalchemy import Engine

from kaudit.dashboard import create_app
from kaudit.errors import InputError
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.instants import resolve_instant
from kaudit.queries.runs import get_run
from kaudit.queries.timeline import Span, run_span

SPAN = Span(start_us=1_000_000_000, end_us=1_000_000_000 + 600_000_000)


def test_numbers_count_from_the_start_and_times_are_absolute() -> None:
    assert resolve_instant("240", SPAN, "t") == SPAN.start_us + 240_000_000
    assert resolve_instant("2.4e2", SPAN, "t") == SPAN.start_us + 240_000_000
    assert resolve_instant(format_timestamp(SPAN.start_us + 240_000_000), SPAN, "t") == \
        SPAN.start_us + 240_000_000
    assert resolve_instant(None, SPAN, "t") is None
    for value, words in (("601", "601 s is outside the run"), ("-1", "outside the run"),
                         ("inf", "not a finite number"), ("soon", "nor an RFC 3339 time"),
                         ("1970-01-01T00:00:00Z", "is outside the run")):
        with pytest.raises(InputError, match=words):
            resolve_instant(value, SPAN, "t")


@pytest.fixture
def app(sample_runs: Engine, db_url: str) -> Iterator[Flask]:
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    yield app
    app.extensions["kaudit.engine"].dispose()


def test_every_time_argument_means_the_same_instant(
        app: Flask, sample_runs: Engine, run_kaudit: Callable[..., Result],
        tmp_path: Path) -> None:
    span = run_span(sample_runs, get_run(sample_runs, "default").id)
    seconds = 240.0
    moment = format_timestamp(span.at(seconds))
    client = app.test_client()

    def cli_events(since: str, until: str) -> list[dict[str, object]]:
        result = run_kaudit("events", "default", "--since", since, "--until", until)
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.output.splitlines()]

    window_end = format_timestamp(span.at(seconds + 30))
    by_number = cli_events(str(seconds), str(seconds + 30))
    by_time = cli_events(moment, window_end)
    assert by_number and by_number == by_time
    instants = [resolve_instant(str(event["time"]), span, "time") for event in by_number]
    assert all(span.at(seconds) <= instant <= span.at(seconds + 30)
               for instant in instants if instant is not None)

    for since, until in ((str(seconds), str(seconds + 30)), (moment, window_end)):
        page = client.get(f"/api/v1/runs/default/events?since={since}&until={until}"
                          "&limit=500").get_json()
        assert [item["seq"] for item in page["items"]] == [e["seq"] for e in by_number]

    for t in (str(seconds), moment):
        state = client.get(f"/api/v1/runs/default/state?t={t}").get_json()
        assert (state["t"], state["time"]) == (seconds, moment)
        history = client.get(f"/runs/default/history?t={t}").get_data(as_text=True)
        assert f'data-t="{seconds:g}"' in history or f'data-t="{seconds}"' in history

    snapshots = []
    for at in (str(seconds), moment):
        out = tmp_path / f"snapshot-{len(snapshots)}.json"
        result = run_kaudit("export", "default", "--format", "simulator-snapshot", "--at", at,
                            "-o", str(out), "--json")
        assert result.exit_code == 0, result.output
        snapshots.append(out.read_bytes())
        assert json.loads(result.output)["objects"] > 0
    assert snapshots[0] == snapshots[1]


def test_an_instant_outside_the_run_is_refused_everywhere(
        app: Flask, sample_runs: Engine, run_kaudit: Callable[..., Result],
        tmp_path: Path) -> None:
    for args in (("events", "default", "--since", "100000"),
                 ("events", "default", "--until", "1970-01-01T00:00:00Z"),
                 ("export", "default", "--format", "simulator-snapshot", "--at", "100000",
                  "-o", str(tmp_path / "out.json"))):
        result = run_kaudit(*args)
        assert result.exit_code == 2 and "is outside the run" in result.output, args
    assert not (tmp_path / "out.json").exists()
    answer = app.test_client().get("/api/v1/runs/default/events?since=100000")
    assert answer.status_code == 400 and "is outside the run" in answer.get_json()["error"]


def test_an_unknown_record_kind_is_refused_with_the_closest(
        sample_runs: Engine, run_kaudit: Callable[..., Result]) -> None:
    result = run_kaudit("events", "default", "--kind", "preemt")
    assert result.exit_code == 2 and "did you mean 'preempt'?" in result.output
