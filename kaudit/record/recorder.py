"""The list/watch engine of ``kaudit record``, after client-go's reflector.

One thread per kind lists the collection (``limit``/``continue`` paging) and emits every item
as ``ADDED``, then watches from the list's ``resourceVersion`` with bookmarks. When the server
ends a watch (its timeout), the thread watches again from the last ``resourceVersion`` it saw,
bookmarks included. A ``410 Gone`` (an ERROR event or the answer to the watch request) means
that position is no longer available: the thread lists again and reconciles, emitting
``ADDED``/``MODIFIED``/``DELETED`` for what changed meanwhile. Other failures are retried with
capped exponential backoff. A kind whose first list is refused (401/403/404) is skipped with a
warning; the others go on.

The first lists run one kind after the other in :data:`~kaudit.model.kinds.KINDS` order and
the watches start when all are done, so a trace opens with the whole initial state, pods last.
Events reach the writer through one bounded queue, in arrival order, and only the thread that
calls :meth:`Recorder.run` writes; it first writes the trace's header with the API server's
release (``/version``), which ``kaudit ingest`` stores with the trace. Memory is bounded by
the cluster, not by the duration: per live object the recorder keeps its key, uid and
resourceVersion, nothing else.
"""

from __future__ import annotations

import queue
import random
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

import orjson

from kaudit.errors import InputError
from kaudit.model.kinds import KindSpec
from kaudit.model.recording import recorded_release
from kaudit.record.client import ApiError, Channel, TransportError

WATCH_TIMEOUT = 300
PAGE_SIZE = 500
QUEUE_SIZE = 10_000
MAX_WARNINGS = 100
ATTEMPTS = 4  # tries of the server check and of each first list before giving up
SHORT_WATCH = 1.0  # a watch that ends sooner without any event is retried after a backoff
STOP_GRACE = 3.0  # seconds to wait for the threads after a stop
EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")

Key = tuple[str, str]  # (namespace, name)


class EventSink(Protocol):
    """Where the recorded events go (a :class:`~kaudit.record.writer.TraceWriter`)."""

    def write(self, ts_us: int, event_type: str, obj: dict[str, Any]) -> None: ...

    def write_header(self, ts_us: int, kubernetes_version: str) -> None: ...

    def flush(self) -> None: ...


class ChannelSource(Protocol):
    """What opens channels to the API server (a :class:`~kaudit.record.client.KubeClient`)."""

    host: str

    def channel(self) -> Channel: ...


@dataclass
class RecordSummary:
    """What a recording did so far: counts, warnings, kinds skipped."""

    seconds: float
    events: int
    kinds: dict[str, int]
    bookmarks: int
    relists: int
    warnings: list[str]
    skipped: dict[str, str] = field(default_factory=dict)
    watching: bool = False
    #: The API server's release (``/version``'s gitVersion), written in the trace's header;
    #: None when ``/version`` did not say.
    kubernetes_version: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), "events": self.events, "kinds": self.kinds,
                "bookmarks": self.bookmarks, "relists": self.relists,
                "warnings": self.warnings, "skipped": self.skipped,
                "kubernetesVersion": self.kubernetes_version}


class Backoff:
    """Capped exponential delays (``initial`` doubling up to ``cap``), with a little jitter."""

    def __init__(self, initial: float, cap: float) -> None:
        self.initial = initial
        self.cap = cap
        self._next = initial

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay * random.uniform(1.0, 1.1)

    def reset(self) -> None:
        self._next = self.initial


class _Stopped(Exception):
    """The recording is stopping: unwind the thread."""


def now_us() -> int:
    return time.time_ns() // 1000


def _is_expired(error: ApiError) -> bool:
    """The resourceVersion can no longer be watched from: list again (as client-go does)."""
    return (error.status == 410 or error.reason in ("Expired", "Gone")
            or "too large resource version" in error.message.lower())


class Recorder:
    """Record ``kinds`` from ``client`` into a sink; :meth:`run` blocks, :meth:`stop` ends it."""

    def __init__(self, client: ChannelSource, kinds: Sequence[KindSpec], *,
                 namespace: str | None = None, watch_timeout: int = WATCH_TIMEOUT,
                 page_size: int = PAGE_SIZE, backoff_initial: float = 0.5,
                 backoff_max: float = 30.0, attempts: int = ATTEMPTS,
                 flush_interval: float = 1.0, queue_size: int = QUEUE_SIZE) -> None:
        if not kinds:
            raise InputError("no kind to record")
        self.client = client
        self.namespace = namespace
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.attempts = attempts
        self.flush_interval = flush_interval
        self.status_interval = 0.5
        self.server_version: str | None = None
        self.events = 0
        self.kinds: Counter[str] = Counter()
        self.warnings: list[str] = []
        self._dropped_warnings = 0
        self._pending_warnings: deque[str] = deque()
        self._warn_lock = threading.Lock()
        self._queue: queue.Queue[tuple[int, str, dict[str, Any]]] = queue.Queue(queue_size)
        self._stop = threading.Event()
        self._watch_go = threading.Event()
        self._signalled = False
        self._started = 0.0
        self._ended = 0.0
        previous: _KindWorker | None = None
        self._workers: list[_KindWorker] = []
        for spec in kinds:
            previous = _KindWorker(self, spec, previous)
            self._workers.append(previous)

    # -- control ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to finish (from any thread): it writes what it received and returns."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def backoff(self) -> Backoff:
        return Backoff(self.backoff_initial, self.backoff_max)

    def warn(self, message: str) -> None:
        """Record a warning (from any thread); :meth:`run` reports it."""
        with self._warn_lock:
            if len(self.warnings) < MAX_WARNINGS:
                self.warnings.append(message)
            else:
                self._dropped_warnings += 1
            if len(self._pending_warnings) < MAX_WARNINGS:
                self._pending_warnings.append(message)

    def emit(self, ts_us: int, event_type: str, obj: dict[str, Any]) -> None:
        """Queue one event for the writer; waits while the queue is full."""
        item = (ts_us, event_type, obj)
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue
        raise _Stopped

    def tracked_objects(self) -> dict[str, int]:
        """How many live objects each kind's thread keeps a record of."""
        return {w.spec.resource: len(w.objects) for w in self._workers}

    def summary(self) -> RecordSummary:
        warnings = list(self.warnings)
        if self._dropped_warnings:
            warnings.append(f"... and {self._dropped_warnings} more warnings")
        seconds = (self._ended or time.monotonic()) - self._started if self._started else 0.0
        return RecordSummary(
            seconds=seconds, events=self.events,
            kinds={w.spec.kind: self.kinds.get(w.spec.kind, 0) for w in self._workers
                   if w.listed},
            bookmarks=sum(w.bookmarks for w in self._workers),
            relists=sum(w.relists for w in self._workers),
            warnings=warnings,
            skipped={w.spec.resource: w.skipped for w in self._workers if w.skipped},
            watching=self._watch_go.is_set() and not self._stop.is_set(),
            kubernetes_version=self.server_version)

    # -- the main loop ----------------------------------------------------------------------

    def run(self, sink: EventSink, duration: float | None = None, *,
            on_status: Callable[[RecordSummary], None] | None = None,
            on_warning: Callable[[str], None] | None = None,
            handle_signals: bool = False) -> RecordSummary:
        """Record until ``duration`` seconds have passed (``None`` or 0: until :meth:`stop`).

        With ``handle_signals`` (main thread only), SIGINT and SIGTERM stop the recording
        cleanly instead of interrupting it. Raises :class:`InputError` when the server cannot
        be reached or no kind at all can be listed.
        """
        self._started = time.monotonic()
        deadline = self._started + duration if duration else None
        self._check_server()
        if self.server_version is not None:
            sink.write_header(now_us(), self.server_version)
        previous_handlers = self._install_signals() if handle_signals else {}
        threads = [threading.Thread(target=worker.run, daemon=True,
                                    name=f"kaudit-record-{worker.spec.resource}")
                   for worker in self._workers]
        for thread in threads:
            thread.start()
        failed = True
        try:
            self._loop(sink, deadline, on_status, on_warning)
            failed = False
        finally:
            self._stop.set()
            self._watch_go.set()
            for worker in self._workers:
                worker.channel.abort()
            grace = time.monotonic() + STOP_GRACE
            for thread in threads:
                thread.join(max(0.0, grace - time.monotonic()))
            try:
                self._write_available(sink, wait=0.0)  # what arrived before the stop
                sink.flush()
                self._report_warnings(on_warning)
            except Exception:
                if not failed:
                    raise
            finally:
                for signum, handler in previous_handlers.items():
                    signal.signal(signum, handler)
                self._ended = time.monotonic()
        return self.summary()

    def _loop(self, sink: EventSink, deadline: float | None,
              on_status: Callable[[RecordSummary], None] | None,
              on_warning: Callable[[str], None] | None) -> None:
        last_flush = last_status = time.monotonic()
        try:
            while True:
                self._write_available(sink, wait=0.1)
                self._report_warnings(on_warning)
                if self._signalled:
                    self._stop.set()
                now = time.monotonic()
                if self._stop.is_set() or (deadline is not None and now >= deadline):
                    break
                if not self._watch_go.is_set() and all(w.first_done.is_set()
                                                       for w in self._workers):
                    if all(w.skipped for w in self._workers):  # not merely stopped
                        raise InputError(self._nothing_listed())
                    self._watch_go.set()
                if now - last_flush >= self.flush_interval:
                    sink.flush()
                    last_flush = now
                if on_status is not None and now - last_status >= self.status_interval:
                    on_status(self.summary())
                    last_status = now
        except KeyboardInterrupt:
            pass  # without signal handling, Ctrl-C stops like stop() does

    def _write_available(self, sink: EventSink, wait: float) -> None:
        try:
            item = self._queue.get(timeout=wait) if wait else self._queue.get_nowait()
        except queue.Empty:
            return
        while True:
            ts_us, event_type, obj = item
            sink.write(ts_us, event_type, obj)
            self.events += 1
            self.kinds[obj.get("kind") or "?"] += 1
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return

    def _report_warnings(self, on_warning: Callable[[str], None] | None) -> None:
        while self._pending_warnings:
            with self._warn_lock:
                message = self._pending_warnings.popleft()
            if on_warning is not None:
                on_warning(message)

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(signum)
            signal.signal(signum, self._on_signal)
            previous[signum] = handler if handler is not None else signal.SIG_DFL
        return previous

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Only a flag: taking a lock here could deadlock with the interrupted main thread.
        self._signalled = True

    def _check_server(self) -> None:
        """Fail early, with one clear message, when the server is unreachable or refuses us."""
        channel = self.client.channel()
        backoff = self.backoff()
        for attempt in range(1, self.attempts + 1):
            try:
                version = channel.get_json("/version", [])
                self.server_version = recorded_release(version.get("gitVersion"))
                return
            except ApiError as exc:
                if exc.status == 401:
                    raise InputError(f"the API server at {self.client.host} refused the "
                                     f"credentials: {exc}") from None
                if exc.status < 500 and exc.status != 429:
                    return  # /version may be forbidden; the lists will tell
                error: Exception = exc
            except TransportError as exc:
                error = exc
            if attempt == self.attempts:
                raise InputError(f"cannot reach the API server at {self.client.host}: {error}")
            if self._stop.wait(backoff.next()):
                return

    def _nothing_listed(self) -> str:
        reasons = "; ".join(f"{w.spec.resource}: {w.skipped}" for w in self._workers
                            if w.skipped)
        return (f"cannot list any of the kinds to record at {self.client.host} ({reasons}); "
                "check the RBAC permissions (docs/recording.md)")


class _KindWorker:
    """The list/watch loop of one kind, run in its own thread."""

    def __init__(self, recorder: Recorder, spec: KindSpec, previous: _KindWorker | None) -> None:
        self.recorder = recorder
        self.spec = spec
        self.path = spec.path(recorder.namespace)
        self.previous = previous
        self.channel = recorder.client.channel()
        self.first_done = threading.Event()
        self.listed = False
        self.skipped: str | None = None
        self.bookmarks = 0
        self.relists = 0
        self.objects: dict[Key, tuple[str | None, str]] = {}  # key -> (uid, resourceVersion)
        self.resource_version = ""
        self._unknown_types: set[str] = set()

    # -- thread body ------------------------------------------------------------------------

    def run(self) -> None:
        try:
            if self.previous is not None:
                self._wait(self.previous.first_done)
            if self._first_list():
                self.first_done.set()
                self._wait(self.recorder._watch_go)
                self._watch_loop()
        except _Stopped:
            pass
        except Exception as exc:  # a bug must not end the recording of this kind silently
            self.recorder.warn(f"{self.spec.resource}: recording stopped by an unexpected "
                               f"error: {type(exc).__name__}: {exc}")
            if not self.listed:
                self.skipped = f"{type(exc).__name__}: {exc}"
        finally:
            self.first_done.set()

    def _wait(self, event: threading.Event) -> None:
        while not event.wait(0.2):
            if self.recorder.stopping:
                raise _Stopped
        if self.recorder.stopping:
            raise _Stopped

    def _sleep(self, seconds: float) -> None:
        if self.recorder._stop.wait(seconds):
            raise _Stopped

    def _first_list(self) -> bool:
        backoff = self.recorder.backoff()
        attempts = self.recorder.attempts
        for attempt in range(1, attempts + 1):
            try:
                self._list()
                self.listed = True
                return True
            except ApiError as exc:
                if exc.status in (401, 403, 404) or attempt == attempts:
                    return self._skip(exc)
                error: Exception = exc
            except TransportError as exc:
                if self.recorder.stopping:
                    raise _Stopped from None
                if attempt == attempts:
                    return self._skip(exc)
                error = exc
            delay = backoff.next()
            self.recorder.warn(f"listing {self.spec.resource} failed: {error}; "
                               f"retrying in {delay:.1f}s")
            self._sleep(delay)
        return False

    def _skip(self, error: Exception) -> bool:
        self.skipped = str(error) or type(error).__name__
        self.recorder.warn(f"cannot list {self.spec.resource}: {error}; "
                           "it will not be recorded")
        return False

    def _watch_loop(self) -> None:
        backoff = self.recorder.backoff()
        relist = False
        relists_in_a_row = 0
        while not self.recorder.stopping:
            try:
                if relist:
                    if relists_in_a_row:
                        self._sleep(backoff.next())  # 410 again at once: do not hammer
                    self._list()
                    self.relists += 1
                    relists_in_a_row += 1
                    relist = False
                received, outcome = self._watch()
            except ApiError as exc:
                if _is_expired(exc):
                    relist = True
                    continue
                self._retry(backoff, "listing" if relist else "watching", exc)
                continue
            except TransportError as exc:
                self._retry(backoff, "listing" if relist else "watching", exc)
                continue
            if received:
                relists_in_a_row = 0
            if outcome == "relist":
                relist = True
            elif outcome == "short":
                self._sleep(backoff.next())
            else:
                backoff.reset()

    def _retry(self, backoff: Backoff, doing: str, error: Exception) -> None:
        if self.recorder.stopping:
            raise _Stopped
        delay = backoff.next()
        self.recorder.warn(f"{doing} {self.spec.resource} failed: {error}; "
                           f"retrying in {delay:.1f}s")
        self._sleep(delay)

    # -- list -------------------------------------------------------------------------------

    def _list(self) -> None:
        """List all pages and reconcile with what is known: ADDED, MODIFIED, DELETED."""
        limit = self.recorder.page_size
        token: str | None = None
        seen: set[Key] = set()
        list_rv = ""
        while True:
            params = [("limit", str(limit))] if limit else []
            if token:
                params.append(("continue", token))
            try:
                page = self.channel.get_json(self.path, params)
            except ApiError as exc:
                if token and _is_expired(exc):
                    # The continue token expired: list everything at once, as client-go's
                    # pager does; what was already emitted reconciles to nothing.
                    limit, token, seen = 0, None, set()
                    continue
                raise
            ts_us = now_us()
            items = page.get("items")
            if items is None:
                items = []
            if not isinstance(items, list):
                raise TransportError(f"malformed list of {self.spec.resource}: items")
            for item in items:
                if isinstance(item, dict):
                    self._reconcile(item, ts_us, seen)
            metadata = page.get("metadata") or {}
            list_rv = str(metadata.get("resourceVersion") or list_rv)
            token = metadata.get("continue") or None
            if not token:
                break
        gone = [key for key in self.objects if key not in seen]
        if gone:
            ts_us = now_us()
            for key in gone:
                uid, rv = self.objects.pop(key)
                self.recorder.emit(ts_us, "DELETED", self._stub(key, uid, rv))
        self.resource_version = list_rv

    def _reconcile(self, item: dict[str, Any], ts_us: int, seen: set[Key]) -> None:
        obj = self._complete(item)
        key, uid, rv = _identity(obj)
        seen.add(key)
        known = self.objects.get(key)
        if known is None:
            event_type = "ADDED"
        elif known[0] and uid and known[0] != uid:  # deleted and created again meanwhile
            self.recorder.emit(ts_us, "DELETED", self._stub(key, *known))
            event_type = "ADDED"
        elif known[1] != rv:
            event_type = "MODIFIED"
        else:
            return
        self.objects[key] = (uid, rv)
        self.recorder.emit(ts_us, event_type, obj)

    def _complete(self, obj: dict[str, Any]) -> dict[str, Any]:
        """List items lack ``kind`` and ``apiVersion``: put them first, from the kind table."""
        if obj.get("kind") and obj.get("apiVersion"):
            return obj
        return {"apiVersion": self.spec.api_version, "kind": self.spec.kind,
                **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}

    def _stub(self, key: Key, uid: str | None, rv: str) -> dict[str, Any]:
        """The minimal last state of a deleted object (its full state is not kept)."""
        namespace, name = key
        metadata: dict[str, Any] = {"name": name}
        if namespace:
            metadata["namespace"] = namespace
        if uid:
            metadata["uid"] = uid
        metadata["resourceVersion"] = rv
        return {"apiVersion": self.spec.api_version, "kind": self.spec.kind,
                "metadata": metadata}

    # -- watch ------------------------------------------------------------------------------

    def _watch(self) -> tuple[int, str]:
        """One watch request; ``(events received, "ended" | "short" | "relist")``."""
        timeout = self.recorder.watch_timeout
        params = [("watch", "1"), ("allowWatchBookmarks", "true"),
                  ("timeoutSeconds", str(timeout))]
        if self.resource_version:
            params.insert(1, ("resourceVersion", self.resource_version))
        started = time.monotonic()
        received = 0
        lines = self.channel.stream_lines(self.path, params, read_timeout=timeout + 30)
        try:
            for line in lines:
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise TransportError(f"malformed watch event: {exc}") from None
                obj = event.get("object") if isinstance(event, dict) else None
                if not isinstance(obj, dict):
                    raise TransportError("malformed watch event: no object")
                event_type = event.get("type")
                if event_type == "ERROR":
                    error = ApiError.from_status(obj)
                    if _is_expired(error):
                        return received, "relist"
                    raise error
                received += 1
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if event_type == "BOOKMARK":
                    self.bookmarks += 1
                elif event_type in EVENT_TYPES:
                    self._apply(event_type, self._complete(obj))
                else:
                    self._unknown(str(event_type))
                if rv:
                    self.resource_version = str(rv)
        finally:
            lines.close()
        if received == 0 and time.monotonic() - started < SHORT_WATCH:
            return received, "short"
        return received, "ended"

    def _apply(self, event_type: str, obj: dict[str, Any]) -> None:
        key, uid, rv = _identity(obj)
        if event_type == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = (uid, rv)
        self.recorder.emit(now_us(), event_type, obj)

    def _unknown(self, event_type: str) -> None:
        if event_type not in self._unknown_types:
            self._unknown_types.add(event_type)
            self.recorder.warn(f"watching {self.spec.resource}: ignored events of unknown "
                               f"type {event_type!r}")


def _identity(obj: dict[str, Any]) -> tuple[Key, str | None, str]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    namespace = sys.intern(str(metadata.get("namespace") or ""))
    uid = metadata.get("uid")
    return ((namespace, str(metadata.get("name") or "")), str(uid) if uid else None,
            str(metadata.get("resourceVersion") or ""))
