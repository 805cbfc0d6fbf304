"""One pod's audit verdicts (:mod:`kaudit.queries.audit_pod`): where the recorded node stands in
kaudit's ranking, read from the attempt the audit wrote beside each verdict."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.queries.audit_pod import pod_audit, standing_text
from kaudit.queries.pods import attempt_detail
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import write_trace

RECORDED_MESSAGE = "0/2 nodes are available: something else."


def _recording(path: Path) -> Path:
    """A recorded scheduler that bound a pod to a node whose taint it does not tolerate,
    reported a too-large pod unschedulable with a message of its own, and a pod created on a
    node (no scheduler decided it)."""
    tainted = make_node("tainted").capacity(cpu="4", memory="8Gi", pods="110").taint(
        "dedicated", "gpu", "NoSchedule").obj()
    plain = make_node("plain").capacity(cpu="4", memory="8Gi", pods="110").obj()
    web = make_pod("web-1").req(cpu="1").obj()
    bound = copy.deepcopy(web)
    bound["spec"]["nodeName"] = "tainted"
    huge = make_pod("huge").req(cpu="64").obj()
    failed = copy.deepcopy(huge)
    failed.setdefault("status", {})["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": RECORDED_MESSAGE}]
    static = make_pod("static").req(cpu="100m").node("plain").obj()
    return write_trace(path, (0, "ADDED", tainted), (0, "ADDED", plain), (1, "ADDED", web),
                       (2, "MODIFIED", bound), (3, "ADDED", huge), (4, "MODIFIED", failed),
                       (5, "ADDED", static))


@pytest.fixture
def audited(run_kaudit: Callable[..., Result], engine: Engine, tmp_path: Path) -> Engine:
    for args in (("ingest", str(_recording(tmp_path / "recorded.jsonl")), "--name", "rec"),
                 ("audit", "rec", "--name", "judged"),
                 ("replay", "rec", "--name", "replayed")):
        result = run_kaudit(*args)
        assert result.exit_code == 0, result.output
    return engine


def test_a_node_a_filter_rejects_is_named_with_the_filter(audited: Engine) -> None:
    [verdict] = pod_audit(audited, "judged", "default/web-1")
    assert verdict["class"] == "infeasible"
    assert verdict["recordedText"] == "bound to tainted"
    detail = attempt_detail(audited, "judged", "default/web-1", verdict["attempt"])
    matrix = detail["filter"]
    row = matrix["verdicts"][matrix["nodes"].index("tainted")]
    rejecting = [plugin for plugin, code in zip(matrix["plugins"], row, strict=True)
                 if code > 0]
    assert verdict["standing"]["rejectedBy"]["plugin"] in rejecting
    assert verdict["standingText"].startswith(
        f"tainted is rejected by {verdict['standing']['rejectedBy']['plugin']}: ")
    assert "untolerated taint" in verdict["standingText"]


def test_a_recorded_failure_stands_beside_kaudits_message(audited: Engine) -> None:
    [verdict] = pod_audit(audited, "judged", "default/huge")
    assert verdict["class"] == "unschedulableDifferent"
    assert verdict["recordedText"] == f"unschedulable: {RECORDED_MESSAGE}"
    detail = attempt_detail(audited, "judged", "default/huge", verdict["attempt"])
    assert detail["message"] and verdict["standingText"] == f"kaudit: {detail['message']}"
    assert verdict["standing"] is None


def test_a_decision_no_scheduler_made_has_no_attempt(audited: Engine) -> None:
    [verdict] = pod_audit(audited, "judged", "default/static")
    assert verdict["class"] == "notJudged" and verdict["attempt"] is None
    assert verdict["standingText"] == verdict["reason"]


def test_a_run_that_is_not_an_audit_has_no_verdicts(audited: Engine) -> None:
    assert pod_audit(audited, "replayed", "default/web-1") == []


@pytest.mark.parametrize(("rank", "words"), [(2, "2nd"), (3, "3rd"), (11, "11th"),
                                             (12, "12th"), (13, "13th"), (21, "21st"),
                                             (112, "112th")])
def test_a_rank_is_written_as_an_ordinal(rank: int, words: str) -> None:
    standing: dict[str, Any] = {"node": "n", "rank": rank, "scored": 200, "score": 1,
                                "topScore": 9, "topNodes": ["m"]}
    assert standing_text({"class": "scoredLower"}, {"kind": "bind"}, standing) == (
        f"n ranks {words} of 200 scored nodes: 1 against kaudit's top 9 (m)")
