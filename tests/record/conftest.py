"""A fake Kubernetes API server for the ``kaudit record`` tests: list and watch over real HTTP.

:class:`FakeCluster` keeps objects per resource with resourceVersions from one global counter
and serves, on 127.0.0.1, the collection paths of :data:`kaudit.model.kinds.KINDS`:

- LIST with ``limit``/``continue`` paging (pages of one snapshot) and ``metadata.resourceVersion``;
- WATCH (``watch=1``, ``resourceVersion``, ``allowWatchBookmarks``, ``timeoutSeconds``) as an
  HTTP/1.1 chunked stream of JSON lines, every line split over two chunks;
- ``/version`` (``gitVersion`` :attr:`FakeCluster.git_version`), and bearer-token
  authentication (:data:`TOKEN`).

Tests change objects while watches are open (:meth:`FakeCluster.create`, ``update``,
``delete``); with ``notify=False`` a change is kept out of the watch history, as if the history
had been compacted while the recorder was away, so a watch from before it answers an ERROR
event ``410 Expired``. They can also make the next watch answer an HTTP error
(:meth:`FakeCluster.fail_next_watch`), refuse a resource (``forbidden``), send bookmarks, end
the open watches as a server timeout does or cut them, slow the lists down, and expire continue
tokens.
"""

from __future__ import annotations

import copy
import gzip
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
import pytest

from kaudit.model.kinds import BY_RESOURCE, parse_kinds
from kaudit.model.recording import is_header
from kaudit.record.client import KubeClient, load_configuration
from kaudit.record.recorder import Recorder, RecordSummary
from kaudit.record.writer import TraceWriter

TOKEN = "dummy-token"
Key = tuple[str, str]

_CORE = re.compile(r"^/api/v1(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)$")
_GROUP = re.compile(r"^/apis/[^/]+/[^/]+(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)$")


@dataclass
class Change:
    rv: int
    resource: str
    type: str
    obj: dict[str, Any]


@dataclass
class Request:
    verb: str  # "list" or "watch"
    resource: str
    namespace: str | None
    params: dict[str, str]


@dataclass
class FakeCluster:
    """The state and the knobs of the fake API server (thread-safe)."""

    url: str = ""
    rv: int = 100
    store: dict[str, dict[Key, dict[str, Any]]] = field(
        default_factory=lambda: {resource: {} for resource in BY_RESOURCE})
    history: list[Change] = field(default_factory=list)
    compacted: dict[str, int] = field(default_factory=dict)
    forbidden: set[str] = field(default_factory=set)
    requests: list[Request] = field(default_factory=list)
    open_watches: dict[str, int] = field(default_factory=dict)
    expire_continue: bool = False
    list_delay: float = 0.0
    stopping: bool = False
    #: What ``/version`` answers as ``gitVersion`` (None: a ``/version`` without it).
    git_version: str | None = "v1.34.0-fake"
    _failures: dict[str, list[int]] = field(default_factory=dict)
    _ends: dict[str, int] = field(default_factory=dict)
    _abrupt: set[str] = field(default_factory=set)
    _bookmarks: dict[str, int] = field(default_factory=dict)
    _snapshots: dict[str, tuple[int, list[dict[str, Any]]]] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)

    # -- changing objects ---------------------------------------------------------------------

    def _record(self, resource: str, event_type: str, obj: dict[str, Any], notify: bool) -> None:
        if notify:
            self.history.append(Change(self.rv, resource, event_type, obj))
        else:
            self.compacted[resource] = self.rv
        self.cond.notify_all()

    def create(self, resource: str, obj: dict[str, Any], notify: bool = True) -> dict[str, Any]:
        spec = BY_RESOURCE[resource]
        obj = copy.deepcopy(obj)
        obj["apiVersion"], obj["kind"] = spec.api_version, spec.kind
        with self.cond:
            self.rv += 1
            meta = obj["metadata"]
            meta["uid"] = str(uuid.uuid4())
            meta["resourceVersion"] = str(self.rv)
            if not spec.namespaced:
                meta.pop("namespace", None)
            key = (meta.get("namespace", ""), meta["name"])
            assert key not in self.store[resource], f"{resource} {key} exists"
            self.store[resource][key] = obj
            self._record(resource, "ADDED", obj, notify)
        return copy.deepcopy(obj)

    def update(self, resource: str, name: str, change: Callable[[dict[str, Any]], None],
               namespace: str = "", notify: bool = True) -> dict[str, Any]:
        with self.cond:
            obj = copy.deepcopy(self.store[resource][(namespace, name)])
            change(obj)
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self.store[resource][(namespace, name)] = obj
            self._record(resource, "MODIFIED", obj, notify)
        return copy.deepcopy(obj)

    def delete(self, resource: str, name: str, namespace: str = "",
               notify: bool = True) -> dict[str, Any]:
        with self.cond:
            obj = copy.deepcopy(self.store[resource].pop((namespace, name)))
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._record(resource, "DELETED", obj, notify)
        return obj

    # -- knobs --------------------------------------------------------------------------------

    def fail_next_watch(self, resource: str, status: int) -> None:
        """The next watch request of ``resource`` answers HTTP ``status``."""
        with self.cond:
            self._failures.setdefault(resource, []).append(status)

    def end_watches(self, resource: str, abruptly: bool = False) -> None:
        """End the open watch streams of ``resource`` normally, as a server timeout does, or
        ``abruptly``: the connection is closed in the middle of the chunked stream."""
        with self.cond:
            self._ends[resource] = self._ends.get(resource, 0) + 1
            if abruptly:
                self._abrupt.add(resource)
            self.cond.notify_all()

    def bookmark(self, resource: str) -> None:
        """Send a BOOKMARK at the current resourceVersion on the open watches of ``resource``."""
        with self.cond:
            self._bookmarks[resource] = self._bookmarks.get(resource, 0) + 1
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    # -- what the recorder did ----------------------------------------------------------------

    def watches(self, resource: str) -> list[Request]:
        with self.cond:
            return [r for r in self.requests if r.verb == "watch" and r.resource == resource]

    def lists(self, resource: str) -> list[Request]:
        with self.cond:
            return [r for r in self.requests if r.verb == "list" and r.resource == resource]

    def wait_watching(self, *resources: str, count: int = 1) -> None:
        """Wait until ``count`` watches of each resource were opened and are still open."""
        wait_until(lambda: all(len(self.watches(r)) >= count and self.open_watches.get(r, 0)
                               for r in resources), f"watching {resources} ({count})")

    # -- serving ------------------------------------------------------------------------------

    def list_page(self, resource: str, namespace: str | None,
                  params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        spec = BY_RESOURCE[resource]
        limit = int(params.get("limit") or 0)
        token = params.get("continue")
        with self.cond:
            if token:
                snapshot = None if self.expire_continue else self._snapshots.pop(token, None)
                if snapshot is None:
                    self.expire_continue = False
                    return 410, status(410, "Expired", "The provided continue parameter is "
                                                       "too old to display a consistent list "
                                                       "result.")
                rv, items = snapshot
            else:
                rv = self.rv
                items = [obj for key, obj in sorted(self.store[resource].items())
                         if namespace is None or key[0] == namespace]
        page, rest = (items[:limit], items[limit:]) if limit else (items, [])
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if rest:
            next_token = uuid.uuid4().hex
            with self.cond:
                self._snapshots[next_token] = (rv, rest)
            metadata["continue"] = next_token
        body = {"apiVersion": spec.api_version, "kind": f"{spec.kind}List", "metadata": metadata,
                "items": [{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
                          for obj in page]}
        return 200, body

    def watch_stream(self, resource: str, namespace: str | None, params: dict[str, str],
                     send: Callable[[dict[str, Any]], None]) -> bool:
        """Stream the changes after ``resourceVersion`` until the end (timeout, end_watches);
        False when the stream must be cut instead of ended."""
        spec = BY_RESOURCE[resource]
        position = int(params.get("resourceVersion") or 0)
        bookmarks = params.get("allowWatchBookmarks") == "true"
        deadline = time.monotonic() + float(params.get("timeoutSeconds") or 1800)
        with self.cond:
            if not position:
                position = self.rv
            if position < self.compacted.get(resource, 0):
                expired = True
            else:
                expired = False
                self.open_watches[resource] = self.open_watches.get(resource, 0) + 1
            ends, marks = self._ends.get(resource, 0), self._bookmarks.get(resource, 0)
        if expired:
            send({"type": "ERROR", "object": status(
                410, "Expired", f"too old resource version: {position} ({self.rv})")})
            return True
        try:
            while True:
                out: list[dict[str, Any]] = []
                with self.cond:
                    changes = [c for c in self.history if c.resource == resource
                               and c.rv > position and (namespace is None or
                                                        c.obj["metadata"].get("namespace")
                                                        == namespace)]
                    if changes:
                        out = [{"type": c.type, "object": c.obj} for c in changes]
                        position = max(position, changes[-1].rv)
                    elif self._ends.get(resource, 0) != ends and resource in self._abrupt:
                        self._abrupt.discard(resource)
                        return False
                    elif (self.stopping or self._ends.get(resource, 0) != ends
                          or time.monotonic() >= deadline):
                        return True
                    elif self._bookmarks.get(resource, 0) != marks:
                        marks = self._bookmarks[resource]
                        if bookmarks:
                            position = self.rv
                            out = [{"type": "BOOKMARK", "object": {
                                "apiVersion": spec.api_version, "kind": spec.kind,
                                "metadata": {"resourceVersion": str(self.rv)}}}]
                    else:
                        self.cond.wait(min(0.5, max(0.0, deadline - time.monotonic())))
                for event in out:
                    send(event)
        finally:
            with self.cond:
                self.open_watches[resource] -= 1

    def take_failure(self, resource: str) -> int | None:
        with self.cond:
            failures = self._failures.get(resource)
            return failures.pop(0) if failures else None


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    cluster: FakeCluster

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = orjson.dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        cluster = self.cluster
        url = urlsplit(self.path)
        params = dict(parse_qsl(url.query))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._json(401, status(401, "Unauthorized", "Unauthorized"))
            return
        if url.path == "/version":
            self._json(200, {"major": "1", "minor": "34", "gitVersion": cluster.git_version})
            return
        match = _CORE.match(url.path) or _GROUP.match(url.path)
        resource = match["resource"] if match else ""
        namespace = match["ns"] if match else None
        spec = BY_RESOURCE.get(resource)
        if spec is None or spec.path(namespace) != url.path:
            self._json(404, status(404, "NotFound", "the server could not find the requested "
                                                    "resource"))
            return
        watch = params.get("watch") in ("1", "true")
        with cluster.cond:
            cluster.requests.append(Request("watch" if watch else "list", resource, namespace,
                                            params))
        if resource in cluster.forbidden:
            self._json(403, status(403, "Forbidden", f'{resource} is forbidden: User "test" '
                                                     f'cannot list resource "{resource}"'))
            return
        if not watch:
            time.sleep(cluster.list_delay)
            self._json(*cluster.list_page(resource, namespace, params))
            return
        failure = cluster.take_failure(resource)
        if failure is not None:
            reason = {410: "Expired", 429: "TooManyRequests"}.get(failure, "InternalError")
            self._json(failure, status(failure, reason, f"injected {failure}"))
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if cluster.watch_stream(resource, namespace, params, self._send_event):
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.close_connection = True  # the client sees the stream cut short
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_event(self, event: dict[str, Any]) -> None:
        line = orjson.dumps(event) + b"\n"
        half = len(line) // 2
        for piece in (line[:half], line[half:]):  # a line over two chunks: the client joins
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()


def wait_until(condition: Callable[[], bool], what: str = "condition",
               timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def write_kubeconfig(path: Path, server: str, token: str = TOKEN) -> Path:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: {server}
users:
- name: tester
  user:
    token: {token}
contexts:
- name: fake
  context:
    cluster: fake
    user: tester
current-context: fake
""")
    return path


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    fake = FakeCluster()
    handler = type("Handler", (_Handler,), {"cluster": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    fake.close()
    server.shutdown()
    server.server_close()
    thread.join(2)


@pytest.fixture
def kubeconfig(tmp_path: Path, cluster: FakeCluster) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig.yaml", cluster.url)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a recorded file, parsed (each must be valid JSON), the header included."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    assert not data or data.endswith(b"\n"), "the last line is incomplete"
    return [orjson.loads(line) for line in data.splitlines()]


def _header(line: dict[str, Any]) -> bool:
    return line["type"] == "BOOKMARK" and is_header(line["object"])


def read_events(path: Path) -> list[dict[str, Any]]:
    """The recorded events of a file: its lines but the recording's header."""
    return [line for line in read_lines(path) if not _header(line)]


def read_header(path: Path) -> dict[str, Any] | None:
    """The recording's header line (its first), or None when the file has none."""
    lines = read_lines(path)
    headers = [line for line in lines if _header(line)]
    assert len(headers) <= 1 and (not headers or lines[0] is headers[0]), "one header, first"
    return headers[0] if headers else None


def names(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["type"], e["object"]["kind"], e["object"]["metadata"]["name"]) for e in events]


class Recording:
    """A recorder running in a background thread, writing to ``path``."""

    def __init__(self, kubeconfig: Path, path: Path, kinds: str, **options: Any) -> None:
        settings: dict[str, Any] = {"backoff_initial": 0.05, "backoff_max": 0.2,
                                    "watch_timeout": 30, "flush_interval": 0.05}
        settings.update(options)
        self.path = path
        self.client = KubeClient(load_configuration(kubeconfig))
        self.recorder = Recorder(self.client, parse_kinds(kinds), **settings)
        self.writer = TraceWriter(path)
        self.summary: RecordSummary | None = None
        self.error: BaseException | None = None
        self.warnings: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.summary = self.recorder.run(self.writer, on_warning=self.warnings.append)
        except BaseException as exc:
            self.error = exc

    def start(self) -> Recording:
        self.thread.start()
        return self

    def wait_events(self, count: int) -> None:
        wait_until(lambda: self.recorder.events >= count or self.error is not None,
                   f"{count} events (have {self.recorder.events})")
        if self.error is not None:
            raise self.error

    def stop(self) -> RecordSummary:
        self.recorder.stop()
        self.thread.join(5)
        assert not self.thread.is_alive(), "the recorder did not stop"
        self.writer.close()
        self.client.close()
        if self.error is not None:
            raise self.error
        assert self.summary is not None
        return self.summary

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.path)


@pytest.fixture
def recording(kubeconfig: Path, tmp_path: Path) -> Iterator[Callable[..., Recording]]:
    """Start a :class:`Recording` of ``kinds`` (``"pods,nodes"``) to ``tmp_path/trace.jsonl``."""
    started: list[Recording] = []

    def start(kinds: str = "pods,nodes", name: str = "trace.jsonl",
              **options: Any) -> Recording:
        run = Recording(kubeconfig, tmp_path / name, kinds, **options).start()
        started.append(run)
        return run

    yield start
    for run in started:
        run.recorder.stop()
        run.thread.join(5)
        run.writer.close()
        run.client.close()
