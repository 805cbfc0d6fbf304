"""Upstream's queueing-hint test tables, run against each plugin's ``events_to_register``.

The cases live in ``tests/data/queueing_hints/*.json``: transcriptions of the
``isSchedulableAfter...`` tests of kube-scheduler's in-tree plugins (v1.34; provenance in that
folder's README). A case names the event, the pod waiting in the queue and the changed
object's old and new states; the plugin's hint registered for that event must answer the
expected Queue or QueueSkip. An object of the wrong type (``{"__invalid_type__": ...}``) must
make the hint fail, which the queue counts as Queue. Each file's ``events_to_register_cases``
pin the registrations themselves.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kaudit import versions
from kaudit.framework.events import (
    ClusterEvent,
    QueueingHint,
    match_cluster_events,
    parse_action,
)
from kaudit.framework.plugin import Handle
from kaudit.model.node import parse_node
from kaudit.model.pod import parse_pod
from kaudit.scheduler.registry import in_tree_plugins
from tests.conftest import DATA, V1_34, gates_at

#: The release the tables are v1.34's: its gates.
GATE_SPECS = versions.get(V1_34).gates

CASES_DIR = DATA / "queueing_hints"
FILES = sorted(CASES_DIR.glob("*.json"))


def _gates(case: dict[str, Any]) -> str:
    return ",".join(f"{k}={'true' if v else 'false'}"
                    for k, v in (case.get("feature_gates") or {}).items()
                    if k in GATE_SPECS and not GATE_SPECS[k].locked)


def _impossible_in_v1_34(case: dict[str, Any]) -> bool:
    """A case that sets a gate locked in v1.34 (queueing hints off) to another value."""
    return any(k in GATE_SPECS and GATE_SPECS[k].locked and v != GATE_SPECS[k].default
               for k, v in (case.get("feature_gates") or {}).items())


def _plugin(name: str, case: dict[str, Any]) -> Any:
    handle = Handle(feature_gates=gates_at(V1_34, _gates(case)))
    return in_tree_plugins()[name](case.get("args") or {}, handle)


def _model(obj: Any) -> Any:
    """kaudit's model of a pod or node, the API object's dict otherwise (as the replay
    passes them to hints)."""
    if isinstance(obj, dict) and obj.get("kind") == "Pod":
        return parse_pod(obj)
    if isinstance(obj, dict) and obj.get("kind") == "Node":
        return parse_node(obj)
    return obj


def _hint_cases() -> list[Any]:
    params = []
    for path in FILES:
        data = json.loads(path.read_text())
        for case in data.get("hint_cases") or []:
            params.append(pytest.param(data["plugin"], case,
                                       id=f"{path.stem}:{case['name']}"))
    return params


def _registration_cases() -> list[Any]:
    params = []
    for path in FILES:
        data = json.loads(path.read_text())
        for case in data.get("events_to_register_cases") or []:
            params.append(pytest.param(data["plugin"], case, id=f"{path.stem}:{case['name']}"))
    return params


@pytest.mark.parametrize(("plugin_name", "case"), _hint_cases())
def test_hint(plugin_name: str, case: dict[str, Any]) -> None:
    if _impossible_in_v1_34(case):
        pytest.skip("needs a gate that v1.34 locks (queueing hints off)")
    plugin = _plugin(plugin_name, case)
    incoming = ClusterEvent(case["event"]["resource"], parse_action(case["event"]["actionType"]))
    registered = [r for r in plugin.events_to_register() or [] if r.hint is not None]
    hints = [r.hint for r in registered if match_cluster_events(r.event, incoming)]
    if not hints:
        # Upstream's tests call a hint directly, even one the case's gates do not register
        # (InPlacePodVerticalScaling off): take the hint of the same resource.
        hints = [r.hint for r in registered if r.event.resource == incoming.resource]
    assert hints, f"{plugin_name} registers no hint for {incoming.name}"
    hint = hints[0]
    pod = parse_pod(case["pod"]) if case["pod"] is not None else None
    old, new = _model(case["oldObj"]), _model(case["newObj"])
    if case.get("expectErr"):
        assert case["expect"] == "Queue"
        with pytest.raises((TypeError, ValueError, KeyError, AttributeError)):
            hint(pod, old, new)
        return
    want = QueueingHint.QUEUE if case["expect"] == "Queue" else QueueingHint.QUEUE_SKIP
    assert hint(pod, old, new) == want


@pytest.mark.parametrize(("plugin_name", "case"), _registration_cases())
def test_events_to_register(plugin_name: str, case: dict[str, Any]) -> None:
    if _impossible_in_v1_34(case):
        pytest.skip("needs a gate that v1.34 locks (queueing hints off)")
    plugin = _plugin(plugin_name, case)
    got = sorted((r.event.resource, r.event.action.value, r.hint is not None)
                 for r in plugin.events_to_register() or [])
    want = sorted((e["resource"], parse_action(e["actionType"]).value, e["hasHint"])
                  for e in case["expect"])
    assert got == want
