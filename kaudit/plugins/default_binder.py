"""DefaultBinder: binds the pod to the chosen node (``defaultbinder/default_binder.go``).

In a replay the binding is an event of the virtual cluster, applied by the replay engine; the
plugin only reports success, as the API server would on a valid Binding.
"""

from __future__ import annotations

from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import BindPlugin
from kaudit.framework.status import Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names


class DefaultBinder(BindPlugin):
    name = names.DEFAULT_BINDER

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.success()
