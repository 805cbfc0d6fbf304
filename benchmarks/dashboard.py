"""Benchmark the dashboard: page times under concurrent clients on a large run.

    python -m benchmarks.dashboard                      # SchedulingBasic, 5,000 nodes, SQLite
    python -m benchmarks.dashboard --clients 8 --rounds 5
    python -m benchmarks.dashboard --db kaudit-bench.db # build once, reuse after (or a URL)
    python -m benchmarks.dashboard --postgres postgresql://postgres@127.0.0.1/test
    python -m benchmarks.dashboard --under-replay 60 --clients 8   # load while a replay writes

Builds the replay benchmark's SchedulingBasic trace (5,000 nodes, 1,000 + 10,000 pods), replays
it twice (kube-scheduler's defaults, and bin packing) unless ``--db`` names a database that
already holds those runs, starts ``kaudit serve`` in its own process and lets ``--clients``
threads load every page ``--rounds`` times. A page load is what a browser does: the HTML
shell, then the JSON twins its script fetches (one after the other here, so the figure is an
upper bound). It reports p50/p95/max per page and per request, the largest response, and the
first load of each page. ``--no-cache`` turns the server's cache of answers about finished
runs off, so every request is computed.

``--under-replay SECONDS`` measures the dashboard while a replay writes to the same database:
a ``kaudit replay`` process replays the trace again (and again, if it ends early) while
``--clients`` threads request the pages and APIs, each request as soon as the previous one
answered, for SECONDS (then everything stops by itself). It reports the count of each status,
p50/p95/p99 latency over all requests and per request, and exits 1 when an answer was anything
but 200, 304 or 4xx, or when p95 reaches ``--p95-limit`` (150 ms). ``KAUDIT_BENCH_SERVER_LOG=1``
shows the server's log.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.ingest import fresh_postgres_database
from benchmarks.replay import events
from kaudit.datadirs import sample_config
from kaudit.queries.runs import list_runs
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace

RUNS = ("basic-default", "basic-packing")
#: Set (to anything) to see the server's log on stderr, its tracebacks included.
SERVER_LOG = "KAUDIT_BENCH_SERVER_LOG"


def build(db: str, nodes: int, initial: int, measured: int) -> None:
    engine = open_database(db)
    try:
        with tempfile.TemporaryDirectory(prefix="kaudit-bench-") as tmp:
            path = Path(tmp) / "SchedulingBasic.jsonl"
            with path.open("wb") as handle:
                for line in events("SchedulingBasic", nodes, initial, measured):
                    handle.write(line + b"\n")
            print(f"ingesting {path.stat().st_size / 1e6:.0f} MB ...", file=sys.stderr)
            result = ingest_trace(engine, [TraceInput(path)], name="SchedulingBasic")
        trace = get_trace(engine, result.trace_id)
        for name, config_path in zip(RUNS, (None, sample_config()), strict=True):
            print(f"replaying as {name} ...", file=sys.stderr)
            config, registry = load(config_path)
            replay_trace(engine, trace, config, registry, name=name)
    finally:
        engine.dispose()


def _has_runs(url: str) -> bool:
    """Whether the database already holds the benchmark's runs (then it is reused)."""
    engine = open_database(url)
    try:
        names = {run.name for run in list_runs(engine)}
    finally:
        engine.dispose()
    return set(RUNS) <= names


def _get(base: str, path: str) -> tuple[float, int, int]:
    began = time.perf_counter()
    request = urllib.request.Request(base + path, headers={"Accept-Encoding": "identity"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        body = answer.read()
        status = answer.status
    return time.perf_counter() - began, len(body), status


def _pages(base: str) -> dict[str, list[str]]:
    """Each page: its HTML shell and the JSON its script fetches."""
    a, b = RUNS
    with urllib.request.urlopen(f"{base}/api/v1/runs/{a}") as answer:
        end = json.load(answer)["span"]["seconds"]  # every pod placed: the largest state
    with urllib.request.urlopen(f"{base}/api/v1/runs/{a}/state?t={end}") as answer:
        state = json.load(answer)
    node = state["nodes"]["name"][len(state["nodes"]["name"]) // 2]
    with urllib.request.urlopen(f"{base}/api/v1/runs/{a}/events?kind=attempt&limit=1"
                                f"&offset=5000") as answer:
        items = json.load(answer)["items"]
    if not items:  # a smaller trace (--pods): its first attempt
        with urllib.request.urlopen(f"{base}/api/v1/runs/{a}/events?kind=attempt&limit=1"
                                    ) as answer:
            items = json.load(answer)["items"]
    pod = items[0]["pod"]
    with urllib.request.urlopen(f"{base}/api/v1/runs/{a}/pods/{pod}") as answer:
        last = len(json.load(answer)["attempts"]) - 1
    quoted = urllib.parse.quote(pod)
    return {
        "home": ["/", "/api/v1/traces", "/api/v1/runs"],
        "run": [f"/runs/{a}", f"/api/v1/runs/{a}", f"/api/v1/runs/{a}/timeline",
                f"/api/v1/runs/{a}/events?kind=attempt&offset=0&limit=50"],
        "history": [f"/runs/{a}/history?t={end}", f"/api/v1/runs/{a}/state?t={end}",
                    f"/api/v1/runs/{a}/nodes/{node}?t={end}"],
        "pod": [f"/runs/{a}/pods/{quoted}", f"/api/v1/runs/{a}/pods/{quoted}",
                f"/api/v1/runs/{a}/pods/{quoted}/attempts/{last}"],
        "events": [f"/runs/{a}/events", f"/api/v1/runs/{a}/events?offset=40000&limit=100"],
        "events-filtered": [f"/runs/{a}/events?plugin=NodeResourcesFit",
                            f"/api/v1/runs/{a}/events?plugin=NodeResourcesFit&limit=100"],
        "diff": [f"/diff?a={a}&b={b}", f"/api/v1/diff?a={a}&b={b}&offset=0&limit=100"],
        "diff-pod": [f"/diff/pods/{quoted}?a={a}&b={b}", f"/api/v1/runs/{a}/pods/{quoted}",
                     f"/api/v1/runs/{b}/pods/{quoted}"],
    }


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure(base: str, clients: int, rounds: int) -> dict[str, Any]:
    pages = _pages(base)
    first: dict[str, float] = {}
    for name, paths in pages.items():  # the first, uncached load of each page
        first[name] = sum(_get(base, path)[0] for path in paths)
    page_times: dict[str, list[float]] = defaultdict(list)
    request_times: dict[str, list[float]] = defaultdict(list)
    sizes: dict[str, int] = {}
    errors: list[str] = []
    lock = threading.Lock()

    def client(offset: int) -> None:
        names = list(pages)
        for r in range(rounds):
            for i in range(len(names)):
                name = names[(i + offset + r) % len(names)]
                total = 0.0
                for path in pages[name]:
                    seconds, size, status = _get(base, path)
                    total += seconds
                    with lock:
                        request_times[path].append(seconds)
                        sizes[path] = size
                        if status != 200:
                            errors.append(f"{path}: {status}")
                with lock:
                    page_times[name].append(total)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    every = [t for times in page_times.values() for t in times]
    ms = lambda seconds: round(seconds * 1000, 1)  # noqa: E731
    return {
        "clients": clients, "rounds": rounds, "pageLoads": len(every),
        "pagesPerSecond": round(len(every) / wall, 1),
        "pageP50ms": ms(statistics.median(every)), "pageP95ms": ms(_percentile(every, 0.95)),
        "pages": {name: {"p50ms": ms(statistics.median(times)),
                         "p95ms": ms(_percentile(times, 0.95)), "maxms": ms(max(times)),
                         "firstLoadms": ms(first[name])}
                  for name, times in page_times.items()},
        "requests": {path: {"p50ms": ms(statistics.median(times)),
                            "p95ms": ms(_percentile(times, 0.95)), "bytes": sizes[path]}
                     for path, times in request_times.items()},
        "largestResponseBytes": max(sizes.values()),
        "errors": errors,
    }


def _status_of(base: str, path: str) -> tuple[float, int]:
    """Latency and status of one request; an HTTP error is a status, a failed connection 0."""
    began = time.perf_counter()
    try:
        _, _, status = _get(base, path)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = 0
    return time.perf_counter() - began, status


def _start_replays(db: str, seconds: float) -> threading.Thread:
    """A thread that keeps a ``kaudit replay`` writing to ``db`` for ``seconds``."""

    def keep_replaying() -> None:
        deadline = time.monotonic() + seconds
        round_ = 0
        while time.monotonic() < deadline:
            round_ += 1
            process = subprocess.Popen(
                [sys.executable, "-m", "kaudit", "replay", "SchedulingBasic",
                 "--name", f"under-load-{os.getpid()}-{round_}", "--db", db],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                _, stderr = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
                if process.returncode != 0:
                    print(f"replay failed: {stderr.strip()}", file=sys.stderr)
                    return
            except subprocess.TimeoutExpired:
                process.terminate()  # marked failed (terminated), as a stopped replay is
                process.communicate(timeout=60)

    thread = threading.Thread(target=keep_replaying)
    thread.start()
    return thread


def measure_under_replay(db: str, base: str, clients: int, seconds: float) -> dict[str, Any]:
    paths = [path for page in _pages(base).values() for path in page]
    paths += ["/healthz", "/api/v1/runs", "/metrics"]  # live runs' rows change as it writes
    statuses: dict[int, int] = defaultdict(int)
    times: list[float] = []
    request_times: dict[str, list[float]] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    lock = threading.Lock()
    writer = _start_replays(db, seconds)
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        i = offset
        while time.monotonic() < deadline:
            path = paths[i % len(paths)]
            i += 1
            latency, status = _status_of(base, path)
            with lock:
                statuses[status] += 1
                times.append(latency)
                request_times[path].append(latency)
                if status not in (200, 304) and not 400 <= status < 500:
                    failed[f"{status} {path}"] += 1

    threads = [threading.Thread(target=client, args=(i * 3,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.join()
    ms = lambda seconds: round(seconds * 1000, 1)  # noqa: E731
    return {
        "clients": clients, "seconds": seconds, "requests": len(times),
        "requestsPerSecond": round(len(times) / seconds, 1),
        "statuses": {str(code): n for code, n in sorted(statuses.items())},
        "p50ms": ms(statistics.median(times)), "p95ms": ms(_percentile(times, 0.95)),
        "p99ms": ms(_percentile(times, 0.99)), "failed": dict(failed),
        "byRequest": {path: {"p50ms": ms(statistics.median(values)),
                             "p95ms": ms(_percentile(values, 0.95))}
                      for path, values in request_times.items()},
    }


def serve(db: str, cache: int) -> tuple[subprocess.Popen[str], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "kaudit", "serve", "--db", db,
                                "--port", str(port), "--cache", str(cache)],
                               stderr=None if os.environ.get(SERVER_LOG) else subprocess.DEVNULL,
                               text=True)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            _get(base, "/healthz")
            return process, base
        except OSError:
            time.sleep(0.1)
    process.terminate()
    raise SystemExit("kaudit serve did not start")


def run(db: str, args: argparse.Namespace, reuse: bool) -> dict[str, Any]:
    if not reuse:
        build(db, args.nodes, args.initial, args.pods)
    process, base = serve(db, 0 if args.no_cache else 256)
    try:
        result = (measure_under_replay(db, base, args.clients, args.under_replay)
                  if args.under_replay else measure(base, args.clients, args.rounds))
    finally:
        process.terminate()
        process.wait(timeout=10)
    return {"database": db.split(":", 1)[0], "nodes": args.nodes, "cache": not args.no_cache,
            "pods": args.initial + args.pods, **result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="reuse this database (built on the first use)")
    parser.add_argument("--postgres", metavar="SERVER_URL",
                        help="benchmark PostgreSQL (a database is created for the run)")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--initial", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000, help="measured pods")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-cache", action="store_true",
                        help="serve with the answer cache off (every request computed)")
    parser.add_argument("--under-replay", type=float, metavar="SECONDS",
                        help="load the dashboard for SECONDS while a replay writes to the "
                             "same database")
    parser.add_argument("--p95-limit", type=float, default=150.0, metavar="MS",
                        help="with --under-replay: fail when p95 latency reaches this")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.db:
        url = args.db if "://" in args.db else f"sqlite:///{Path(args.db).resolve()}"
        result = run(url, args, reuse=_has_runs(url))
    elif args.postgres:
        with fresh_postgres_database(args.postgres) as url:
            result = run(url, args, reuse=False)
    else:
        with tempfile.TemporaryDirectory(prefix="kaudit-bench-db-") as tmp:
            result = run(f"sqlite:///{os.path.join(tmp, 'bench.db')}", args, reuse=False)
    if args.under_replay:
        return _report_under_replay(result, args)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"dashboard ({result['database']}, {result['nodes']} nodes, {result['pods']} pods, "
          f"cache {'on' if result['cache'] else 'off'}), "
          f"{result['clients']} clients: {result['pageLoads']} page loads, "
          f"p50 {result['pageP50ms']} ms, p95 {result['pageP95ms']} ms, "
          f"{result['pagesPerSecond']} pages/s; largest response "
          f"{result['largestResponseBytes'] / 1e6:.2f} MB")
    for name, figures in result["pages"].items():
        print(f"  {name:<16} p50 {figures['p50ms']:>7} ms  p95 {figures['p95ms']:>7} ms  "
              f"max {figures['maxms']:>7} ms  first load {figures['firstLoadms']:>8} ms")
    if result["errors"]:
        print(f"errors: {result['errors'][:5]}")
        return 1
    return 0


def _report_under_replay(result: dict[str, Any], args: argparse.Namespace) -> int:
    unwanted = {code: n for code, n in result["statuses"].items()
                if not (code in ("200", "304") or code.startswith("4"))}
    slow = result["p95ms"] >= args.p95_limit
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"dashboard under a replay ({result['database']}, {result['nodes']} nodes, "
              f"{result['pods']} pods, cache {'on' if result['cache'] else 'off'}), "
              f"{result['clients']} clients for {result['seconds']:g} s: "
              f"{result['requests']} requests ({result['requestsPerSecond']}/s), "
              f"p50 {result['p50ms']} ms, p95 {result['p95ms']} ms, p99 {result['p99ms']} ms")
        print("  statuses: " + ", ".join(f"{code}: {n}" for code, n in
                                         result["statuses"].items()))
        for path, figures in sorted(result["byRequest"].items(),
                                    key=lambda item: -item[1]["p95ms"])[:8]:
            print(f"  p95 {figures['p95ms']:>8} ms  p50 {figures['p50ms']:>8} ms  {path}")
    if unwanted:
        print(f"answers other than 200/304/4xx: {unwanted}: " + ", ".join(
            f"{n} × {request}" for request, n in result["failed"].items()), file=sys.stderr)
    if slow:
        print(f"p95 {result['p95ms']} ms reaches the limit of {args.p95_limit:g} ms",
              file=sys.stderr)
    return 1 if unwanted or slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
