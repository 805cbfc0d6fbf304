"""``kaudit ingest``: store trace files as one trace of ordered watch events, all or nothing.

Formats (:mod:`kaudit.readers.formats`): watch events (kaudit's native JSON Lines, ``kubectl
--output-watch-events``), Kubernetes audit logs, kube-scheduler-simulator records and snapshot
exports, Kubernetes Lists, and the Alibaba GPU trace's CSVs. Each file's format is told from
its first line unless ``--format`` says it. What a reader deliberately left out (a read
request in an audit log, say) is counted per file and reason in the trace's ``sources``. The
Kubernetes release a file says it was recorded from (a ``kaudit record`` header, an audit
log's kube-scheduler user agent) is kept per source and, the first one in reading order, on
the trace.

Inputs are streamed (memory stays bounded on gigabyte traces) and every line is validated. The
whole trace is written in one transaction: on the first invalid line nothing is stored and a
:class:`~kaudit.errors.TraceError` names ``FILE:LINE``; with ``skip_invalid`` the valid lines
are stored and each rejected line is recorded with its reason. Identical content (same bytes,
same options) is detected by its sha256 and not stored twice.

Order: snapshot objects first (as ``ADDED`` at the trace's start), then the event files in the
order given. Times must not go backwards unless ``sort`` is set, in which case events are
ordered by time, keeping arrival order among equal times.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from kaudit import __version__
from kaudit.errors import ConfigError, InputError, TraceError
from kaudit.input_limits import TOO_DEEP
from kaudit.readers import formats
from kaudit.readers.alibaba import AlibabaOptions, AlibabaSummary, read_alibaba
from kaudit.readers.audit import read_audit
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.formats import ALIBABA, AUDIT, AUTO, DOCUMENT, SIMULATOR, WATCH
from kaudit.readers.simulator import SIMULATOR_RECORDS, read_records
from kaudit.readers.snapshot import read_snapshot
from kaudit.readers.watch import UntimedClock, read_watch_stream
from kaudit.scheduler.build import load_object_config
from kaudit.store.bulk import insert_rows
from kaudit.store.models import RejectedLine, Trace, TraceEvent

EVENTS = "events"
SNAPSHOT = "snapshot"
BATCH_SIZE = 5000

_EVENT_COLUMNS = ("trace_id", "seq", "ts_us", "type", "kind", "namespace", "name", "uid",
                  "source", "line", "object")


@dataclass(frozen=True)
class TraceInput:
    path: Path
    role: str = EVENTS
    #: The format family asked for (``--format``); ``auto`` looks at the file.
    format: str = AUTO


@dataclass
class IngestResult:
    trace_id: int
    name: str
    events: int
    rejected: int
    kind_counts: dict[str, int]
    start_us: int | None
    end_us: int | None
    sources: list[dict[str, Any]] = field(default_factory=list)
    #: True when identical content was already stored: nothing new was written.
    duplicate: bool = False
    #: The scheduler configuration stored with the trace, if its input carried one.
    scheduler_config: dict[str, Any] | None = None
    #: The Kubernetes release the inputs say the trace was recorded from, if they say.
    kubernetes_version: str | None = None

    @property
    def dropped(self) -> int:
        return sum(count for source in self.sources
                   for count, _ in (source.get("dropped") or {}).values())


def content_hash(inputs: Sequence[TraceInput], options: dict[str, Any]) -> str:
    """sha256 over the decompressed inputs, their roles, and the options that shape events."""
    from kaudit.readers.files import hash_content

    digest = hashlib.sha256()
    digest.update(orjson.dumps(options, option=orjson.OPT_SORT_KEYS))
    for item in inputs:
        digest.update(f"\0{item.role}\0".encode())
        hash_content(item.path, digest)
    return digest.hexdigest()


def default_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".ndjson", ".json", ".yaml", ".yml", ".log"):
        name = name.removesuffix(suffix)
    return name or "trace"


def _unique_name(connection: Connection, wanted: str | None, fallback: str) -> str:
    taken = set(connection.scalars(select(Trace.name)))
    if wanted is not None:
        if wanted in taken:
            raise InputError(f"a trace named {wanted!r} already exists; choose another --name")
        return wanted
    name, counter = fallback, 1
    while name in taken:
        counter += 1
        name = f"{fallback}-{counter}"
    return name


class _Writer:
    """Buffers event and rejected-line rows and writes them in batches."""

    def __init__(self, connection: Connection, trace_id: int, batch_size: int) -> None:
        self.connection = connection
        self.trace_id = trace_id
        self.batch_size = batch_size
        self.events: list[tuple[Any, ...]] = []
        self.rejected: list[dict[str, Any]] = []
        self.seq = 0
        self.kinds: Counter[str] = Counter()
        self.rejected_count = 0

    def event(self, event: WatchEvent, source: int) -> None:
        self.events.append((
            self.trace_id, self.seq, event.ts_us, event.type, event.kind, event.namespace,
            event.name, event.uid, source, event.line, orjson.dumps(event.object).decode(),
        ))
        self.seq += 1
        self.kinds[event.kind] += 1
        if len(self.events) >= self.batch_size:
            self.flush()

    def reject(self, source: str, line: int | None, reason: str, text: str | None) -> None:
        self.rejected.append({"trace_id": self.trace_id, "source": source, "line": line,
                              "reason": reason, "text": text})
        self.rejected_count += 1
        if len(self.rejected) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if self.events:
            insert_rows(self.connection, "trace_events", _EVENT_COLUMNS, self.events)
            self.events = []
        if self.rejected:
            self.connection.execute(insert(RejectedLine), self.rejected)
            self.rejected = []


def _renumber_by_time(connection: Connection, trace_id: int) -> None:
    """Order a trace's events by (time, arrival) in place: seq becomes the sorted position."""
    ranked = (
        select(TraceEvent.id,
               (func.row_number().over(order_by=(TraceEvent.ts_us, TraceEvent.seq)) - 1)
               .label("position"))
        .where(TraceEvent.trace_id == trace_id)
        .subquery()
    )
    # Two steps through negative numbers keep (trace_id, seq) unique at every row update.
    connection.execute(
        update(TraceEvent)
        .where(TraceEvent.id == ranked.c.id)
        .values(seq=-ranked.c.position - 1)
    )
    connection.execute(
        update(TraceEvent).where(TraceEvent.trace_id == trace_id).values(seq=-TraceEvent.seq - 1)
    )


@dataclass
class _Plan:
    """The inputs in reading order, with the format each is read as."""

    inputs: list[TraceInput]
    formats: list[str]
    alibaba: AlibabaOptions | None


def _plan(inputs: Sequence[TraceInput], alibaba: AlibabaOptions | None) -> _Plan:
    """Resolve each input's format; documents become snapshots, which are read first."""
    resolved: list[tuple[TraceInput, str]] = []
    for item in inputs:
        if item.role == SNAPSHOT:
            resolved.append((item, DOCUMENT))
            continue
        sniffed = (formats.sniff(item.path) if item.format in (AUTO, ALIBABA, SIMULATOR)
                   else None)
        if item.format == AUTO:
            assert sniffed is not None
            fmt = sniffed
        elif item.format == ALIBABA:
            if sniffed not in (formats.ALIBABA_NODES, formats.ALIBABA_PODS):
                raise TraceError(str(item.path), 1, "not an Alibaba openb node list "
                                 "(sn,cpu_milli,memory_mib,gpu,model) nor pod list "
                                 "(name,cpu_milli,memory_mib,num_gpu,gpu_milli,...)")
            fmt = sniffed
        elif item.format == SIMULATOR:
            fmt = DOCUMENT if sniffed == DOCUMENT else SIMULATOR_RECORDS
        else:
            fmt = item.format
        if fmt == DOCUMENT:
            item = TraceInput(item.path, SNAPSHOT, item.format)
        resolved.append((item, fmt))
    resolved.sort(key=lambda pair: pair[0].role != SNAPSHOT)  # stable: snapshots first
    kinds = [fmt for _, fmt in resolved]
    tables = kinds.count(formats.ALIBABA_NODES), kinds.count(formats.ALIBABA_PODS)
    if any(tables):
        if tables != (1, 1):
            raise InputError("the Alibaba trace needs exactly one node list and one pod list "
                             f"(got {tables[0]} node list(s) and {tables[1]} pod list(s))")
        if len(resolved) != 2:
            raise InputError("the Alibaba trace's node and pod lists cannot be mixed with "
                             "other trace files")
        resolved.sort(key=lambda pair: pair[1] != formats.ALIBABA_NODES)
    elif alibaba is not None and replace(alibaba, step_us=0) != replace(AlibabaOptions(),
                                                                        step_us=0):
        raise InputError("--shuffle, --seed, --gpu-load, --no-deletions and --gpu-sharing "
                         "apply to the Alibaba trace only")
    return _Plan([item for item, _ in resolved], [fmt for _, fmt in resolved],
                 (alibaba or AlibabaOptions()) if any(tables) else None)


def ingest_trace(
    engine: Engine,
    inputs: Sequence[TraceInput],
    *,
    name: str | None = None,
    start_us: int | None = None,
    step_us: int = 0,
    sort: bool = False,
    skip_invalid: bool = False,
    progress: Callable[[int], None] | None = None,
    batch_size: int = BATCH_SIZE,
    alibaba: AlibabaOptions | None = None,
    scheduler_config: bool = True,
) -> IngestResult:
    """Ingest ``inputs`` as one trace; see the module docstring for the rules.

    ``alibaba`` shapes an Alibaba openb trace; ``scheduler_config=False`` ignores a
    configuration carried by the input (a simulator snapshot's ``schedulerConfig``).
    """
    if not inputs:
        raise InputError("nothing to ingest: give at least one trace file")
    if step_us < 0:
        raise InputError("--step must not be negative")
    for item in inputs:
        if not item.path.is_file():
            raise TraceError(str(item.path), None, "no such file" if not item.path.exists()
                             else "not a regular file")
    plan = _plan(inputs, alibaba)
    if plan.alibaba is not None and start_us is not None:
        plan.alibaba = replace(plan.alibaba, start_us=start_us)
    options: dict[str, Any] = {"start_us": start_us, "step_us": step_us, "sort": sort}
    if plan.formats != [WATCH if i.role != SNAPSHOT else DOCUMENT for i in plan.inputs]:
        options["formats"] = plan.formats  # older traces hash without it: keep their identity
    if plan.alibaba is not None:
        options["alibaba"] = asdict(plan.alibaba)
    if not scheduler_config:
        options["schedulerConfig"] = False
    digest = content_hash(plan.inputs, options)

    with engine.connect() as connection:
        existing = connection.execute(
            select(Trace.id, Trace.name).where(Trace.content_hash == digest)).first()
    if existing is not None:
        return _describe_existing(engine, existing.id, duplicate=True)

    try:
        with engine.begin() as connection:
            return _store(connection, plan, digest, name=name, start_us=start_us,
                          step_us=step_us, sort=sort, skip_invalid=skip_invalid,
                          progress=progress, batch_size=batch_size,
                          use_config=scheduler_config)
    except IntegrityError as exc:
        # Another process stored the same content (or name) between our check and commit.
        raise InputError(f"could not store the trace: {exc.orig}") from None


_Items = Iterator[tuple[int, WatchEvent | Rejected]]


def _parts(plan: _Plan, stats: list[StreamStats], start_us: int | None, step_us: int,
           progress: Callable[[int], None] | None) -> Iterator[tuple[list[int], _Items]]:
    """Groups of inputs read together (audit logs are merged by time), with their items."""
    clock = UntimedClock(start_us or 0, step_us)

    def tagged(index: int, items: Iterator[WatchEvent | Rejected]) -> _Items:
        for element in items:
            yield index, element
        if plan.formats[index] in (DOCUMENT, formats.ALIBABA_PODS) and progress is not None:
            progress(plan.inputs[index].path.stat().st_size)

    audit = [i for i, fmt in enumerate(plan.formats) if fmt == AUDIT]
    known: list[dict[str, Any]] = []  # snapshot objects, the state audit logs start from

    def remembered(items: Iterator[WatchEvent | Rejected]) -> Iterator[WatchEvent | Rejected]:
        for element in items:
            if audit and isinstance(element, WatchEvent):
                known.append(element.object)
            yield element

    def merged_audit() -> _Items:
        for position, element in read_audit([plan.inputs[i].path for i in audit],
                                            [stats[i] for i in audit], progress, known):
            yield audit[position], element

    for index, (item, fmt) in enumerate(zip(plan.inputs, plan.formats, strict=True)):
        if fmt == DOCUMENT:
            yield [index], tagged(index, remembered(
                read_snapshot(item.path, start_us or 0, stats[index])))
        elif fmt == AUDIT:
            if index == audit[0]:
                yield audit, merged_audit()
        elif fmt == SIMULATOR_RECORDS:
            yield [index], tagged(index, read_records(item.path, stats[index], progress))
        elif fmt == formats.ALIBABA_NODES:
            assert plan.alibaba is not None
            yield [index, index + 1], _alibaba_items(plan, index, stats)
        elif fmt == formats.ALIBABA_PODS:
            continue  # read with the node list
        else:
            yield [index], tagged(index, read_watch_stream(item.path, clock, stats[index],
                                                           progress))


def _alibaba_items(plan: _Plan, index: int, stats: list[StreamStats]) -> _Items:
    assert plan.alibaba is not None
    summary = AlibabaSummary()
    for offset, element in read_alibaba(plan.inputs[index].path, plan.inputs[index + 1].path,
                                        plan.alibaba, stats[index], stats[index + 1],
                                        summary=summary):
        yield index + offset, element
    stats[index + 1].details = {"summary": summary.describe(), **asdict(summary)}


def _store(connection: Connection, plan: _Plan, digest: str, *,
           name: str | None, start_us: int | None, step_us: int, sort: bool,
           skip_invalid: bool, progress: Callable[[int], None] | None,
           batch_size: int, use_config: bool) -> IngestResult:
    inputs = plan.inputs
    trace_name = _unique_name(connection, name, default_name(inputs[-1].path))
    trace_id = connection.execute(
        insert(Trace).values(
            name=trace_name, content_hash=digest, sources="[]",
            created_at=datetime.now(UTC), kaudit_version=__version__, event_count=0,
            kind_counts="{}", rejected_count=0,
        ).returning(Trace.id)
    ).scalar_one()
    writer = _Writer(connection, trace_id, batch_size)
    stats = [StreamStats() for _ in inputs]
    counts = [[0, 0] for _ in inputs]  # events, rejected per input
    snapshot_seqs: list[int] = []
    last_ts: int | None = None
    min_ts: int | None = None
    max_ts: int | None = None
    out_of_order = False

    for indices, items in _parts(plan, stats, start_us, step_us, progress):
        index = indices[0]
        try:
            for index, element in items:
                path = str(inputs[index].path)
                if isinstance(element, Rejected):
                    if not skip_invalid:
                        raise TraceError(path, element.line, element.reason)
                    writer.reject(path, element.line, element.reason, element.text)
                    counts[index][1] += 1
                    continue
                if inputs[index].role == SNAPSHOT:
                    snapshot_seqs.append(writer.seq)
                else:
                    ts = element.ts_us
                    if start_us is not None and ts < start_us and not sort:
                        raise TraceError(path, element.line, "time goes backwards: this event "
                                         "is before --start (use --sort to reorder)")
                    if last_ts is not None and ts < last_ts:
                        if not sort:
                            raise TraceError(path, element.line, "time goes backwards: "
                                             f"{ts / 1e6:.6f}s after {last_ts / 1e6:.6f}s "
                                             "(use --sort to reorder events by time)")
                        out_of_order = True
                    last_ts = ts
                    min_ts = ts if min_ts is None else min(min_ts, ts)
                    max_ts = ts if max_ts is None else max(max_ts, ts)
                try:
                    writer.event(element, index)
                except orjson.JSONEncodeError as exc:
                    # Reachable only through a patch that deepens a stored object.
                    raise TraceError(path, element.line, "object: cannot be stored as JSON "
                                     f"({exc}): {TOO_DEEP} once patched") from None
                counts[index][0] += 1
        except TraceError as exc:
            if not skip_invalid or exc.source not in {str(inputs[i].path) for i in indices}:
                raise
            writer.reject(exc.source, exc.line, exc.reason, None)  # damaged: keep what was read
            counts[index][1] += 1
    writer.flush()
    _refuse_empty(inputs, stats, counts)

    sources = [_source_entry(item, fmt, stat, count)
               for item, fmt, stat, count in zip(inputs, plan.formats, stats, counts,
                                                 strict=True)]
    config = _scheduler_config(inputs, stats) if use_config else None
    release = next((stat.kubernetes_version for stat in stats
                    if stat.kubernetes_version is not None), None)

    start = start_us if start_us is not None else min_ts
    if snapshot_seqs:
        start = start if start is not None else 0
        if start_us is None and start != 0:
            connection.execute(
                update(TraceEvent)
                .where(TraceEvent.trace_id == trace_id, TraceEvent.source.in_(
                    [i for i, item in enumerate(inputs) if item.role == SNAPSHOT]))
                .values(ts_us=start))
        min_ts = start if min_ts is None else min(min_ts, start)
        max_ts = start if max_ts is None else max(max_ts, start)
    if out_of_order:
        _renumber_by_time(connection, trace_id)

    kind_counts = dict(sorted(writer.kinds.items()))
    connection.execute(
        update(Trace).where(Trace.id == trace_id).values(
            sources=orjson.dumps(sources).decode(), event_count=writer.seq,
            kind_counts=orjson.dumps(kind_counts).decode(), start_us=min_ts, end_us=max_ts,
            rejected_count=writer.rejected_count,
            scheduler_config=None if config is None else orjson.dumps(config).decode(),
            kubernetes_version=release,
        )
    )
    return IngestResult(trace_id=trace_id, name=trace_name, events=writer.seq,
                        rejected=writer.rejected_count, kind_counts=kind_counts,
                        start_us=min_ts, end_us=max_ts, sources=sources,
                        scheduler_config=config, kubernetes_version=release)


def _refuse_empty(inputs: Sequence[TraceInput], stats: list[StreamStats],
                  counts: list[list[int]]) -> None:
    """A trace must hold something to replay: an empty file, or inputs that hold only
    records kaudit leaves out, are refused rather than stored as a trace of nothing."""
    for item, stat, (events, rejected) in zip(inputs, stats, counts, strict=True):
        if not events and not rejected and not stat.dropped and not stat.bookmarks:
            raise TraceError(str(item.path), None, "the file holds no events: it is empty")
    if not any(events for events, _ in counts):
        left_out = sum(count for stat in stats for count, _ in stat.dropped.values())
        rejected = sum(r for _, r in counts)
        names = ", ".join(str(item.path) for item in inputs)
        raise InputError(f"{names}: nothing to replay: no event was kept ({left_out} record(s) "
                         f"left out as not replayable, {rejected} rejected as invalid)")


def _source_entry(item: TraceInput, fmt: str, stats: StreamStats,
                  count: list[int]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": str(item.path), "role": item.role, "format": stats.format or (
            None if fmt in (WATCH, DOCUMENT) else fmt),
        "lines": stats.lines, "events": count[0], "rejected": count[1],
        "bookmarks": stats.bookmarks, "bytes": item.path.stat().st_size,
    }
    if stats.dropped:
        entry["dropped"] = dict(sorted(stats.dropped.items(), key=lambda kv: -kv[1][0]))
    if stats.details:
        entry["details"] = stats.details
    if stats.kubernetes_version is not None:
        entry["kubernetesVersion"] = stats.kubernetes_version
    return entry


def _scheduler_config(inputs: Sequence[TraceInput],
                      stats: Sequence[StreamStats]) -> dict[str, Any] | None:
    """The one configuration the inputs carry, checked now rather than at replay."""
    carried = [(item, stat.scheduler_config) for item, stat in zip(inputs, stats, strict=True)
               if stat.scheduler_config is not None]
    if not carried:
        return None
    if len(carried) > 1 and any(c != carried[0][1] for _, c in carried):
        raise InputError("the inputs carry different scheduler configurations: "
                         f"{', '.join(str(i.path) for i, _ in carried)} (use --no-config to "
                         "ignore them)")
    item, config = carried[0]
    try:
        load_object_config(config, f"{item.path}: schedulerConfig")
    except ConfigError as exc:
        raise ConfigError(f"{exc}\n(the trace is not stored; --no-config ingests it without "
                          "its scheduler configuration)") from None
    return config


def _describe_existing(engine: Engine, trace_id: int, *, duplicate: bool) -> IngestResult:
    with engine.connect() as connection:
        trace = connection.execute(select(Trace).where(Trace.id == trace_id)).one()
    return IngestResult(
        trace_id=trace.id, name=trace.name, events=trace.event_count,
        rejected=trace.rejected_count, kind_counts=orjson.loads(trace.kind_counts),
        start_us=trace.start_us, end_us=trace.end_us, sources=orjson.loads(trace.sources),
        duplicate=duplicate, scheduler_config=None if trace.scheduler_config is None
        else orjson.loads(trace.scheduler_config), kubernetes_version=trace.kubernetes_version,
    )
