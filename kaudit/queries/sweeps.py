"""A sweep's report: every summary metric per configuration (and per trace) over seeds, as
mean, standard deviation and 95 % interval, and each configuration against the baseline.

The metrics are those of ``kaudit diff`` (:data:`kaudit.queries.summary_rows.DIFF_METRICS`),
and, for runs replayed with a GPU report, the FGD paper's values at 100 and 130 % arrived
workload; each cell's were measured when it finished (stored with the cell), so the report
reads one row per cell. The interval of a mean over n seeds is Student's t: mean ± t(0.975,
n−1)·sd/√n, cut at what the metric can be (never below 0, a share never above 100 %), and
said so. Against the baseline, cells are paired by trace and seed (the same arrivals and
tie-break seed under both configurations) and the interval is that of the mean paired
difference; a difference whose interval excludes 0 is "beyond noise".
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import orjson
from sqlalchemy import Engine, delete, select

from kaudit.errors import InputError, UnknownObjectError
from kaudit.eventlog.runs import RunStatus, effective_status
from kaudit.queries.summary_rows import DIFF_METRICS, format_value
from kaudit.store.models import Run, Sweep, SweepCell

ALL = "(all traces)"

#: Student's t at 0.975 by degrees of freedom (two-sided 95 %); beyond the table the value of
#: the next smaller listed degree is used (slightly wider, never narrower).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
         16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
         23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045,
         30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    if df < 1:
        return math.inf
    return _T975[max(d for d in _T975 if d <= df)]


@dataclass(frozen=True)
class SweepMetric:
    key: str
    label: str
    #: count, seconds, ratio (0–1) or percent (0–100)
    unit: str
    read: Callable[[dict[str, Any]], Any]
    #: +1 when more is better, -1 when less is, 0 when neither.
    better: int
    condition: str | None = None


def _key(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda metrics: metrics.get(name)


#: Which way is better, where it does not depend on the configuration's objective. Imbalance
#: and nodes in use are neutral (reported higher or lower): spreading wants them low and
#: bin packing (MostAllocated, RequestedToCapacityRatio) high, and a sweep compares
#: configurations with either objective against one baseline.
_BETTER = {"scheduled": 1, "cpuAllocated": 1, "memoryAllocated": 1, "nodesInUse": 0,
           "imbalance": 0}
METRICS: tuple[SweepMetric, ...] = (
    *(SweepMetric(m.key, m.label, m.unit, m.read, _BETTER.get(m.key, -1), m.condition)
      for m in DIFF_METRICS),
    SweepMetric("gpuUnallocatedAt100", "GPU unallocated at 100 % arrived", "percent",
                _key("gpuUnallocatedAt100"), -1, "gpu_unallocated"),
    SweepMetric("gpuFragAmountAt100", "GPU fragmentation at 100 % arrived", "percent",
                _key("gpuFragAmountAt100"), -1, "gpu_frag_amount"),
    SweepMetric("gpuUnallocatedAt130", "GPU unallocated at 130 % arrived", "percent",
                _key("gpuUnallocatedAt130"), -1),
    SweepMetric("replaySeconds", "replay wall time", "seconds", _key("replaySeconds"), 0),
)
BY_KEY = {m.key: m for m in METRICS}
BY_CONDITION = {m.condition: m for m in METRICS if m.condition}


def fixed(value: float, digits: int, *, sign: bool = False, grouping: bool = False) -> str:
    """``value`` with ``digits`` decimals, rounded half up as people do (93.25 → 93.3) from
    its shortest decimal form, not half to even on its binary value as ``format`` does."""
    rounded = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP)
    if rounded == 0:
        rounded = abs(rounded)  # no "-0.00"
    return f"{rounded:{'+' if sign else ''}{',' if grouping else ''}.{digits}f}"


def format_metric(unit: str, value: Any) -> str:
    if value is None:
        return "–"
    if unit == "percent":
        return f"{fixed(value, 2)} %"
    if unit == "count" and isinstance(value, float):
        return fixed(value, 1, grouping=True)
    if unit == "ratio":
        return f"{fixed(value * 100, 1)}%"
    return format_value(unit, value)


#: The largest value of a share: a ratio is at most 1, a percent at most 100.
_CEILING = {"ratio": 1.0, "percent": 100.0}


def interval(values: list[float], unit: str | None = None) -> dict[str, Any]:
    """n, mean, standard deviation and the 95 % interval of the mean of ``values``.

    With ``unit`` (the values are a metric's, not differences) the interval is cut to what
    the metric can be: no metric of a sweep is below 0, and a share is at most 100 %. Student's
    t can reach past those bounds when a few seeds differ widely; ``cut`` then says the
    interval was cut, so no report shows a pending time below 0 s."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "low": None, "high": None,
                "min": None, "max": None, "cut": False}
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if n > 1 else None
    half = t975(n - 1) * sd / math.sqrt(n) if sd is not None else None
    low = mean - half if half is not None else None
    high = mean + half if half is not None else None
    cut = False
    if unit is not None and low is not None and high is not None:
        ceiling = _CEILING.get(unit, math.inf)
        cut = low < 0 or high > ceiling
        low, high = max(low, 0.0), min(high, ceiling)
    return {"n": n, "mean": mean, "sd": sd, "low": low, "high": high,
            "min": min(values), "max": max(values), "cut": cut}


@dataclass(frozen=True)
class _Cell:
    trace: str
    config: str
    seed: int
    status: str
    run: str | None
    metrics: dict[str, Any]
    error: str | None
    seconds: float | None


def sweep_identity(sweep_id: int, created_at: datetime) -> str:
    """What tells a sweep's runs from those of a removed sweep of the same name (whose id may
    be reused): its id and creation time. A cell's run carries ``IDENTITY/CELL_ID`` in the
    labels of its options (``cell``)."""
    moment = created_at if created_at.tzinfo is not None else created_at.replace(tzinfo=UTC)
    return f"{sweep_id}@{moment.astimezone(UTC).isoformat()}"


def cell_of(options: str | None) -> str | None:
    """The ``IDENTITY/CELL_ID`` a run's stored options name, if it is a sweep cell's run."""
    if not options:
        return None
    labels = orjson.loads(options).get("labels") or {}
    cell = labels.get("cell") if isinstance(labels, dict) else None
    return cell if isinstance(cell, str) else None


def is_sweep_run(options: str | None, identity: str) -> bool:
    return (cell_of(options) or "").startswith(f"{identity}/")


_SWEEP_COLUMNS = (Sweep.id, Sweep.name, Sweep.spec, Sweep.baseline, Sweep.updated_at,
                  Sweep.coordinator_host, Sweep.coordinator_pid, Sweep.coordinator_heartbeat_at)
#: A cell's states as the report and the list count them. ``abandoned``: marked running, but
#: no ``kaudit sweep`` is running the sweep any more (killed); the next one retries it.
STATES = ("complete", "failed", "running", "abandoned", "pending")


def _coordinated(sweep: Any) -> bool:
    """Whether a ``kaudit sweep`` process is running the sweep now."""
    return sweep.coordinator_host is not None and effective_status(
        RunStatus.RUNNING, sweep.coordinator_host, sweep.coordinator_pid,
        sweep.coordinator_heartbeat_at) == RunStatus.RUNNING


def _state(status: str, has_run: bool, coordinated: bool) -> str:
    if status == "complete" and not has_run:
        return "pending"  # its run was removed: the next sweep redoes it
    if status == "running" and not coordinated:
        return "abandoned"
    return status


def _sweep(engine: Engine, name: str) -> tuple[Any, dict[str, Any]]:
    with engine.connect() as connection:
        row = connection.execute(select(*_SWEEP_COLUMNS).where(Sweep.name == name)).first()
        if row is None:
            names = list(connection.scalars(select(Sweep.name).order_by(Sweep.name)))
            raise UnknownObjectError(f"no sweep named {name!r}" + (
                f" (sweeps: {', '.join(names)})" if names else
                " (none yet: `kaudit sweep SPEC.yaml` runs one)"))
        return row, orjson.loads(row.spec)


def _cells(engine: Engine, sweep_id: int, coordinated: bool) -> list[_Cell]:
    with engine.connect() as connection:
        rows = connection.execute(
            select(SweepCell.trace, SweepCell.config, SweepCell.seed, SweepCell.status,
                   SweepCell.metrics, SweepCell.error, SweepCell.seconds, Run.name)
            .outerjoin(Run, Run.id == SweepCell.run_id)
            .where(SweepCell.sweep_id == sweep_id).order_by(SweepCell.position)).all()
    return [_Cell(r.trace, r.config, r.seed, _state(r.status, r.name is not None, coordinated),
                  r.name, orjson.loads(r.metrics) if r.metrics and r.name else {}, r.error,
                  r.seconds) for r in rows]


def list_sweeps(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        sweeps = connection.execute(select(*_SWEEP_COLUMNS).order_by(Sweep.created_at)).all()
        counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for sweep_id, status, run_id in connection.execute(
                select(SweepCell.sweep_id, SweepCell.status, SweepCell.run_id)):
            counts[sweep_id][status if status != "complete" or run_id is not None
                             else "pending"] += 1
    out = []
    for sweep in sweeps:
        spec = orjson.loads(sweep.spec)
        tally = counts[sweep.id]
        if not _coordinated(sweep):
            tally["abandoned"] = tally.pop("running", 0)
        out.append({"name": sweep.name, "description": spec.get("description") or "",
                    "configs": spec.get("configs", []), "traces": spec.get("traces", []),
                    "seeds": spec.get("seeds", []), "baseline": sweep.baseline,
                    "cells": sum(tally.values()),
                    **{k: tally.get(k, 0) for k in STATES},
                    "updatedAt": sweep.updated_at.isoformat()})
    return out


def _groups(cells: list[_Cell], traces: list[str]) -> list[tuple[str, str, list[_Cell]]]:
    grouped: dict[tuple[str, str], list[_Cell]] = defaultdict(list)
    for cell in cells:
        if cell.status == "complete":
            grouped[(cell.config, cell.trace)].append(cell)
            if len(traces) > 1:
                grouped[(cell.config, ALL)].append(cell)
    return [(config, trace, members) for (config, trace), members in grouped.items()]


def _paired(base: list[_Cell], other: list[_Cell], metric: SweepMetric) -> list[float]:
    by_slot = {(c.trace, c.seed): metric.read(c.metrics) for c in base}
    out = []
    for cell in other:
        a, b = by_slot.get((cell.trace, cell.seed)), metric.read(cell.metrics)
        if isinstance(a, int | float) and isinstance(b, int | float):
            out.append(float(b) - float(a))
    return out


def _verdict(stats: dict[str, Any], better: int) -> str:
    low, high = stats["low"], stats["high"]
    if stats["n"] == 0:
        return "not comparable"
    if low is None or high is None:
        return "one pair: no interval"
    if low <= 0 <= high:
        return "within noise"
    if better == 0:
        return "higher" if low > 0 else "lower"
    return "better" if (low > 0) == (better > 0) else "worse"


def sweep_report(engine: Engine, name: str, *, baseline: str | None = None,
                 metrics: list[str] | None = None) -> dict[str, Any]:
    """The report of sweep ``name``; ``baseline`` overrides the spec's, ``metrics`` limits
    the metrics (keys of :data:`METRICS`)."""
    sweep, spec = _sweep(engine, name)
    cells = _cells(engine, sweep.id, _coordinated(sweep))
    configs = list(dict.fromkeys(spec.get("configs") or [c.config for c in cells]))
    traces = list(dict.fromkeys(spec.get("traces") or [c.trace for c in cells]))
    baseline = baseline or sweep.baseline or (configs[0] if configs else "")
    if baseline not in configs:
        raise InputError(f"--baseline {baseline!r}: not a configuration of sweep {name} "
                         f"({', '.join(configs)})")
    chosen = list(METRICS)
    if metrics:
        unknown = [m for m in metrics if m not in BY_KEY]
        if unknown:
            raise InputError(f"--metric {unknown[0]!r}: one of {', '.join(BY_KEY)}")
        chosen = [BY_KEY[m] for m in metrics]
    present = [m for m in chosen
               if any(isinstance(m.read(c.metrics), int | float) for c in cells)]
    groups = _groups(cells, traces)
    order = {c: i for i, c in enumerate(configs)}
    trace_order = {t: i for i, t in enumerate([*traces, ALL])}
    groups.sort(key=lambda g: (trace_order.get(g[1], 99), order.get(g[0], 99)))
    members = {(config, trace): group for config, trace, group in groups}
    rows, comparisons = [], []
    for config, trace, group in groups:
        values = {}
        for metric in present:
            numbers = [float(v) for c in group
                       if isinstance(v := metric.read(c.metrics), int | float)]
            stats = interval(numbers, metric.unit)
            values[metric.key] = {**stats, "text": _mean_text(metric.unit, stats)}
        rows.append({"config": config, "trace": trace, "n": len(group),
                     "seeds": sorted({c.seed for c in group}), "values": values})
        base = members.get((baseline, trace))
        if config == baseline or base is None:
            continue
        compared = {}
        for metric in present:
            stats = interval(_paired(base, group, metric))
            compared[metric.key] = {**stats, "verdict": _verdict(stats, metric.better),
                                    "text": _delta_text(metric.unit, stats)}
        comparisons.append({"config": config, "trace": trace, "baseline": baseline,
                            "pairs": max((s["n"] for s in compared.values()), default=0),
                            "difference": compared})
    counts: dict[str, int] = defaultdict(int)
    for cell in cells:
        counts[cell.status] += 1
    return {
        "sweep": sweep.name, "description": spec.get("description") or "",
        "spec": spec.get("path"), "baseline": baseline, "configs": configs,
        "traces": traces, "seeds": spec.get("seeds") or sorted({c.seed for c in cells}),
        "cells": {"total": len(cells), **{k: counts.get(k, 0) for k in STATES}},
        "metrics": [{"key": m.key, "label": m.label, "unit": m.unit, "better": m.better,
                     "condition": m.condition} for m in present],
        "rows": rows, "comparisons": comparisons,
        "reference": _reference(spec.get("reference"), rows),
        "failures": [{"config": c.config, "trace": c.trace, "seed": c.seed,
                      "error": c.error} for c in cells if c.status == "failed"],
        "runs": [{"config": c.config, "trace": c.trace, "seed": c.seed, "run": c.run,
                  "status": c.status, "seconds": c.seconds} for c in cells],
    }


def _reference(reference: dict[str, Any] | None, rows: list[dict[str, Any]]
               ) -> dict[str, Any] | None:
    """The spec's published values beside the sweep's mean and interval of that metric."""
    if not reference or reference.get("metric") not in BY_KEY:
        return None
    metric = BY_KEY[reference["metric"]]
    values = reference.get("values") or {}
    out = []
    for row in rows:
        per_trace = values.get(row["trace"])
        published = (per_trace if isinstance(per_trace, dict)
                     else {k: v for k, v in values.items() if not isinstance(v, dict)})
        if row["trace"] == ALL or row["config"] not in published:
            continue
        stats = row["values"].get(metric.key)
        if stats is None:
            continue
        value = published[row["config"]]
        out.append({"config": row["config"], "trace": row["trace"], "reference": value,
                    **stats, "sdText": "–" if stats["sd"] is None else _plain(
                        metric.unit, stats["sd"]),
                    "referenceText": format_metric(metric.unit, value),
                    "offsetText": "–" if stats["mean"] is None else _signed(
                        metric.unit, stats["mean"] - value)})
    return {"metric": metric.key, "label": metric.label, "unit": metric.unit,
            "source": reference.get("source") or "", "rows": out}


# -- formats ---------------------------------------------------------------------------------

def _mean_text(unit: str, stats: dict[str, Any], cells: int | None = None) -> str:
    """``mean ± half-width``; ``(n=k)`` after it when only k of the group's cells have the
    metric."""
    if stats["mean"] is None:
        return "–"
    text = format_metric(unit, stats["mean"])
    if stats["low"] is not None and stats.get("cut"):
        text += f" [{in_unit(unit, stats['low'])} to {in_unit(unit, stats['high'])}]"
    elif stats["low"] is not None:
        half = (stats["high"] - stats["low"]) / 2
        text += f" ± {_plain(unit, half)}"
    if cells is not None and stats["n"] != cells:
        text += f" (n={stats['n']})"
    return text


def in_unit(unit: str, value: float, digits: int = 2, spread: bool = False) -> str:
    """``value`` in the metric's unit with ``digits`` decimals: a ratio as percent (``pp``
    for a ``spread``, a difference of percents), a percent metric with ``%`` (bare for a
    spread), seconds with ``s``, counts bare."""
    if unit == "ratio":
        return f"{fixed(value * 100, digits)} {'pp' if spread else '%'}"
    if unit == "percent":
        return fixed(value, digits) + ("" if spread else " %")
    if unit == "seconds":
        return f"{fixed(value, digits)} s"
    return fixed(value, digits, grouping=True).rstrip("0").rstrip(".") if value else "0"


def _plain(unit: str, value: float) -> str:
    """A spread in the metric's unit."""
    return in_unit(unit, value, spread=True)


def _delta_text(unit: str, stats: dict[str, Any]) -> str:
    if stats["mean"] is None:
        return "–"
    mean = stats["mean"]
    scale, suffix = (100, " pp") if unit == "ratio" else (1, " s" if unit == "seconds" else "")
    text = f"{fixed(mean * scale, 2, sign=True)}{suffix}"
    if stats["low"] is not None:
        text += (f" [{fixed(stats['low'] * scale, 2, sign=True)}, "
                 f"{fixed(stats['high'] * scale, 2, sign=True)}]")
    return text


def _table(rows: list[list[str]], header: list[str], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(
            "---" if i == 0 else "---:" for i in range(len(header))) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    return "\n".join("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w)
                               for i, (x, w) in enumerate(zip(line, widths, strict=True)))
                     .rstrip() for line in [header, *rows])


def as_text(report: dict[str, Any], markdown: bool = False) -> str:
    """The report as text (``markdown=False``) or Markdown."""
    h = "## " if markdown else ""
    cells = report["cells"]
    out = [f"{'# ' if markdown else ''}Sweep {report['sweep']}: {cells['complete']} of "
           f"{cells['total']} cells complete"
           + "".join(f", {cells[k]} {k}" for k in STATES[1:]
                     if cells[k]),
           "", f"configs: {', '.join(report['configs'])} (baseline {report['baseline']}); "
               f"traces: {', '.join(report['traces'])}; seeds: "
               f"{_seed_text(report['seeds'])}",
           "Values are mean ± half-width of the 95 % interval over seeds (Student's t); "
           "an interval that would reach below 0 (or above 100 % for a share) is cut there "
           "and shown as [low to high]."]
    units = {m["key"]: m["unit"] for m in report["metrics"]}
    labels = {m["key"]: m["label"] for m in report["metrics"]}
    for trace in [*report["traces"], ALL]:
        rows = [r for r in report["rows"] if r["trace"] == trace]
        if not rows:
            continue
        out += ["", f"{h}Trace {trace}" if trace != ALL else f"{h}All traces"]
        header = ["metric", *(f"{r['config']} (n={r['n']})" for r in rows)]
        body = [[labels[k], *(_mean_text(units[k], r["values"][k], r["n"]) for r in rows)]
                for k in units]
        out.append(_table(body, header, markdown))
        compared = [c for c in report["comparisons"] if c["trace"] == trace]
        if compared:
            out += ["", f"Against {report['baseline']} (paired by seed: difference "
                        "[95 % interval], verdict):"]
            header = ["metric", *(f"{c['config']} − {report['baseline']}" for c in compared)]
            body = [[labels[k], *(f"{_delta_text(units[k], c['difference'][k])} "
                                  f"{c['difference'][k]['verdict']}" for c in compared)]
                    for k in units]
            out.append(_table(body, header, markdown))
    reference = report.get("reference")
    if reference and reference["rows"]:
        out += ["", f"{h}{reference['label']}: kaudit beside the published values"
                + (f" ({reference['source']})" if reference["source"] else "")]
        body = [[r["config"] + ("" if len(report["traces"]) == 1 else f" / {r['trace']}"),
                 r["text"], r["sdText"], r["referenceText"], r["offsetText"]]
                for r in reference["rows"]]
        out.append(_table(body, ["config", "kaudit (mean ± 95 %)", "sd", "published",
                                 "kaudit − published"], markdown))
    if report["failures"]:
        out += ["", f"{h}Failed cells"]
        out += [f"- {f['config']} × {f['trace']} × seed {f['seed']}: {f['error']}"
                for f in report["failures"]]
    return "\n".join(out) + "\n"


def _signed(unit: str, value: float) -> str:
    return (f"{fixed(value * 100, 2, sign=True)} pp" if unit == "ratio"
            else fixed(value, 2, sign=True))


def _seed_text(seeds: list[int]) -> str:
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]} ({len(seeds)})"
    return ", ".join(str(s) for s in seeds)


def as_markdown(report: dict[str, Any]) -> str:
    return as_text(report, markdown=True)


def as_csv(report: dict[str, Any]) -> str:
    """One row per configuration, trace and metric: n, mean, sd, interval; then the
    differences against the baseline."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["kind", "config", "trace", "metric", "n", "mean", "sd", "ci_low",
                     "ci_high", "verdict"])
    for row in report["rows"]:
        for key, s in row["values"].items():
            writer.writerow(["value", row["config"], row["trace"], key, s["n"],
                             *(_num(s[k]) for k in ("mean", "sd", "low", "high")), ""])
    for comp in report["comparisons"]:
        for key, s in comp["difference"].items():
            writer.writerow([f"difference vs {comp['baseline']}", comp["config"],
                             comp["trace"], key, s["n"],
                             *(_num(s[k]) for k in ("mean", "sd", "low", "high")),
                             s["verdict"]])
    return out.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


FORMATS: dict[str, Callable[[dict[str, Any]], str]] = {
    "text": as_text, "markdown": as_markdown, "csv": as_csv,
    "json": lambda report: orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n",
}


def remove_sweeps(engine: Engine, names: list[str], force: bool = False,
                  keep_runs: bool = False) -> list[str]:
    """Delete sweeps (their cells) and, unless ``keep_runs``, their cells' runs (those whose
    labels name the sweep), in one transaction; a sweep with a cell still running is refused
    unless ``force``."""
    with engine.connect() as connection:
        found = []
        for name in names:
            row = connection.execute(select(Sweep.id, Sweep.created_at)
                                     .where(Sweep.name == name)).first()
            if row is None:
                raise UnknownObjectError(f"no sweep named {name!r}")
            found.append((name, row.id, sweep_identity(row.id, row.created_at)))
        ids = [sweep_id for _, sweep_id, _ in found]
        running = connection.scalar(select(SweepCell.id).where(
            SweepCell.sweep_id.in_(ids), SweepCell.status == "running").limit(1))
        run_names = list(connection.scalars(select(SweepCell.run_name).where(
            SweepCell.sweep_id.in_(ids))))
        runs = connection.execute(select(Run.id, Run.options)
                                  .where(Run.name.in_(run_names))).all() if run_names else []
    if running is not None and not force:
        raise InputError("a cell of these sweeps is still running (--force removes them "
                         "anyway)")
    owned = [r.id for r in runs if any(is_sweep_run(r.options, identity)
                                       for _, _, identity in found)]
    with engine.begin() as connection:
        if not keep_runs and owned:
            connection.execute(delete(Run).where(Run.id.in_(owned)))
        connection.execute(delete(Sweep).where(Sweep.id.in_(ids)))
    return [name for name, _, _ in found]
