"""Benchmark a replay through a scheduler extender: live HTTP calls, then recorded answers.

    python -m benchmarks.extenders                      # 500 nodes, 2,000 pods
    python -m benchmarks.extenders --nodes 1000 --pods 5000 --json

A SchedulingBasic-shaped trace (4-CPU nodes, 100m / 500Mi pods) is replayed three times on
SQLite with kube-scheduler's default plugins: without extenders; through one extender on
127.0.0.1 (its own process; ``nodeCacheCapable``, filter and prioritize, passing every node
but one in ten and scoring each node 0–10 by its name); and from that run's recorded answers
(``--extender-answers``). It reports pods/s of each, the extender calls and their mean
latency, the event log's bytes per attempt, and whether the recorded-answers run's event log
is the live run's, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, func, select

from kaudit.queries.extender_calls import recorded_extender_calls
from kaudit.queries.runs import run_digest
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace, store_recorded_utilisation
from kaudit.scheduler.build import load
from kaudit.scheduler.extender.answers import RecordedAnswers
from kaudit.store.models import RunEvent
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: http://127.0.0.1:{port}/bench
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 1
  nodeCacheCapable: true
"""


def _score(name: str) -> int:
    return zlib.crc32(name.encode()) % 11


def _serve(port: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            names = args["NodeNames"]
            if self.path.endswith("/filter"):
                failed = {n: "reserved by the benchmark extender" for n in names
                          if _score(n) == 10}
                answer: Any = {"NodeNames": [n for n in names if n not in failed],
                               "FailedNodes": failed}
            else:
                answer = [{"Host": n, "Score": _score(n)} for n in names]
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port.put(server.server_address[1])
    server.serve_forever()


def _events(nodes: int, pods: int) -> Iterator[bytes]:
    for i in range(nodes):
        yield orjson.dumps({"ts": 0, "type": "ADDED", "object": make_node(f"node-{i:05d}")
                            .capacity(cpu="4", memory="32Gi", pods="110").obj()})
    for i in range(pods):
        yield orjson.dumps({"ts": 1, "type": "ADDED", "object": make_pod(f"pod-{i:06d}")
                            .req(cpu="100m", memory="500Mi").obj()})


def _bytes_per_attempt(engine: Engine, run_id: int) -> int:
    with engine.connect() as connection:
        count, data, blob = connection.execute(
            select(func.count(), func.sum(func.length(RunEvent.data)),
                   func.sum(func.coalesce(func.length(RunEvent.blob), 0)))
            .where(RunEvent.run_id == run_id, RunEvent.kind == "attempt")).one()
    return round(((data or 0) + (blob or 0)) / max(count, 1))


def run(nodes: int, pods: int) -> dict[str, Any]:
    ports: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    service = multiprocessing.Process(target=_serve, args=(ports,), daemon=True)
    service.start()
    try:
        port = ports.get(timeout=30)
        with tempfile.TemporaryDirectory(prefix="kaudit-bench-ext-") as tmp:
            trace_path = Path(tmp) / "basic.jsonl"
            trace_path.write_bytes(b"\n".join(_events(nodes, pods)) + b"\n")
            config_path = Path(tmp) / "extender.yaml"
            config_path.write_text(CONFIG.format(port=port))
            engine = open_database(f"sqlite:///{os.path.join(tmp, 'bench.db')}")
            ingest_trace(engine, [TraceInput(trace_path)], name="basic")
            trace = get_trace(engine, "basic")
            plain_config, registry = load()
            store_recorded_utilisation(engine, trace, plain_config, registry)
            extender_config, registry = load(config_path)
            figures: dict[str, Any] = {"nodes": nodes, "pods": pods}
            runs: dict[str, int] = {}
            for label, config, answers in (("noExtender", plain_config, None),
                                           ("liveExtender", extender_config, None),
                                           ("recordedAnswers", extender_config, "live")):
                recorded = None
                if answers is not None:
                    source, calls = recorded_extender_calls(engine, answers)
                    recorded = RecordedAnswers(calls, f"run '{source}'")
                name = {"liveExtender": "live"}.get(label, label)
                began = time.perf_counter()
                run_id, summary = replay_trace(engine, trace, config, registry, name=name,
                                               extender_answers=recorded)
                seconds = time.perf_counter() - began
                runs[label] = run_id
                figures[label] = {"seconds": round(seconds, 2),
                                  "podsPerSecond": round(summary.pods_scheduled / seconds, 1),
                                  "podsScheduled": summary.pods_scheduled,
                                  "extenderCalls": summary.extender_calls,
                                  "bytesPerAttempt": _bytes_per_attempt(engine, run_id)}
                if recorded is not None:
                    figures[label]["missingAnswers"] = len(recorded.missing)
            _, calls = recorded_extender_calls(engine, "live")
            figures["liveExtender"]["meanCallMs"] = round(
                sum(c["latencyUs"] for c in calls) / max(len(calls), 1) / 1000, 2)
            figures["recordedAnswersIdenticalLog"] = (
                run_digest(engine, runs["recordedAnswers"])
                == run_digest(engine, runs["liveExtender"]))
            engine.dispose()
            return figures
    finally:
        service.terminate()
        service.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = run(args.nodes, args.pods)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['nodes']} nodes, {figures['pods']} pods (SQLite, full event log)")
    for label in ("noExtender", "liveExtender", "recordedAnswers"):
        entry = figures[label]
        calls = ", ".join(f"{n} {step}" for step, n in entry["extenderCalls"].items()) or "-"
        print(f"  {label:16} {entry['podsPerSecond']:>8,.1f} pods/s  {entry['seconds']:>7.2f} s"
              f"  {entry['bytesPerAttempt']:>7,} B/attempt  calls: {calls}")
    print(f"  mean live call: {figures['liveExtender']['meanCallMs']} ms; recorded answers "
          f"missing: {figures['recordedAnswers']['missingAnswers']}; identical event log: "
          f"{figures['recordedAnswersIdenticalLog']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
