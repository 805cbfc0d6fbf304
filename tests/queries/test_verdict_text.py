"""The renderers of a pod's words: every record kind reads as a sentence, long objects
summarised (``record_text``); node counts and notes in words (``verdict_text``)."""

from __future__ import annotations

from typing import Any

import pytest

from kaudit.eventlog.records import RecordKind
from kaudit.queries import record_text, verdict_text

CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "train-0003-gpu-jlcj5", "namespace": "default",
                      "ownerReferences": [{"kind": "Pod", "name": "train-0003"}]},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.example.com",
             "selectors": [{"cel": {"expression": "device.driver.startsWith('gpu')"}}]}}]}},
         "status": {"allocation": {"devices": {"results": [
             {"device": "gpu-1", "driver": "gpu.example.com", "pool": "gpu-node-0002",
              "request": "gpu"}]}}}}

#: A representative ``data`` of every record kind that reaches a pod's other events.
DOCUMENTS: dict[str, dict[str, Any]] = {
    "node": {"slot": 3},
    "watch": {"traceSeq": 92, "type": "ADDED", "resource": "Pod"},
    "bind": {"by": "kaudit", "gpus": {"devices": [0, 1], "milli": 1000},
             "claims": [{"claim": "c", "device": "gpu-0", "driver": "d", "pool": "p",
                         "podClaim": "gpu", "request": "gpu"}],
             "binder": "fake", "extenders": [{"step": "bind", "extender": "fake",
                                              "nodes": ["n1"], "latencyUs": 1200}]},
    "bindfail": {"code": "Unschedulable",
                 "reasons": ["node(s) didn't match PersistentVolume's node affinity"]},
    "recorded": {},
    "nominate": {"tiedNodes": ["n1", "n2", "n3"], "tiedVictims": ["a/v1", "a/v2", "a/v3",
                                                                  "a/v4"],
                 "partialDryRun": True},
    "preempt": {"preemptor": "web/payments-0", "tie": True},
    "terminate": {"reason": "preempted"},
    "delete": {"reason": "lifetime"},
    "create": {"replaces": "batch/sweep-1"},
    "extender": {"reason": "deleted while binding", "binder": "fake",
                 "extenders": [{"step": "bind", "extender": "fake", "nodes": ["n1"],
                                "error": "refused", "ignorable": False}]},
    "claim": {"type": "MODIFIED", "object": CLAIM},
    "audit": {"class": "scoredLower", "cause": "scores higher elsewhere: NodeResourcesFit",
              "reason": "n1 scores 450, kaudit's top is 475 on n2; higher there: "
                        "NodeResourcesFit (75 vs 50)",
              "recorded": {"kind": "bind", "node": "n1", "tUs": 4000000, "traceSeq": 7},
              "kaudit": {"node": "n2", "tied": ["n2"], "feasible": 2},
              "plugins": [{"plugin": "NodeResourcesFit", "best": 75, "recorded": 50}],
              "momentSeq": 7, "nearby": ["ADDED Pod default/web"]},
}


def test_an_audit_record_names_the_decision_and_its_verdict() -> None:
    text = record_text.event_text("audit", "n1", DOCUMENTS["audit"])
    assert text.startswith("The recorded scheduler bound it to n1; the audit: scoredLower, "
                           "n1 scores 450"), text


@pytest.mark.parametrize("kind", [k.value for k in RecordKind if k != RecordKind.ATTEMPT
                                  and k != RecordKind.QUEUE])
def test_every_record_kind_is_a_sentence(kind: str) -> None:
    text = record_text.event_text(kind, "n1", DOCUMENTS[kind])
    assert text[:1].isupper(), text
    for dump in ("{", "}", "['", "=", "True", "False"):
        assert dump not in text, text
    assert len(text) < 400


def test_a_claim_is_named_with_its_devices_and_selector() -> None:
    text = record_text.event_text("claim", None, DOCUMENTS["claim"])
    assert text == ("ResourceClaim default/train-0003-gpu-jlcj5 allocated gpu-1 (pool "
                    "gpu-node-0002) for gpu; requests gpu: 1 of gpu.example.com where "
                    "device.driver.startsWith('gpu')")


def test_an_unknown_kind_still_reads_as_words() -> None:
    text = record_text.event_text("future", None, {"list": ["a", "b", "c", "d"],
                                                    "object": {"x": 1}, "flag": True})
    assert text == "Future: list a, b, c and 1 more, object 1 field, flag yes"


def test_node_counts_say_why_fewer_nodes_were_evaluated() -> None:
    assert verdict_text.node_counts({"evaluatedNodes": 12, "feasibleNodes": 1,
                                     "allNodes": 12}) == "12 nodes evaluated, 1 feasible, " \
                                                         "11 rejected"
    assert verdict_text.node_counts({"evaluatedNodes": 501, "feasibleNodes": 501,
                                     "allNodes": 5000}) == (
        "501 of 5,000 nodes evaluated, 501 feasible, 0 rejected (percentageOfNodesToScore: "
        "filtering stopped once 501 feasible nodes were found)")
    assert verdict_text.node_counts({"evaluatedNodes": 1, "feasibleNodes": 1, "allNodes": 9,
                                     "nominatedNodeUsed": True}).endswith(
        "(its nominated node, checked first as upstream does)")
    assert verdict_text.node_counts({"evaluatedNodes": 2, "feasibleNodes": 1, "allNodes": 9,
                                     "preFilter": {"NodeAffinity": {
                                         "code": "Success", "nodeNames": ["a", "b"]}}}
                                    ).endswith("(PreFilter narrowed the candidates to 2 nodes)")


def test_a_note_without_causes_never_contradicts_the_counts() -> None:
    assert verdict_text.causes_note({"evaluatedNodes": 4, "feasibleNodes": 4}, []) == \
        "All 4 evaluated nodes passed the filters."
    assert verdict_text.causes_note({"evaluatedNodes": 4, "feasibleNodes": 1}, []) == \
        "3 of 4 evaluated nodes were rejected."
    assert verdict_text.causes_note({"evaluatedNodes": 0, "feasibleNodes": 0}, []) == \
        "No node was evaluated."
    assert verdict_text.causes_note(None, []) == "kaudit made no attempt for this pod."


def test_one_feasible_node_found_is_singular() -> None:
    attempt = {"evaluatedNodes": 100, "feasibleNodes": 1, "allNodes": 500}
    assert verdict_text.node_counts(attempt).endswith(
        "(percentageOfNodesToScore: filtering stopped once 1 feasible node was found)")


def test_an_error_is_not_told_as_prefilter_or_sampling() -> None:
    """A filter plugin's Error ends upstream's Filter phase: the nodes not reached were not
    refused by PreFilter, nor left out by percentageOfNodesToScore."""
    for evaluated in (0, 1):
        counts = verdict_text.node_counts({"evaluatedNodes": evaluated, "feasibleNodes": 0,
                                           "allNodes": 3, "result": "error"})
        assert counts.endswith("(an error ended the attempt before every node was tried)")
