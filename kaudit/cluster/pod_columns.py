"""Label selectors evaluated over the cluster's pod rows at once.

:class:`~kaudit.cluster.state.ClusterState` keeps its assigned pods as rows of columns (slot,
namespace code, labels, and label values interned per key on demand). A selector's
requirements become array masks over those rows, so the plugins that count the pods a
selector matches (PodTopologySpread, InterPodAffinity) test thousands of pods in a few vector
steps instead of one ``Requirement.matches`` call per pod. The results are those of
``labels.Selector.Matches`` (``k8s.io/apimachinery/pkg/labels/selector.go``), which
:meth:`kaudit.model.selectors.Requirement.matches` mirrors and still answers for ``Gt`` and
``Lt``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.model.selectors import LabelSelector, Requirement


def pod_requirement_mask(cluster: ClusterState, requirement: Requirement,
                     rows: np.ndarray) -> np.ndarray:
    """Which of the pod ``rows`` carry labels that ``requirement`` matches."""
    op = requirement.operator
    if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
        labels = cluster.pod_row_labels
        return np.fromiter((requirement.matches(labels[r]) for r in rows.tolist()), bool,
                           len(rows))
    codes, index = cluster.pod_label_column(requirement.key)
    codes = codes[rows]
    present: np.ndarray = codes >= 0
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return ~present
    wanted = [index[v] for v in requirement.values if v in index]
    inside = np.isin(codes, wanted) if wanted else np.zeros(len(codes), dtype=bool)
    return inside if op == "In" else ~inside


def pods_matching(cluster: ClusterState, selectors: Iterable[LabelSelector],
                  rows: np.ndarray) -> np.ndarray:
    """The pod ``rows`` whose labels every one of ``selectors`` matches (a missing selector
    matches nothing, an empty one everything)."""
    for selector in selectors:
        if selector.nothing:
            return rows[:0]
        for requirement in selector.requirements:
            if not len(rows):
                return rows
            rows = rows[pod_requirement_mask(cluster, requirement, rows)]
    return rows


def pods_in_namespaces(cluster: ClusterState, namespaces: Iterable[str] | None) -> np.ndarray:
    """Rows of the pods (terminating ones included) in ``namespaces`` (None: every
    namespace) on live nodes."""
    count = cluster.pod_rows
    codes = cluster.pod_row_any_namespace[:count]
    if namespaces is None:
        rows = np.flatnonzero(codes >= 0)
    else:
        wanted = [cluster.namespace_codes[n] for n in namespaces if n in cluster.namespace_codes]
        if not wanted:
            return np.zeros(0, dtype=np.int64)
        rows = np.flatnonzero(codes == wanted[0]) if len(wanted) == 1 \
            else np.flatnonzero(np.isin(codes, wanted))
    return rows[cluster.live[cluster.pod_row_slot[rows]]]
