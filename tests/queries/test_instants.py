"""One model of time: every time argument (CLI options, API parameters, pages) names the same
instant for the same text, a number counting seconds from the run's start, and refuses an
instant outside the run; and the cluster at an instant answers the same everywhere (a node's
GPUs hold what the allocation chart counts)."""

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
from kaudit.queries.timeline import Span, cluster_at, node_at, run_span, series
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace

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


GPU = "nvidia.com/gpu"


def _chart_at(engine: Engine, run_id: int, span: Span, seconds: float) -> dict[str, float]:
    """The allocation chart's values at ``seconds`` (its last point at or before it)."""
    chart = series(engine, run_id, span)
    last = max(i for i, t in enumerate(chart["t"]) if t <= seconds)
    return {name: values[last] for name, values in chart["allocation"].items()}


def _gpus_held(answer: dict[str, object]) -> float:
    return sum(gpu["heldMilli"] for gpu in answer["gpus"]) / 1000  # type: ignore[attr-defined]


def test_a_nodes_gpus_at_t_hold_what_the_allocation_chart_counts(sample_runs: Engine) -> None:
    run_id = get_run(sample_runs, "default").id
    span = run_span(sample_runs, run_id)
    seconds = 240.0
    nodes = cluster_at(sample_runs, run_id, span, span.at(seconds))["nodes"]
    gpu_nodes = [name for name, count in zip(nodes["name"], nodes["extended"][GPU]
                                             ["allocatable"], strict=True) if count]
    answers = [node_at(sample_runs, run_id, span, name, seconds) for name in gpu_nodes]
    for answer in answers:
        requested = sum(pod["extended"].get(GPU, 0) for pod in answer["pods"])
        assert _gpus_held(answer) == requested, answer["gpus"]
        holders = {pod["pod"] for gpu in answer["gpus"] for pod in gpu["pods"]}
        assert holders == {pod["pod"] for pod in answer["pods"] if pod["extended"].get(GPU)}
    allocatable = sum(answer["allocatable"][GPU] for answer in answers)
    held = sum(_gpus_held(answer) for answer in answers)
    assert held > 0
    assert held / allocatable == _chart_at(sample_runs, run_id, span, seconds)[GPU]


def test_whole_and_shared_gpus_both_show_on_their_node(engine: Engine, tmp_path: Path) -> None:
    """A pod of two whole GPUs (``nvidia.com/gpu: 2``, devices left to the kubelet) and a pod
    sharing half a GPU (the GPU-sharing annotations, a device of the replay's choosing)."""
    node = make_node("gpu").capacity(cpu="16", memory="64Gi").extended(GPU, "4").obj()
    whole = make_pod("whole").req(cpu="1").extended(GPU, "2").obj()
    shared = (make_pod("shared").req(cpu="1").annotation("alibabacloud.com/gpu-milli", "500")
              .annotation("alibabacloud.com/gpu-count", "1").obj())
    later = make_pod("later").obj()  # the run goes on past the moment asked about
    trace = write_trace(tmp_path / "gpus.jsonl", (0.0, "ADDED", node), (1.0, "ADDED", shared),
                        (2.0, "ADDED", whole), (9.0, "ADDED", later))
    ingest_trace(engine, [TraceInput(trace)], name="gpus")
    config, registry = load()
    run_id, _ = replay_trace(engine, get_trace(engine, "gpus"), config, registry, name="gpus")
    span = run_span(engine, run_id)
    answer = node_at(engine, run_id, span, "gpu", 5.0)
    by_pod: dict[str, list[int]] = {}
    for gpu in answer["gpus"]:
        for pod in gpu["pods"]:
            by_pod.setdefault(pod["pod"], []).append(pod["milli"])
    assert by_pod == {"default/shared": [500], "default/whole": [1000, 1000]}
    assert _gpus_held(answer) == 2.5
    assert sum(gpu["freeMilli"] for gpu in answer["gpus"]) == 1500
    assert _chart_at(engine, run_id, span, 5.0)[GPU] == 2 / 4  # the chart counts whole GPUs
