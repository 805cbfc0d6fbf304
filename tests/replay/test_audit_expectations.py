"""v1.35's binding cycle announces the chosen node as the pod's nomination before PreBind;
an audit of a recording from such a release does not take it for a preemption."""

from __future__ import annotations

from kaudit.replay.audit_expectations import without_expectations
from kaudit.replay.audit_plan import BIND, PREEMPTION, plan_decisions
from kaudit.tracegen.builders import make_node, make_pod
from tests.replay.test_audit_plan import failed, preempted, stored


def test_a_nomination_announcing_the_binding_is_no_decision() -> None:
    node = make_node("n1").capacity(cpu="4", memory="8Gi").obj()
    pod = make_pod("db").req(cpu="1").obj()
    announced = {**pod, "status": {**pod["status"], "nominatedNodeName": "n1"}}
    bound = {**announced, "spec": {**announced["spec"], "nodeName": "n1"}}
    plan = plan_decisions(stored((0, "ADDED", node), (1, "ADDED", pod),
                                 (1.5, "MODIFIED", announced), (2, "MODIFIED", bound)))
    assert [d.kind for d in plan.decisions] == [PREEMPTION, BIND]
    assert [d.kind for d in without_expectations(plan).decisions] == [BIND]


def test_a_preemption_keeps_its_nomination() -> None:
    node = make_node("n1").capacity(cpu="4", memory="8Gi").obj()
    victim = make_pod("low").node("n1").req(cpu="4").obj()
    pod = make_pod("high").req(cpu="4").priority(100).obj()
    nominated = failed(pod, "0/1 nodes are available: 1 Insufficient cpu.", nominated="n1")
    bound = {**nominated, "spec": {**nominated["spec"], "nodeName": "n1"}}
    plan = plan_decisions(stored((0, "ADDED", node), (0, "ADDED", victim), (1, "ADDED", pod),
                                 (1.5, "MODIFIED", nominated),
                                 (1.5, "MODIFIED", preempted(victim)),
                                 (1.6, "DELETED", preempted(victim)), (3, "MODIFIED", bound)))
    assert without_expectations(plan) is plan
    assert [d.kind for d in plan.decisions].count(PREEMPTION) == 1
