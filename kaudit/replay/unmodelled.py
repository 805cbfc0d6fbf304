"""The run's warnings about features its release turns on and kaudit does not model.

A replay's events pass through :meth:`UnmodelledFeatureWatch.watch` on their way to the feed:
the objects of the kinds that can use such a feature (:mod:`kaudit.model.unmodelled_features`)
are looked at until each feature the run's feature gates turn on has been met once, and the
first use of each becomes one warning of the run, naming the gate, the object and where the
trace has it (``FILE:LINE``, else the event's number). The warnings go into the run's summary
(``unmodelledFeatures``), where ``kaudit replay`` prints them on stderr and ``kaudit runs RUN``
shows them.

The check costs a set lookup per event (and nothing once every feature has been met, or when
the release turns none on); objects of the few kinds that can use a feature are inspected by
their cheap keys first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kaudit.config import FeatureGates
from kaudit.model.unmodelled_features import FeatureDetector, object_ref, warning_message
from kaudit.replay.options import ReplaySummary
from kaudit.store.traces import StoredEvent


class UnmodelledFeatureWatch:
    """Looks at a replay's events for the unmodelled features ``gates`` turn on; the first
    use of each is added to ``summary``. ``sources`` are the paths of the trace's inputs (by
    an event's ``source``), for naming where an object is."""

    def __init__(self, gates: FeatureGates, summary: ReplaySummary,
                 sources: Sequence[str | None] = ()) -> None:
        self.gates = gates
        self.summary = summary
        self.sources = sources
        self.detector = FeatureDetector(gates)

    def watch(self, events: Iterable[StoredEvent]) -> Iterable[StoredEvent]:
        """``events``, unchanged, looked at on their way."""
        if not self.detector.kinds:
            return events  # nothing to look for: no wrapper at all
        return self._watch(events)

    def _watch(self, events: Iterable[StoredEvent]) -> Iterator[StoredEvent]:
        detector = self.detector
        for event in events:
            if event.kind in detector.kinds and event.type != "DELETED":
                self._inspect(event)
            yield event

    def _where(self, event: StoredEvent) -> str:
        path = self.sources[event.source] if 0 <= event.source < len(self.sources) else None
        if path and event.line:
            return f"{path}:{event.line}"
        return f"trace event {event.seq}"

    def _inspect(self, event: StoredEvent) -> None:
        uses = self.detector.uses(event.kind, event.object)
        if not uses:
            return
        subject = object_ref(event.kind, event.namespace, event.name)
        where = self._where(event)
        explicit = self.gates.overrides
        for use in uses:
            self.detector.found(use.gate)
            self.summary.unmodelled_features.append(self._record(
                event, use.gate, use.uses, warning_message(
                    use, subject, release=self.gates.version.name,
                    explicit=bool(explicit.get(use.gate)), where=where)))

    @staticmethod
    def _record(event: StoredEvent, gate: str, uses: str, message: str) -> dict[str, Any]:
        return {"gate": gate, "kind": event.kind, "namespace": event.namespace or None,
                "name": event.name, "uses": uses, "traceSeq": event.seq,
                "source": event.source, "line": event.line, "message": message}
