"""Where extenders take part in a scheduling cycle: their filter after the filter plugins,
their scores beside the score plugins', and their bind instead of the bind plugins.

Mirrors ``findNodesThatPassExtenders``, the extender part of ``prioritizeNodes`` and
``extendersBinding`` of ``pkg/scheduler/schedule_one.go`` (Kubernetes v1.34):

* filter: the extenders in call order (ignorable ones last), each sent only the nodes still
  feasible, skipping an extender not interested in the pod; a failed call of an ignorable
  extender is skipped, any other fails the cycle; failed-and-unresolvable nodes get an
  UnschedulableAndUnresolvable status with the extender's message as its one reason, failed
  nodes (not also unresolvable) an Unschedulable one; neither names a plugin;
* scores: every interested extender's answer, ``score × weight × 10`` (``MaxNodeScore /
  MaxExtenderPriority``) added to the node's total; a failed call adds nothing; answered hosts
  that were not sent are ignored, a host answered twice counts twice;
* bind: the first interested extender with a bind verb binds the pod; when its call fails and
  it is ignorable the next one is tried, and when none bound it the bind plugins run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.extender import Extender, ExtenderError
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo

#: ``framework.MaxNodeScore / extenderv1.MaxExtenderPriority``.
EXTENDER_SCORE_SCALE = 100 // 10


def _nodes(cluster: ClusterState, slots: np.ndarray) -> list[tuple[str, dict[str, Any]]]:
    return [(node.name, node.obj) for node in map(cluster.node, slots.tolist())]


def filter_through_extenders(extenders: Sequence[Extender], pod: PodInfo,
                             cluster: ClusterState, slots: np.ndarray,
                             statuses: dict[str, Status]) -> np.ndarray:
    """The slots of ``slots`` every extender lets through (in their order); the statuses of
    the nodes extenders failed are set in ``statuses``. Raises :class:`ExtenderError` when a
    call that is not ignorable fails."""
    for extender in extenders:
        if len(slots) == 0:
            break
        if not extender.is_filter or not extender.is_interested(pod):
            continue
        nodes = _nodes(cluster, slots)
        try:
            answer = extender.filter(pod, nodes)
        except ExtenderError:
            if extender.ignorable:
                continue
            raise
        for name, message in answer.failed_unresolvable.items():
            statuses[name] = Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
        for name, message in answer.failed.items():
            if name not in answer.failed_unresolvable:
                statuses[name] = Status.of(Code.UNSCHEDULABLE, message)
        if answer.passing is None:
            slots = slots[:0]
            continue
        keep = set(answer.passing)
        slots = slots[np.fromiter((name in keep for name, _ in nodes), bool, len(nodes))]
    return slots


def _int64(value: int) -> int:
    """``value`` as Go's int64 arithmetic leaves it (wrapped)."""
    return (value + 2**63) % 2**64 - 2**63


def extender_scores(extenders: Sequence[Extender], pod: PodInfo, cluster: ClusterState,
                    slots: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Each interested prioritizing extender's final scores over ``slots`` (zero where it gave
    none) and its weight, keyed by its name (``#2``... after a repeated ``urlPrefix``); an
    extender whose call failed adds nothing and has no entry."""
    scores: dict[str, np.ndarray] = {}
    weights: dict[str, int] = {}
    nodes: list[tuple[str, dict[str, Any]]] | None = None
    position: dict[str, int] = {}
    for extender in extenders:
        # An extender without a prioritize verb scores every node 0 upstream; it is left out.
        if not extender.is_prioritizer or not extender.is_interested(pod):
            continue
        if nodes is None:
            nodes = _nodes(cluster, slots)
            position = {name: i for i, (name, _) in enumerate(nodes)}
        try:
            answered, weight = extender.prioritize(pod, nodes)
        except ExtenderError:
            continue  # upstream logs it and goes on without this extender's scores
        sums = [0] * len(slots)
        for host, score in answered:
            i = position.get(host)
            if i is not None:
                sums[i] = _int64(sums[i] + _int64(score * weight * EXTENDER_SCORE_SCALE))
        key, repeat = extender.name, 2
        while key in scores:
            key, repeat = f"{extender.name}#{repeat}", repeat + 1
        scores[key] = np.asarray(sums, dtype=np.int64)
        weights[key] = weight
    return scores, weights


def bind_with_extenders(extenders: Sequence[Extender], pod: PodInfo, node: str
                        ) -> tuple[str, Status] | None:
    """``extendersBinding``: (binder, status) when an extender bound the pod (or failed to,
    not being ignorable), None when the bind plugins should bind it."""
    for extender in extenders:
        if not extender.is_binder or not extender.is_interested(pod):
            continue
        try:
            extender.bind(pod, node)
        except ExtenderError as exc:
            if extender.ignorable:
                continue
            return extender.name, Status.of(Code.ERROR, str(exc))
        return extender.name, Status.success()
    return None
