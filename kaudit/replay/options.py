"""What a replay is asked to do (:class:`ReplayOptions`) and what it reports when it ends
(:class:`ReplaySummary`, stored as the run's summary)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SECOND = 1_000_000


@dataclass
class ReplayOptions:
    seed: int = 0
    lifetime: str = "recorded"  # or "relative"
    recreate_preempted: bool = True
    bind_latency_us: int = 0
    #: How long one API call takes (preemption's status patches and deletions); with
    #: ``SchedulerAsyncPreemption`` the victims go in the background meanwhile.
    api_latency_us: int = 20_000
    #: How long a victim takes to terminate once its deletion is accepted (the kubelet
    #: stopping its containers); the scheduler counts it on its node until then.
    victim_termination_us: int = 1_000_000
    #: How long one scheduling cycle takes: the next pod is popped when it ends, and what
    #: falls due meanwhile (API calls such as preemption's deletions, trace events, timers)
    #: happens first. 0: cycles take no virtual time, activeQ is drained at one instant.
    cycle_duration_us: int = 0
    initial_backoff_us: int = 1 * SECOND
    max_backoff_us: int = 10 * SECOND
    max_in_unschedulable_us: int = 300 * SECOND
    #: How long after the trace's last event queue timers keep running (retries, flushes).
    settle_us: int = 0
    #: Schedule nothing: every pod keeps the trace's placement (the ``recorded`` pseudo-run).
    recorded_only: bool = False
    #: Try each pod once: one that fails is given up, not queued again (the FGD paper's
    #: protocol; it stays pending and counts as pending at the end).
    one_try: bool = False
    #: Sample GPU allocation and fragmentation against arrived workload after every pod tried
    #: (:mod:`kaudit.replay.gpu_sharing`); needs the trace's pods as the workload.
    gpu_report: bool = False
    #: How the scheduler breaks ties at the highest score (``kaudit.scheduler.schedule``).
    tie_break: str = "random"


@dataclass
class ReplaySummary:
    pods_scheduled: int = 0
    #: Pods never bound that are still waiting when the trace ends, tried or not (pending at
    #: end; kaudit.queries.summary_rows names it).
    pods_unschedulable: int = 0
    #: Of those, the pods never tried: held back by PreEnqueue (scheduling gates, a missing
    #: ResourceClaim) until the end.
    pods_held_back: int = 0
    #: Pods never bound that the trace deleted while they waited, tried or not.
    pods_deleted_pending: int = 0
    pods_preempted: int = 0
    pods_recreated: int = 0
    attempts: int = 0
    trace_events: int = 0
    start_us: int | None = None
    end_us: int | None = None
    wall_seconds: float = 0.0
    scheduling_seconds: float = 0.0
    log_bytes: dict[str, int] = field(default_factory=dict)
    log_records: dict[str, int] = field(default_factory=dict)
    utilisation: dict[str, Any] = field(default_factory=dict)
    gpu_sharing: dict[str, Any] | None = None
    #: Extender calls by step, and how many of them failed.
    extender_calls: dict[str, int] = field(default_factory=dict)
    extender_errors: int = 0
    #: With recorded answers: how many questions had none (see ``RecordedAnswers``).
    extender_answers: dict[str, Any] | None = None
    #: An audit's counts: decisions judged, by class (``kaudit.replay.audit``).
    audit: dict[str, Any] | None = None
    #: The first use of each feature the run's release turns on and kaudit does not model,
    #: with its warning (``kaudit.replay.unmodelled``).
    unmodelled_features: list[dict[str, Any]] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """What the user is warned of about the run."""
        return [str(found["message"]) for found in self.unmodelled_features]

    def count_extender_calls(self, calls: Iterable[Any]) -> None:
        for call in calls:
            self.extender_calls[call.step] = self.extender_calls.get(call.step, 0) + 1
            self.extender_errors += call.error is not None

    def as_json(self) -> dict[str, Any]:
        attempts_bytes = self.log_bytes.get("attempt", 0)
        return {
            "podsScheduled": self.pods_scheduled,
            # podsUnschedulable is podsPendingAtEnd under the name runs stored before both
            # metrics were named; readers take podsPendingAtEnd first.
            "podsUnschedulable": self.pods_unschedulable,
            "podsPendingAtEnd": self.pods_unschedulable,
            "podsNeverScheduled": self.pods_unschedulable + self.pods_deleted_pending,
            "podsHeldBack": self.pods_held_back,
            "podsPreempted": self.pods_preempted, "podsRecreated": self.pods_recreated,
            "attempts": self.attempts, "traceEvents": self.trace_events,
            "virtualSpanSeconds": ((self.end_us - self.start_us) / 1e6
                                   if self.start_us is not None and self.end_us is not None
                                   else 0.0),
            "wallSeconds": round(self.wall_seconds, 3),
            "podsPerSecond": (round(self.pods_scheduled / self.wall_seconds, 1)
                              if self.wall_seconds else None),
            "bytesPerAttempt": (round(attempts_bytes / self.attempts) if self.attempts else None),
            "logRecords": self.log_records,
            **self.utilisation,
            **({"gpuSharing": self.gpu_sharing} if self.gpu_sharing is not None else {}),
            **({"extenderCalls": self.extender_calls, "extenderErrors": self.extender_errors}
               if self.extender_calls else {}),
            **({"extenderAnswers": self.extender_answers}
               if self.extender_answers is not None else {}),
            **({"audit": self.audit} if self.audit is not None else {}),
            **({"unmodelledFeatures": self.unmodelled_features}
               if self.unmodelled_features else {}),
        }
