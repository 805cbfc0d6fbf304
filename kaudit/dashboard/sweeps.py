"""Sweeps: traces × configurations × seeds (``kaudit sweep``). The list of sweeps with their
cell counts, and one sweep's report: every metric per configuration as mean and 95 % interval
over seeds, each configuration's paired difference against the baseline, the published values
beside kaudit's, the failed cells and the runs of the cells (``kaudit sweep report --json``)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template, request
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import get_engine
from kaudit.dashboard.params import text
from kaudit.errors import InputError, UnknownObjectError
from kaudit.queries.sweeps import BY_KEY, list_sweeps, sweep_report

bp = Blueprint("sweeps", __name__)
MAX_METRICS = len(BY_KEY)


def _find(name: str) -> dict[str, Any]:
    """The sweep named ``name`` as :func:`list_sweeps` lists it (404 when unknown)."""
    sweeps = list_sweeps(get_engine())
    for sweep in sweeps:
        if sweep["name"] == name:
            return sweep
    names = ", ".join(s["name"] for s in sweeps)
    raise UnknownObjectError(f"no sweep named {name[:100]!r}" + (
        f" (sweeps: {names})" if names else " (none yet: `kaudit sweep SPEC.yaml` runs one)"))


def _baseline(sweep: dict[str, Any]) -> str | None:
    baseline = text("baseline", max_length=100)
    if baseline is not None and baseline not in sweep["configs"]:
        raise InputError(f"baseline: {baseline!r} is not a configuration of sweep "
                         f"{sweep['name']} ({', '.join(sweep['configs'])})")
    return baseline


def _metric(value: str) -> str:
    if value not in BY_KEY:
        raise InputError(f"metric: {value[:40]!r} is not a metric of a sweep report "
                         f"(one of {', '.join(BY_KEY)})")
    return value


def _metrics() -> list[str]:
    keys = [key for value in request.args.getlist("metric") for key in value.split(",") if key]
    if len(keys) > MAX_METRICS:
        raise InputError(f"metric: at most {MAX_METRICS} metrics, not {len(keys)}")
    return list(dict.fromkeys(_metric(key) for key in keys))


@bp.get("/sweeps")
def index() -> ResponseReturnValue:
    return render_template("sweeps.html")


@bp.get("/sweeps/<name>")
def page(name: str) -> ResponseReturnValue:
    """One sweep; ``?metric=KEY`` chooses the charts' metric, ``?baseline=CONFIG`` the
    configuration the others are compared against."""
    sweep = _find(name)
    baseline = _baseline(sweep)
    metric = text("metric", max_length=100)
    return render_template("sweep.html", sweep=sweep, baseline=baseline or "",
                           metric=_metric(metric) if metric is not None else "")


@bp.get("/api/v1/sweeps")
def sweeps() -> ResponseReturnValue:
    """``kaudit sweep list --json``: every sweep with its cell counts."""
    return jsonify(sweeps=list_sweeps(get_engine()))


@bp.get("/api/v1/sweeps/<name>")
def report(name: str) -> ResponseReturnValue:
    """``kaudit sweep report NAME --json`` for ``?baseline=CONFIG&metric=KEY&metric=KEY``
    (or ``?metric=A,B``); without ``metric``, every metric the cells hold."""
    sweep = _find(name)
    baseline, metrics = _baseline(sweep), _metrics()
    return jsonify(sweep_report(get_engine(), name, baseline=baseline,
                                metrics=metrics or None))
