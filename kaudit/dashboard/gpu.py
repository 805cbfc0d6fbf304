"""GPU sharing: unallocated GPU and fragmentation against arrived workload for one or several
runs replayed with ``--gpu-report`` (the FGD paper's figures), with the paper's "ideal" line
and the unallocated share at 100 % arrived as bars."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template, request
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import get_engine
from kaudit.errors import InputError
from kaudit.queries.gpu_sharing import gpu_report
from kaudit.queries.runs import list_runs

bp = Blueprint("gpu", __name__)
MAX_RUNS = 20


def _refs() -> list[str]:
    refs = [ref for value in request.args.getlist("run") for ref in value.split(",") if ref]
    if len(refs) > MAX_RUNS:
        raise InputError(f"run: at most {MAX_RUNS} runs at once, not {len(refs)}")
    return refs


@bp.get("/gpu")
def page() -> ResponseReturnValue:
    refs = _refs()
    runs = [run for run in list_runs(get_engine())
            if (run.summary or {}).get("gpuSharing")]
    return render_template("gpu.html", runs=runs, chosen=refs)


@bp.get("/api/v1/gpu-sharing")
def report() -> ResponseReturnValue:
    """``kaudit gpu-report --json`` for ``?run=A&run=B`` (or ``?run=A,B``)."""
    refs = _refs()
    if not refs:
        raise InputError("run: name at least one run replayed with --gpu-report")
    return jsonify(gpu_report(get_engine(), refs))
