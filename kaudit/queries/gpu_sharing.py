"""GPU allocation and fragmentation of runs replayed with ``--gpu-report``, as the FGD paper
plots them: per run the curves against arrived workload and the key values, for the CLI, the
JSON API and the dashboard; and the curves as CSV.

The curves are computed during the replay (:mod:`kaudit.replay.gpu_sharing`) and stored in the
run's summary (``gpuSharing``); this module only reads them.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from sqlalchemy import Engine

from kaudit.errors import InputError
from kaudit.model.gpu import GPU_COUNT_ANNOTATION, GPU_MILLI_ANNOTATION, NVIDIA_GPU
from kaudit.queries.runs import get_run, run_configuration

#: The arrived-workload percents the report gives values at (the paper's figures).
KEY_PERCENTS = (50, 80, 90, 100, 110, 120, 130)
CURVES = ("allocated", "unallocated", "fragAmount", "fragRate")


def _policy(config: dict[str, Any]) -> str:
    """The score plugins of the run's first profile, by weight (e.g. ``FGDScore``)."""
    profiles = config.get("profiles") or []
    if not profiles:
        return ""
    enabled = ((profiles[0].get("plugins") or {}).get("score") or {}).get("enabled") or []
    names = [item.get("name", "") for item in enabled if isinstance(item, dict)]
    return "+".join(names) if len(names) <= 3 else f"{len(names)} score plugins"


def run_gpu_report(engine: Engine, ref: str) -> dict[str, Any]:
    """One run's GPU-sharing report; :class:`InputError` when it was replayed without
    ``--gpu-report``."""
    run = get_run(engine, ref)
    sharing = (run.summary or {}).get("gpuSharing")
    if not sharing:
        raise InputError(f"run {run.name} has no GPU report: replay with --gpu-report (and "
                         "--one-try for the FGD paper's protocol)")
    config, _ = run_configuration(engine, run.id)
    curves = sharing.get("curves") or {}
    at = {}
    for percent in KEY_PERCENTS:
        at[str(percent)] = {name: (curves.get(name) or [None] * 131)[percent]
                            for name in CURVES}
    return {"run": run.name, "trace": run.trace, "seed": run.seed, "policy": _policy(config),
            "gpus": sharing.get("gpus"), "samples": sharing.get("samples"),
            "empty": why_empty(sharing, at),
            "typicalPods": len(sharing.get("typicalPods") or []),
            "fragmentAtEnd": sharing.get("fragmentAtEnd"), "at": at, "curves": curves}


def why_empty(sharing: dict[str, Any], at: dict[str, dict[str, Any]]) -> str | None:
    """Why some of the report's columns have no value, in a sentence; None when all have one.
    A column is the mean of the samples taken when the arrived GPU workload was near its
    percent, so a run whose pods never asked for that much has none there."""
    missing = [p for p in KEY_PERCENTS if at[str(p)]["allocated"] is None]
    if not missing:
        return None
    gpus = sharing.get("gpus") or 0
    if gpus == 0:
        return ("the cluster had no GPUs (no node advertised nvidia.com/gpu while pods were "
                "tried): there was nothing to allocate or fragment")
    if not sharing.get("samples"):
        return "no pod was tried, so nothing was sampled"
    arrived = (sharing.get("arrivedMilli") or 0) / (gpus * 10)
    if arrived == 0:
        return (f"no pod tried asked for GPU devices as the report counts them (the "
                f"{GPU_MILLI_ANNOTATION} and {GPU_COUNT_ANNOTATION} annotations of the FGD "
                f"protocol; a plain {NVIDIA_GPU} request counts in allocation, not here): the "
                f"arrived GPU workload stayed at 0 % of the {gpus:,} GPUs")
    return (f"the pods tried asked for {arrived:.0f} % of the {gpus:,} GPUs in all (the "
            f"arrived GPU workload), so no sample lies near "
            f"{', '.join(f'{p} %' for p in missing)}")


def gpu_report(engine: Engine, refs: list[str]) -> dict[str, Any]:
    if not refs:
        raise InputError("name at least one run")
    return {"runs": [run_gpu_report(engine, ref) for ref in refs]}


def curves_csv(report: dict[str, Any]) -> str:
    """The curves of every run of ``report``: one row per run and arrived-workload percent."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "policy", "seed", "arrived", *CURVES])
    for run in report["runs"]:
        curves = run["curves"]
        for i, arrived in enumerate(curves.get("arrived") or []):
            writer.writerow([run["run"], run["policy"], run["seed"], int(arrived),
                             *("" if curves[name][i] is None else curves[name][i]
                               for name in CURVES)])
    return out.getvalue()
