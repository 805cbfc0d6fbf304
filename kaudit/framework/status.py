"""Plugin statuses with upstream's codes (``pkg/scheduler/framework/interface.go``, v1.34)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
    Code.SKIP: "Skip", Code.PENDING: "Pending",
}
CODE_BY_LABEL = {label: code for code, label in _LABELS.items()}


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def of(cls, code: Code, *reasons: str, plugin: str = "") -> Status:
        return cls(code, tuple(reasons), plugin)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        """Unschedulable or UnschedulableAndUnresolvable (``IsRejected``)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin)

    def as_json(self) -> dict[str, object]:
        return {"code": self.code.label, "reasons": list(self.reasons)}


_SUCCESS = Status()
