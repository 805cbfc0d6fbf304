"""Extender verdicts as an attempt's stored calls show them beside the filter plugins'."""

from __future__ import annotations

import json
from typing import Any

from kaudit.eventlog.codec import unpack_attempt


def _call(nodes: list[str], answer: Any = None, *, passing: list[str] | None = None,
          error: str | None = None, ignorable: bool = False) -> dict[str, Any]:
    call: dict[str, Any] = {"extender": "http://e", "step": "filter", "verb": "filter",
                            "nodes": nodes, "error": error, "latencyUs": 1,
                            "ignorable": ignorable, "request": "0"}
    if answer is not None:
        call["body"] = json.dumps(answer)
    if error is None:
        call["passing"] = passing
    return call


def _nodes(*calls: dict[str, Any]) -> dict[str, Any]:
    document = {"profile": "default-scheduler", "extenders": list(calls)}
    shaped = unpack_attempt(document, None, {})
    assert [c["answer"] for c in shaped["extenderCalls"]] == [
        json.loads(c["body"]) if "body" in c else None for c in calls]
    nodes: dict[str, Any] = shaped["nodes"]
    return nodes


def test_a_node_both_passed_and_failed_passes() -> None:
    nodes = _nodes(_call(["a", "b"], {"NodeNames": ["a"], "FailedNodes": {"a": "x", "b": "y"}},
                         passing=["a"]))
    assert nodes["a"]["feasible"] is True
    assert nodes["a"]["filter"]["http://e"]["code"] == "Success"
    assert nodes["a"]["filter"]["http://e"]["note"] == "passed, and also answered as failed: x"
    assert nodes["b"]["filter"]["http://e"] == {"code": "Unschedulable", "reasons": ["y"],
                                                "extender": True}
    assert nodes["b"]["feasible"] is False


def test_a_later_call_decides_a_node() -> None:
    """The nominated node's call failed; the full search's passed it: it is feasible."""
    nodes = _nodes(_call(["a"], error="timeout"),
                   _call(["a", "b"], {"NodeNames": ["a", "b"]}, passing=["a", "b"]))
    assert nodes["a"]["feasible"] is True and nodes["b"]["feasible"] is True


def test_verdicts_of_go_shaped_answers() -> None:
    answer = '{"failednodes": {"b": "first"}, "FailedNodes": {"b": "last"}, ' \
             '"FailedAndUnresolvableNodes": {"c": "gone"}}'
    call = _call(["a", "b", "c", "d"], passing=[])
    call["body"] = answer
    document = {"profile": "default-scheduler", "extenders": [call]}
    nodes = unpack_attempt(document, None, {})["nodes"]
    assert nodes["b"]["filter"]["http://e"]["reasons"] == ["last"]
    assert nodes["c"]["filter"]["http://e"]["code"] == "UnschedulableAndUnresolvable"
    assert nodes["d"]["filter"]["http://e"]["note"].startswith("not in the extender's passing")
    ignored = _nodes(_call(["a"], error="down", ignorable=True))
    assert ignored["a"]["feasible"] is True and ignored["a"]["filter"]["http://e"]["ignored"]
