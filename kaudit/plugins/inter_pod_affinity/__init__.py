"""InterPodAffinity: required pod (anti-)affinity filters nodes; preferred terms score them.

Mirrors ``pkg/scheduler/framework/plugins/interpodaffinity/`` of Kubernetes v1.34, file for
file: ``plugin`` (the plugin, its args, events and queueing hints), ``common`` (incoming terms,
the index of pods with affinity, topology-pair counting, and the label-selector errors
``NewPodInfo`` reports), ``filtering`` (PreFilter, its extensions and Filter) and ``scoring``
(PreScore, Score and NormalizeScore).
"""

from kaudit.plugins.inter_pod_affinity.common import (
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)
from kaudit.plugins.inter_pod_affinity.filtering import PreFilterState
from kaudit.plugins.inter_pod_affinity.plugin import InterPodAffinity
from kaudit.plugins.inter_pod_affinity.scoring import PreScoreState

__all__ = [
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "REASON_AFFINITY",
    "REASON_ANTI_AFFINITY",
    "REASON_EXISTING_ANTI_AFFINITY",
    "InterPodAffinity",
    "PreFilterState",
    "PreScoreState",
]
