"""Audit: one audit run's report (``kaudit audit``) as a page and its JSON twin, and one pod's
audit verdicts for the pod page.

The page renders the headline, the classes, the causes and the disagreement list on the server
from :func:`kaudit.queries.audit.audit_report`, the answer ``GET /api/v1/runs/RUN/audit`` gives
(``kaudit audit --run RUN --json`` without ``conditions``); its script draws the charts from
that answer. A run that is not an audit answers 400 with the query's message.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from kaudit.dashboard.database import cached, get_engine
from kaudit.dashboard.params import integer, is_final, run_with_span
from kaudit.queries.audit import AGREEING, CLASS_LABELS, CLASSES, DISAGREEING, audit_report
from kaudit.queries.audit_pod import pod_audit
from kaudit.queries.pods import require_pod
from kaudit.queries.runs import RunSummary
from kaudit.queries.units import percent, seconds

bp = Blueprint("audit", __name__)
#: Disagreements listed per page of the audit page (the API lists them all).
PAGE_ROWS = 200


def report_of(run: RunSummary) -> dict[str, Any]:
    """The run's audit report, remembered once the run is final."""
    return cached(("audit", run.id), lambda: audit_report(get_engine(), run.name),
                  final=is_final(run))


def pod_verdicts(run: RunSummary, pod: str) -> list[dict[str, Any]]:
    """The pod's audit verdicts in ``run`` (empty when the run is not an audit)."""
    return cached(("audit-pod", run.id, pod), lambda: pod_audit(get_engine(), run.name, pod),
                  final=is_final(run))


def _headline(report: dict[str, Any]) -> str:
    """The report's first line, in the words of ``kaudit audit``'s text report."""
    disagreeing = sum(report["classes"][name] for name in DISAGREEING)
    return (f"{report['decisions']:,} recorded decisions, {report['judged']:,} judged: "
            f"{report['agreeOrTie']:,} agree or tie ({percent(report['agreeShare'], 2)}), "
            f"{disagreeing:,} disagree ({percent(report['disagreeShare'], 2)})")


@bp.get("/runs/<run>/audit")
def page(run: str) -> ResponseReturnValue:
    found, _ = run_with_span(run)
    report = report_of(found)
    offset = integer("offset", 0)
    listed = report["disagreements"][offset:offset + PAGE_ROWS]
    classes = [{"name": name, "label": CLASS_LABELS[name], "count": report["classes"][name],
                "agrees": name in AGREEING, "disagrees": name in DISAGREEING}
               for name in CLASSES]
    return render_template("audit.html", run=found, report=report, headline=_headline(report),
                           classes=classes, listed=listed, offset=offset, page_rows=PAGE_ROWS,
                           disagreeing=sum(report["classes"][name] for name in DISAGREEING),
                           disagreeing_classes=DISAGREEING, seconds=seconds)


@bp.get("/api/v1/runs/<run>/audit")
def report_json(run: str) -> ResponseReturnValue:
    """``kaudit audit --run RUN --json`` (without ``--fail-on``'s conditions)."""
    found, _ = run_with_span(run)
    return jsonify(report_of(found))


@bp.get("/api/v1/runs/<run>/pods/<namespace>/<name>/audit")
def pod_json(run: str, namespace: str, name: str) -> ResponseReturnValue:
    """The pod's audit verdicts: each recorded decision beside kaudit's ranking then."""
    found, _ = run_with_span(run)
    key = require_pod(get_engine(), found, f"{namespace}/{name}")  # 404 when unknown
    return jsonify(run=found.name, pod=key, verdicts=pod_verdicts(found, key))
