"""An HTTP scheduler extender: its wire format, its verbs and what each call did.

Mirrors ``pkg/scheduler/extender.go`` (``HTTPExtender``) and the wire types of
``staging/src/k8s.io/kube-scheduler/extender/v1/types.go`` (Kubernetes v1.34):

* every verb is a POST of JSON to ``urlPrefix`` (trailing slashes dropped) + ``/`` + verb,
  with the Go field names as keys (``Pod``, ``Nodes``, ``NodeNames`` ...) and ``null`` for
  what is unset; only status 200 is an answer, anything else an error naming the verb, the
  URL and the code; the request gives up after the extender's timeout;
* answers are read as Go's ``encoding/json`` reads them: keys matched case-insensitively,
  unknown keys ignored, numbers checked against the field's type;
* ``filter`` sends node names (``nodeCacheCapable``) or whole Node objects; a non-empty
  ``Error`` is an error; a node-cache-capable extender may only answer nodes it was sent;
* ``prioritize`` answers ``[{"Host", "Score"}]``; an extender without the verb scores
  every node 0 with weight 0, without a call;
* ``bind`` and ``preempt`` (``ProcessPreemption``: victims as pods, or as uids for a
  node-cache-capable extender; the answer always as uids, looked up on their nodes);
* ``is_interested``: no managed resources, or a container or init container that requests
  or limits one of them.

Every call is kept as an :class:`ExtenderCall` (verb, nodes sent, answer or error, latency)
for the event log. ``transport`` is how a request reaches the extender: HTTP by default, or
anything that answers (status, body) for a (url, body, timeout), such as recorded answers.
"""

from __future__ import annotations

import json
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.config.extenders import ExtenderConfig
from kaudit.model.pod import PodInfo

#: (url, JSON body, timeout in seconds or None) -> (HTTP status, body).
Transport = Callable[[str, bytes, float | None], tuple[int, bytes]]


class ExtenderError(Exception):
    """A call failed, or its answer cannot be used; the message is upstream's."""


@dataclass
class ExtenderCall:
    """One call of one verb, as the event log keeps it."""

    extender: str
    verb: str
    #: The nodes sent (filter, prioritize), the target node (bind) or the candidate nodes.
    nodes: list[str]
    answer: Any = None
    error: str | None = None
    latency_us: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"extender": self.extender, "verb": self.verb, "nodes": self.nodes,
                "answer": self.answer, "error": self.error, "latencyUs": self.latency_us}


@dataclass(frozen=True)
class FilterAnswer:
    """What a filter call answered: the nodes that pass (None drops them all), and the
    failed and failed-and-unresolvable nodes with the extender's message for each."""

    passing: list[str] | None
    failed: dict[str, str] = field(default_factory=dict)
    failed_unresolvable: dict[str, str] = field(default_factory=dict)


def go_quote(text: str) -> str:
    """Go's ``%q`` for the strings an extender error quotes."""
    return json.dumps(text, ensure_ascii=False)


def _lookup(obj: Mapping[str, Any], name: str) -> Any:
    """A field of a decoded JSON object as Go reads it into a struct: the last key equal to
    ``name`` ignoring case (an exact match preferred among keys that fold alike)."""
    if name in obj:
        return obj[name]
    found = None
    folded = name.casefold()
    for key, value in obj.items():
        if key.casefold() == folded:
            found = value
    return found


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ExtenderError(f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                            f"{what} of type map[string]string")
    for item in value.values():
        if not isinstance(item, str):
            raise ExtenderError(f"json: cannot unmarshal {_json_kind(item)} into Go struct "
                                f"field {what} of type string")
    return dict(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _int64(value: Any, what: str) -> int:
    """A JSON value read into a Go ``int64`` field."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if (isinstance(value, int) or value.is_integer()) and -(2**63) <= value < 2**63:
            return int(value)
        raise ExtenderError(f"json: cannot unmarshal number {json.dumps(value)} into Go struct "
                            f"field {what} of type int64")
    raise ExtenderError(f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                        f"{what} of type int64")


def http_transport(config: ExtenderConfig) -> Transport:
    """POST over HTTP(S) with the extender's TLS settings (``makeTransport``): without a CA,
    HTTPS is not verified when ``enableHTTPS`` is set; ``insecure`` never verifies."""
    context = _tls_context(config)

    def send(url: str, body: bytes, timeout: float | None) -> tuple[int, bytes]:
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
    return send


def _tls_context(config: ExtenderConfig) -> ssl.SSLContext | None:
    tls = config.tls_config
    has_ca = tls is not None and bool(tls.ca_file or tls.ca_data)
    insecure = (tls is not None and tls.insecure) or (config.enable_https and not has_ca)
    if tls is None and not insecure:
        return None
    context = ssl.create_default_context()
    if tls is not None and has_ca:
        if tls.ca_data:
            context.load_verify_locations(cadata=tls.ca_data.decode())
        else:
            context.load_verify_locations(cafile=tls.ca_file)
    if tls is not None and (tls.cert_data or tls.cert_file):
        _load_client_certificate(context, tls.cert_data, tls.cert_file, tls.key_data,
                                 tls.key_file)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _load_client_certificate(context: ssl.SSLContext, cert_data: bytes, cert_file: str,
                             key_data: bytes, key_file: str) -> None:
    if not cert_data and not key_data:
        context.load_cert_chain(cert_file, key_file or None)
        return
    with tempfile.TemporaryDirectory() as directory:  # ssl reads certificates from files
        cert_path, key_path = Path(directory, "cert.pem"), Path(directory, "key.pem")
        cert_path.write_bytes(cert_data or Path(cert_file).read_bytes())
        key_path.write_bytes(key_data or Path(key_file).read_bytes())
        context.load_cert_chain(cert_path, key_path)


class HTTPExtender:
    """One configured extender; ``calls`` collects what each call did."""

    def __init__(self, config: ExtenderConfig, transport: Transport | None = None) -> None:
        self.config = config
        self.transport = transport or http_transport(config)
        self.calls: list[ExtenderCall] = []

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    def is_interested(self, pod: PodInfo) -> bool:
        """``IsInterested``: every pod when no resources are managed, else a pod whose
        containers or init containers request or limit one (whatever the quantity)."""
        managed = {r.name for r in self.config.managed_resources}
        if not managed:
            return True
        spec = pod.obj.get("spec") or {}
        for container in [*(spec.get("containers") or []),
                          *(spec.get("initContainers") or [])]:
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                if managed.intersection(resources.get(kind) or {}):
                    return True
        return False

    @contextmanager
    def _answer_errors(self) -> Iterator[None]:
        """An answer that cannot be used is the call's error too."""
        try:
            yield
        except ExtenderError as exc:
            if self.calls and self.calls[-1].error is None:
                self.calls[-1].error = str(exc)
            raise

    def url(self, verb: str) -> str:
        return self.config.url_prefix.rstrip("/") + "/" + verb

    def send(self, verb: str, args: Any, nodes: list[str]) -> Any:
        """POST ``args`` to the verb; the decoded answer, or :class:`ExtenderError`."""
        url = self.url(verb)
        call = ExtenderCall(self.name, verb, nodes)
        self.calls.append(call)
        timeout_ns = self.config.timeout_ns
        began = time.perf_counter_ns()
        try:
            try:
                status, body = self.transport(url, json.dumps(args).encode(),
                                              timeout_ns / 1e9 if timeout_ns > 0 else None)
            except ExtenderError:
                raise
            except (OSError, ValueError) as exc:
                raise ExtenderError(f'Post "{url}": {_reason(exc)}') from None
            if status != 200:
                raise ExtenderError(f"failed {verb} with extender at URL {url}, code {status}")
            try:
                answer = json.loads(body) if body.strip() else _eof()
            except ValueError as exc:
                raise ExtenderError(f"invalid character in extender answer: {exc}") from None
            call.answer = answer
            return answer
        except ExtenderError as exc:
            call.error = str(exc)
            raise
        finally:
            call.latency_us = (time.perf_counter_ns() - began) // 1000

    def _node_args(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
                   ) -> dict[str, Any]:
        if self.config.node_cache_capable:
            return {"Pod": pod.obj, "Nodes": None, "NodeNames": [name for name, _ in nodes]}
        return {"Pod": pod.obj, "Nodes": {"metadata": {}, "items": [obj for _, obj in nodes]},
                "NodeNames": None}

    def filter(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
               ) -> FilterAnswer:
        """``Filter`` over (name, Node object) pairs."""
        names = [name for name, _ in nodes]
        if not self.config.is_filter:
            return FilterAnswer(names)
        answer = self.send(self.config.filter_verb, self._node_args(pod, nodes), names)
        with self._answer_errors():
            return self._filter_answer(answer, names)

    def _filter_answer(self, answer: Any, names: list[str]) -> FilterAnswer:
        if answer is None:
            answer = {}
        if not isinstance(answer, dict):
            raise ExtenderError(f"json: cannot unmarshal {_json_kind(answer)} into Go value of "
                                "type v1.ExtenderFilterResult")
        error = _lookup(answer, "Error")
        if error:
            raise ExtenderError(str(error))
        failed = _string_map(_lookup(answer, "FailedNodes"),
                             "ExtenderFilterResult.FailedNodes")
        unresolvable = _string_map(_lookup(answer, "FailedAndUnresolvableNodes"),
                                   "ExtenderFilterResult.FailedAndUnresolvableNodes")
        node_names = _lookup(answer, "NodeNames")
        node_list = _lookup(answer, "Nodes")
        passing: list[str] | None = None
        if self.config.node_cache_capable and node_names is not None:
            if not isinstance(node_names, list) or not all(isinstance(n, str)
                                                           for n in node_names):
                raise ExtenderError("json: cannot unmarshal NodeNames of "
                                    "ExtenderFilterResult into Go value of type []string")
            sent = set(names)
            for name in node_names:
                if name not in sent:
                    raise ExtenderError(f"extender {go_quote(self.name)} claims a filtered node "
                                        f"{go_quote(name)} which is not found in the input "
                                        "node list")
            passing = list(node_names)
        elif isinstance(node_list, dict):
            items = _lookup(node_list, "items") or []
            passing = [((item or {}).get("metadata") or {}).get("name") or ""
                       for item in items if isinstance(item, dict)]
        return FilterAnswer(passing, failed, unresolvable)

    def prioritize(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
                   ) -> tuple[list[tuple[str, int]], int]:
        """``Prioritize``: (host, score) pairs as answered, and the extender's weight."""
        names = [name for name, _ in nodes]
        if not self.config.is_prioritizer:
            return [(name, 0) for name in names], 0
        answer = self.send(self.config.prioritize_verb, self._node_args(pod, nodes), names)
        with self._answer_errors():
            return self._prioritize_answer(answer)

    def _prioritize_answer(self, answer: Any) -> tuple[list[tuple[str, int]], int]:
        if answer is None:
            return [], self.config.weight
        if not isinstance(answer, list):
            raise ExtenderError(f"json: cannot unmarshal {_json_kind(answer)} into Go value of "
                                "type v1.HostPriorityList")
        scores = []
        for entry in answer:
            if not isinstance(entry, dict):
                raise ExtenderError(f"json: cannot unmarshal {_json_kind(entry)} into Go value "
                                    "of type v1.HostPriority")
            host = _lookup(entry, "Host")
            scores.append(("" if host is None else str(host),
                           _int64(_lookup(entry, "Score") or 0, "HostPriority.Score")))
        return scores, self.config.weight

    def bind(self, pod: PodInfo, node: str) -> None:
        """``Bind``: the pod to ``node``, or :class:`ExtenderError`."""
        if not self.config.is_binder:
            raise ExtenderError("unexpected empty bindVerb in extender")
        answer = self.send(self.config.bind_verb, {
            "PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid,
            "Node": node}, [node])
        error = _lookup(answer, "Error") if isinstance(answer, dict) else None
        if error:
            with self._answer_errors():
                raise ExtenderError(str(error))

    def process_preemption(self, pod: PodInfo,
                           victims: Mapping[str, tuple[Sequence[PodInfo], int]],
                           pods_on: Callable[[str], Mapping[str, PodInfo] | None]
                           ) -> dict[str, tuple[list[PodInfo], int]]:
        """``ProcessPreemption``: the candidate nodes' victims (pods, PDB violations) as the
        extender narrows them; ``pods_on(node)`` gives a node's pods by uid (None for a node
        not in the cluster)."""
        if not self.config.supports_preemption:
            raise ExtenderError(f"preempt verb is not defined for extender {self.name} but run "
                                "into ProcessPreemption")
        if self.config.node_cache_capable:
            args = {"Pod": pod.obj, "NodeNameToVictims": None, "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": p.uid} for p in pods], "NumPDBViolations": count}
                for node, (pods, count) in victims.items()}}
        else:
            args = {"Pod": pod.obj, "NodeNameToMetaVictims": None, "NodeNameToVictims": {
                node: {"Pods": [p.obj for p in pods], "NumPDBViolations": count}
                for node, (pods, count) in victims.items()}}
        answer = self.send(self.config.preempt_verb, args, list(victims))
        with self._answer_errors():
            return self._preemption_answer(answer, pods_on)

    def _preemption_answer(self, answer: Any,
                           pods_on: Callable[[str], Mapping[str, PodInfo] | None]
                           ) -> dict[str, tuple[list[PodInfo], int]]:
        meta = _lookup(answer, "NodeNameToMetaVictims") if isinstance(answer, dict) else None
        result: dict[str, tuple[list[PodInfo], int]] = {}
        for node, entry in (meta or {}).items():
            on_node = pods_on(node)
            if on_node is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node}"')
            if not isinstance(entry, dict):
                raise ExtenderError(f"extender {self.name} answered no victims object for node "
                                    f"{node}")
            by_uid = {p.uid: p for p in on_node.values()}
            chosen = []
            for meta_pod in _lookup(entry, "Pods") or []:
                uid = str(_lookup(meta_pod, "UID") or "") if isinstance(meta_pod, dict) else ""
                if uid not in by_uid:
                    raise ExtenderError(f"extender: {self.name} claims to preempt pod (UID: "
                                        f"&{{{uid}}}) on node: {node}, but the pod is not found "
                                        "on that node")
                chosen.append(by_uid[uid])
            result[node] = (chosen, _int64(_lookup(entry, "NumPDBViolations") or 0,
                                           "MetaVictims.NumPDBViolations"))
        return result


def _eof() -> Any:
    raise ExtenderError("EOF")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError) and exc.reason is not None:
        exc = exc.reason if isinstance(exc.reason, BaseException) else exc
    if isinstance(exc, TimeoutError) or "timed out" in str(exc):
        return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    return str(exc)
