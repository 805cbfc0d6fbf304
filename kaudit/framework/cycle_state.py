"""Per-cycle plugin state whose entries can be cloned (``framework/cycle_state.go``).

Preemption and the nominated-pods pass clone the state and let plugins update their own
entries (PreFilter extensions ``add_pod`` / ``remove_pod``); entries that define ``clone()``
are deep enough copies for that, others are shared.
"""

from __future__ import annotations

from typing import Any

#: The state entry holding the seed of this decision (run seed, pod UID, attempt): ties among
#: top-scoring nodes and preemption's random choices are drawn from it, so a replay repeats.
DECISION_SEED_KEY = "kaudit/decision-seed"
#: The state entry naming a node the audit looks for among preemption's nominations: the dry
#: run examines every potential node, then starts at the first offset that nominates it.
PREEMPTION_TARGET_KEY = "kaudit/preemption-target"
#: ``framework.ErrNotFound``'s text: what ``CycleState.Read`` fails with for a key never written.
NOT_FOUND = "not found"


class CycleState:
    __slots__ = ("_data", "skip_filter", "skip_score")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        #: Plugins whose PreFilter returned Skip: their Filter does not run this cycle.
        self.skip_filter: set[str] = set()
        #: Plugins whose PreScore returned Skip: their Score does not run this cycle.
        self.skip_score: set[str] = set()

    def read(self, key: str) -> Any:
        return self._data.get(key)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def clone(self) -> CycleState:
        copy = CycleState()
        copy._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        copy.skip_filter = set(self.skip_filter)
        copy.skip_score = set(self.skip_score)
        return copy
