"""Which of a node's taints a pod's tolerations leave standing.

Mirrors ``v1helper.FindMatchingUntoleratedTaint`` (``staging/src/k8s.io/component-helpers/
scheduling/corev1/helpers.go``, Kubernetes v1.34) with the inclusion filter TaintToleration's
Filter passes it (``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``):
only NoSchedule and NoExecute taints keep a pod off a node. The scheduler's plugins and the
verdict explanations ask the same question here.
"""

from __future__ import annotations

from collections.abc import Iterable

from kaudit.model.pod import Taint, Toleration, tolerated

#: The taint effects that keep a pod that does not tolerate them off the node.
DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


def untolerated_taint(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]
                      ) -> Taint | None:
    """The first NoSchedule/NoExecute taint, in the node's order, that no toleration
    tolerates; None when the pod tolerates them all."""
    for taint in taints:
        if taint.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerated(taint, tolerations):
            return taint
    return None
