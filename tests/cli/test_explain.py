"""``kaudit explain`` as text: other events as sentences, and the cause groups ``kaudit whatif``
words the same way (one renderer, :mod:`kaudit.queries.verdict_text`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import orjson
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from kaudit.cli import cli
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.conftest import V1_34, gates_at, write_trace

#: A Python repr or a dict dumped into a line.
REPR = re.compile(r"\w=\[|\{'|': |\w=True|\w=False")


def _other_events(text: str) -> list[str]:
    lines = text.split("\nOther events:\n", 1)[1].splitlines()
    return [line for line in lines if line.startswith("  ")]


def test_other_events_are_sentences(sample_runs: Engine,
                                    run_kaudit: Callable[..., Result]) -> None:
    """The preemptor's nomination (tied nodes and victims) and a victim's eviction read as
    sentences, in the text and in --json."""
    for pod in ("batch/report-gen", "web/payments-0", "batch/etl-nightly-vtkzv"):
        text = run_kaudit("explain", "default", pod).output
        story = json.loads(run_kaudit("explain", "default", pod, "--json").output)
        lines = _other_events(text)
        events = [e for e in story["events"] if e["kind"] != "watch"]
        assert len(lines) == len(events) > 0
        for line, event in zip(lines, events, strict=True):
            assert line == f"  {event['at']}  {event['text']}"
            assert not REPR.search(line), line
    evicted = next(e for e in story["events"] if e["kind"] == "preempt")
    assert evicted["text"].startswith("Evicted on ")


def test_a_claim_record_is_summarised(engine: Engine, run_kaudit: Callable[..., Result]) -> None:
    """A ResourceClaim record is a line naming the claim, its requests and its devices, not
    the object (about 1,500 characters) dumped."""
    traces = Path(__file__).resolve().parents[2] / "traces"
    ingest_trace(engine, [TraceInput(traces / "dra-gpu.jsonl")], name="dra")
    config, registry = load(None, gates_at(V1_34))  # the allocation spelled out is v1.34's
    replay_trace(engine, get_trace(engine, "dra"), config, registry, name="dra")
    text = run_kaudit("explain", "dra", "default/train-0003").output
    claims = [line for line in _other_events(text) if "ResourceClaim " in line]
    assert claims and all(len(line) < 300 and not REPR.search(line) for line in claims)
    assert any("allocated gpu-1 (pool gpu-node-0002) for gpu" in line for line in claims)
    assert any('where device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi"))'
               in line for line in claims)


def test_whatif_words_causes_as_explain_does(engine: Engine, tmp_path: Path,
                                            run_kaudit: Callable[..., Result]) -> None:
    nodes = [make_node("cordoned").capacity(cpu="8", memory="8Gi", pods="110").unschedulable()
             .obj(),
             make_node("small-1").capacity(cpu="1", memory="8Gi", pods="110").obj(),
             make_node("small-2").capacity(cpu="1", memory="8Gi", pods="110").obj(),
             make_node("big").capacity(cpu="8", memory="8Gi", pods="110").obj()]
    pod = make_pod("wide").req(cpu="2", memory="1Gi").obj()
    trace = write_trace(tmp_path / "wide.jsonl", *((0.0, "ADDED", n) for n in nodes),
                        (1.0, "ADDED", pod))
    ingest_trace(engine, [TraceInput(trace)], name="wide")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "wide"), config, registry, name="wide")
    explained = json.loads(run_kaudit("explain", "wide", "default/wide", "--json").output)
    decisive = explained["attempts"][explained["verdict"]["decisiveAttempt"] - 1]

    state = tmp_path / "state.json"
    state.write_bytes(orjson.dumps({"kind": "List", "items": nodes}))
    manifest = tmp_path / "pod.json"
    manifest.write_bytes(orjson.dumps(pod))
    result = CliRunner().invoke(cli, ["whatif", "--cluster", str(state), "--pod",
                                      str(manifest)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "4 nodes evaluated, 1 feasible, 3 rejected" in lines
    assert decisive["countsText"] == "4 nodes evaluated, 1 feasible, 3 rejected"
    assert [c["cause"] for c in explained["verdict"]["causes"]] == ["lack cpu", "cordoned"]
    for cause in explained["verdict"]["causes"]:
        assert any(line.split()[:1] == [str(cause["count"])] and cause["cause"] in line
                   and cause["examples"] in line for line in lines), cause


def test_any_attempt_is_grouped_as_its_page_groups_it(sample_runs: Engine,
                                                      run_kaudit: Callable[..., Result]) -> None:
    """``--attempt N`` of an attempt that did not decide: the same concrete causes as the pod
    page's attempt (the unmatched selector and what the node has), not the plugin's reasons."""
    from kaudit.queries.pods import attempt_detail

    story = json.loads(run_kaudit("explain", "default", "web/ssd-cache", "--json").output)
    shown = next(a["attempt"] for a in story["attempts"]
                 if a["attempt"] != story["verdict"]["decisiveAttempt"])
    detail = attempt_detail(sample_runs, "default", "web/ssd-cache", shown)
    assert detail["causes"]
    lines = run_kaudit("explain", "default", "web/ssd-cache", "--attempt", str(shown)
                       ).output.splitlines()
    assert any(line.startswith(f"Attempt #{shown} at") and line.endswith(detail["countsText"])
               for line in lines)
    for cause in detail["causes"]:
        assert any(line.split()[:1] == [str(cause["count"])] and cause["cause"] in line
                   and cause["detail"] in line and cause["examples"] in line
                   for line in lines), cause
