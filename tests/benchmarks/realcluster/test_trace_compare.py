"""The comparison of a real control plane's two traces (the recording and the audit log)."""

from __future__ import annotations

from benchmarks.realcluster.trace_compare import compare_traces
from kaudit.tracegen.builders import make_node, make_pod
from tests.replay.test_audit_plan import Step, stored


def _steps() -> list[Step]:
    pod = make_pod("web").req(cpu="1").obj()
    return [
        (0.0, "ADDED", make_node("n1").capacity(cpu="4", memory="8Gi").obj()),
        (1.0, "ADDED", pod),
        (2.0, "MODIFIED", make_pod("web").req(cpu="1").node("n1").obj()),
        (3.0, "DELETED", make_pod("web").req(cpu="1").node("n1").obj()),
    ]


def test_the_same_objects_and_transitions_agree() -> None:
    comparison = compare_traces(stored(*_steps()), stored(*_steps()))
    assert comparison.agree, comparison.as_json()
    assert comparison.objects == {"Node": 1, "Pod": 1}


def test_a_pod_that_comes_back_after_its_deletion_is_a_different_transition() -> None:
    # An audit-log reader that took a late request's response for the object brought a
    # deleted pod back as it was.
    back = [*_steps(), (3.5, "MODIFIED", make_pod("web").req(cpu="1").node("n1").obj())]
    comparison = compare_traces(stored(*_steps()), stored(*back))
    assert not comparison.agree
    assert [line.split(":")[0] for line in comparison.different_transitions] == [
        "Pod default/web"]


def test_a_binding_missing_from_one_trace_is_a_different_transition() -> None:
    unbound = [step for step in _steps() if step[1] != "MODIFIED"]
    comparison = compare_traces(stored(*_steps()), stored(*unbound))
    assert not comparison.agree
    assert comparison.different_transitions
