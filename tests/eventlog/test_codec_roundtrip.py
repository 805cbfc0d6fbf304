"""Every kind of event-log record, written as a replay writes it and read back as the query
layer reads it: nothing lost, nothing changed.

A replay hands each record to :class:`~kaudit.eventlog.sink.SqlSink` (an attempt first goes
through :func:`~kaudit.eventlog.codec.pack_attempt`); the queries read ``run_events`` back
with :func:`~kaudit.queries.runs.iter_run_events`,
:func:`~kaudit.queries.verdict.load_pod_records`, :func:`~kaudit.queries.runs.node_names`
and :func:`~kaudit.queries.eventlog.events_page`, and unpack an attempt with
:func:`~kaudit.queries.verdict.unpack` (:func:`~kaudit.eventlog.codec.unpack_attempt`). Each
record kind has a representative case below (a kind without one fails
``test_every_record_kind_has_a_case``); attempts come from real scheduling cycles (filter
verdicts, scores, extender calls, preemption, DRA claims, errors) and what comes back is
compared with the :class:`~kaudit.scheduler.schedule.Attempt` itself, field by field. A
Hypothesis property does the same for attempts of random verdicts and scores.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, insert

from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.cluster.state import ClusterState
from kaudit.config.extenders import ExtenderConfig
from kaudit.eventlog.codec import pack_attempt, unpack_arrays, unpack_attempt
from kaudit.eventlog.records import Record, RecordKind
from kaudit.eventlog.runs import this_owner
from kaudit.eventlog.sink import MemorySink, SqlSink, digest
from kaudit.framework.plugin import Plugin
from kaudit.framework.runtime import NOT_RUN
from kaudit.framework.status import Code, Status
from kaudit.model.timestamps import format_timestamp
from kaudit.queries.eventlog import EventFilter, events_page
from kaudit.queries.runs import iter_run_events, node_names, run_digest
from kaudit.queries.timeline import run_span
from kaudit.queries.verdict import load_pod_records, unpack
from kaudit.scheduler.build import build_scheduler, load
from kaudit.scheduler.extender.http import HTTPExtender, Reply
from kaudit.scheduler.schedule import Attempt, Scheduler
from kaudit.store.models import Run, Trace
from kaudit.tracegen.builders import make_node, make_pod
from kaudit.tracegen.dra import (
    claim,
    claim_spec,
    device_class,
    exact_request,
    gpu,
    resource_slice,
    with_claims,
)
from tests.framework.fakes import (
    cluster_of,
    daemonset_pod,
    node_score,
    scheduler_of,
    verdict_filter,
)

NOW = datetime(2026, 11, 27, tzinfo=UTC)
T0 = 1_764_201_600_000_000  # 2025-11-27T00:00:00Z in microseconds
DRIVER = "gpu.example.com"
#: Keys ``iter_run_events`` puts beside a record's data: a data key of that name would hide.
ENVELOPE = ("seq", "time", "kind", "pod", "node")


@dataclass
class Written:
    """One record as a replay hands it to the sink, with the attempt it packs (if any)."""

    kind: RecordKind
    pod: str | None
    node: str | None
    data: dict[str, Any] | None
    blob: bytes | None = None
    attempt: Attempt | None = None


@dataclass
class Case:
    """Records of one run: its node slots first (as a replay names them), then the records."""

    records: list[Written]
    slots: dict[int, str] = field(default_factory=dict)
    cluster: ClusterState | None = None
    #: What each attempt's unpacked record must hold, by the record's index.
    expected: dict[int, dict[str, Any]] = field(default_factory=dict)


# --------------------------------------------------------------------------- attempts


def _label(code: int) -> str:
    return Code(code).label


def expected_attempt(attempt: Attempt, cluster: ClusterState, *,
                     extender_verdicts: dict[str, dict[str, Any]] | None = None,
                     extender_answers: dict[str, tuple[int, int]] | None = None
                     ) -> dict[str, Any]:
    """What the unpacked record of ``attempt`` must say, told from the attempt alone (not
    from the codec): every node's verdict per plugin that ran, every score, the choice.
    ``extender_verdicts`` are the extender's verdicts per node (as its answer gives them),
    ``extender_answers`` its (answered score, weight) per node."""
    nodes: dict[str, Any] = {}
    run = attempt.filters
    if run is not None:
        for position, slot in enumerate(run.slots.tolist()):
            filters = {}
            for p, plugin in enumerate(run.plugins):
                code = int(run.codes[p, position])
                if code != NOT_RUN:
                    filters[plugin] = {"code": _label(code),
                                       "reasons": list(run.plugin_status(p, position).reasons)}
            nodes[cluster.node(slot).name] = {
                "filter": filters, "feasible": all(v["code"] == "Success"
                                                   for v in filters.values())}
    for name, verdict in (extender_verdicts or {}).items():
        entry = nodes.setdefault(name, {"filter": {}, "feasible": True})
        entry["filter"].update(verdict)
        entry["feasible"] = entry["feasible"] and all(
            v["code"] == "Success" for v in verdict.values())
    scores = attempt.scores
    if scores is not None:
        for i, slot in enumerate(scores.slots.tolist()):
            name = cluster.node(slot).name
            entry = nodes.setdefault(name, {"filter": {}, "feasible": True})
            score = {plugin: {"raw": int(scores.raw[plugin][i]),
                              "normalized": int(scores.normalized[plugin][i]),
                              "weight": scores.weights[plugin],
                              "weighted": int(scores.normalized[plugin][i])
                              * scores.weights[plugin]}
                     for plugin in scores.normalized}
            total = int(scores.total[i])
            for extender in attempt.extender_scores:
                answered, weight = (extender_answers or {}).get(name, (0, 0))
                score[extender] = {"raw": answered, "normalized": answered * 10,
                                   "weight": weight, "weighted": answered * weight * 10,
                                   "extender": True}
                total += answered * weight * 10
            entry["score"] = score
            entry["total"] = total
    pre_filter = {}
    for plugin, status in attempt.pre_filter.statuses.items():
        pre_filter[plugin] = {"code": status.code.label, "reasons": list(status.reasons)}
        if plugin in attempt.pre_filter.node_names:
            pre_filter[plugin]["nodeNames"] = sorted(attempt.pre_filter.node_names[plugin])
    expected: dict[str, Any] = {
        "profile": attempt.profile,
        "preFilter": pre_filter,
        "preScore": ({plugin: {"code": s.code.label, "reasons": list(s.reasons)}
                      for plugin, s in scores.pre_score.items()} if scores else {}),
        "nodes": nodes,
        "selectedNode": attempt.selected,
        "tiedNodes": [cluster.node(s).name for s in attempt.tied_slots.tolist()],
        "tieBreak": attempt.tie_break if scores is not None else "random",
        "message": None if attempt.selected else attempt.message,
        "evaluatedNodes": attempt.evaluated,
        "feasibleNodes": attempt.feasible,
        "allNodes": attempt.num_all_nodes,
        "nominatedNodeUsed": attempt.nominated_node_used,
    }
    allowed = attempt.pre_filter.allowed
    if allowed is not None and attempt.pre_filter.node_names:
        absent = sorted(n for n in allowed if n not in cluster.slot_of)
        if attempt.num_all_nodes > len(allowed) - len(absent):
            expected["leftOutByPreFilter"] = {
                "nodes": attempt.num_all_nodes - (len(allowed) - len(absent)),
                "plugins": sorted(attempt.pre_filter.node_names), "absent": absent}
    if attempt.post_filter is not None:
        expected["postFilter"] = {"code": attempt.post_filter.code.label,
                                  "reasons": list(attempt.post_filter.reasons)}
    details = attempt.post_filter_result.details if attempt.post_filter_result else None
    if details is not None:
        expected["preemption"] = details.as_json()
    return expected


def _attempt_record(scheduler: Scheduler, cluster: ClusterState, pod: dict[str, Any],
                    cycle: int = 3, number: int = 2, **expectations: Any
                    ) -> tuple[Written, dict[str, Any]]:
    info = pod_info(cluster, pod)
    framework = scheduler.framework_for(info)
    assert framework is not None
    attempt = scheduler.schedule(cluster, info)
    document, blob = pack_attempt(attempt, framework, cluster, cycle, number)
    expected = expected_attempt(attempt, cluster, **expectations)
    expected["cycle"] = cycle
    notes = {name: note for name, plugin in framework.instances.items()
             if attempt.state is not None
             and (note := plugin.attempt_notes(attempt.state, attempt.selected))}
    if notes:
        expected["pluginNotes"] = notes
    return Written(RecordKind.ATTEMPT, info.key, attempt.selected, document, blob or None,
                   attempt), expected


def _default_scheduler(**kwargs: Any) -> Scheduler:
    config, registry = load()
    return build_scheduler(config, registry, seed=1, **kwargs)


def _slots(cluster: ClusterState) -> dict[int, str]:
    return {slot: cluster.node(slot).name for slot in cluster.order_array.tolist()}


def _attempt_case(scheduler: Scheduler, cluster: ClusterState, pod: dict[str, Any],
                  **expectations: Any) -> Case:
    written, expected = _attempt_record(scheduler, cluster, pod, **expectations)
    return Case([written], _slots(cluster), cluster, {0: expected})


def filter_verdicts_case() -> Case:
    """Filters of fakes: per-node codes and reasons, a node stopped at its first failure,
    reasons shared by several nodes, and scores with weights and a normalization."""
    cluster = cluster_of(*(f"n{i}" for i in range(1, 7)))
    first = verdict_filter("First", {"n1": Status.of(Code.UNSCHEDULABLE, "one", "two"),
                                     "n2": Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                     "gone")})
    second = verdict_filter("Second", {"n1": Status.of(Code.UNSCHEDULABLE, "never seen"),
                                       "n3": Status.of(Code.UNSCHEDULABLE, "one", "two"),
                                       "n4": Status.of(Code.UNSCHEDULABLE, "one", "two")})
    a = node_score("A", {"n5": 4000, "n6": 1000},
                   normalize=lambda raw: raw * 100 // max(int(raw.max()), 1))
    b = node_score("B", {"n5": 10, "n6": 90})
    scheduler = scheduler_of({"Filter": [first, second], "PreScore": [a, b],
                              "Score": [a, b]}, {"A": 2, "B": 3}, tie_break="name")
    return _attempt_case(scheduler, cluster, make_pod("web-1").req(cpu="1").obj())


def unschedulable_case() -> Case:
    """The default profile on nodes too small: every node's NodeResourcesFit verdict, the
    FitError message and the rejecting plugins."""
    cluster = cluster_of("n1", "n2", "n3")
    return _attempt_case(_default_scheduler(), cluster,
                         make_pod("big").req(cpu="64").obj())


def pre_filter_case() -> Case:
    """A PreFilterResult (a DaemonSet pod's node affinity) restricting the nodes."""
    cluster = cluster_of("n1", "n2", "n3")
    return _attempt_case(_default_scheduler(), cluster, daemonset_pod("n2", "ghost"))


def error_case() -> Case:
    """A filter's Error ends the cycle: the record keeps the error and the message."""
    cluster = cluster_of("n1", "n2")
    failing = verdict_filter("Broken", {"n2": Status.of(Code.ERROR, "broken")})
    scheduler = scheduler_of({"Filter": [failing]})
    written, expected = _attempt_record(scheduler, cluster, make_pod("p").obj())
    assert written.attempt is not None and written.attempt.error
    return Case([written], _slots(cluster), cluster, {0: expected})


def _extender_transport(url: str, body: bytes, timeout: float | None) -> Reply:
    """An extender that turns n3 down and prefers n2 (scores 3 and 7)."""
    sent = orjson.loads(body)["NodeNames"]
    if url.endswith("/filter"):
        answer: Any = {"NodeNames": [n for n in sent if n != "n3"],
                       "FailedNodes": {"n3": "ext says no"} if "n3" in sent else {},
                       "Error": ""}
    else:
        answer = [{"Host": n, "Score": {"n1": 3, "n2": 7}.get(n, 0)} for n in sent]
    return Reply(200, orjson.dumps(answer), 1234)


EXTENDER = "http://ext"


def extender_case() -> Case:
    """A filtering and prioritizing extender: its calls (nodes, answers), its verdicts beside
    the plugins' and its weighted scores in the totals."""
    config = ExtenderConfig(url_prefix=EXTENDER, filter_verb="filter",
                            prioritize_verb="prioritize", weight=2, node_cache_capable=True)
    cluster = cluster_of("n1", "n2", "n3")
    base = _default_scheduler()
    calls: list[Any] = []
    extender = HTTPExtender(config, _extender_transport, calls)
    scheduler = Scheduler(base.frameworks, seed=1, extenders=[extender], extender_calls=calls)
    verdicts = {"n1": {EXTENDER: {"code": "Success", "reasons": [], "extender": True}},
                "n2": {EXTENDER: {"code": "Success", "reasons": [], "extender": True}},
                "n3": {EXTENDER: {"code": "Unschedulable", "reasons": ["ext says no"],
                                  "extender": True}}}
    written, expected = _attempt_record(
        scheduler, cluster, make_pod("p").req(cpu="1").obj(), extender_verdicts=verdicts,
        extender_answers={"n1": (3, 2), "n2": (7, 2)})
    assert written.attempt is not None and written.attempt.selected == "n2"
    recorded = [call.as_json() for call in written.attempt.extender_calls]
    assert [call["step"] for call in recorded] == ["filter", "prioritize"]
    expected["extenderCalls"] = [
        {**{k: v for k, v in call.items() if k != "body"}, "answer": orjson.loads(call["body"])}
        for call in recorded]
    return Case([written], _slots(cluster), cluster, {0: expected})


def preemption_case() -> Case:
    """DefaultPreemption nominates n1 and names its victim: PostFilter and ``preemption``."""
    low = make_pod("low").uid("uid-low").req(cpu="4").priority(1).node("n1").obj()
    cluster = cluster_of("n1", pods=[low])
    high = make_pod("high").uid("uid-high").req(cpu="2").priority(100).obj()
    written, expected = _attempt_record(_default_scheduler(), cluster, high)
    details = written.data and written.data.get("preemption")
    assert details and details["nominatedNode"] == "n1" and details["victims"] == ["default/low"]
    return Case([written], _slots(cluster), cluster, {0: expected})


def _dra_cluster() -> ClusterState:
    objects = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="110").obj()
               for i in (1, 2, 3)]
    objects += [device_class("gpu", f'device.driver == "{DRIVER}"'),
                resource_slice("s1", DRIVER, "n1", [gpu(0, "a", "40Gi", "r0")], node="n1"),
                resource_slice("s2", DRIVER, "n2", [gpu(0, "a", "40Gi", "r0")], node="n2"),
                claim("c", claim_spec(exact_request("g", "gpu")))]
    cluster, _ = cluster_from_objects(objects)
    return cluster


def dra_case() -> Case:
    """A pod with a ResourceClaim: DynamicResources' verdicts and its notes (claims, devices
    allocated, supply)."""
    cluster = _dra_cluster()
    pod = with_claims(make_pod("p").req(cpu="1").obj(), gpu=("claim", "c"))
    written, expected = _attempt_record(_default_scheduler(), cluster, pod)
    assert written.data and "DynamicResources" in written.data["pluginNotes"]
    return Case([written], _slots(cluster), cluster, {0: expected})


ATTEMPT_CASES: dict[str, Callable[[], Case]] = {
    "filter-verdicts": filter_verdicts_case, "unschedulable": unschedulable_case,
    "pre-filter-result": pre_filter_case, "error": error_case, "extender": extender_case,
    "preemption": preemption_case, "dra": dra_case,
}


# --------------------------------------------------------------------------- other kinds


def _simple(*records: Written) -> Callable[[], Case]:
    return lambda: Case(list(records))


_CLAIM = claim("c", claim_spec(exact_request("g", "gpu")))
_ALLOCATED = {**_CLAIM, "status": {
    "allocation": {"devices": {"results": [{"request": "g", "driver": DRIVER, "pool": "n1",
                                            "device": "gpu-0"}]},
                   "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                       {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
    "reservedFor": [{"resource": "pods", "name": "p", "uid": "uid-p"}]}}
_BIND_CALL = {"extender": EXTENDER, "step": "bind", "verb": "bind", "nodes": ["n1"],
              "body": '{"Error":""}', "error": None, "latencyUs": 17, "ignorable": False,
              "request": "0" * 32}

OTHER_CASES: dict[RecordKind, Callable[[], Case]] = {
    RecordKind.NODE: lambda: Case([Written(RecordKind.NODE, None, "n1", {"slot": 0}),
                                   Written(RecordKind.NODE, None, "n2", {"slot": 1})],
                                  {0: "n1", 1: "n2"}),
    RecordKind.WATCH: _simple(
        Written(RecordKind.WATCH, "default/p", None,
                {"traceSeq": 12, "type": "ADDED", "resource": "Pod"}),
        Written(RecordKind.WATCH, None, "n1",
                {"traceSeq": 13, "type": "MODIFIED", "resource": "Node"})),
    RecordKind.QUEUE: _simple(
        Written(RecordKind.QUEUE, "default/p", None,
                {"from": "active", "to": "unschedulable", "event": "ScheduleAttemptFailure"}),
        Written(RecordKind.QUEUE, "default/p", None,
                {"from": "unschedulable", "to": "gated", "event": "PodUpdate",
                 "gate": "DefaultPreemption", "reason": "preemption in progress"})),
    RecordKind.BIND: _simple(
        Written(RecordKind.BIND, "default/p", "n1",
                {"by": "kaudit", "claims": [{"claim": "default/c", "request": "g",
                                             "driver": DRIVER, "pool": "n1",
                                             "device": "gpu-0"}],
                 "extenders": [_BIND_CALL], "binder": EXTENDER}),
        Written(RecordKind.BIND, "default/q", "n2", {"by": "trace"})),
    RecordKind.BIND_FAIL: _simple(
        Written(RecordKind.BIND_FAIL, "default/p", "n1",
                {**Status.of(Code.ERROR, 'running PreBind plugin "X": boom').as_json(),
                 "extenders": [{**_BIND_CALL, "body": None, "error": "timeout"}],
                 "binder": EXTENDER})),
    RecordKind.RECORDED: _simple(Written(RecordKind.RECORDED, "default/p", "n2", None)),
    RecordKind.NOMINATE: _simple(
        Written(RecordKind.NOMINATE, "default/high", "n1",
                {"tiedNodes": ["n1", "n2"], "partialDryRun": True,
                 "tiedVictims": ["default/low-1", "default/low-2"]}),
        Written(RecordKind.NOMINATE, "default/other", "n2", None)),
    RecordKind.PREEMPT: _simple(
        Written(RecordKind.PREEMPT, "default/low", "n1",
                {"preemptor": "default/high", "tie": True})),
    RecordKind.TERMINATE: _simple(
        Written(RecordKind.TERMINATE, "default/low", "n1", {"reason": "preempted"})),
    RecordKind.DELETE: _simple(*(
        Written(RecordKind.DELETE, f"default/p{i}", "n1", {"reason": reason})
        for i, reason in enumerate(("trace", "completed", "preempted", "lifetime")))),
    RecordKind.CREATE: _simple(
        Written(RecordKind.CREATE, "default/low-r1", None, {"replaces": "default/low"})),
    RecordKind.EXTENDER: _simple(
        Written(RecordKind.EXTENDER, "default/p", "n1",
                {"extenders": [_BIND_CALL], "binder": EXTENDER,
                 "reason": "deleted while binding"})),
    RecordKind.CLAIM: _simple(
        Written(RecordKind.CLAIM, None, None, {"type": "ADDED", "object": _CLAIM}),
        Written(RecordKind.CLAIM, "default/p", None, {"type": "MODIFIED", "object": _ALLOCATED}),
        Written(RecordKind.CLAIM, "default/p", None, {"type": "DELETED", "object": _ALLOCATED})),
    RecordKind.AUDIT: _simple(
        Written(RecordKind.AUDIT, "default/p", "n1",
                {"class": "infeasible", "cause": "NodeResourcesFit: Insufficient cpu",
                 "reason": "kaudit rejects n1: NodeResourcesFit: Insufficient cpu",
                 "recorded": {"kind": "bind", "node": "n1", "tUs": 1, "traceSeq": 3},
                 "rejectedBy": {"plugin": "NodeResourcesFit", "code": "UNSCHEDULABLE",
                                "reasons": ["Insufficient cpu"]},
                 "kaudit": {"node": "n2", "tied": ["n2"], "feasible": 1}, "momentSeq": 3}),
        Written(RecordKind.AUDIT, "default/q", None,
                {"class": "notJudged", "cause": "scheduler volcano",
                 "reason": "decided by another scheduler",
                 "recorded": {"kind": "bind", "node": None, "tUs": 2, "traceSeq": 4},
                 "momentSeq": 4})),
}

CASES: dict[str, tuple[RecordKind, Callable[[], Case]]] = {
    **{kind.value: (kind, make) for kind, make in OTHER_CASES.items()},
    **{f"attempt-{name}": (RecordKind.ATTEMPT, make) for name, make in ATTEMPT_CASES.items()},
}


def test_every_record_kind_has_a_case() -> None:
    """A new record kind needs its round-trip case here."""
    assert {kind for kind, _ in CASES.values()} == set(RecordKind)


# --------------------------------------------------------------------------- the round trip


def _new_run(engine: Engine) -> int:
    with engine.begin() as connection:
        trace_id = connection.execute(insert(Trace).values(
            name="t", content_hash="0" * 64, sources="[]", created_at=NOW,
            kaudit_version="test", event_count=0, kind_counts="{}").returning(Trace.id)
        ).scalar_one()
        host, pid = this_owner()
        run_id: int = connection.execute(insert(Run).values(
            name="r", trace_id=trace_id, status="running", seed=0, lifetime="recorded",
            config="{}", options="{}", created_at=NOW, kaudit_version="test",
            owner_host=host, owner_pid=pid, heartbeat_at=NOW).returning(Run.id)).scalar_one()
    return run_id


def _write(case: Case, *sinks: Any) -> list[tuple[int, Written]]:
    """The case's records through each sink, as a replay writes them: the node slots first
    (the NODE case brings its own), then the records, 1 ms apart. Returns (ts_us, record)."""
    records = [Written(RecordKind.NODE, None, name, {"slot": slot})
               for slot, name in case.slots.items()
               if not any(r.kind == RecordKind.NODE for r in case.records)]
    timed = [(T0 + 1000 * i, record) for i, record in enumerate([*records, *case.records])]
    for sink in sinks:
        for ts_us, record in timed:
            sink.record(ts_us, record.kind, record.pod, record.node, record.data, record.blob)
        sink.flush()
    return timed


@pytest.mark.parametrize("name", list(CASES))
def test_a_record_reads_back_as_written(engine: Engine, name: str) -> None:
    kind, make = CASES[name]
    case = make()
    run_id = _new_run(engine)
    memory = MemorySink()
    timed = _write(case, SqlSink(engine, run_id, batch_size=2), memory)
    emitted: list[Record] = memory.records
    # Byte for byte: the stored log digests as the records the sink emitted.
    assert run_digest(engine, run_id) == digest(iter(emitted))
    # The log as the queries stream it: every field of every record.
    read = list(iter_run_events(engine, run_id))
    assert len(read) == len(timed)
    for seq, (event, (ts_us, record)) in enumerate(zip(read, timed, strict=True)):
        assert not set(record.data or {}) & set(ENVELOPE), "a data key hides a column"
        assert {k: event[k] for k in ENVELOPE} == {
            "seq": seq, "time": format_timestamp(ts_us), "kind": record.kind.value,
            "pod": record.pod, "node": record.node}
        assert {k: v for k, v in event.items() if k not in ENVELOPE} == (record.data or {})
    # A pod's records as explanations read them: times, nodes, documents and blobs.
    for pod in {record.pod for _, record in timed if record.pod is not None}:
        mine = [(seq, ts, r) for seq, (ts, r) in enumerate(timed) if r.pod == pod]
        got = load_pod_records(engine, run_id, pod)
        assert [(r.seq, r.ts_us, r.kind, r.node, r.document, r.blob) for r in got] == [
            (seq, ts, r.kind.value, r.node, r.data or {}, r.blob) for seq, ts, r in mine]
    # The slots attempts refer to nodes by.
    assert node_names(engine, run_id) == case.slots
    # The dashboard's page of the log, filtered by kind.
    page = events_page(engine, run_id, run_span(engine, run_id), EventFilter(kind=kind.value),
                       limit=500)
    assert page["total"] == sum(1 for _, r in timed if r.kind == kind)
    assert all(isinstance(item["text"], str) for item in page["items"])
    # Attempts, unpacked as explanations unpack them, against the attempt itself.
    offset = len(timed) - len(case.records)
    names = node_names(engine, run_id)
    for index, expected in case.expected.items():
        record = case.records[index]
        assert record.pod is not None
        stored = [r for r in load_pod_records(engine, run_id, record.pod, "attempt")
                  if r.seq == offset + index]
        assert len(stored) == 1
        assert unpack(stored[0].document, stored[0].blob, names) == expected
        rejected = (record.data or {}).get("rejectedBy") or {}
        for plugin, count in rejected.items():
            found = events_page(engine, run_id, run_span(engine, run_id),
                                EventFilter(plugin=plugin))
            assert [item["seq"] for item in found["items"]] == [offset + index], plugin
            assert found["items"][0]["data"]["rejectedBy"][plugin] == count


@pytest.mark.parametrize("name", list(ATTEMPT_CASES))
def test_an_attempt_s_arrays_read_back_exactly(name: str) -> None:
    """Below the unpacked shape: the blob's arrays are the attempt's, value for value."""
    case = ATTEMPT_CASES[name]()
    record = case.records[0]
    attempt = record.attempt
    assert attempt is not None
    arrays = unpack_arrays(record.blob) if record.blob else {}
    run = attempt.filters
    if run is not None and len(run.plugins):
        assert arrays["evaluated"].tolist() == run.slots.tolist()
        assert arrays["filterCodes"].tolist() == run.codes.tolist()
    if attempt.scores is not None:
        assert arrays["scored"].tolist() == attempt.scores.slots.tolist()
        for plugin, normalized in attempt.scores.normalized.items():
            assert arrays[f"norm:{plugin}"].tolist() == normalized.tolist()
            raw = arrays.get(f"raw:{plugin}", arrays[f"norm:{plugin}"])
            assert raw.tolist() == attempt.scores.raw[plugin].tolist()
        for extender, final in attempt.extender_scores.items():
            assert arrays[f"ext:{extender}"].tolist() == final.tolist()
    assert arrays.get("tied", attempt.tied_slots[:0]).tolist() == attempt.tied_slots.tolist()


# --------------------------------------------------------------------------- property

_STATUS = st.one_of(
    st.just(Status.success()),
    st.builds(lambda code, reasons: Status.of(code, *reasons),
              st.sampled_from([Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]),
              st.lists(st.sampled_from(["r1", "r2", "r3", "ünï"]), min_size=1, max_size=2)))


@st.composite
def _attempt_inputs(draw: st.DrawFn) -> tuple[int, list[dict[str, Status]],
                                              list[tuple[dict[str, int], bool, int]], bool]:
    count = draw(st.integers(1, 7))
    names = [f"n{i}" for i in range(count)]
    filters = draw(st.lists(st.fixed_dictionaries({}, optional={n: _STATUS for n in names}),
                            max_size=3))
    scores = draw(st.lists(st.tuples(
        st.fixed_dictionaries({n: st.integers(0, 10**12) for n in names}), st.booleans(),
        st.integers(1, 100)), max_size=3))
    return count, filters, scores, draw(st.booleans())


def _to_max(raw: Any) -> Any:
    return raw * 100 // max(int(raw.max()), 1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_attempt_inputs())
def test_any_attempt_round_trips(inputs: tuple[int, list[dict[str, Status]],
                                               list[tuple[dict[str, int], bool, int]],
                                               bool]) -> None:
    """Random filter verdicts and scores (raw scores beyond 100 normalized, others as is),
    searched or exhaustive: the record, through JSON as the sink stores it, unpacks to
    what the attempt holds."""
    count, filters, scores, exhaustive = inputs
    cluster = cluster_of(*(f"n{i}" for i in range(count)))
    plugins: list[type[Plugin]] = [verdict_filter(f"F{i}", verdicts)
                                   for i, verdicts in enumerate(filters)]
    scorers: list[type[Plugin]] = []
    for i, (raw, normalizes, _) in enumerate(scores):
        clipped = raw if normalizes else {n: v % 101 for n, v in raw.items()}
        scorers.append(node_score(f"S{i}", clipped, normalize=_to_max if normalizes else None))
    weights = {f"S{i}": weight for i, (_, _, weight) in enumerate(scores)}
    scheduler = scheduler_of({"Filter": plugins, "PreScore": scorers, "Score": scorers},
                             weights, tie_break="name")
    info = pod_info(cluster, make_pod("p").obj())
    framework = scheduler.framework_for(info)
    assert framework is not None
    attempt = scheduler.schedule(cluster, info, exhaustive=exhaustive)
    document, blob = pack_attempt(attempt, framework, cluster, 1, 1)
    stored = orjson.loads(orjson.dumps(document, option=orjson.OPT_SORT_KEYS))
    expected = expected_attempt(attempt, cluster)
    expected["cycle"] = 1
    assert unpack(stored, blob or None, _slots(cluster)) == expected
    # Only the slots asked for, the rest whole.
    for slot in itertools.islice(_slots(cluster), 2):
        name = cluster.node(slot).name
        part = unpack_attempt(stored, blob or None, _slots(cluster), {slot})
        assert part["nodes"] == ({name: expected["nodes"][name]}
                                 if name in expected["nodes"] else {})


def test_the_total_of_a_cycle_without_scoring_reads_back() -> None:
    """With neither score plugins nor extenders upstream's prioritizeNodes scores every node
    1; derived from the (absent) plugins' scores, the record said 0."""
    cluster = cluster_of("n1", "n2", "n3")
    scheduler = scheduler_of({})
    info = pod_info(cluster, make_pod("p").obj())
    framework = scheduler.framework_for(info)
    assert framework is not None
    attempt = scheduler.schedule(cluster, info, exhaustive=True)
    assert attempt.scores is not None and attempt.scores.total.tolist() == [1, 1, 1]
    document, blob = pack_attempt(attempt, framework, cluster, 1, 1)
    nodes = unpack_attempt(document, blob, _slots(cluster))["nodes"]
    assert {name: (node["score"], node["total"]) for name, node in nodes.items()} == {
        "n1": ({}, 1), "n2": ({}, 1), "n3": ({}, 1)}
