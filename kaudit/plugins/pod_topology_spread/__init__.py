"""PodTopologySpread: spread matching pods evenly over topology domains.

Mirrors ``pkg/scheduler/framework/plugins/podtopologyspread/`` of Kubernetes v1.34, file for
file: ``plugin`` (the plugin, its events and queueing hints, and which constraints apply),
``common`` (constraints, default selectors, pod counting, node inclusion policies),
``filtering`` (PreFilter, Filter and the PreFilter extensions) and ``scoring`` (PreScore,
Score and NormalizeScore).
"""

from kaudit.plugins.pod_topology_spread.common import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    LABEL_ZONE,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    PodTable,
    default_selector,
)
from kaudit.plugins.pod_topology_spread.filtering import PreFilterState
from kaudit.plugins.pod_topology_spread.plugin import PodTopologySpread
from kaudit.plugins.pod_topology_spread.scoring import PreScoreState

__all__ = [
    "DO_NOT_SCHEDULE",
    "LABEL_HOSTNAME",
    "LABEL_ZONE",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "REASON_CONSTRAINTS_NOT_MATCH",
    "REASON_NODE_LABEL_NOT_MATCH",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "PodTable",
    "PodTopologySpread",
    "PreFilterState",
    "PreScoreState",
    "default_selector",
]
