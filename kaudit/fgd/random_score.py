"""``RandomScore``: one feasible node, drawn uniformly, scores 100 and the others 0.

Mirrors ``RandomScorePlugin`` of hkust-adsl/kubernetes-scheduler-simulator
(``pkg/simulator/plugin/random_score.go``): PreScore draws the node (``rand.Intn`` over the
feasible nodes), Score gives it ``MaxNodeScore``; it must be enabled at preScore and score.
kaudit draws with the attempt's decision seed, so the same seed gives the same run. The paper
pairs it with ``gpuSelMethod: random``.
"""

from __future__ import annotations

import random

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.cycle_state import DECISION_SEED_KEY, CycleState
from kaudit.framework.plugin import MAX_NODE_SCORE, PreScorePlugin, ScorePlugin
from kaudit.framework.runtime import PluginError
from kaudit.framework.status import Status
from kaudit.model.pod import PodInfo

NAME = "RandomScore"
_CHOSEN_KEY = "PreScore" + NAME


class RandomScore(PreScorePlugin, ScorePlugin):
    name = NAME

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        rng = random.Random(f"{state.read(DECISION_SEED_KEY)}/{NAME}")
        state.write(_CHOSEN_KEY, int(slots[rng.randrange(len(slots))]))
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        chosen = state.read(_CHOSEN_KEY)
        if chosen is None:
            # As the simulator's Score fails reading its PreScore state.
            # The framework wraps it as ``running Score plugins: plugin "…" failed with: …``.
            raise PluginError("no node drawn; enable it at preScore too")
        return np.where(slots == chosen, MAX_NODE_SCORE, 0).astype(np.int64)
