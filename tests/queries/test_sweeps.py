"""The sweep report's statistics and `kaudit check --sweep`'s conditions, on cells written
directly (no replay): means, standard deviations and Student-t intervals computed by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from sqlalchemy import Engine, insert

from kaudit.errors import InputError
from kaudit.queries.sweep_checks import evaluate_sweep, parse_sweep_condition
from kaudit.queries.sweeps import (
    ALL,
    as_csv,
    as_markdown,
    as_text,
    fixed,
    interval,
    list_sweeps,
    sweep_report,
    t975,
)
from kaudit.store.models import Run, Sweep, SweepCell, Trace

NOW = datetime(2026, 11, 25, tzinfo=UTC)


def _sweep(engine: Engine, cells: list[tuple[str, str, int, str, dict[str, Any]]],
           reference: dict[str, Any] | None = None, baseline: str = "a") -> None:
    """A sweep named ``s`` with ``cells`` of (trace, config, seed, status, metrics)."""
    with engine.begin() as connection:
        trace_id = connection.execute(insert(Trace).values(
            name="t", content_hash="0" * 64, sources="[]", created_at=NOW,
            kaudit_version="test", event_count=0, kind_counts="{}").returning(Trace.id)
        ).scalar_one()
        sweep_id = connection.execute(insert(Sweep).values(
            name="s", baseline=baseline, created_at=NOW, updated_at=NOW, kaudit_version="test",
            spec=orjson.dumps({"configs": sorted({c[1] for c in cells}),
                               "traces": list(dict.fromkeys(c[0] for c in cells)),
                               "seeds": sorted({c[2] for c in cells}),
                               "reference": reference}).decode()).returning(Sweep.id)
        ).scalar_one()
        for position, (trace, config, seed, status, metrics) in enumerate(cells):
            name = f"s.{config}.{trace}.{seed}"
            run_id = connection.execute(insert(Run).values(
                name=name, trace_id=trace_id, status="complete" if status == "complete"
                else "failed", seed=seed, lifetime="recorded", config="{}", options="{}",
                created_at=NOW, kaudit_version="test").returning(Run.id)).scalar_one()
            connection.execute(insert(SweepCell).values(
                sweep_id=sweep_id, key=f"{position:064d}", position=position, trace=trace,
                config=config, seed=seed, run_name=name, status=status, attempts=1,
                run_id=run_id, metrics=orjson.dumps(metrics).decode(),
                error=None if status == "complete" else "boom"))


def _metrics(pending_at_end: int, scheduled: float, p95: float, gpu: float | None = None
             ) -> dict[str, Any]:
    out: dict[str, Any] = {"pendingAtEnd": pending_at_end, "scheduled": scheduled,
                           "pendingSeconds": {"p95": p95}}
    if gpu is not None:
        out["gpuUnallocatedAt100"] = gpu
    return out


@pytest.fixture
def three_seeds(engine: Engine) -> Engine:
    """Configs a (baseline) and b over seeds 1-3 of trace t."""
    a = [_metrics(1, 10, 5.0, 8.0), _metrics(2, 11, 6.0, 8.5), _metrics(3, 12, 7.0, 9.0)]
    b = [_metrics(2, 12, 15.0, 5.0), _metrics(4, 13, 16.0, 5.5), _metrics(6, 14.5, 17.5, 5.0)]
    _sweep(engine, [("t", "a", s + 1, "complete", m) for s, m in enumerate(a)]
           + [("t", "b", s + 1, "complete", m) for s, m in enumerate(b)],
           reference={"metric": "gpuUnallocatedAt100", "source": "a paper",
                      "values": {"a": 8.4, "b": 5.0}})
    return engine


def test_interval_is_students_t() -> None:
    stats = interval([1.0, 2.0, 3.0, 4.0])
    sd = math.sqrt(5 / 3)
    half = 3.182 * sd / 2
    assert stats["n"] == 4 and stats["mean"] == 2.5
    assert stats["sd"] == pytest.approx(sd)
    assert (stats["low"], stats["high"]) == (pytest.approx(2.5 - half),
                                             pytest.approx(2.5 + half))
    one = interval([7.0])
    assert (one["mean"], one["sd"], one["low"]) == (7.0, None, None)
    assert interval([])["mean"] is None
    assert (t975(9), t975(35), t975(500)) == (2.262, 2.042, 1.980)


def test_report_values_and_paired_differences(three_seeds: Engine) -> None:
    report = sweep_report(three_seeds, "s")
    assert report["cells"] == {"total": 6, "complete": 6, "failed": 0, "running": 0,
                               "abandoned": 0,
                               "pending": 0}
    keys = [m["key"] for m in report["metrics"]]
    assert keys == ["scheduled", "pendingAtEnd", "pendingP95", "gpuUnallocatedAt100"]
    row_b = next(r for r in report["rows"] if r["config"] == "b")
    assert row_b["n"] == 3 and row_b["seeds"] == [1, 2, 3]
    assert row_b["values"]["pendingAtEnd"]["mean"] == 4.0
    assert row_b["values"]["pendingAtEnd"]["sd"] == 2.0
    (comparison,) = report["comparisons"]
    assert (comparison["config"], comparison["baseline"], comparison["pairs"]) == ("b", "a", 3)
    diff = comparison["difference"]
    # pending at end: differences 1, 2, 3 → mean 2, sd 1, half-width 4.303/√3
    assert diff["pendingAtEnd"]["mean"] == 2.0
    assert diff["pendingAtEnd"]["low"] == pytest.approx(2 - 4.303 / math.sqrt(3))
    assert diff["pendingAtEnd"]["verdict"] == "within noise"
    # scheduled: +2, +2, +2.5 → more is better, beyond noise
    assert diff["scheduled"]["verdict"] == "better"
    # p95 pending: +10, +10, +10.5 → less is better: worse
    assert diff["pendingP95"]["mean"] == pytest.approx(10 + 1 / 6)
    assert diff["pendingP95"]["verdict"] == "worse"
    assert diff["gpuUnallocatedAt100"]["verdict"] == "better"
    reference = report["reference"]
    assert reference["metric"] == "gpuUnallocatedAt100" and reference["source"] == "a paper"
    assert [(r["config"], r["reference"], round(r["mean"], 3)) for r in reference["rows"]] == [
        ("a", 8.4, 8.5), ("b", 5.0, 5.167)]


def test_report_formats(three_seeds: Engine) -> None:
    report = sweep_report(three_seeds, "s", metrics=["pendingAtEnd", "pendingP95"])
    text = as_text(report)
    assert "Sweep s: 6 of 6 cells complete" in text
    assert "pending at end" in text and "+2.00 [-0.48, +4.48] within noise" in text
    markdown = as_markdown(report)
    assert "| metric | a (n=3) | b (n=3) |" in markdown
    lines = as_csv(report).splitlines()
    assert lines[0] == "kind,config,trace,metric,n,mean,sd,ci_low,ci_high,verdict"
    # mean 4, sd 2: Student's t reaches -0.97, but no count is below 0
    assert any(line.startswith("value,b,t,pendingAtEnd,3,4,2,0,8.96868") for line in lines)
    assert any(line.startswith("difference vs a,b,t,pendingP95,3,10.1667") for line in lines)
    assert "a paper" not in text  # the reference's metric was left out
    full = as_text(sweep_report(three_seeds, "s"))
    assert "GPU unallocated at 100 % arrived: kaudit beside the published values (a paper)" in full
    assert "8.50 % ± 1.24  0.50     8.40 %               +0.10\n" in full


def test_several_traces_are_also_pooled(engine: Engine) -> None:
    _sweep(engine, [(trace, config, seed, "complete", _metrics(seed + (config == "b"), 1, 1))
                    for trace in ("x", "y") for config in ("a", "b") for seed in (1, 2)])
    report = sweep_report(engine, "s")
    assert [(r["config"], r["trace"], r["n"]) for r in report["rows"]] == [
        ("a", "x", 2), ("b", "x", 2), ("a", "y", 2), ("b", "y", 2), ("a", ALL, 4),
        ("b", ALL, 4)]
    pooled = next(c for c in report["comparisons"] if c["trace"] == ALL)
    assert pooled["pairs"] == 4
    assert pooled["difference"]["pendingAtEnd"]["sd"] == 0.0
    assert pooled["difference"]["pendingAtEnd"]["verdict"] == "worse"


def test_failed_cells_are_listed_not_counted(engine: Engine) -> None:
    _sweep(engine, [("t", "a", 1, "complete", _metrics(1, 1, 1)),
                    ("t", "a", 2, "failed", {}), ("t", "b", 1, "complete", _metrics(2, 1, 1))])
    report = sweep_report(engine, "s")
    assert report["cells"]["failed"] == 1
    assert report["failures"] == [{"config": "a", "trace": "t", "seed": 2, "error": "boom"}]
    assert next(r for r in report["rows"] if r["config"] == "a")["n"] == 1
    assert list_sweeps(engine)[0] | {"updatedAt": None} == {
        "name": "s", "description": "", "configs": ["a", "b"], "traces": ["t"],
        "seeds": [1, 2], "baseline": "a", "cells": 3, "complete": 2, "failed": 1,
        "running": 0, "abandoned": 0, "pending": 0, "updatedAt": None}


def test_unknown_sweep_baseline_and_metric_are_input_errors(three_seeds: Engine) -> None:
    with pytest.raises(InputError, match="no sweep named 'nope' \\(sweeps: s\\)"):
        sweep_report(three_seeds, "nope")
    with pytest.raises(InputError, match="--baseline 'c': not a configuration"):
        sweep_report(three_seeds, "s", baseline="c")
    with pytest.raises(InputError, match="--metric 'speed'"):
        sweep_report(three_seeds, "s", metrics=["speed"])


@pytest.mark.parametrize(("condition", "failed"), [
    ("pending_at_end>baseline", False),    # +2 [-0.48, +4.48]: within noise
    ("p95_pending>baseline", True),        # +10.17 [+9.45, +10.88]
    ("p95_pending>+9s", True),
    ("p95_pending>+11s", False),
    ("p95_pending<+11s", True),            # entirely below 11
    ("pending_at_end>1", False),           # b's mean 4 ± 4.97: not beyond 1
    ("scheduled>10", True),                # b's mean 13.17 ± 3.1
    ("scheduled!=13", False),
    ("gpu_unallocated>baseline", False),
    ("gpu_unallocated<baseline", True),
])
def test_sweep_conditions_fail_only_beyond_noise(three_seeds: Engine, condition: str,
                                                 failed: bool) -> None:
    verdicts = evaluate_sweep(parse_sweep_condition(condition), sweep_report(three_seeds, "s"))
    # A comparison checks b against a; an absolute threshold checks both configurations.
    assert [v.config for v in verdicts] == (["a", "b"] if ">b" not in condition
                                            and "<b" not in condition
                                            and "+" not in condition else ["b"])
    verdict = verdicts[-1]
    assert verdict.failed is failed, verdict.message
    assert "95 % interval" in verdict.message


@pytest.mark.parametrize(("condition", "message"), [
    ("changed>5%", "unknown metric 'changed'"),
    ("pending_at_end>5%", "a percentage applies to changed or moved"),
    ("pending_at_end==0", "== cannot be decided beyond noise"),
    ("speed>1", "unknown metric 'speed'"),
])
def test_sweep_conditions_refused(condition: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_sweep_condition(condition)


def test_a_condition_that_cannot_be_checked_is_an_error(engine: Engine) -> None:
    _sweep(engine, [("t", "a", seed, "complete", _metrics(seed, 1, 1)) for seed in (1, 2)])
    report = sweep_report(engine, "s")
    with pytest.raises(InputError, match="no configuration to compare with its baseline"):
        evaluate_sweep(parse_sweep_condition("pending_at_end>baseline"), report)
    with pytest.raises(InputError, match="no cell of sweep s has GPU unallocated at 100 % "
                                         "arrived \\(replay with gpuReport: true\\)"):
        evaluate_sweep(parse_sweep_condition("gpu_unallocated>5"), report)
    # An absolute threshold applies to the one configuration there is.
    (verdict,) = evaluate_sweep(parse_sweep_condition("pending_at_end>-10"), report)
    assert verdict.failed and verdict.config == "a"
    assert "pending at end of a = 0 to 7.853 (95 % interval); threshold -10" in (
        verdict.message)
    (same,) = evaluate_sweep(parse_sweep_condition("scheduled>0"), report)
    # Every seed gave 1: an interval of width 0, not "one seed".
    assert "= 1 to 1 (95 % interval)" in same.message and same.failed


def test_an_interval_is_cut_at_what_the_metric_can_be(engine: Engine) -> None:
    """Two seeds wait 0 s, one 30 s: Student's t reaches far below 0 s, which no pending time
    can; the interval is cut there, and the report says so."""
    stats = interval([0.0, 0.0, 30.0], "seconds")
    assert stats["low"] == 0.0 and stats["cut"] is True
    assert stats["high"] == pytest.approx(10 + 4.303 * math.sqrt(300) / math.sqrt(3))
    share = interval([0.2, 0.9, 0.95], "ratio")
    assert share["high"] == 1.0 and share["cut"] is True
    assert interval([-3.0, 1.0, 5.0])["low"] < 0  # a difference may be negative
    _sweep(engine, [("t", "a", seed, "complete", _metrics(0, 1, p95))
                    for seed, p95 in ((1, 0.0), (2, 0.0), (3, 30.0))])
    report = sweep_report(engine, "s", metrics=["pendingP95"])
    assert report["rows"][0]["values"]["pendingP95"]["low"] == 0.0
    text = as_text(report)
    assert "10 s [0.00 s to 53.03 s]" in text and "cut there" in text


def test_imbalance_is_neither_better_nor_worse(engine: Engine) -> None:
    """Spreading wants imbalance low, bin packing high: the sweep says higher or lower."""
    _sweep(engine, [("t", config, seed, "complete", {"imbalance": value + seed / 1000})
                    for config, value in (("a", 0.2), ("b", 0.3)) for seed in (1, 2, 3)])
    (comparison,) = sweep_report(engine, "s")["comparisons"]
    assert comparison["difference"]["imbalance"]["verdict"] == "higher"


def test_a_configuration_without_the_metric_is_an_error_not_a_pass(engine: Engine) -> None:
    _sweep(engine, [("t", "a", seed, "complete", _metrics(1, 1, 1, gpu=5.0 + seed))
                    for seed in (1, 2)]
           + [("t", "b", seed, "complete", _metrics(1, 1, 1)) for seed in (1, 2)])
    report = sweep_report(engine, "s")
    with pytest.raises(InputError, match="'gpu_unallocated>50' cannot be evaluated on trace t: "
                                         "GPU unallocated at 100 % arrived of b has no value"):
        evaluate_sweep(parse_sweep_condition("gpu_unallocated>50"), report)


def test_the_report_rounds_half_up_and_sends_its_texts(engine: Engine) -> None:
    """A mean of 93.25 attempts reads 93.3 (half up, as people round) in the text report, and
    the API's report carries that text for the page to show, not a number to round again."""
    cells = [("t", "a", seed, "complete", {"attempts": value})
             for seed, value in enumerate((90, 93, 94, 96), start=1)]
    _sweep(engine, cells)
    report = sweep_report(engine, "s", metrics=["attempts"])
    stats = report["rows"][0]["values"]["attempts"]
    assert stats["mean"] == 93.25 and stats["text"].startswith("93.3 ± ")
    assert stats["text"] in as_text(report)
    assert fixed(0.125, 2) == "0.13" and fixed(-0.001, 2, sign=True) == "+0.00"
