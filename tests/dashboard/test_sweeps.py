"""The sweep pages and their JSON API, on a real sweep of the sample trace (two configurations
× two seeds, on a local Dask cluster): through Flask's test client on both backends, and in a
real browser (charts with error bars, the metric selector)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine

from kaudit.dashboard import create_app
from kaudit.queries.sweeps import sweep_report
from kaudit.store.schema import open_database
from kaudit.sweep.run import run_sweep
from kaudit.sweep.spec import read_spec
from tests.dashboard.test_browser import (
    Visit,
    _chromium,
    _until,
    launched,
    serving,
)

REPO = Path(__file__).resolve().parents[2]
CONFIGS = ["default", "bin-packing"]
RUNS = ["tuning.default.sample.s1", "tuning.default.sample.s2",
        "tuning.bin-packing.sample.s1", "tuning.bin-packing.sample.s2"]


def run_tuning_sweep(engine: Engine, db_url: str, directory: Path,
                     one_seed_config: bool = False) -> dict[str, Any]:
    """Sweep ``tuning``: the sample trace under the defaults and bin packing, seeds 1 and 2,
    with made-up published values of pending p95 to set beside kaudit's. With
    ``one_seed_config``, a third configuration (the defaults breaking ties by name) replayed
    with seed 1 only: its means and its difference have no interval."""
    sample, packing = REPO / "traces" / "sample.jsonl", REPO / "traces" / "sample-bin-packing.yaml"
    extra = ""
    if one_seed_config:
        cells = [(c, s) for c in ("default", "bin-packing") for s in (1, 2)]
        extra = ("  - {name: name-order, replay: {tieBreak: name}}\ncells:\n" + "".join(
            f"  - {{config: {c}, seed: {s}}}\n" for c, s in [*cells, ("name-order", 1)]))
    spec = directory / "tuning.yaml"
    spec.write_text(f"""
name: tuning
description: bin packing against kube-scheduler's defaults
traces: [{{name: sample, files: [{sample}]}}]
seeds: [1, 2]
reference:
  metric: pendingP95
  source: a published table
  values: {{sample: {{default: 70, bin-packing: 60}}}}
configs:
  - {{name: default}}
  - {{name: bin-packing, file: {packing}}}
{extra}""")
    tally = run_sweep(engine, db_url, read_spec(spec), workers=1)
    cells = 5 if one_seed_config else 4
    assert (tally.total, tally.complete, tally.failed) == (cells, cells, 0)
    return sweep_report(engine, "tuning")


@pytest.fixture
def sweep_client(engine: Engine, db_url: str, tmp_path: Path) -> Iterator[FlaskClient]:
    run_tuning_sweep(engine, db_url, tmp_path)
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    yield app.test_client()
    app.extensions["kaudit.engine"].dispose()


def _json(client: FlaskClient, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.data[:300])
    assert response.is_json, url
    return response.get_json()


def test_the_api_answers_the_sweep_report(sweep_client: FlaskClient, engine: Engine) -> None:
    listed = _json(sweep_client, "/api/v1/sweeps")["sweeps"]
    assert [s["name"] for s in listed] == ["tuning"]
    assert {k: listed[0][k] for k in ("cells", "complete", "failed", "running", "abandoned",
                                      "pending", "configs", "traces", "seeds", "baseline")} == {
        "cells": 4, "complete": 4, "failed": 0, "running": 0, "abandoned": 0, "pending": 0,
        "configs": CONFIGS, "traces": ["sample"], "seeds": [1, 2], "baseline": "default"}

    report = _json(sweep_client, "/api/v1/sweeps/tuning")
    assert report == json.loads(json.dumps(sweep_report(engine, "tuning")))
    assert report["cells"] == {"total": 4, "complete": 4, "failed": 0, "running": 0,
                               "abandoned": 0,
                               "pending": 0}
    assert report["configs"] == CONFIGS and report["baseline"] == "default"
    assert [(r["config"], r["trace"], r["n"], r["seeds"]) for r in report["rows"]] == [
        ("default", "sample", 2, [1, 2]), ("bin-packing", "sample", 2, [1, 2])]
    keys = [m["key"] for m in report["metrics"]]
    assert "pendingP95" in keys and not any(k.startswith("gpu") for k in keys)
    for row in report["rows"]:
        assert list(row["values"]) == keys
        for stats in row["values"].values():
            assert stats["n"] == 2 and stats["low"] <= stats["mean"] <= stats["high"]
    (comparison,) = report["comparisons"]
    assert (comparison["config"], comparison["trace"], comparison["baseline"],
            comparison["pairs"]) == ("bin-packing", "sample", "default", 2)
    assert set(comparison["difference"]) == set(keys)
    assert all(d["verdict"] in ("better", "worse", "higher", "lower", "within noise")
               for d in comparison["difference"].values())
    assert [r["run"] for r in report["runs"]] == RUNS
    assert {r["status"] for r in report["runs"]} == {"complete"} and report["failures"] == []
    reference = report["reference"]
    assert (reference["metric"], reference["source"]) == ("pendingP95", "a published table")
    assert [(r["config"], r["reference"]) for r in reference["rows"]] == [
        ("default", 70), ("bin-packing", 60)]

    # Another baseline: the paired differences change sign.
    flipped = _json(sweep_client, "/api/v1/sweeps/tuning?baseline=bin-packing")
    assert flipped == json.loads(json.dumps(sweep_report(engine, "tuning",
                                                         baseline="bin-packing")))
    (against,) = flipped["comparisons"]
    assert (against["config"], against["baseline"]) == ("default", "bin-packing")
    for key, stats in against["difference"].items():
        assert stats["mean"] == pytest.approx(-comparison["difference"][key]["mean"])
    # Chosen metrics, in the order asked; repeated or comma-separated.
    chosen = _json(sweep_client, "/api/v1/sweeps/tuning?metric=pendingP95&metric=scheduled")
    assert [m["key"] for m in chosen["metrics"]] == ["pendingP95", "scheduled"]
    assert all(list(r["values"]) == ["pendingP95", "scheduled"] for r in chosen["rows"])
    assert _json(sweep_client, "/api/v1/sweeps/tuning?metric=pendingP95,scheduled") == chosen
    assert chosen == json.loads(json.dumps(sweep_report(
        engine, "tuning", metrics=["pendingP95", "scheduled"])))

    # The pages: the list, and the sweep's shell with its counts and choices.
    index = sweep_client.get("/sweeps")
    assert index.status_code == 200 and b"js/sweeps.js" in index.data
    page = sweep_client.get("/sweeps/tuning?metric=scheduled")
    body = page.get_data(as_text=True)
    assert page.status_code == 200 and 'data-sweep="tuning"' in body
    assert 'data-metric="scheduled"' in body and "4 of 4 cells complete" in body
    assert "/static/vendor/plotly-" in body and "js/sweep.js" in body and "<script>" not in body
    assert '<a href="/sweeps">Sweeps</a>' in body  # the navigation links to the sweeps
    assert '<option value="default" selected>' in body
    assert page.headers["Cache-Control"] == "no-store"  # a sweep can be run again
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_bad_requests_name_the_parameter(sweep_client: FlaskClient) -> None:
    """Unknown sweeps answer 404, bad parameters 400 naming the parameter. The checks are the
    dashboard's, the same on both backends: one sweep on SQLite is enough."""
    for url, status, words in [
        ("/api/v1/sweeps/nope", 404, "no sweep named 'nope' (sweeps: tuning)"),
        ("/api/v1/sweeps/tuning?metric=bogus", 400, "metric: 'bogus' is not a metric"),
        ("/api/v1/sweeps/tuning?metric=pendingP95,bogus", 400, "metric: 'bogus'"),
        ("/api/v1/sweeps/tuning?baseline=nope", 400,
         "baseline: 'nope' is not a configuration of sweep tuning (default, bin-packing)"),
        ("/api/v1/sweeps/tuning?baseline=" + "x" * 101, 400, "baseline: longer than 100"),
    ]:
        answer = _json(sweep_client, url, status)
        assert words in answer["error"] and answer["status"] == status, (url, answer)
    page = sweep_client.get("/sweeps/nope")
    assert page.status_code == 404 and b"no sweep named" in page.data
    assert sweep_client.get("/sweeps/tuning?metric=bogus").status_code == 400
    assert sweep_client.get("/sweeps/tuning?baseline=nope").status_code == 400


def test_a_database_without_sweeps(engine: Engine, db_url: str) -> None:
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    client = app.test_client()
    try:
        assert _json(client, "/api/v1/sweeps") == {"sweeps": []}
        answer = _json(client, "/api/v1/sweeps/tuning", 404)
        assert "none yet" in answer["error"]
        assert client.get("/sweeps").status_code == 200
    finally:
        app.extensions["kaudit.engine"].dispose()


# -- in a browser ----------------------------------------------------------------------------

BROWSER_CONFIGS = [*CONFIGS, "name-order"]


@pytest.fixture(scope="module")
def sweep_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A live ``kaudit serve`` on an SQLite database holding sweep ``tuning`` with a third
    configuration replayed with one seed."""
    chromium = _chromium()
    directory = tmp_path_factory.mktemp("sweep")
    url = f"sqlite:///{directory / 'kaudit.db'}"
    engine = open_database(url)
    try:
        report = run_tuning_sweep(engine, url, directory, one_seed_config=True)
        with serving(url) as base:
            yield {"base": base, "report": report, "chromium": chromium}
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def sweep_browser(sweep_server: dict[str, Any]) -> Iterator[Any]:
    with launched(sweep_server["chromium"]) as browser:
        yield browser


def _chart(page: Any, chart: str) -> list[dict[str, Any]]:
    """The Plotly traces of a drawn chart: name, bars, error bars (``None`` where there is
    none)."""
    return page.evaluate("""(id) => (document.getElementById(id).data || []).map((t) => ({
        name: t.name, x: t.x, y: t.y, visible: t.error_y && t.error_y.visible,
        up: t.error_y && t.error_y.array.map((v) => (Number.isFinite(v) ? v : null)),
        down: t.error_y && t.error_y.arrayminus.map((v) => (Number.isFinite(v) ? v : null))
        }))""", chart)


def _bars_drawn(page: Any, chart: str) -> int:
    """How many error bars the chart drew (SVG paths)."""
    return int(page.locator(f"#{chart} path.yerror").count())


def _drawn(page: Any) -> str:
    return str(page.evaluate("document.getElementById('result').dataset.drawn"))


def _rows(page: Any, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table} tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")


def _error_bars(stats: dict[str, Any], factor: float) -> tuple[Any, Any]:
    if stats["low"] is None:
        return None, None
    return (pytest.approx((stats["high"] - stats["mean"]) * factor),
            pytest.approx((stats["mean"] - stats["low"]) * factor))


def test_the_sweep_page_draws_means_with_error_bars(sweep_server: dict[str, Any],
                                                    sweep_browser: Any) -> None:
    report = sweep_server["report"]
    visit = Visit(sweep_browser, sweep_server["base"])
    page = visit.open("/sweeps")
    listed = _rows(page, "sweeps-table")
    assert [(r[0], r[2], r[6], r[7]) for r in listed] == [
        ("tuning", "3: default, bin-packing, name-order", "5", "5")]
    visit.screenshot("sweeps")
    with page.expect_navigation():
        page.click("#sweeps-table a:text-is('tuning')")
    page.wait_for_selector("body[data-ready]")
    assert page.url.endswith("/sweeps/tuning")
    _until(page, lambda: _drawn(page) == "pendingP95")
    assert page.input_value("#metric") == "pendingP95"  # no GPU metric: pending p95
    assert "5 of 5 cells complete" in page.inner_text("p.lead")

    def expect_means(key: str, factor: float = 1.0) -> None:
        """One bar per configuration at its mean, error bars to the interval's ends; the
        configuration of one seed has none."""
        (bars,) = _chart(page, "chart-means-0")
        stats = [r["values"][key] for r in report["rows"]]
        assert bars["x"] == BROWSER_CONFIGS and bars["visible"] is True
        assert bars["y"] == pytest.approx([s["mean"] * factor for s in stats])
        assert len(bars["up"]) == len(bars["down"]) == len(BROWSER_CONFIGS)
        assert list(zip(bars["up"], bars["down"], strict=True)) == [
            _error_bars(s, factor) for s in stats]
        assert bars["up"][2] is None and bars["down"][2] is None
        assert _bars_drawn(page, "chart-means-0") == 2

    expect_means("pendingP95")
    # the paired differences against the baseline, with their intervals and a zero line
    differences = {c["config"]: c["difference"]["pendingP95"] for c in report["comparisons"]}
    series = {s["name"]: s for s in _chart(page, "chart-differences")}
    packing, named = differences["bin-packing"], differences["name-order"]
    assert named["verdict"] == "one pair: no interval"
    assert series[named["verdict"]]["x"] == ["name-order − default"]
    assert series[named["verdict"]]["up"] == [None]
    bar = series[packing["verdict"]]
    assert bar["x"] == ["bin-packing − default"]
    assert bar["y"] == pytest.approx([packing["mean"]])
    assert (bar["up"][0], bar["down"][0]) == _error_bars(packing, 1)
    assert _bars_drawn(page, "chart-differences") == 1  # none for the one pair
    assert page.evaluate("document.getElementById('chart-differences').layout.shapes[0].y0") == 0
    assert page.locator("#chart-differences .shapelayer path").count() == 1

    # the tables: every metric, the comparisons' verdicts, the published values, the runs
    values = _rows(page, "values-table")
    assert len(values) == len(report["metrics"])
    p95 = next(r for r in values if r[0] == "pending p95")
    # two seeds far apart: the interval reaches below 0 s and is cut there
    # (the report's own texts: the cut end reads as `kaudit sweep report` writes it)
    assert p95[1].startswith("73.98 s [0.00 s to ") and p95[2] == "60.96 s ± 0.00 s"
    cut = next(r for r in report["rows"] if r["config"] == "default")
    assert p95[1] == cut["values"]["pendingP95"]["text"]
    assert " ± " not in p95[3]  # one seed: no interval
    # an interval cut at what the metric can be (never below 0 s) is shown as its two ends,
    # not as a symmetric ± that would reach below it
    labels = {m["label"]: m["key"] for m in report["metrics"]}
    for row in values:
        for cell, stats in zip(row[1:], (r["values"][labels[row[0]]] for r in report["rows"]),
                               strict=False):
            if stats.get("cut"):
                assert " to " in cell and " ± " not in cell, (row[0], cell)
    assert any(stats.get("cut") for r in report["rows"] for stats in r["values"].values())
    assert page.locator("#values-table tr.chosen").inner_text().startswith("pending p95")
    verdicts = {r[0]: r[1:] for r in _rows(page, "comparisons-table")}
    assert verdicts["pending p95"][0].endswith(packing["verdict"])
    assert verdicts["pending p95"][1].endswith("one pair: no interval")
    reference = _rows(page, "reference-table")
    assert [(r[0], r[3]) for r in reference] == [("default", "70 s"), ("bin-packing", "60 s")]
    assert "No cell failed" in page.inner_text("#failures")
    runs = _rows(page, "runs-table")
    assert [r[4] for r in runs] == [r["run"] for r in report["runs"]] and len(runs) == 5
    assert page.locator("#runs-table a", has_text=RUNS[2]).get_attribute("href") == \
        f"/runs/{RUNS[2]}"
    assert page.locator("#runs-table a", has_text="diff against default").count() == 3
    visit.screenshot("sweep")

    # another metric: the charts are drawn again, ratios in percent
    page.select_option("#metric", "cpuAllocated")
    _until(page, lambda: _drawn(page) == "cpuAllocated")
    expect_means("cpuAllocated", 100)
    assert page.url.endswith("/sweeps/tuning?metric=cpuAllocated&baseline=default")
    assert page.locator("#values-table tr.chosen").inner_text().startswith("cpu allocated")
    # another baseline: the comparisons are fetched again
    page.select_option("#baseline", "bin-packing")
    _until(page, lambda: "default − bin-packing" in [
        x for s in _chart(page, "chart-differences") for x in s["x"]])
    assert page.input_value("#metric") == "cpuAllocated"
    assert page.url.endswith("/sweeps/tuning?metric=cpuAllocated&baseline=bin-packing")
    visit.screenshot("sweep-cpu-against-bin-packing")
    visit.close()


def test_the_sweep_page_opens_on_its_choices(sweep_server: dict[str, Any],
                                            sweep_browser: Any) -> None:
    visit = Visit(sweep_browser, sweep_server["base"])
    page = visit.open("/sweeps/tuning?metric=attempts&baseline=bin-packing")
    assert page.input_value("#metric") == "attempts" and _drawn(page) == "attempts"
    assert page.input_value("#baseline") == "bin-packing"
    assert sorted(x for s in _chart(page, "chart-differences") for x in s["x"]) == [
        "default − bin-packing", "name-order − bin-packing"]
    visit.close()
