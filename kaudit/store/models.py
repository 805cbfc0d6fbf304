"""SQLAlchemy 2.x models of kaudit's event log.

The schema itself is owned by the Alembic revisions in ``migrations/``; a test checks that these
models and the migrations agree. Times are integers of microseconds so that every backend stores
and orders them identically; object bodies are compact JSON text, readable from SQL with
``json_extract`` (SQLite) or ``::jsonb`` (PostgreSQL).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: A 64-bit key that is still SQLite's ``INTEGER PRIMARY KEY`` (its rowid).
BigKey = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Trace(Base):
    """One ingested trace: a set of input files stored as an ordered stream of watch events."""

    __tablename__ = "traces"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    #: sha256 over the decompressed input and the options that shape the stored events.
    content_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: JSON list of ``{"path", "role", "format", "lines", "events", "bytes"}``, one per input.
    sources: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    kaudit_version: Mapped[str] = mapped_column(String(32))
    event_count: Mapped[int] = mapped_column(Integer)
    #: JSON object ``{kind: count}``; a trace never changes once ingested.
    kind_counts: Mapped[str] = mapped_column(Text)
    start_us: Mapped[int | None] = mapped_column(BigInteger)
    end_us: Mapped[int | None] = mapped_column(BigInteger)
    rejected_count: Mapped[int] = mapped_column(Integer, server_default="0")
    #: The KubeSchedulerConfiguration (JSON) the trace was recorded under, when it says so.
    scheduler_config: Mapped[str | None] = mapped_column(Text)
    #: JSON allocation, imbalance and fragmentation of the recorded cluster (the trace replayed
    #: with its own placements), computed by the trace's first replay.
    recorded_utilisation: Mapped[str | None] = mapped_column(Text)
    #: The Kubernetes release the trace was recorded from, as its source says it
    #: (``v1.34.2``), whether kaudit mirrors it or not; None when the source does not say.
    kubernetes_version: Mapped[str | None] = mapped_column(String(32))


class TraceEvent(Base):
    """One watch event of a trace, in replay order (``seq``)."""

    __tablename__ = "trace_events"
    __table_args__ = (
        UniqueConstraint("trace_id", "seq"),
        Index("ix_trace_events_trace_kind_name", "trace_id", "kind", "namespace", "name"),
    )

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    ts_us: Mapped[int] = mapped_column(BigInteger)
    type: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(63))
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    uid: Mapped[str | None] = mapped_column(String(64))
    #: Index into the trace's ``sources`` and the 1-based line the event came from.
    source: Mapped[int] = mapped_column(Integer)
    line: Mapped[int] = mapped_column(Integer)
    object: Mapped[str] = mapped_column(Text)


class RejectedLine(Base):
    """A line ``kaudit ingest --skip-invalid`` left out, with the reason."""

    __tablename__ = "rejected_lines"

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    trace_id: Mapped[int] = mapped_column(
        ForeignKey("traces.id", ondelete="CASCADE"), index=True
    )
    source: Mapped[str] = mapped_column(Text)
    line: Mapped[int | None] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text)
    #: The start of the offending line (at most 1,000 characters).
    text: Mapped[str | None] = mapped_column(Text)


class Run(Base):
    """One replay of a trace under one scheduler configuration and seed."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"),
                                          index=True)
    #: running, complete or failed (a running run whose owner is gone reads as abandoned).
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    seed: Mapped[int] = mapped_column(BigInteger)
    lifetime: Mapped[str] = mapped_column(String(16))
    #: The effective KubeSchedulerConfiguration (JSON) and where it came from.
    config: Mapped[str] = mapped_column(Text)
    config_source: Mapped[str | None] = mapped_column(Text)
    options: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    kaudit_version: Mapped[str] = mapped_column(String(32))
    #: JSON summary: pods scheduled, unschedulable, preempted, attempts, spans, timings.
    summary: Mapped[str | None] = mapped_column(Text)
    #: The process replaying the run, and when it last said it was alive.
    owner_host: Mapped[str | None] = mapped_column(String(255))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: The Kubernetes release whose kube-scheduler the run mirrored (``v1.34.2``).
    kubernetes_version: Mapped[str | None] = mapped_column(String(32))


class RunEvent(Base):
    """One entry of a run's event log, in order (``seq``); see ``kaudit.eventlog.sink``."""

    __tablename__ = "run_events"
    __table_args__ = (
        UniqueConstraint("run_id", "seq"),
        Index("ix_run_events_run_pod_seq", "run_id", "pod", "seq"),
        Index("ix_run_events_run_kind_ts", "run_id", "kind", "ts_us"),
        Index("ix_run_events_run_ts", "run_id", "ts_us"),
    )

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    ts_us: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))
    pod: Mapped[str | None] = mapped_column(String(320))
    node: Mapped[str | None] = mapped_column(String(253))
    data: Mapped[str] = mapped_column(Text)
    blob: Mapped[bytes | None] = mapped_column(LargeBinary)


def _run_key() -> Mapped[int]:
    return mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))


class RunNode(Base):
    """A node as it was over ``[start_us, end_us)`` of a run (a change opens a new row)."""

    __tablename__ = "run_nodes"
    __table_args__ = (Index("ix_run_nodes_run_start", "run_id", "start_us"),)

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    run_id: Mapped[int] = _run_key()
    slot: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(253))
    zone: Mapped[str] = mapped_column(String(253))
    start_us: Mapped[int] = mapped_column(BigInteger)
    end_us: Mapped[int | None] = mapped_column(BigInteger)
    cpu_milli: Mapped[int] = mapped_column(BigInteger)
    memory_bytes: Mapped[int] = mapped_column(BigInteger)
    pods: Mapped[int] = mapped_column(Integer)
    #: JSON ``{resource: amount}`` of extended resources (``nvidia.com/gpu``, hugepages).
    extended: Mapped[str] = mapped_column(Text)
    labels: Mapped[str] = mapped_column(Text)
    unschedulable: Mapped[bool] = mapped_column(Boolean)
    taints: Mapped[int] = mapped_column(Integer)


class RunPlacement(Base):
    """A pod held by a node over ``[start_us, end_us)``: assumed or bound, by kaudit or the
    trace, with the requests the scheduler accounted for it."""

    __tablename__ = "run_placements"
    __table_args__ = (Index("ix_run_placements_run_start", "run_id", "start_us"),
                      Index("ix_run_placements_run_node", "run_id", "node"))

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    run_id: Mapped[int] = _run_key()
    pod: Mapped[str] = mapped_column(String(320))
    node: Mapped[str] = mapped_column(String(253))
    start_us: Mapped[int] = mapped_column(BigInteger)
    end_us: Mapped[int | None] = mapped_column(BigInteger)
    by: Mapped[str] = mapped_column(String(16))
    priority: Mapped[int] = mapped_column(Integer)
    cpu_milli: Mapped[int] = mapped_column(BigInteger)
    memory_bytes: Mapped[int] = mapped_column(BigInteger)
    extended: Mapped[str] = mapped_column(Text)


class RunQueueSpan(Base):
    """A pod waiting in one queue (active, backoff, unschedulable, gated) of a run."""

    __tablename__ = "run_queue_spans"
    __table_args__ = (Index("ix_run_queue_spans_run_start", "run_id", "start_us"),)

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    run_id: Mapped[int] = _run_key()
    pod: Mapped[str] = mapped_column(String(320))
    queue: Mapped[str] = mapped_column(String(16))
    start_us: Mapped[int] = mapped_column(BigInteger)
    end_us: Mapped[int | None] = mapped_column(BigInteger)


class RunSeries(Base):
    """The run's state after each virtual instant that changed it: queue lengths, bound pods
    and the allocated share of each resource (JSON ``{resource: fraction}``)."""

    __tablename__ = "run_series"
    __table_args__ = (Index("ix_run_series_run_ts", "run_id", "ts_us"),)

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    run_id: Mapped[int] = _run_key()
    ts_us: Mapped[int] = mapped_column(BigInteger)
    active: Mapped[int] = mapped_column(Integer)
    backoff: Mapped[int] = mapped_column(Integer)
    unschedulable: Mapped[int] = mapped_column(Integer)
    gated: Mapped[int] = mapped_column(Integer)
    bound: Mapped[int] = mapped_column(Integer)
    allocation: Mapped[str] = mapped_column(Text)


class RunRejection(Base):
    """A filter plugin that rejected nodes in an attempt (record ``seq`` of the event log):
    the index behind filtering the log by plugin."""

    __tablename__ = "run_rejections"
    __table_args__ = (Index("ix_run_rejections_run_plugin_seq", "run_id", "plugin", "seq"),)

    id: Mapped[int] = mapped_column(BigKey, primary_key=True)
    run_id: Mapped[int] = _run_key()
    plugin: Mapped[str] = mapped_column(String(100))
    seq: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[int] = mapped_column(Integer)


class Sweep(Base):
    """A sweep: traces × configurations × seeds (``kaudit sweep SPEC``), its spec as JSON."""

    __tablename__ = "sweeps"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    #: The spec as read (JSON), with where its files were.
    spec: Mapped[str] = mapped_column(Text)
    #: The configuration label the report compares the others against.
    baseline: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    kaudit_version: Mapped[str] = mapped_column(String(32))
    #: The ``kaudit sweep`` process running the sweep, and when it last said it was alive: one
    #: coordinator at a time (a lease, taken over once its holder is gone).
    coordinator_host: Mapped[str | None] = mapped_column(String(255))
    coordinator_pid: Mapped[int | None] = mapped_column(Integer)
    coordinator_heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SweepCell(Base):
    """One cell of a sweep: one trace, configuration and seed, replayed as one run.

    ``key`` is the content digest (trace content, effective configuration, seed, replay
    options); ``claim`` names the attempt that owns the cell while it is ``running``."""

    __tablename__ = "sweep_cells"
    __table_args__ = (UniqueConstraint("sweep_id", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer)
    trace: Mapped[str] = mapped_column(String(100))
    config: Mapped[str] = mapped_column(String(100))
    seed: Mapped[int] = mapped_column(BigInteger)
    run_name: Mapped[str] = mapped_column(String(200))
    #: pending, running, complete or failed.
    status: Mapped[str] = mapped_column(String(16))
    claim: Mapped[str | None] = mapped_column(String(64))
    worker: Mapped[str | None] = mapped_column(String(255))
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")
    error: Mapped[str | None] = mapped_column(Text)
    #: JSON: the run's summary metrics (those of ``kaudit diff``, and the GPU report's).
    metrics: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    seconds: Mapped[float | None] = mapped_column(Float)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"),
                                               index=True)
