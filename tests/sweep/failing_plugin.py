"""An out-of-tree plugin that breaks, for the tests of a sweep's failed cells."""

from __future__ import annotations

from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import NodeFilterPlugin, NodeView
from kaudit.framework.status import Status
from kaudit.model.pod import PodInfo


class Crash(NodeFilterPlugin):
    """Raises on the first node it filters: the replay of any cell using it fails."""

    name = "Crash"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> Status:
        raise RuntimeError("the Crash plugin crashed, as it does")
