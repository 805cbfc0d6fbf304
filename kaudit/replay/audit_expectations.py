"""Recorded nominations that are no preemption: the binding cycle's expectation (v1.35 on).

From v1.35 (``NominatedNodeNameForExpectation``, beta and on; ``bindingCycle`` in
``pkg/scheduler/schedule_one.go``) kube-scheduler writes the node it chose as the pod's
``status.nominatedNodeName`` before PreBind when a PreBind plugin has work (unbound volumes,
resource claims) or the pod waits on Permit, to tell other components the pod is about to be
bound there. In a recording that write looks like a preemption's nomination; it is followed by
the pod's binding to that very node and marks no victim. :func:`without_expectations` takes
such nominations out of an audit's plan: the binding that follows is the decision.
"""

from __future__ import annotations

from kaudit.replay.audit_plan import BIND, PREEMPTION, AuditPlan


def without_expectations(plan: AuditPlan) -> AuditPlan:
    """``plan`` without the nominations that only announce the pod's binding: no victims,
    and the same pod bound to the nominated node afterwards."""
    bound_at = {(d.pod, d.node): d.seq for d in plan.decisions if d.kind == BIND}
    kept = [d for d in plan.decisions
            if not (d.kind == PREEMPTION and not d.victims and not d.victim_seqs
                    and bound_at.get((d.pod, d.node), -1) > d.seq)]
    if len(kept) == len(plan.decisions):
        return plan
    return AuditPlan(kept, plan.latency_us, plan.window_us)
