"""Compact storage of one scheduling attempt: a small JSON document plus a packed array blob.

At 5,000 nodes upstream evaluates about 500 nodes with a dozen filters and seven scores per
attempt; one row per (node, plugin) would be millions of rows per replay second. Instead each
attempt keeps its scalar facts (result, node, message, PreFilter and PreScore statuses, reason
tables, and ``rejectedBy``: how many nodes each plugin rejected, a PreFilterResult's plugin
counting the nodes it left out, ``Extender`` for the nodes extenders turned down, for
filtering the log by plugin; ``leftOutByPreFilter``: how many of the cluster's nodes the
PreFilterResults left out and which plugins' results, absent from older records) as JSON,
readable from SQL, and its per-node arrays as one zlib-compressed blob:

* ``evaluated``: the slots (node ids of the run) examined, in order;
* ``filterCodes`` / ``filterReasons``: per filter plugin and node, the status code (-1 where
  the plugin did not run because the node had already failed) and the index of its reasons in
  the plugin's reason table;
* ``scored``, ``tied``: the feasible slots that were scored, and the top-scoring ones;
* ``norm:<plugin>`` (0..100, uint8) and ``raw:<plugin>`` (only where it differs) per score
  plugin. Weighted scores and totals are derived (normalized × weight), except where the
  total is not that sum: with neither score plugins nor extenders every node scores 1
  (upstream's ``prioritizeNodes``), kept as ``total``;
* ``ext:<extender>``: a prioritizing extender's final scores (answered score × weight × 10),
  with its weight in the JSON's ``extenderWeights``; its calls (filter, prioritize, preempt:
  nodes sent, the answer's body or the error, latency) are the JSON's ``extenders``.

Blob layout: zlib( uint32 header length | header JSON [[name, dtype, shape], ...] | data ).
"""

from __future__ import annotations

import itertools
import json
import struct
import zlib
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState
from kaudit.framework.extender import EXTENDER_NAME, recorded_body
from kaudit.framework.runtime import NOT_RUN, FilterRun, Framework
from kaudit.framework.status import Code
from kaudit.scheduler.extender import wire
from kaudit.scheduler.schedule import Attempt

# Plain ints: comparing an array with an IntEnum member goes through the enum's slow paths.
_ERROR, _UNRESOLVABLE = int(Code.ERROR), int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def pack_arrays(arrays: dict[str, np.ndarray]) -> bytes:
    header = json.dumps([[name, array.dtype.str, list(array.shape)]
                         for name, array in arrays.items()], separators=(",", ":")).encode()
    body = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    return zlib.compress(struct.pack("<I", len(header)) + header + body, 1)


def unpack_arrays(blob: bytes) -> dict[str, np.ndarray]:
    raw = zlib.decompress(blob)
    (length,) = struct.unpack_from("<I", raw)
    header = json.loads(raw[4:4 + length])
    offset = 4 + length
    arrays = {}
    for name, dtype, shape in header:
        dt = np.dtype(dtype)
        count = int(np.prod(shape)) if shape else 1
        arrays[name] = np.frombuffer(raw, dt, count, offset).reshape(shape)
        offset += count * dt.itemsize
    return arrays


def _smallest_int(values: np.ndarray) -> np.ndarray:
    """``values`` in the narrowest signed integer type that holds them (any shape; an array
    with no elements, such as the reasons of filters that ran on no node, is int8)."""
    if values.size == 0:
        return values.astype(np.int8)
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values.astype(np.int64)


def _canonical_reasons(run: FilterRun) -> tuple[list[list[list[str]]], np.ndarray]:
    """Each filter plugin's reasons table as stored: only the entries a node that ran uses,
    each once, sorted; so the record depends on the verdicts alone and not on how the run
    was assembled (in blocks, or with verdicts of the nominated-pods pass put in)."""
    tables: list[list[list[str]]] = []
    reason_ids = run.reason_ids
    remapped: np.ndarray | None = None
    for p, table in enumerate(run.reason_tables):
        ran = run.codes[p] != NOT_RUN
        if len(table) == 1:  # the common case: one entry, used by every node that ran
            tables.append([list(table[0])] if ran.any() else [])
            continue
        ids = reason_ids[p][ran]
        used = np.bincount(ids, minlength=len(table)) > 0 if len(ids) else np.zeros(0, bool)
        if used.all() and all(a < b for a, b in itertools.pairwise(table)):
            tables.append([list(r) for r in table] if len(ids) else [])
            continue
        kept = sorted({table[i] for i in np.flatnonzero(used).tolist()})
        index = {reasons: i for i, reasons in enumerate(kept)}
        lookup = np.asarray([index.get(reasons, 0) for reasons in table] or [0], np.int32)
        if remapped is None:
            remapped = reason_ids.copy()
        remapped[p] = np.where(ran, lookup[reason_ids[p]], 0)
        tables.append([list(r) for r in kept])
    return tables, reason_ids if remapped is None else remapped


def pack_attempt(attempt: Attempt, framework: Framework, cluster: ClusterState,
                 cycle: int, number: int) -> tuple[dict[str, Any], bytes]:
    """(JSON document, blob) for an attempt."""
    pre_filter: dict[str, Any] = {}
    for name, status in attempt.pre_filter.statuses.items():
        entry: dict[str, Any] = status.as_json()
        if name in attempt.pre_filter.node_names:
            entry["nodeNames"] = sorted(attempt.pre_filter.node_names[name])
        pre_filter[name] = entry
    result = ("error" if attempt.error else "scheduled" if attempt.selected is not None
              else "unschedulable")
    document: dict[str, Any] = {
        "cycle": cycle, "attempt": number, "profile": attempt.profile, "result": result,
        "selectedNode": attempt.selected, "message": attempt.message,
        "evaluatedNodes": attempt.evaluated, "feasibleNodes": attempt.feasible,
        "allNodes": attempt.num_all_nodes, "nominatedNodeUsed": attempt.nominated_node_used,
        "preFilter": pre_filter,
    }
    if attempt.node_hint:
        document["nodeHint"] = attempt.node_hint
        document["hintUsed"] = attempt.hint_used
    arrays: dict[str, np.ndarray] = {}
    run = attempt.filters
    rejected = {name: attempt.num_all_nodes for name, status in
                attempt.pre_filter.statuses.items() if status.rejected}
    rejected.update(_left_out_by_pre_filter_results(attempt, cluster))
    if run is not None:
        counts = ((run.codes >= _ERROR) & (run.codes <= _UNRESOLVABLE)).sum(axis=1)
        for name, count in zip(run.plugins, counts.tolist(), strict=True):
            if count:
                rejected[name] = rejected.get(name, 0) + count
        if attempt.passing is not None:
            dropped = int(run.feasible.sum()) - len(attempt.passing)
            if dropped:
                rejected[EXTENDER_NAME] = dropped  # nodes the extenders let not through
    if rejected:
        document["rejectedBy"] = rejected
    left_out = _left_out_by_pre_filter(attempt, cluster)
    if left_out is not None:
        document["leftOutByPreFilter"] = left_out
    if run is not None:
        arrays["evaluated"] = run.slots.astype(np.int32)
        document["filterPlugins"] = run.plugins
        tables, reason_ids = _canonical_reasons(run)
        document["reasonTables"] = tables
        arrays["filterCodes"] = run.codes.astype(np.int8)
        arrays["filterReasons"] = _smallest_int(reason_ids)
    if attempt.scores is not None:
        scores = attempt.scores
        document["preScore"] = {n: s.as_json() for n, s in scores.pre_score.items()}
        document["scorePlugins"] = list(scores.normalized)
        document["weights"] = {n: scores.weights[n] for n in scores.normalized}
        arrays["scored"] = scores.slots.astype(np.int32)
        for name, normalized in scores.normalized.items():
            arrays[f"norm:{name}"] = normalized.astype(np.uint8)
            raw = scores.raw[name]
            if not np.array_equal(raw, normalized):
                arrays[f"raw:{name}"] = _smallest_int(raw)
        derived = np.zeros(len(scores.slots), dtype=np.int64)
        for name, normalized in scores.normalized.items():
            derived += normalized * scores.weights[name]
        if not np.array_equal(derived, scores.total):
            arrays["total"] = _smallest_int(scores.total)
        if attempt.extender_scores:
            document["extenderWeights"] = attempt.extender_weights
            for name, final in attempt.extender_scores.items():
                arrays[f"ext:{name}"] = _smallest_int(final)
        arrays["tied"] = attempt.tied_slots.astype(np.int32)
        if attempt.tie_break != "random":
            document["tieBreak"] = attempt.tie_break
    elif len(attempt.tied_slots):
        arrays["tied"] = attempt.tied_slots.astype(np.int32)
    details = attempt.post_filter_result.details if attempt.post_filter_result else None
    if attempt.post_filter is not None:
        document["postFilter"] = attempt.post_filter.as_json()
    if details is not None and hasattr(details, "as_json"):
        document["preemption"] = details.as_json()
    if attempt.extender_calls:
        document["extenders"] = [call.as_json() for call in attempt.extender_calls]
    notes = _plugin_notes(attempt, framework)
    if notes:
        document["pluginNotes"] = notes
    if attempt.error:
        document["error"] = attempt.error
    return document, pack_arrays(arrays) if arrays else b""


def _left_out_by_pre_filter_results(attempt: Attempt, cluster: ClusterState) -> dict[str, int]:
    """How many of the cluster's nodes each plugin's PreFilterResult left out (they fail with
    the absent-nodes status ``node(s) didn't satisfy plugin(s) [...]``), for the plugins
    upstream counts among the attempt's rejecting plugins; names of nodes that do not exist
    leave out nothing more."""
    left_out = {}
    for name in attempt.pre_filter.unschedulable_plugins:
        kept = sum(1 for node in attempt.pre_filter.node_names.get(name, ())
                   if (slot := cluster.slot_of.get(node)) is not None and cluster.live[slot])
        if attempt.num_all_nodes > kept:
            left_out[name] = attempt.num_all_nodes - kept
    return left_out


def _left_out_by_pre_filter(attempt: Attempt, cluster: ClusterState) -> dict[str, Any] | None:
    """How many of the cluster's nodes the PreFilterResults left out (upstream gives them the
    absent-nodes status ``node(s) didn't satisfy plugin(s) [...]`` and never filters them), the
    plugins whose results narrowed the candidates, and the names the results kept that are
    no node of the cluster; None when no result narrowed the candidates."""
    allowed = attempt.pre_filter.allowed
    if allowed is None or not attempt.pre_filter.node_names:
        return None
    absent = sorted(node for node in allowed
                    if (slot := cluster.slot_of.get(node)) is None or not cluster.live[slot])
    kept = len(allowed) - len(absent)
    if attempt.num_all_nodes <= kept:
        return None
    return {"nodes": attempt.num_all_nodes - kept,
            "plugins": sorted(attempt.pre_filter.node_names), "absent": absent}


def _plugin_notes(attempt: Attempt, framework: Framework) -> dict[str, Any]:
    """Each plugin's ``attempt_notes`` (its own facts about the attempt), by plugin name."""
    if attempt.state is None:
        return {}
    notes = {}
    for name, plugin in framework.instances.items():
        note = plugin.attempt_notes(attempt.state, attempt.selected)
        if note:
            notes[name] = note
    return notes


def rejects(verdict: dict[str, Any]) -> bool:
    """Whether a node's filter verdict (a plugin's or an extender's, as unpacked) turned the
    node down: not a success, and not an ignorable extender's failure."""
    return verdict["code"] not in ("Success", "Skip") and not verdict.get("ignored")


def _positions(slots: np.ndarray, only: set[int] | None) -> list[tuple[int, int]]:
    """(position, slot) pairs of ``slots``, restricted to ``only`` when given."""
    if only is None:
        return list(enumerate(slots.tolist()))
    keep = np.nonzero(np.isin(slots, np.fromiter(only, np.int64, len(only))))[0]
    return [(int(p), int(slots[p])) for p in keep]


def unpack_attempt(document: dict[str, Any], blob: bytes | None,
                   node_names: dict[int, str], only: set[int] | None = None) -> dict[str, Any]:
    """The ``kaudit whatif --json`` shape of a stored attempt (plus replay fields).

    ``only`` limits the per-node tables to those slots (the rest of the answer is whole): a
    5,000-node attempt unpacked in full is a few thousand dictionaries.
    """
    arrays = unpack_arrays(blob) if blob else {}
    nodes: dict[str, Any] = {}
    plugins = document.get("filterPlugins") or []
    tables = document.get("reasonTables") or []
    codes = arrays.get("filterCodes")
    reasons = arrays.get("filterReasons")
    labels = ["Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait",
              "Skip", "Pending"]
    for position, slot in _positions(arrays.get("evaluated", np.zeros(0, np.int32)), only):
        filters: dict[str, Any] = {}
        feasible = True
        for p, plugin in enumerate(plugins):
            assert codes is not None and reasons is not None
            code = int(codes[p, position])
            if code < 0:
                continue
            filters[plugin] = {"code": labels[code],
                               "reasons": list(tables[p][int(reasons[p, position])])}
            feasible = feasible and code == 0
        nodes[node_names.get(slot, str(slot))] = {"filter": filters, "feasible": feasible}
    scored = arrays.get("scored")
    if scored is not None:
        weights = document.get("weights") or {}
        totals = arrays.get("total")
        for i, slot in _positions(scored, only):
            entry = nodes.setdefault(node_names.get(slot, str(slot)),
                                     {"filter": {}, "feasible": True})
            total = 0
            score: dict[str, Any] = {}
            for plugin in document.get("scorePlugins") or []:
                normalized = int(arrays[f"norm:{plugin}"][i])
                raw_array = arrays.get(f"raw:{plugin}")
                raw = int(raw_array[i]) if raw_array is not None else normalized
                weighted = normalized * int(weights[plugin])
                score[plugin] = {"raw": raw, "normalized": normalized,
                                 "weight": int(weights[plugin]), "weighted": weighted}
                total += weighted
            if totals is not None:  # a total that is not the plugins' sum
                total = int(totals[i])
            for extender, weight in (document.get("extenderWeights") or {}).items():
                # final = Σ answered score × weight × 10, so the answered scores sum back.
                weighted = int(arrays[f"ext:{extender}"][i])
                answered = weighted // (10 * int(weight)) if weight else 0
                score[extender] = {"raw": answered, "normalized": answered * 10,
                                   "weight": int(weight), "weighted": weighted,
                                   "extender": True}
                total += weighted
            entry["score"] = score
            entry["total"] = total
    calls = document.get("extenders") or []
    answers = [_answer(call) for call in calls]
    if calls:
        _extender_verdicts(calls, answers, nodes, node_names, only)
    tied = [node_names.get(s, str(s)) for s in arrays.get("tied", np.zeros(0, np.int32)).tolist()]
    shaped: dict[str, Any] = {
        "profile": document.get("profile"),
        "preFilter": document.get("preFilter") or {},
        "preScore": document.get("preScore") or {},
        "nodes": nodes,
        "selectedNode": document.get("selectedNode"),
        "tiedNodes": tied,
        "tieBreak": document.get("tieBreak", "random"),
        "message": None if document.get("selectedNode") else document.get("message"),
        "cycle": document.get("cycle"),
        "evaluatedNodes": document.get("evaluatedNodes"),
        "feasibleNodes": document.get("feasibleNodes"),
    }
    if calls:
        shaped["extenderCalls"] = extender_calls_json(calls, answers)
    if "postFilter" in document:
        shaped["postFilter"] = document["postFilter"]
    if "pluginNotes" in document:
        shaped["pluginNotes"] = document["pluginNotes"]
    preemption = preemption_json(document)
    if preemption is not None:
        shaped["preemption"] = preemption
    return shaped


def _answer(call: dict[str, Any]) -> Any:
    """The call's answer decoded as the scheduler decoded it (None when it has none)."""
    body = recorded_body(call)
    if body is None:
        return None
    try:
        return wire.parse(body)
    except wire.AnswerError:
        return None


def extender_calls_json(calls: list[dict[str, Any]], answers: list[Any]) -> list[dict[str, Any]]:
    """The recorded calls as shown: each with its decoded ``answer`` in place of the body."""
    return [{**{k: v for k, v in call.items() if k not in ("body", "bodyBase64")},
             "answer": wire.plain(answer)} for call, answer in zip(calls, answers, strict=True)]


def _extender_verdicts(calls: list[dict[str, Any]], answers: list[Any], nodes: dict[str, Any],
                       node_names: dict[int, str], only: set[int] | None) -> None:
    """Each filter call's verdict on each node it was sent, beside the filter plugins' (a
    later call about the same node, after the nominated node's, replaces an earlier one).
    A node an extender neither passed nor failed was dropped without a reason; a node both
    passed and failed passes (upstream keeps it, with the failure as its status)."""
    wanted = None if only is None else {node_names.get(s, str(s)) for s in only}
    touched: set[str] = set()
    for call, answer in zip(calls, answers, strict=True):
        if call.get("step") != "filter":
            continue
        extender = call["extender"]
        error = call.get("error")
        passing = set(call.get("passing") or ())
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        if not error:
            try:
                result = wire.filter_result(answer)
                failed, unresolvable = result.failed, result.failed_unresolvable
            except wire.AnswerError:
                pass
        for name in call.get("nodes") or []:
            if wanted is not None and name not in wanted:
                continue
            entry = nodes.setdefault(name, {"filter": {}, "feasible": True})
            touched.add(name)
            verdict: dict[str, Any]
            if error:
                verdict = {"code": "Error", "reasons": [error],
                           "ignored": bool(call.get("ignorable"))}
            elif name in passing:
                verdict = {"code": "Success", "reasons": []}
                also = unresolvable.get(name, failed.get(name))
                if also is not None:
                    verdict["note"] = f"passed, and also answered as failed: {also}"
            elif name in unresolvable:
                verdict = {"code": "UnschedulableAndUnresolvable",
                           "reasons": [unresolvable[name]]}
            elif name in failed:
                verdict = {"code": "Unschedulable", "reasons": [failed[name]]}
            else:
                verdict = {"code": "Unschedulable", "reasons": [],
                           "note": "not in the extender's passing nodes; no reason given"}
            entry["filter"][extender] = {**verdict, "extender": True}
    for name in touched:
        entry = nodes[name]
        entry["feasible"] = not any(map(rejects, entry["filter"].values()))


def preemption_json(document: dict[str, Any]) -> dict[str, Any] | None:
    """The attempt's ``preemption`` object, also from documents stored before it carried
    ``eligible``, ``pdbViolations`` and a candidate count (their ``candidates`` was the list
    now under ``candidateNodes``)."""
    stored: dict[str, Any] | None = document.get("preemption")
    if stored is None:
        return None
    if not isinstance(stored.get("candidates"), list):
        return stored
    listed = stored["candidates"]
    nominated = stored.get("nominatedNode")
    chosen = next((c for c in listed if c["node"] == nominated), None)
    message = (document.get("postFilter") or {}).get("reasons") or []
    return {
        "eligible": not any("not eligible" in reason for reason in message),
        "nominatedNode": nominated,
        "victims": stored.get("victims") or [],
        "pdbViolations": chosen["pdbViolations"] if chosen else None,
        "candidates": len(listed),
        "potentialNodes": stored.get("potentialNodes", 0),
        "candidateNodes": listed,
    }
