"""Why a pod fits nowhere: per-node statuses and the ``0/N nodes are available`` message.

Mirrors ``framework.Diagnosis``, ``NodeToStatus`` and ``FitError.Error``
(``pkg/scheduler/framework/types.go``, Kubernetes v1.34), byte for byte: the reasons of every
node with an explicit status are counted, nodes without one count with the absent-nodes
status, the ``"<count> <reason>"`` entries are sorted as strings, and the PreFilter message
(with a period) and the PostFilter message (as is) are added as upstream adds them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kaudit.framework.status import Code, Status

NO_NODE_AVAILABLE = "0/{} nodes are available"


@dataclass
class Diagnosis:
    #: Explicit statuses by node name, in the order they were recorded.
    node_statuses: dict[str, Status] = field(default_factory=dict)
    #: The status of every node not in ``node_statuses``.
    absent_status: Status = field(
        default_factory=lambda: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_message: str = ""
    post_filter_message: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.rejected:
            self.unschedulable_plugins.add(status.plugin)
        elif status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)

    def status_of(self, node: str) -> Status:
        return self.node_statuses.get(node, self.absent_status)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """``FitError.Error()``."""
    message = NO_NODE_AVAILABLE.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_message:
        message += f" {diagnosis.pre_filter_message}."
    else:
        reasons: Counter[str] = Counter()
        statuses = diagnosis.node_statuses.values()
        # Nodes share status objects: count them by identity (cheap), then by reason.
        by_identity = dict(zip(map(id, statuses), statuses, strict=True))
        for identity, nodes in Counter(map(id, statuses)).items():
            for reason in by_identity[identity].reasons:
                reasons[reason] += nodes
        absent = num_all_nodes - len(diagnosis.node_statuses)
        if absent > 0:
            for reason in diagnosis.absent_status.reasons:
                reasons[reason] += absent
        histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if diagnosis.post_filter_message:
        message += f" {diagnosis.post_filter_message}"
    return message
