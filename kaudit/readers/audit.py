"""Read Kubernetes audit logs (``audit.k8s.io/v1`` Events, JSON Lines) as watch events.

The API server's log backend writes one ``Event`` per line (``--audit-log-path``; rotated files
and gzip are fine; several files are merged by time, so the logs of every API server of an HA
control plane can be given together). Each write request on a replayed resource becomes the
watch event a watcher would have seen:

* ``create`` → ``ADDED``; ``update``/``patch`` (and the ``status``, ``resize`` and
  ``ephemeralcontainers`` subresources) → ``MODIFIED``; ``delete`` → ``DELETED``, or
  ``MODIFIED`` while the object only starts terminating (finalizers left, or a bound pod's
  graceful deletion, which the kubelet finishes with its own ``delete``); ``deletecollection``
  with the deleted objects in its response → one event per object.
* ``pods/binding`` → ``MODIFIED`` of the pod with ``spec.nodeName`` set and its
  ``PodScheduled`` condition true, as the binding subresource writes it: the recorded placement.
* Events are ordered and stamped as a watcher would see them (:class:`_Committed`): a write
  at the time it committed, estimated as its response's time (``stageTimestamp``) unless the
  next request on the same object was received earlier (then it committed before that), never
  before its own request was received; so each object's writes keep the order they were
  received in. The scheduler's own writes (user ``system:kube-scheduler``) are stamped when
  received, next to the cycle that decided them. Two requests on one pod received together
  may still commit in the other order: a deletion whose logged response shows the
  scheduler's later-received write (a binding, a nomination, a PodScheduled condition) had
  that write committed first, so it is made there, before the deletion (a binding of a
  terminating pod is even refused, ``BindingREST.setPodNodeAndMetadata``); the binding
  request found later changes nothing.
  Likewise a delete received after the one that removed the object, but committed before it
  (its response shows the object still there), changed nothing; and so did an update that
  read a deletion's mark (no grace, no finalizer left: the deletion then removes the object),
  though the API server answers it with the object.
* The object is ``responseObject`` when logged (level ``RequestResponse``), else
  ``requestObject`` (level ``Request``). A ``patch`` logged at level ``Request`` carries only
  the patch: it is applied to the last known state of the object (:mod:`kaudit.model.patch`).

Only stage ``ResponseComplete`` is used. Everything else is *dropped* and counted by reason
(read requests, other resources, failed requests with ``responseStatus.code`` ≥ 400, dry runs,
records logged at a level too low to rebuild the object, node heartbeats that change nothing
the scheduler reads); a line that is not an audit event is *rejected* with the reason.

The release the log was recorded from is kube-scheduler's, from the user agent of the first
event whose agent is kube-scheduler's (``kube-scheduler/v1.34.2 (linux/amd64) kubernetes/…``),
whatever the request (a lease update counts).

Objects keep one ``metadata.uid`` for their whole life: one logged without (level ``Request``)
gets the uid seen first for it, or a stable made-up one, so that replay never takes one pod
for two.

Upstream references: ``k8s.io/apiserver/pkg/apis/audit/v1/types.go`` (the Event),
``k8s.io/apiserver/pkg/endpoints/handlers/delete.go`` and ``pkg/registry/core/pod/strategy.go``
(``CheckGracefulDelete``: graceful deletion of bound pods), and
``pkg/scheduler/eventhandlers.go`` / ``framework/events.go`` (which node changes the scheduler
reacts to).
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from kaudit.errors import TraceError
from kaudit.input_limits import ValueLimitError, load_json
from kaudit.model.kinds import KINDS
from kaudit.model.patch import PatchError, apply_patch
from kaudit.model.pod import FINISHED_PHASES
from kaudit.model.recording import parse_release, user_agent_release
from kaudit.model.timestamps import format_rfc3339, parse_timestamp
from kaudit.model.topology_labels import with_topology_labels
from kaudit.readers.audit_fields import (
    EventFieldError,
    check_event_fields,
    timestamp_problem,
)
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.files import SNIPPET, iter_lines, snippet
from kaudit.readers.validate import ObjectError, type_name, validate_object

AUDIT = "audit"
#: A fraction of a second in an RFC 3339 time, before its zone.
_FRACTION = re.compile(r"\.\d+(?=(Z|z|[+-]\d\d:\d\d)$)")
AUDIT_API_VERSION = "audit.k8s.io/v1"

#: (API group, resource) → (kind, group/version used when the object does not say).
RESOURCES: dict[tuple[str, str], tuple[str, str]] = {
    (spec.api_version.rpartition("/")[0], spec.resource): (spec.kind, spec.api_version)
    for spec in KINDS
}
#: Subresources whose request and response carry the whole parent object.
WHOLE_OBJECT_SUBRESOURCES = frozenset({"status", "resize", "ephemeralcontainers"})
READ_VERBS = frozenset({"get", "list", "watch"})
#: How far (seconds) events of one file may be out of time order; API servers log requests
#: as they complete, so concurrent requests interleave by milliseconds.
REORDER_WINDOW_US = 60 * 1_000_000
#: The fields an event's time is read from, the first present.
EVENT_TIME_FIELDS = ("requestReceivedTimestamp", "stageTimestamp", "timestamp")

# Reasons, counted per source file (``kaudit traces NAME`` shows them).
DROP_STAGE = "stage {stage}: only ResponseComplete is replayed"
DROP_NON_RESOURCE = "non-resource request (no objectRef)"
DROP_READ = "read request (get, list, watch)"
DROP_RESOURCE = "resource {resource}: not replayed"
DROP_SUBRESOURCE = "subresource {resource}/{subresource}: not replayed"
DROP_EVICTION = "pods/eviction: the deletion that follows is replayed"
DROP_FAILED = "failed request (code {code})"
DROP_DRY_RUN = "dry run"
DROP_NO_OBJECT = ("{verb} {resource} logged without its object (level Metadata): log it at "
                  "level Request or RequestResponse")
DROP_GENERATE_NAME = ("create with generateName logged at level Request: the name is only in "
                      "the response (log pods at level RequestResponse)")
DROP_PATCH_UNKNOWN = ("patch of {resource} not seen before, logged without the result: log it "
                      "at level RequestResponse, or give the state at the start with --snapshot")
DROP_PATCH_FAILED = "patch could not be applied to the last known {resource}"
DROP_BINDING_NO_TARGET = ("pods/binding logged without its request (level Metadata): the node "
                          "is only in the request")
DROP_BINDING_UNKNOWN = "pods/binding of a pod not seen before"
DROP_BINDING_SEEN = ("pods/binding already made: a deletion received before it showed the pod "
                     "bound")
DROP_DELETED_AGAIN = ("delete of an object already deleted (received after its final deletion, "
                      "committed before it): changed nothing")
DROP_UPDATED_AFTER_DELETION = ("update of an object already deleted (it read the deletion's "
                               "mark, and the deletion removed the object first): changed "
                               "nothing")
DROP_LOGGED_AFTER_DELETION = ("update of an object already deleted (committed before its "
                              "deletion, logged after it): the deletion ended what it changed")
DROP_COLLECTION = ("deletecollection logged without the deleted objects: log it at level "
                   "RequestResponse")
DROP_HEARTBEAT = "node status heartbeat: nothing the scheduler reads changed"
DROP_NO_CHANGE = ("update that changed nothing (the API server writes no new version and "
                  "watchers see no event)")
DROP_VERB = "verb {verb}: not a change"



def _malformed_body(verb: str, response: Any, request: Any) -> str | None:
    """What is wrong with a record's logged bodies, when they cannot be what the API server
    logs (a logged response is an object; a request is one too, but for a patch's; a
    binding's target is an object naming a node)."""
    if response is not None and not isinstance(response, dict):
        return f"responseObject: must be an object, not {type_name(response)}"
    if request is None:
        return None
    if not isinstance(request, dict):
        if verb == "patch" and isinstance(request, list):
            return None  # a JSON patch
        return f"requestObject: must be an object, not {type_name(request)}"
    if request.get("kind") == "Binding" and "target" in request:
        target = request["target"]
        if not isinstance(target, dict):
            return f"requestObject.target: must be an object, not {type_name(target)}"
        node = target.get("name")
        if not isinstance(node, str) or not node:
            return ("requestObject.target.name: must be a node's name, not "
                    f"{type_name(node) if node is not None else 'missing'}")
    return None


class _Parsed:
    """An audit event that may become a watch event, with where it came from: ``received``
    and ``stage`` are its request's times, ``ts`` its time in the trace (:class:`_Committed`),
    ``after`` a time it cannot precede (a write that committed before it was received then)
    and ``rank`` its place in the order the requests were received."""

    __slots__ = ("after", "doc", "index", "line", "rank", "received", "stage", "ts")

    def __init__(self, received: int, index: int, line: int, doc: dict[str, Any],
                 stage: int | None = None) -> None:
        self.received, self.index, self.line, self.doc = received, index, line, doc
        self.stage = received if stage is None else max(stage, received)
        self.ts = received
        self.after = received
        self.rank = 0

    def __lt__(self, other: _Parsed) -> bool:
        return (self.ts, self.index, self.rank, self.line) < (other.ts, other.index,
                                                               other.rank, other.line)


def _timestamp(doc: dict[str, Any], fields: Sequence[str]) -> int:
    """The first of ``fields`` present in ``doc``, parsed. A ``metav1.MicroTime`` is an RFC
    3339 string, never a number."""
    name = next((field for field in fields if doc.get(field) is not None), None)
    if name is None:
        raise ValueError("stageTimestamp: missing")
    value = doc[name]
    problem = timestamp_problem(value)
    if problem is not None:
        raise ValueError(f"{name}: {problem}")
    return parse_timestamp(value)


def _event_time(doc: dict[str, Any]) -> int:
    """When the API server received the request (``requestReceivedTimestamp``), else its
    stage's time."""
    return _timestamp(doc, EVENT_TIME_FIELDS)


def _stage_time(doc: dict[str, Any]) -> int:
    """When the request's stage (its response) completed, else when it was received."""
    return _timestamp(doc, ("stageTimestamp", *EVENT_TIME_FIELDS))


def _object_key(doc: dict[str, Any]) -> tuple[str, ...] | None:
    """The object a request writes (a subresource writes its parent), or None (a collection)."""
    ref = doc.get("objectRef") or {}
    name = ref.get("name")
    if not name:
        for body in (doc.get("responseObject"), doc.get("requestObject")):
            metadata = body.get("metadata") if isinstance(body, dict) else None
            if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
                name = metadata["name"]
                break
    if not name or doc.get("verb") == "deletecollection":
        return None
    return (str(ref.get("apiGroup") or ""), str(ref.get("resource") or ""),
            str(ref.get("namespace") or ""), str(name))


def _by_scheduler(doc: dict[str, Any]) -> bool:
    user = doc.get("user") or {}
    agent = doc.get("userAgent")
    return (isinstance(user, dict) and user.get("username") == "system:kube-scheduler") or (
        isinstance(agent, str) and agent.startswith("kube-scheduler/"))


class _Committed:
    """Puts one file's events (given in the order their requests were received) in the order
    their writes committed, as a watcher sees them, and stamps each with that time.

    A write commits between its request's receipt and its response (``stageTimestamp``). On a
    busy server that can be tens of milliseconds: a deletion received before the scheduler's
    binding of another pod may commit after it, and the scheduler decided without seeing it.
    So a write's time is its response's, unless the next request on the same object was
    received earlier: that request came after the write (it reads or follows it), so the
    write committed before. Each object's writes keep the order they were received in (a
    create completes after the binding and the status update it caused, and still comes
    first), unless the later one's response proves it committed first
    (:func:`_committed_before`), and a time is never before its request was received. The
    scheduler's own writes are stamped when received, next to the decision that made them.
    """

    def __init__(self) -> None:
        #: Events whose time is not known yet (their object's next request may still come).
        self.open: dict[tuple[str, ...], _Parsed] = {}
        #: The same, by response time: once later requests are received, the time is known.
        self.by_stage: list[tuple[int, int, _Parsed]] = []
        self.ready: list[_Parsed] = []
        self.rank = 0

    def add(self, parsed: _Parsed) -> Iterator[_Parsed]:
        """Take the next event received; yield the events whose place is now certain."""
        now = parsed.received
        key = _object_key(parsed.doc)
        previous = self.open.pop(key, None) if key is not None else None
        self.rank += 1
        parsed.rank, parsed.ts = self.rank, -1
        if previous is not None and now <= previous.stage \
                and _committed_before(parsed.doc, previous.doc):
            # Received second, committed first: it takes the earlier one's place, which
            # stays open (its time is not known yet, but it is not before this one's).
            parsed.rank, previous.rank = previous.rank, parsed.rank
            previous.after = max(previous.after, now)
            self._close(parsed, now)
            assert key is not None
            self.open[key] = previous
        elif previous is not None:
            self._close(previous, min(previous.stage, now))
        while self.by_stage and self.by_stage[0][0] <= now:
            _, _, waiting = heapq.heappop(self.by_stage)
            if waiting.ts >= 0:
                continue  # its object's next request closed it already
            key_of = _object_key(waiting.doc)
            if key_of is not None and self.open.get(key_of) is waiting:
                del self.open[key_of]
            self._close(waiting, waiting.stage)
        if parsed.ts >= 0:
            pass  # placed before the earlier write it committed before
        elif key is None:
            self._close(parsed, parsed.stage)
        else:
            self.open[key] = parsed
            heapq.heappush(self.by_stage, (parsed.stage, parsed.rank, parsed))
        # An open event's time is at least its receipt, a later event's at least ``now``.
        floor = min([now, *(event.received for event in self.open.values())])
        while self.ready and self.ready[0].ts <= floor:
            yield heapq.heappop(self.ready)

    def _close(self, parsed: _Parsed, ts: int) -> None:
        if _by_scheduler(parsed.doc):
            ts = parsed.received
        parsed.ts = max(ts, parsed.after)
        heapq.heappush(self.ready, parsed)

    def finish(self) -> Iterator[_Parsed]:
        for parsed in self.open.values():
            self._close(parsed, parsed.stage)
        self.open.clear()
        while self.ready:
            yield heapq.heappop(self.ready)


def _committed_before(later: dict[str, Any], earlier: dict[str, Any]) -> bool:
    """Whether the write of audit event ``later``, received after ``earlier`` on the same
    object (and before ``earlier``'s response), committed first, as its response proves: it
    shows the pod without the node ``earlier``'s binding gave it (a pod's node is never
    unset), it found the object ``earlier`` deletes without the deletion's mark, or it
    carries an older ``resourceVersion`` than ``earlier``'s response (the API server's
    versions grow with each commit)."""
    response = later.get("responseObject")
    if not isinstance(response, dict) or later.get("verb") == "create":
        return False
    earlier_ref = earlier.get("objectRef") or {}
    if earlier_ref.get("resource") == "pods" and earlier_ref.get("subresource") == "binding":
        spec = response.get("spec")
        return response.get("kind") in ("Pod", None) and isinstance(spec, dict) \
            and not spec.get("nodeName")
    before = earlier.get("responseObject")
    if earlier.get("verb") == "delete":
        # It read the deletion's mark: a delete with no grace left writes twice (the mark,
        # then the removal), and this one read the first; its own version proves nothing.
        # Without the mark it found the object as it was before the delete's first write
        # (after the removal it would have found none), so it committed first. A delete
        # answered with a Status (nodes, most kinds) names the object's uid in its details.
        return not _deletion_mark(response) and _uid(response) is not None \
            and _uid(response) == (_uid(before) or _status_uid(before))
    if not isinstance(before, dict) or _uid(before) != _uid(response):
        return False
    mine, theirs = _resource_version(response), _resource_version(before)
    return mine is not None and theirs is not None and mine < theirs


def _deletion_mark(obj: dict[str, Any]) -> bool:
    metadata = obj.get("metadata")
    return isinstance(metadata, dict) and bool(metadata.get("deletionTimestamp"))


def _resource_version(obj: dict[str, Any]) -> int | None:
    metadata = obj.get("metadata")
    value = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _not_an_event(doc: Any, item: bool = False) -> str | None:
    if not isinstance(doc, dict):
        return "not an audit event: expected a JSON object"
    if item and "apiVersion" not in doc and "kind" not in doc:
        return _bad_fields(doc)  # the items of an EventList carry no type of their own
    api_version = doc.get("apiVersion")
    if not (isinstance(api_version, str) and api_version.startswith("audit.k8s.io/")):
        if "type" in doc and "object" in doc:
            return "a watch event, not an audit event: ingest it with --format watch"
        return ("not an audit event: apiVersion must be audit.k8s.io/v1, not "
                f"{api_version!r}")
    if api_version != AUDIT_API_VERSION:
        return (f"apiVersion: {api_version!r} is not supported: kaudit reads "
                f"{AUDIT_API_VERSION} audit events")
    if doc.get("kind") not in ("Event", "EventList"):
        return f"kind: expected Event or EventList, not {doc.get('kind')!r}"
    return _bad_fields(doc) if doc.get("kind") == "Event" else None


def _bad_fields(doc: dict[str, Any]) -> str | None:
    """What is wrong with the event's field types, if anything."""
    try:
        check_event_fields(doc)
    except EventFieldError as exc:
        return str(exc)
    return None


def _prefilter(doc: dict[str, Any], stats: StreamStats, line: int) -> bool:
    """Whether the event may change a replayed object; drops are counted."""
    stage = doc.get("stage")
    if stage != "ResponseComplete":
        stats.drop(DROP_STAGE.format(stage=stage), line)
        return False
    ref = doc.get("objectRef")
    if not isinstance(ref, dict):
        stats.drop(DROP_NON_RESOURCE, line)
        return False
    verb = doc.get("verb")
    if verb in READ_VERBS:
        stats.drop(DROP_READ, line)
        return False
    resource = ref.get("resource") or ""
    group = ref.get("apiGroup") or ""
    if (group, resource) not in RESOURCES:
        shown = f"{resource}.{group}" if group else resource
        stats.drop(DROP_RESOURCE.format(resource=shown), line)
        return False
    subresource = ref.get("subresource") or ""
    if subresource == "eviction" and resource == "pods":
        stats.drop(DROP_EVICTION, line)
        return False
    if subresource and subresource not in WHOLE_OBJECT_SUBRESOURCES and not (
            resource == "pods" and subresource == "binding"):
        stats.drop(DROP_SUBRESOURCE.format(resource=resource, subresource=subresource), line)
        return False
    status = doc.get("responseStatus")
    code = status.get("code") if isinstance(status, dict) else None
    if isinstance(code, int) and code >= 400:
        stats.drop(DROP_FAILED.format(code=code), line)
        return False
    if "dryRun=" in (doc.get("requestURI") or ""):
        stats.drop(DROP_DRY_RUN, line)
        return False
    if verb not in ("create", "update", "patch", "delete", "deletecollection"):
        stats.drop(DROP_VERB.format(verb=verb), line)
        return False
    return True


def _read_file(index: int, path: Path, stats: StreamStats,
               progress: Callable[[int], None] | None) -> Iterator[_Parsed | Rejected]:
    """The file's relevant events in the order their writes committed (:class:`_Committed`),
    the requests first put in the order they were received (within
    :data:`REORDER_WINDOW_US`)."""
    stats.format = AUDIT
    pending: list[tuple[int, int, _Parsed]] = []  # by the time each request was received
    committed = _Committed()
    newest = None
    for number, line in iter_lines(path, progress):
        stats.lines = number
        if not line.strip():
            continue
        try:
            doc = load_json(line)
        except ValueLimitError as exc:
            yield Rejected(number, str(exc), snippet(line))
            continue
        except orjson.JSONDecodeError as exc:
            yield Rejected(number, f"invalid JSON: {exc}", snippet(line))
            continue
        problem = _not_an_event(doc)
        if problem is not None:
            yield Rejected(number, problem, snippet(line))
            continue
        items = doc.get("items") if doc.get("kind") == "EventList" else [doc]
        if not isinstance(items, list):
            yield Rejected(number, "items: an EventList needs a list of events", snippet(line))
            continue
        for item in items:
            problem = _not_an_event(item, item=True) if item is not doc else None
            if problem is not None:
                yield Rejected(number, f"items: {problem}", snippet(line))
                continue
            if stats.kubernetes_version is None:
                stats.kubernetes_version = user_agent_release(item.get("userAgent"))
            if not _prefilter(item, stats, number):
                continue
            try:
                received, stage = _event_time(item), _stage_time(item)
            except ValueError as exc:
                yield Rejected(number, str(exc), snippet(line))
                continue
            heapq.heappush(pending, (received, number, _Parsed(received, index, number, item,
                                                               stage)))
            newest = received if newest is None else max(newest, received)
            while pending and pending[0][0] <= newest - REORDER_WINDOW_US:
                yield from committed.add(heapq.heappop(pending)[2])
    while pending:
        yield from committed.add(heapq.heappop(pending)[2])
    yield from committed.finish()


def _status_uid(obj: Any) -> str | None:
    """The uid a ``Status`` answer names in its ``details`` (a delete's answer)."""
    details = obj.get("details") if isinstance(obj, dict) else None
    uid = details.get("uid") if isinstance(details, dict) else None
    return uid if isinstance(uid, str) else None


def _uid(obj: Any) -> str | None:
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("uid"), str):
            return meta["uid"]
    return None


def _node_view(node: dict[str, Any]) -> tuple[Any, ...]:
    """What of a Node the scheduler reacts to (eventhandlers.go nodeSchedulingPropertiesChange,
    plus the images ImageLocality reads): heartbeat timestamps left out."""
    metadata = node.get("metadata") or {}
    status = node.get("status") or {}
    conditions = tuple(sorted((str(c.get("type")), str(c.get("status")))
                              for c in status.get("conditions") or [] if isinstance(c, dict)))
    return (orjson.dumps(node.get("spec"), option=orjson.OPT_SORT_KEYS),
            orjson.dumps(metadata.get("labels"), option=orjson.OPT_SORT_KEYS),
            orjson.dumps(metadata.get("annotations"), option=orjson.OPT_SORT_KEYS),
            orjson.dumps(status.get("allocatable"), option=orjson.OPT_SORT_KEYS),
            orjson.dumps(status.get("capacity"), option=orjson.OPT_SORT_KEYS),
            orjson.dumps(status.get("images"), option=orjson.OPT_SORT_KEYS),
            metadata.get("deletionTimestamp"), conditions)


class AuditConverter:
    """Turns time-ordered audit events into watch events, keeping each live object's state."""

    def __init__(self, stats: Sequence[StreamStats]) -> None:
        self.stats = stats
        self.state: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.uids: dict[tuple[str, str, str], str] = {}
        #: Objects whose uid kaudit made up (none was logged when they were created).
        self.made_up: set[tuple[str, str, str]] = set()
        #: The uid of each object last deleted under a name.
        self.deleted: dict[tuple[str, str, str], str] = {}

    def know(self, objects: Iterable[dict[str, Any]]) -> None:
        """Objects that exist before the log begins (a snapshot)."""
        for obj in objects:
            kind = obj.get("kind")
            if isinstance(kind, str):
                key = self._key(kind, obj)
                self.state[key] = obj
                uid = _uid(obj)
                if uid is not None:
                    self.uids[key] = uid

    def convert(self, parsed: _Parsed) -> Iterator[WatchEvent | Rejected]:
        doc, stats, line = parsed.doc, self.stats[parsed.index], parsed.line
        ref = doc["objectRef"]
        kind, default_api = RESOURCES[(ref.get("apiGroup") or "", ref["resource"])]
        version = ref.get("apiVersion")
        api_version = (f"{ref['apiGroup']}/{version}" if ref.get("apiGroup") and version
                       else version or default_api)
        namespace = ref.get("namespace") or ""
        name = ref.get("name") or ""
        verb = doc["verb"]
        subresource = ref.get("subresource") or ""
        response = doc.get("responseObject")
        request = doc.get("requestObject")
        resource = ref["resource"]
        malformed = _malformed_body(verb, response, request)
        if malformed is not None:
            yield Rejected(line, malformed, orjson.dumps(doc)[:SNIPPET].decode(errors="replace"))
            return

        def whole(candidate: Any) -> dict[str, Any] | None:
            """``candidate`` as the object itself (not a Status, a patch or DeleteOptions)."""
            if not isinstance(candidate, dict) or candidate.get("kind") not in (kind, None):
                return None
            if candidate.get("kind") is None and "metadata" not in candidate:
                return None
            return candidate

        if subresource == "binding":
            yield from self._binding(parsed, kind, namespace, name, request, stats)
            return
        if verb == "deletecollection":
            items = response.get("items") if isinstance(response, dict) else None
            if not isinstance(items, list):
                stats.drop(DROP_COLLECTION, line)
                return
            for item in items:
                if isinstance(item, dict):
                    # The list is of the objects as they were before their deletion began.
                    item_name = (item.get("metadata") or {}).get("name") or ""
                    yield from self._deleted(parsed, kind, api_version, namespace, item_name,
                                             None, request, listed=item)
            return
        if verb == "delete":
            yield from self._deleted(parsed, kind, api_version, namespace, name,
                                     whole(response), request)
            return

        obj = whole(response)
        if obj is None and verb in ("create", "update"):
            obj = _as_stored(whole(request))
        if obj is None and verb == "patch" and request is not None:
            obj = _as_stored(self._patched(parsed, kind, namespace, name, request, stats))
            if obj is None:
                return
        if obj is None:
            stats.drop(DROP_NO_OBJECT.format(verb=verb, resource=resource), line)
            return
        obj = self._complete(obj, kind, api_version, namespace, name)
        if not (obj.get("metadata") or {}).get("name"):
            stats.drop(DROP_GENERATE_NAME, line)
            return
        yield from self._emit(parsed, "ADDED" if verb == "create" else "MODIFIED", obj)

    # ------------------------------------------------------------------ helpers

    def _key(self, kind: str, obj: dict[str, Any]) -> tuple[str, str, str]:
        metadata = obj.get("metadata") or {}
        return kind, metadata.get("namespace") or "", metadata.get("name") or ""

    @staticmethod
    def _complete(obj: dict[str, Any], kind: str, api_version: str, namespace: str,
                  name: str) -> dict[str, Any]:
        """The object with ``kind``, ``apiVersion`` and identity filled in from the request."""
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
        fill = {}
        if name and not metadata.get("name"):
            fill["name"] = name
        if namespace and not metadata.get("namespace"):
            fill["namespace"] = namespace
        if obj.get("kind") and obj.get("apiVersion") and not fill and "metadata" in obj:
            return obj
        completed = {"apiVersion": obj.get("apiVersion") or api_version, "kind": kind, **obj}
        completed["kind"] = kind
        completed["metadata"] = {**metadata, **fill}
        return completed

    def _with_uid(self, key: tuple[str, str, str], obj: dict[str, Any],
                  ts: int) -> dict[str, Any]:
        wanted = self.uids.get(key)
        if wanted is None:
            wanted = _uid(obj)
            if wanted is None:
                wanted = "audit-" + hashlib.sha1(f"{'/'.join(key)}@{ts}".encode()).hexdigest()[:24]
                self.made_up.add(key)
            self.uids[key] = wanted
        if _uid(obj) == wanted:
            return obj
        return {**obj, "metadata": {**(obj.get("metadata") or {}), "uid": wanted}}

    def _emit(self, parsed: _Parsed, event_type: str, obj: dict[str, Any],
              by_update: bool = True) -> Iterator[WatchEvent | Rejected]:
        """Emit the watch event of ``obj``; ``by_update``: it is the result of an update or
        patch (not of a delete), so it may be the one that removes the object."""
        kind = obj["kind"]
        key = self._key(kind, obj)
        logged = _uid(obj)
        if key in self.state and event_type != "DELETED" and logged is not None \
                and self.uids.get(key) not in (None, logged) and key not in self.made_up:
            # Another object under the same name: its predecessor's deletion is not in the
            # log. Close the old one so that replay does not take one for the other.
            gone = self.state[key]
            yield from self._emit(parsed, "DELETED", gone)
            event_type = "ADDED"
        if event_type == "ADDED" and key in self.state:
            event_type = "MODIFIED"  # created again while we thought it alive: a missed delete
        if event_type == "ADDED":
            self.uids.pop(key, None)
            self.made_up.discard(key)
        if event_type == "MODIFIED" and by_update and key not in self.state \
                and logged is not None and self.deleted.get(key) == logged:
            # A uid names one object's life, and nothing updates it once deleted. The API
            # server answers an update that read a deletion's mark (no grace, no finalizer
            # left) with the object, though the deletion removed it; and an update committed
            # before the deletion may be logged after it. Either way, it must not bring the
            # object back.
            self.stats[parsed.index].drop(
                DROP_UPDATED_AFTER_DELETION if _finally_deleted(kind, obj)
                else DROP_LOGGED_AFTER_DELETION, parsed.line)
            return
        if event_type == "MODIFIED" and by_update and _finally_deleted(kind, obj):
            event_type = "DELETED"  # the last finalizer of a deleted object is gone
        obj = self._with_uid(key, obj, parsed.received)
        if (kind == "Node" and event_type == "MODIFIED" and key in self.state
                and _node_view(self.state[key]) == _node_view(obj)):
            self.state[key] = obj
            self.stats[parsed.index].drop(DROP_HEARTBEAT, parsed.line)
            return
        if event_type == "MODIFIED" and key in self.state \
                and _content(self.state[key]) == _content(obj):
            self.stats[parsed.index].drop(DROP_NO_CHANGE, parsed.line)
            return
        try:
            kind, namespace, name, uid = validate_object(obj, event_type)
        except ObjectError as exc:
            yield Rejected(parsed.line, f"{_source_of(parsed.doc)}: {exc}",
                           orjson.dumps(obj)[:SNIPPET].decode(errors="replace"))
            return
        if event_type == "DELETED":
            self.state.pop(key, None)
            self.uids.pop(key, None)
            self.made_up.discard(key)
            if uid:
                self.deleted[key] = uid
        else:
            self.state[key] = obj
        yield WatchEvent(parsed.ts, event_type, kind, namespace, name, uid, obj, parsed.line)

    def _patched(self, parsed: _Parsed, kind: str, namespace: str, name: str, patch: Any,
                 stats: StreamStats) -> dict[str, Any] | None:
        base = self.state.get((kind, namespace, name))
        resource = parsed.doc["objectRef"]["resource"]
        if base is None:
            stats.drop(DROP_PATCH_UNKNOWN.format(resource=resource), parsed.line)
            return None
        try:
            return apply_patch(base, patch, kind)
        except PatchError:
            stats.drop(DROP_PATCH_FAILED.format(resource=resource), parsed.line)
            return None

    def _binding(self, parsed: _Parsed, kind: str, namespace: str, name: str, request: Any,
                 stats: StreamStats) -> Iterator[WatchEvent | Rejected]:
        target = request.get("target") if isinstance(request, dict) else None
        node = target.get("name") if isinstance(target, dict) else None
        if not isinstance(node, str) or not node:
            stats.drop(DROP_BINDING_NO_TARGET, parsed.line)
            return
        if not name and isinstance(request, dict):
            name = (request.get("metadata") or {}).get("name") or ""
        base = self.state.get((kind, namespace, name))
        if base is None:
            stats.drop(DROP_BINDING_UNKNOWN, parsed.line)
            return
        if (base.get("spec") or {}).get("nodeName") == node:
            stats.drop(DROP_BINDING_SEEN, parsed.line)
            return
        bound = _bound(base, node, request, parsed.received)
        release = parse_release(user_agent_release(parsed.doc.get("userAgent"))
                                or stats.kubernetes_version or "")
        if release is not None and release[:2] >= (1, 35):
            bound = _bound_from_v1_35(bound, self.state.get(("Node", "", node)))
        yield from self._emit(parsed, "MODIFIED", bound)

    def _deleted(self, parsed: _Parsed, kind: str, api_version: str, namespace: str, name: str,
                 response: dict[str, Any] | None, request: Any,
                 listed: dict[str, Any] | None = None) -> Iterator[WatchEvent | Rejected]:
        key = (kind, namespace, name)
        known = self.state.get(key) or listed
        if known is None and response is not None and _uid(response) is not None \
                and _uid(response) == self.deleted.get(key):
            # Another client's delete of an object gone since, received after the delete that
            # removed it (its response shows the object as that delete found it).
            self.stats[parsed.index].drop(DROP_DELETED_AGAIN, parsed.line)
            return
        obj = response if response is not None else known
        if obj is None:
            obj = {"apiVersion": api_version, "kind": kind,
                   "metadata": {"name": name, **({"namespace": namespace} if namespace else {})}}
        obj = self._complete(obj, kind, api_version, namespace, name)
        if kind == "Pod" and response is not None and known is not None \
                and not _deletion_mark(known) and _shows_later_write(obj, known):
            # Bound, nominated or found unschedulable before this deletion committed, by a
            # request received after it: that write first.
            metadata = {key: value for key, value in (obj.get("metadata") or {}).items()
                        if key not in ("deletionTimestamp", "deletionGracePeriodSeconds")}
            known = {**obj, "metadata": metadata}
            yield from self._emit(parsed, "MODIFIED", known, by_update=False)
        if response is not None:
            terminating = _responds_terminating(kind, obj)
        else:
            grace = _grace_period(kind, obj, request)
            terminating = grace is not None or bool((obj.get("metadata") or {}).get(
                "finalizers"))
            if terminating:
                obj = _marked_for_deletion(obj, parsed.received, grace or 0)
        if not terminating and kind == "Pod" and known is not None \
                and not _deletion_mark(known):
            # Every pod's deletion is graceful in the API server (the pod strategy's
            # CheckGracefulDelete is always true; BeforeDelete in k8s.io/apiserver's
            # registry/rest/delete.go): it writes the deletionTimestamp first, and deletes at
            # once when the grace period is 0. Watchers see both.
            yield from self._emit(parsed, "MODIFIED", _marked_for_deletion(obj, parsed.received, 0),
                                  by_update=False)
        yield from self._emit(parsed, "MODIFIED" if terminating else "DELETED", obj,
                              by_update=False)


def _as_stored(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """An object built from a request's body as the API server stores it, as far as the
    scheduler reads it: a pod's ``status.startTime`` in whole seconds. A ``metav1.Time`` is
    stored without its fraction (``ProtoTime`` and ``MarshalJSON`` in
    ``k8s.io/apimachinery/pkg/apis/meta/v1/time_proto.go`` and ``time.go``), and preemption
    ranks equally important victims by it; a node agent's status patch may send one."""
    if obj is None or obj.get("kind") not in ("Pod", None):
        return obj
    status = obj.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("startTime"), str):
        return obj
    whole = _FRACTION.sub("", status["startTime"])
    return obj if whole == status["startTime"] else {**obj, "status": {**status,
                                                                         "startTime": whole}}


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without what every write changes (its resourceVersion and field
    managers): an update leaving the rest as it was is a no-op (``GuaranteedUpdate`` in
    ``k8s.io/apiserver/pkg/storage/etcd3/store.go`` skips writing an unchanged object)."""
    metadata = {key: value for key, value in (obj.get("metadata") or {}).items()
                if key not in ("resourceVersion", "managedFields")}
    return {**obj, "metadata": metadata}


def _scheduling_view(pod: dict[str, Any]) -> tuple[Any, ...]:
    """What the scheduler writes to a pod: its node, its nomination, its PodScheduled
    condition (None for each not there)."""
    status = pod.get("status") or {}
    scheduled = next((c for c in status.get("conditions") or []
                      if isinstance(c, dict) and c.get("type") == "PodScheduled"), None)
    return ((pod.get("spec") or {}).get("nodeName") or None,
            status.get("nominatedNodeName") or None,
            None if scheduled is None else (scheduled.get("status"), scheduled.get("reason"),
                                            scheduled.get("message")))


def _shows_later_write(response: dict[str, Any], known: dict[str, Any]) -> bool:
    """Whether a deletion's ``response`` shows a write of the scheduler that the last known
    state of the pod lacks (one the reader has not reached yet)."""
    return any(shown is not None and shown != before for shown, before in
               zip(_scheduling_view(response), _scheduling_view(known), strict=True))


def _bound(pod: dict[str, Any], node: str, binding: dict[str, Any], ts_us: int) -> dict[str, Any]:
    """``pod`` as the binding subresource leaves it (``BindingREST.setPodNodeAndMetadata`` in
    ``pkg/registry/core/pod/storage/storage.go``): the node set, the binding's annotations
    copied, and the ``PodScheduled`` condition replaced by ``status: "True"`` (no reason or
    message; its transition time kept when it was already true, as ``UpdatePodCondition``
    does). The nomination stays, as v1.34 leaves it (``ClearingNominatedNodeNameAfterBinding``
    alpha, off); a binding from v1.35 on goes through :func:`_bound_from_v1_35` too."""
    metadata = dict(pod.get("metadata") or {})
    annotations = (binding.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and annotations:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    status = dict(pod.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    old = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
    scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": (old.get("lastTransitionTime")
                                        if old is not None and old.get("status") == "True"
                                        else format_rfc3339(ts_us // 1_000_000 * 1_000_000))}
    if old is None:
        conditions.append(scheduled)
    else:
        conditions = [scheduled if c is old else c for c in conditions]
    status["conditions"] = conditions
    return {**pod, "metadata": metadata, "spec": {**(pod.get("spec") or {}), "nodeName": node},
            "status": status}


def _bound_from_v1_35(pod: dict[str, Any], node: dict[str, Any] | None) -> dict[str, Any]:
    """A binding from v1.35 on (``ClearingNominatedNodeNameAfterBinding`` and
    ``PodTopologyLabelsAdmission``, both beta and on): the nomination cleared, and the node's
    zone and region labels copied onto the pod. The release is kube-scheduler's, from the
    binding request's user agent (the API server's own is not in its audit log)."""
    status = dict(pod.get("status") or {})
    status.pop("nominatedNodeName", None)
    pod = {**pod, "status": status}
    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    return with_topology_labels(pod, labels) or pod


def _responds_terminating(kind: str, obj: dict[str, Any]) -> bool:
    """Whether a delete's response shows an object still terminating: finalizers left, or a
    bound pod given a grace period (the kubelet deletes it for good later)."""
    metadata = obj.get("metadata") or {}
    if not metadata.get("deletionTimestamp"):
        return False
    if metadata.get("finalizers"):
        return True
    return (kind == "Pod" and bool((obj.get("spec") or {}).get("nodeName"))
            and (metadata.get("deletionGracePeriodSeconds") or 0) > 0)


def _grace_period(kind: str, obj: dict[str, Any], request: Any) -> int | None:
    """The grace period of a pod's deletion, None when it goes at once (upstream
    ``pkg/registry/core/pod/strategy.go`` CheckGracefulDelete)."""
    if kind != "Pod":
        return None
    spec = obj.get("spec") or {}
    if not spec.get("nodeName"):
        return None  # never ran anywhere: deleted at once
    if (obj.get("status") or {}).get("phase") in FINISHED_PHASES:
        return None
    grace = request.get("gracePeriodSeconds") if isinstance(request, dict) else None
    if not isinstance(grace, int):
        grace = spec.get("terminationGracePeriodSeconds", 30)
    return grace if isinstance(grace, int) and grace > 0 else None


def _marked_for_deletion(obj: dict[str, Any], ts_us: int, grace: int) -> dict[str, Any]:
    """``obj`` as a graceful delete leaves it; ``metav1.Time`` is written in whole seconds."""
    metadata = dict(obj.get("metadata") or {})
    deadline = ts_us + grace * 1_000_000
    metadata.setdefault("deletionTimestamp", format_rfc3339(deadline - deadline % 1_000_000))
    metadata.setdefault("deletionGracePeriodSeconds", grace)
    return {**obj, "metadata": metadata}


def _finally_deleted(kind: str, obj: dict[str, Any]) -> bool:
    """An update that leaves a deleted object without finalizers and with no grace period
    left removes it (upstream ``ShouldDeleteDuringUpdate`` in
    ``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go``): a Job's pod whose
    kubelet already deleted it (grace 0) goes when the Job controller removes its tracking
    finalizer; a pod still in its grace period waits for the kubelet's delete."""
    metadata = obj.get("metadata") or {}
    return (bool(metadata.get("deletionTimestamp")) and not metadata.get("finalizers")
            and not metadata.get("deletionGracePeriodSeconds"))


def _source_of(doc: dict[str, Any]) -> str:
    ref = doc.get("objectRef") or {}
    resource = ref.get("resource", "?")
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    return f"{doc.get('verb', '?')} {resource}"


def read_audit(paths: Sequence[Path], stats: Sequence[StreamStats],
               progress: Callable[[int], None] | None = None,
               known: Iterable[dict[str, Any]] = ()
               ) -> Iterator[tuple[int, WatchEvent | Rejected]]:
    """``(position in paths, item)`` for the audit logs ``paths``, merged in time order.

    ``known`` are the objects that exist when the logs begin (a snapshot): patches, bindings
    and deletions of them are rebuilt from their state.
    """
    converter = AuditConverter(stats)
    converter.know(known)
    rejected: list[tuple[int, Rejected]] = []

    def relevant(index: int, path: Path) -> Iterator[_Parsed]:
        try:
            for item in _read_file(index, path, stats[index], progress):
                if isinstance(item, Rejected):
                    rejected.append((index, item))
                else:
                    yield item
        except TraceError as exc:  # a damaged file ends its own stream, not the others
            rejected.append((index, Rejected(exc.line, exc.reason)))

    streams = [relevant(i, p) for i, p in enumerate(paths)]
    for parsed in heapq.merge(*streams):
        while rejected:
            yield rejected.pop(0)
        for item in converter.convert(parsed):
            yield parsed.index, item
    while rejected:
        yield rejected.pop(0)
