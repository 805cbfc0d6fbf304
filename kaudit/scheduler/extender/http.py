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

Every call is kept as an :class:`ExtenderCall` (verb, nodes sent, the answer's body as
received or the error, latency) for the event log. ``transport`` is how a request reaches the
extender: HTTP by default, or anything that gives a :class:`Reply` for a (url, body, timeout),
such as recorded answers.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import orjson

from kaudit.config.extender_tls import TLSSettingError, build_tls_context
from kaudit.config.extenders import ExtenderConfig, tls_errors
from kaudit.framework.extender import ExtenderCall, ExtenderError, FilterAnswer
from kaudit.gostrings import go_quote
from kaudit.model.pod import PodInfo
from kaudit.scheduler.extender import wire

T = TypeVar("T")



class Reply(NamedTuple):
    """What a transport got back: the HTTP status and body, and, for a recorded answer,
    the latency it was recorded with (a live call measures its own)."""

    status: int
    body: bytes
    latency_us: int | None = None


#: (url, JSON body, timeout in seconds or None) -> the reply; failures raise OSError (or
#: ExtenderError, for a recorded failure).
Transport = Callable[[str, bytes, float | None], Reply]


def http_transport(config: ExtenderConfig) -> Transport:
    """POST over HTTP(S) with the extender's TLS settings (``makeTransport``). The timeout
    bounds each wait on the socket, where Go's bounds the whole request; redirects of a POST
    are not followed."""
    context = tls_context(config)

    def send(url: str, body: bytes, timeout: float | None) -> Reply:
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                return Reply(response.status, response.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return Reply(exc.code, exc.read())
    return send


def tls_context(config: ExtenderConfig) -> ssl.SSLContext | None:
    """``makeTransport``'s TLS (:func:`kaudit.config.extender_tls.build_tls_context`).
    Settings client-go refuses are refused by the configuration's validation; the same rule
    (:func:`kaudit.config.extenders.tls_errors`) guards an unvalidated configuration here."""
    tls = config.tls_config
    problems = tls_errors(tls, "tlsConfig") if tls is not None else []
    if problems:
        raise ExtenderError(f"extender {go_quote(config.name)}: {problems[0].message()}")
    try:
        return build_tls_context(tls, config.enable_https)
    except TLSSettingError as exc:
        raise ExtenderError(f"extender {go_quote(config.name)}: TLS configuration: {exc}"
                            ) from None


class HTTPExtender:
    """One configured extender; every call it makes joins ``calls`` (a list the scheduler
    may share among its extenders, to keep their calls in the order they were made)."""

    def __init__(self, config: ExtenderConfig, transport: Transport | None = None,
                 calls: list[ExtenderCall] | None = None) -> None:
        self.config = config
        self.transport = transport or http_transport(config)
        self.calls: list[ExtenderCall] = [] if calls is None else calls

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    @property
    def weight(self) -> int:
        return self.config.weight

    @property
    def is_filter(self) -> bool:
        return self.config.is_filter

    @property
    def is_prioritizer(self) -> bool:
        return self.config.is_prioritizer

    @property
    def is_binder(self) -> bool:
        return self.config.is_binder

    @property
    def supports_preemption(self) -> bool:
        return self.config.supports_preemption

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

    def url(self, verb: str) -> str:
        return self.config.url_prefix.rstrip("/") + "/" + verb

    def send(self, step: str, verb: str, args: Any, nodes: list[str],
             read: Callable[[Any], T]) -> T:
        """POST ``args`` to the verb of ``step`` and decode the answer with ``read``; the call
        (with its answer or error) joins ``calls``. Failures are :class:`ExtenderError`."""
        url = self.url(verb)
        try:
            body = orjson.dumps(args)
        except TypeError:  # an integer beyond 64 bits in the pod, say
            body = json.dumps(args, separators=(",", ":"), ensure_ascii=False).encode()
        call = ExtenderCall(self.name, step, verb, nodes, ignorable=self.ignorable,
                            request=hashlib.sha256(body).hexdigest()[:32])
        self.calls.append(call)
        timeout_ns = self.config.timeout_ns
        began = time.perf_counter_ns()
        recorded: int | None = None
        try:
            try:
                reply = self.transport(url, body, timeout_ns / 1e9 if timeout_ns > 0 else None)
            except ExtenderError as exc:
                recorded = exc.latency_us
                raise
            except (OSError, ValueError, http.client.HTTPException) as exc:
                raise ExtenderError(f'Post "{url}": {_reason(exc)}') from None
            recorded = reply.latency_us
            if reply.status != 200:
                raise ExtenderError(f"failed {verb} with extender at URL {url}, "
                                    f"code {reply.status}")
            try:
                call.body = reply.body
                answer = wire.parse(reply.body)
                return read(answer)
            except wire.AnswerError as exc:
                raise ExtenderError(str(exc)) from None
        except ExtenderError as exc:
            call.error = str(exc)
            raise
        finally:
            call.latency_us = (recorded if recorded is not None
                               else (time.perf_counter_ns() - began) // 1000)

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
        answer = self.send("filter", self.config.filter_verb, self._node_args(pod, nodes),
                           names,
                           lambda raw: self._filter_answer(wire.filter_result(raw), names))
        self.calls[-1].passing = answer.passing
        return answer

    def _filter_answer(self, result: wire.FilterResult, names: list[str]) -> FilterAnswer:
        if result.error:
            raise ExtenderError(result.error)
        passing: list[str] | None = None
        if self.config.node_cache_capable and result.node_names is not None:
            sent = set(names)
            for name in result.node_names:
                if name not in sent:
                    raise ExtenderError(f"extender {go_quote(self.name)} claims a filtered node "
                                        f"{go_quote(name)} which is not found in the input "
                                        "node list")
            passing = list(result.node_names)
        elif result.nodes is not None:
            unknown = [name for name in result.nodes if name not in set(names)]
            if unknown:
                # Upstream goes on with the Node objects as answered; kaudit can only place
                # a pod on a node of its cluster (docs/extenders.md).
                raise ExtenderError(f"extender {go_quote(self.name)} answered a node "
                                    f"{go_quote(unknown[0])} which was not in the nodes it "
                                    "was sent")
            passing = list(result.nodes)
        return FilterAnswer(passing, result.failed, result.failed_unresolvable)

    def prioritize(self, pod: PodInfo, nodes: Sequence[tuple[str, dict[str, Any]]]
                   ) -> tuple[list[tuple[str, int]], int]:
        """``Prioritize``: (host, score) pairs as answered, and the extender's weight."""
        names = [name for name, _ in nodes]
        if not self.config.is_prioritizer:
            return [(name, 0) for name in names], 0
        scores = self.send("prioritize", self.config.prioritize_verb,
                           self._node_args(pod, nodes), names, wire.host_priorities)
        return scores, self.config.weight

    def bind(self, pod: PodInfo, node: str) -> None:
        """``Bind``: the pod to ``node``, or :class:`ExtenderError`."""
        if not self.config.is_binder:
            raise ExtenderError("unexpected empty bindVerb in extender")

        def read(answer: Any) -> None:
            error = wire.binding_error(answer)
            if error:
                raise ExtenderError(error)
        self.send("bind", self.config.bind_verb,
                  {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid,
                   "Node": node}, [node], read)

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
        return self.send("preempt", self.config.preempt_verb, args, list(victims),
                         lambda answer: self._victims(wire.meta_victims(answer), pods_on))

    def _victims(self, meta: dict[str, tuple[list[str], int] | None],
                 pods_on: Callable[[str], Mapping[str, PodInfo] | None]
                 ) -> dict[str, tuple[list[PodInfo], int]]:
        result: dict[str, tuple[list[PodInfo], int]] = {}
        for node, entry in meta.items():
            on_node = pods_on(node)
            if on_node is None:
                raise ExtenderError(f"nodeinfo not found for node name {go_quote(node)}")
            if entry is None:
                raise ExtenderError(f"extender {self.name} answered null victims for node {node}")
            uids, violations = entry
            by_uid = {p.uid: p for p in on_node.values()}
            chosen = []
            for uid in uids:
                if uid not in by_uid:
                    raise ExtenderError(f"extender: {self.name} claims to preempt pod (UID: "
                                        f"&{{{uid}}}) on node: {node}, but the pod is not found "
                                        "on that node")
                chosen.append(by_uid[uid])
            result[node] = (chosen, violations)
        return result


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException):
        exc = exc.reason
    if isinstance(exc, TimeoutError) or "timed out" in str(exc):
        return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    return str(exc) or type(exc).__name__
