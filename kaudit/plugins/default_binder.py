"""DefaultBinder: binds the pod to the chosen node (``defaultbinder/default_binder.go``).

In a replay the binding is an event of the virtual cluster, applied by the replay engine; the
plugin only reports success, as the API server would on a valid Binding.
"""

from __future__ import annotations

from kaudit.framework.plugin import BindPlugin
from kaudit.framework.status import Status
from kaudit.plugins import names


class DefaultBinder(BindPlugin):
    name = names.DEFAULT_BINDER

    def bind(self, state, pod, node_name):  # type: ignore[no-untyped-def]
        return Status.success()
