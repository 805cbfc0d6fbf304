"""What the scheduler and its plugins know of a scheduler extender: the interface they call,
the error a call raises and the record each call leaves.

Mirrors ``pkg/scheduler/framework/extender.go`` (Kubernetes v1.34), the ``Extender`` interface
the scheduling cycle, the binding cycle and DefaultPreemption use; the HTTP implementation is
``kaudit.scheduler.extender.http``. ``EXTENDER_NAME`` is ``framework.ExtenderName``: the name put in
a pod's unschedulable plugins when extenders rejected nodes, which every cluster event wakes.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kaudit.model.pod import PodInfo

EXTENDER_NAME = "Extender"


class ExtenderError(Exception):
    """A call failed, or its answer cannot be used; the message is upstream's.
    ``latency_us`` is set when the failure replays a recorded one."""

    def __init__(self, message: str, latency_us: int | None = None) -> None:
        super().__init__(message)
        self.latency_us = latency_us


@dataclass
class ExtenderCall:
    """One call of one verb, as the event log keeps it: the answer's body as received, so
    that a replay from recorded answers reads exactly what the live one read."""

    extender: str
    #: Which step called: ``filter``, ``prioritize``, ``bind`` or ``preempt``.
    step: str
    #: The verb as configured (the last part of the URL).
    verb: str
    #: The nodes sent (filter, prioritize), the target node (bind) or the candidate nodes.
    nodes: list[str]
    #: The body of the answer, as received (for an HTTP 200), which recorded answers replay.
    body: bytes | None = None
    error: str | None = None
    latency_us: int = 0
    #: Whether a failure of this call is skipped (the extender is ``ignorable``).
    ignorable: bool = False
    #: sha256 of the request body (hex, 32 digits): which question a recorded answer answers.
    request: str = ""
    #: A filter call's passing nodes as the scheduler read them (None: none pass).
    passing: list[str] | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"extender": self.extender, "step": self.step,
                               "verb": self.verb, "nodes": self.nodes}
        if self.body is not None:
            try:
                out["body"] = self.body.decode("utf-8")
            except UnicodeDecodeError:
                out["bodyBase64"] = base64.b64encode(self.body).decode()
        out.update({"error": self.error, "latencyUs": self.latency_us,
                    "ignorable": self.ignorable, "request": self.request})
        if self.step == "filter" and self.error is None:
            out["passing"] = self.passing
        return out


def recorded_body(call: Mapping[str, Any]) -> bytes | None:
    """The answer's body of a recorded call (:meth:`ExtenderCall.as_json`), None without one."""
    if call.get("bodyBase64") is not None:
        return base64.b64decode(call["bodyBase64"])
    if call.get("body") is not None:
        return str(call["body"]).encode()
    return None


@dataclass(frozen=True)
class FilterAnswer:
    """What a filter call answered: the nodes that pass (None drops them all), and the
    failed and failed-and-unresolvable nodes with the extender's message for each."""

    passing: list[str] | None
    failed: dict[str, str] = field(default_factory=dict)
    failed_unresolvable: dict[str, str] = field(default_factory=dict)


class Extender(Protocol):
    """``framework.Extender``: nodes are passed as (name, Node object) pairs."""

    @property
    def name(self) -> str: ...

    @property
    def ignorable(self) -> bool: ...

    @property
    def weight(self) -> int: ...

    @property
    def is_filter(self) -> bool: ...

    @property
    def is_prioritizer(self) -> bool: ...

    @property
    def is_binder(self) -> bool: ...

    @property
    def supports_preemption(self) -> bool: ...

    def is_interested(self, pod: PodInfo) -> bool: ...

    def filter(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
               ) -> FilterAnswer: ...

    def prioritize(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
                   ) -> tuple[list[tuple[str, int]], int]: ...

    def bind(self, pod: PodInfo, node: str) -> None: ...

    def process_preemption(self, pod: PodInfo,
                           victims: Mapping[str, tuple[Sequence[PodInfo], int]],
                           pods_on: Callable[[str], Mapping[str, PodInfo] | None]
                           ) -> dict[str, tuple[list[PodInfo], int]]: ...
