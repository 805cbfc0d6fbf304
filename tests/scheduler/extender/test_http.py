"""The HTTP extender client against a real HTTP server on 127.0.0.1: the wire format of
``extender/v1/types.go`` (``TestCompatibility``), ``IsInterested`` (``TestIsInterested``),
each verb's answers and errors as ``pkg/scheduler/extender.go`` reports them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

from kaudit.cluster.objects import pod_info
from kaudit.cluster.state import ClusterState
from kaudit.config.extenders import ExtenderConfig, ManagedResource
from kaudit.scheduler.extender import wire
from kaudit.scheduler.extender.answers import RecordedAnswers
from kaudit.scheduler.extender.http import ExtenderError, HTTPExtender, Reply
from kaudit.tracegen.builders import make_node, make_pod
from tests.extender_service import FakeExtender, Route


@pytest.fixture
def service(extender_service: FakeExtender) -> FakeExtender:
    return extender_service


def _nodes(*names: str) -> list[tuple[str, dict[str, Any]]]:
    return [(name, make_node(name).capacity(cpu="4").obj()) for name in names]


POD = pod_info(ClusterState(), make_pod("web").req(cpu="1").obj())


def test_filter_sends_node_names_to_a_node_cache_capable_extender(service: FakeExtender) -> None:
    service.routes["filter"] = lambda body: (200, {
        "NodeNames": ["b"], "FailedNodes": {"a": "no GPU left"},
        "FailedAndUnresolvableNodes": {"c": "wrong rack"}, "Error": ""})
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, filter_verb="filter",
                                           node_cache_capable=True))
    answer = extender.filter(POD, _nodes("a", "b", "c"))
    assert answer.passing == ["b"]
    assert answer.failed == {"a": "no GPU left"}
    assert answer.failed_unresolvable == {"c": "wrong rack"}
    verb, body = service.seen[0]
    assert verb == "filter" and body["NodeNames"] == ["a", "b", "c"] and body["Nodes"] is None
    assert body["Pod"]["metadata"]["name"] == "web"
    call = extender.calls[0]
    assert (call.verb, call.nodes, call.error) == ("filter", ["a", "b", "c"], None)
    assert call.body is not None and call.latency_us > 0
    assert json.loads(call.body)["FailedNodes"] == {"a": "no GPU left"}


def test_filter_sends_whole_nodes_otherwise_and_reads_answers_in_any_case(
        service: FakeExtender) -> None:
    service.routes["filter"] = lambda body: (200, {
        "nodes": {"items": [body["Nodes"]["items"][1]]}, "failednodes": {"a": "busy"}})
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, filter_verb="filter"))
    answer = extender.filter(POD, _nodes("a", "b"))
    assert answer.passing == ["b"] and answer.failed == {"a": "busy"}
    body = service.seen[0][1]
    assert body["NodeNames"] is None and body["Nodes"]["metadata"] == {}
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["a", "b"]


def test_a_non_cache_extender_answering_names_only_drops_every_node(
        service: FakeExtender) -> None:
    service.routes["filter"] = lambda body: (200, {"NodeNames": ["a"]})
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, filter_verb="filter"))
    assert extender.filter(POD, _nodes("a")).passing is None


@pytest.mark.parametrize(("route", "message"), [
    (lambda body: (500, {}), "failed filter with extender at URL {url}filter, code 500"),
    (lambda body: (201, {}), "failed filter with extender at URL {url}filter, code 201"),
    (lambda body: (200, {"Error": "out of quota"}), "out of quota"),
    (lambda body: (200, b""), "EOF"),
    (lambda body: (200, {"NodeNames": ["zzz"]}),
     'extender "{url}" claims a filtered node "zzz" which is not found in the input node '
     "list"),
    (lambda body: (200, {"FailedNodes": {"a": 3}}),
     "json: cannot unmarshal number into Go struct field ExtenderFilterResult.FailedNodes "
     "of type string"),
    (lambda body: (200, b'{"NodeNames": ["a"], "x": NaN}'),
     "invalid character 'N' looking for beginning of value"),
    (lambda body: (200, b'"text"'),
     "json: cannot unmarshal string into Go value of type v1.ExtenderFilterResult"),
    (lambda body: (200, {"FailedNodes": ["a"]}),
     "json: cannot unmarshal array into Go struct field ExtenderFilterResult.FailedNodes of "
     "type map[string]string"),
])
def test_filter_errors(service: FakeExtender, route: Route, message: str) -> None:
    service.routes["filter"] = route
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, filter_verb="filter",
                                           node_cache_capable=True))
    with pytest.raises(ExtenderError) as raised:
        extender.filter(POD, _nodes("a"))
    assert str(raised.value) == message.format(url=service.url)
    assert extender.calls[0].error == str(raised.value)


def test_a_slow_extender_times_out(service: FakeExtender) -> None:
    def slow(body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(0.5)
        return 200, {}
    service.routes["filter"] = slow
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, filter_verb="filter",
                                           http_timeout_ns=100_000_000))
    with pytest.raises(ExtenderError, match=r'^Post "http://127\.0\.0\.1:\d+/scheduler/filter": '
                       "context deadline exceeded"):
        extender.filter(POD, _nodes("a"))


def test_an_unreachable_extender_is_an_error() -> None:
    extender = HTTPExtender(ExtenderConfig(url_prefix="http://127.0.0.1:9/x",
                                           filter_verb="filter"))
    with pytest.raises(ExtenderError, match=r'^Post "http://127\.0\.0\.1:9/x/filter": '):
        extender.filter(POD, _nodes("a"))


def test_an_extender_without_the_verb_is_not_called(service: FakeExtender) -> None:
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url))
    assert extender.filter(POD, _nodes("a", "b")).passing == ["a", "b"]
    assert extender.prioritize(POD, _nodes("a", "b")) == ([("a", 0), ("b", 0)], 0)
    with pytest.raises(ExtenderError, match="unexpected empty bindVerb in extender"):
        extender.bind(POD, "a")
    assert service.seen == [] and extender.calls == []


def test_prioritize_answers_scores_and_the_weight(service: FakeExtender) -> None:
    service.routes["prioritize"] = lambda body: (200, [{"Host": "a", "Score": 10},
                                                       {"host": "b", "score": 3}])
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, prioritize_verb="prioritize",
                                           weight=5))
    assert extender.prioritize(POD, _nodes("a", "b")) == ([("a", 10), ("b", 3)], 5)
    for score in ("1.5", "3.0", "1e1"):
        service.routes["prioritize"] = lambda body, score=score: (
            200, f'[{{"Host": "a", "Score": {score}}}]'.encode())
        with pytest.raises(ExtenderError, match=r"cannot unmarshal number .* into Go struct "
                           r"field HostPriority\.Score of type int64"):
            extender.prioritize(POD, _nodes("a"))


def test_bind_sends_the_binding(service: FakeExtender) -> None:
    service.routes["bind"] = lambda body: (200, {"Error": ""})
    extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, bind_verb="bind"))
    extender.bind(POD, "n1")
    assert service.seen[0][1] == {"PodName": "web", "PodNamespace": "default",
                                  "PodUID": POD.uid, "Node": "n1"}
    service.routes["bind"] = lambda body: (200, {"Error": "node is full"})
    with pytest.raises(ExtenderError, match=r"^node is full$"):
        extender.bind(POD, "n1")


def test_process_preemption_by_uid_and_by_pods(service: FakeExtender) -> None:
    cluster = ClusterState()
    cluster.add_node(make_node("n1").capacity(cpu="4").obj())
    victims = [pod_info(cluster, make_pod(f"v{i}").node("n1").req(cpu="1").obj())
               for i in range(3)]
    for victim in victims:
        cluster.add_pod(victim)

    def pods_on(node: str) -> dict[str, Any] | None:
        slot = cluster.slot_of.get(node)
        return None if slot is None else cluster.pods_on[slot]

    service.routes["preempt"] = lambda body: (200, {"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": victims[2].uid}], "NumPDBViolations": 1}}})
    for cache in (True, False):
        extender = HTTPExtender(ExtenderConfig(url_prefix=service.url, preempt_verb="preempt",
                                               node_cache_capable=cache))
        result = extender.process_preemption(POD, {"n1": (victims[:2], 0)}, pods_on)
        assert result == {"n1": ([victims[2]], 1)}
    by_uid, by_pods = service.seen[0][1], service.seen[1][1]
    assert by_uid["NodeNameToVictims"] is None
    assert by_uid["NodeNameToMetaVictims"] == {"n1": {"Pods": [{"UID": victims[0].uid},
                                                               {"UID": victims[1].uid}],
                                                      "NumPDBViolations": 0}}
    assert by_pods["NodeNameToMetaVictims"] is None
    assert [p["metadata"]["name"] for p in by_pods["NodeNameToVictims"]["n1"]["Pods"]] == [
        "v0", "v1"]
    service.routes["preempt"] = lambda body: (200, {"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": "ghost"}], "NumPDBViolations": 0}}})
    with pytest.raises(ExtenderError, match=r"^extender: .* claims to preempt pod \(UID: "
                       r"&\{ghost\}\) on node: n1, but the pod is not found on that node$"):
        extender.process_preemption(POD, {"n1": (victims[:1], 0)}, pods_on)


def test_is_interested_by_managed_resources() -> None:
    """``TestIsInterested``: requests or limits of containers and init containers, whatever
    the quantity."""
    managed = ExtenderConfig(url_prefix="http://x",
                             managed_resources=(ManagedResource("example.com/gpu"),))
    cluster = ClusterState()

    def pod(**resources: Any) -> Any:
        obj = make_pod("p").obj()
        obj["spec"]["containers"][0]["resources"] = resources
        return obj

    everything = HTTPExtender(ExtenderConfig(url_prefix="http://x"))
    assert everything.is_interested(pod_info(cluster, pod()))
    extender = HTTPExtender(managed)
    assert not extender.is_interested(pod_info(cluster, pod()))
    assert extender.is_interested(pod_info(cluster, pod(requests={"example.com/gpu": "0"})))
    assert extender.is_interested(pod_info(cluster, pod(limits={"example.com/gpu": "0"})))
    init = make_pod("p").obj()
    init["spec"]["initContainers"] = [{"name": "i", "image": "x", "resources": {
        "requests": {"example.com/gpu": "1"}}}]
    assert extender.is_interested(pod_info(cluster, init))


@pytest.fixture
def https_service(tmp_path: Any) -> Iterator[tuple[FakeExtender, bytes]]:
    """The fake extender behind TLS with a self-signed certificate for 127.0.0.1."""
    import shutil
    import ssl
    import subprocess
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    fake = FakeExtender()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    fake.server.socket = context.wrap_socket(fake.server.socket, server_side=True)
    fake.url = fake.url.replace("http://", "https://")
    yield fake, cert.read_bytes()
    fake.server.shutdown()


def test_https_with_a_ca_verifies_and_without_one_does_not(
        https_service: tuple[FakeExtender, bytes]) -> None:
    """``makeTransport``: enableHTTPS without a CA skips verification; with the server's CA
    it verifies; a client that trusts neither refuses the self-signed server."""
    from kaudit.config.extenders import TLSConfig
    service, ca = https_service
    service.routes["filter"] = lambda body: (200, {"NodeNames": body["NodeNames"]})
    for config in (ExtenderConfig(url_prefix=service.url, filter_verb="filter",
                                  node_cache_capable=True, enable_https=True),
                   ExtenderConfig(url_prefix=service.url, filter_verb="filter",
                                  node_cache_capable=True, tls_config=TLSConfig(ca_data=ca))):
        assert HTTPExtender(config).filter(POD, _nodes("a")).passing == ["a"]
    untrusting = HTTPExtender(ExtenderConfig(url_prefix=service.url, filter_verb="filter",
                                             node_cache_capable=True))
    with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
        untrusting.filter(POD, _nodes("a"))


@pytest.mark.parametrize(("verb", "body"), [
    ("filter", b'{"Nodes": {"items": 5}}'),
    ("filter", b'{"Nodes": {"items": [{"metadata": [1]}]}}'),
    ("filter", b'{"Nodes": {"items": [{"metadata": {"name": 5}}]}}'),
    ("filter", b'{"Nodes": [1]}'),
    ("filter", b'[]'),
    ("filter", b'{"Error": 5}'),
    ("filter", b'{"NodeNames": "a"}'),
    ("prioritize", b'{"Host": "a"}'),
    ("prioritize", b'[{"Host": 5, "Score": 1}]'),
    ("prioritize", b'[{"Host": "a", "Score": false}]'),
    ("bind", b'[]'),
    ("bind", b'"x"'),
    ("preempt", b'[]'),
    ("preempt", b'{"NodeNameToMetaVictims": [1]}'),
    ("preempt", b'{"NodeNameToMetaVictims": "x"}'),
    ("preempt", b'{"NodeNameToMetaVictims": {"n1": {"Pods": 5}}}'),
    ("preempt", b'{"NodeNameToMetaVictims": {"n1": {"NumPDBViolations": false}}}'),
    ("preempt", b'{"NodeNameToMetaVictims": {"n1": null}}'),
    ("filter", b"[" * 100_000),
    ("filter", b"\xff\xfe"),
    ("filter", b"{nope"),
])
def test_answers_of_the_wrong_shape_are_errors_of_the_call(verb: str, body: bytes) -> None:
    """Whatever an extender answers, the call fails with an ExtenderError it keeps."""
    config = ExtenderConfig(url_prefix="http://x", filter_verb="filter",
                            prioritize_verb="prioritize", weight=1, bind_verb="bind",
                            preempt_verb="preempt", node_cache_capable=False)
    extender = HTTPExtender(config, transport=lambda url, data, timeout: Reply(200, body))
    calls: dict[str, Callable[[], Any]] = {
        "filter": lambda: extender.filter(POD, _nodes("a")),
        "prioritize": lambda: extender.prioritize(POD, _nodes("a")),
        "bind": lambda: extender.bind(POD, "a"),
        "preempt": lambda: extender.process_preemption(POD, {"n1": ([POD], 0)},
                                                       lambda node: {}),
    }
    with pytest.raises(ExtenderError) as raised:
        calls[verb]()
    assert extender.calls[-1].error == str(raised.value)


def test_go_reads_the_first_value_and_the_last_key_that_folds_alike() -> None:
    answers = {b'{"Error": "real", "error": ""}': None,
               b'{"error": "x", "Error": "", "error": "y"}': "y",
               b'{"NodeNames": ["a"]} trailing': None}
    config = ExtenderConfig(url_prefix="http://x", filter_verb="filter", node_cache_capable=True)
    for body, error in answers.items():
        extender = HTTPExtender(config, transport=lambda url, data, timeout, b=body: Reply(200, b))
        if error is None:
            extender.filter(POD, _nodes("a"))
        else:
            with pytest.raises(ExtenderError, match=f"^{error}$"):
                extender.filter(POD, _nodes("a"))


def test_a_broken_http_answer_is_an_error_of_the_call() -> None:
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def answer() -> None:
        connection, _ = listener.accept()
        connection.recv(65536)
        connection.sendall(b"garbage\r\n\r\n")
        connection.close()
    threading.Thread(target=answer, daemon=True).start()
    port = listener.getsockname()[1]
    extender = HTTPExtender(ExtenderConfig(url_prefix=f"http://127.0.0.1:{port}",
                                           filter_verb="filter"))
    with pytest.raises(ExtenderError, match=r'^Post "http://127\.0\.0\.1:\d+/filter": '):
        extender.filter(POD, _nodes("a"))
    listener.close()


def test_insecure_with_a_ca_is_refused() -> None:
    from kaudit.config.extenders import TLSConfig
    with pytest.raises(ExtenderError, match="insecure flag is not allowed"):
        HTTPExtender(ExtenderConfig(url_prefix="https://x", tls_config=TLSConfig(
            insecure=True, ca_data=b"-----BEGIN CERTIFICATE-----")))


@pytest.mark.parametrize(("body", "read"), [
    (b'[{"Host": "n1", "Score": 3}, {"host": "n2", "SCORE": 4}, null, {"Score": 5}] trailing',
     [("n1", 3), ("n2", 4), ("", 0), ("", 5)]),
    (b'[{"Host": "n1", "Score": 3, "Host": "n9"}, {"Score": 2, "Host": "n2"}]',
     [("n9", 3), ("n2", 2)]),
    (b'[{"Host": "n1", "Score": 1e2}]',
     "json: cannot unmarshal number 1e2 into Go struct field HostPriority.Score of type "
     "int64"),
    (b'[{"Host": "n1", "Score": 99999999999999999999}]',
     "json: cannot unmarshal number 99999999999999999999 into Go struct field "
     "HostPriority.Score of type int64"),
])
def test_host_priorities_read_as_go_reads_them(body: bytes, read: Any) -> None:
    """The usual entry is taken at once, any other field by field: the same reading."""
    try:
        got: Any = wire.host_priorities(wire.parse(body))
    except wire.AnswerError as exc:
        got = str(exc)
    assert got == read


def test_a_non_cache_extender_answering_a_node_it_was_not_sent_fails_the_call() -> None:
    body = json.dumps({"Nodes": {"items": [{"metadata": {"name": "elsewhere"}}]}}).encode()
    extender = HTTPExtender(ExtenderConfig(url_prefix="http://x", filter_verb="filter"),
                            transport=lambda url, data, timeout: Reply(200, body))
    with pytest.raises(ExtenderError, match='answered a node "elsewhere" which was not in'):
        extender.filter(POD, _nodes("a"))
    assert extender.calls[0].error is not None


ODD_ANSWERS = [
    b'{"NodeNames": ["a"], "NodeNames": null}',  # null leaves the field as it was
    b'{"Error": 5, "Error": "", "NodeNames": ["a"]}',  # the first value already fails
    b'{"FailedNodes": {"b": 1, "b": "x"}, "NodeNames": ["a"]}',
    b'{"NodeNames": ["a"], "x": 1E400}',
    b'{"NodeNames": ["a"], "x": 99999999999999999999}',
    b'\xff\xfe not utf-8',
    b'',
    b'{"NodeNames": ["a", "b"]} {"NodeNames": []}',
]


@pytest.mark.parametrize("body", ODD_ANSWERS)
def test_recorded_answers_replay_exactly_what_the_live_call_read(body: bytes) -> None:
    """The recorded body is replayed byte for byte: the same reading, the same error, the
    same record, whatever the answer holds."""
    config = ExtenderConfig(url_prefix="http://x", filter_verb="filter",
                            node_cache_capable=True)

    def outcome(extender: HTTPExtender) -> Any:
        try:
            return extender.filter(POD, _nodes("a", "b"))
        except ExtenderError as exc:
            return str(exc)

    live = HTTPExtender(config, transport=lambda url, data, timeout: Reply(200, body))
    live_outcome = outcome(live)
    recorded = [json.loads(json.dumps(call.as_json())) for call in live.calls]
    answers = RecordedAnswers(recorded, "run 'live'")
    replay = HTTPExtender(config, transport=answers.transport(config))
    assert outcome(replay) == live_outcome
    assert [c.as_json() for c in replay.calls] == [c.as_json() for c in live.calls]
    assert answers.missing == []


def test_a_question_without_a_recorded_answer_fails_and_is_counted() -> None:
    config = ExtenderConfig(url_prefix="http://x/", filter_verb="filter")
    answers = RecordedAnswers([], "run 'live'")
    extender = HTTPExtender(config, transport=answers.transport(config))
    with pytest.raises(ExtenderError, match=r"^no recorded answer in run 'live' for filter "
                                            r"with extender at URL http://x/filter"):
        extender.filter(POD, _nodes("a"))
    assert answers.missing == [("http://x/", "filter", 1)]


@pytest.mark.parametrize(("body", "expected"), [
    # null makes a pointer, map or slice nil, and leaves a string as it was
    (b'{"NodeNames": ["a"], "nodenames": null}', (None, {}, {})),
    (b'{"Error": "", "error": null, "NodeNames": ["a"]}', (["a"], {}, {})),
    # a second object for a map adds to it
    (b'{"FailedNodes": {"a": "x"}, "failedNodes": {"b": "y"}, "NodeNames": []}',
     ([], {"a": "x", "b": "y"}, {})),
    # an unknown field may hold any number, however long
    (b'{"NodeNames": ["a"], "x": 1' + b"0" * 5000 + b"}", (["a"], {}, {})),
    # bytes that are not UTF-8 and lone surrogates in strings read as U+FFFD
    (b'{"NodeNames": ["a"], "FailedNodes": {"b": "caf\xe9 \\ud800"}}',
     (["a"], {"b": "caf\ufffd \ufffd"}, {})),
])
def test_answers_decode_as_go_decodes_them(body: bytes, expected: Any) -> None:
    extender = HTTPExtender(ExtenderConfig(url_prefix="http://x", filter_verb="filter",
                                           node_cache_capable=True),
                            transport=lambda url, data, timeout: Reply(200, body))
    answer = extender.filter(POD, _nodes("a", "b"))
    assert (answer.passing, answer.failed, answer.failed_unresolvable) == expected
    orjson.dumps(extender.calls[0].as_json())  # the event log can store it


def test_a_score_too_long_for_int64_fails_the_call() -> None:
    body = b'[{"Host": "a", "Score": ' + b"9" * 5000 + b"}]"
    extender = HTTPExtender(ExtenderConfig(url_prefix="http://x", prioritize_verb="p",
                                           weight=1),
                            transport=lambda url, data, timeout: Reply(200, body))
    with pytest.raises(ExtenderError, match=r"^json: cannot unmarshal number 9{5000} into Go "
                                            r"struct field HostPriority\.Score of type int64$"):
        extender.prioritize(POD, _nodes("a"))
