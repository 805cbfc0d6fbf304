"""Benchmark ``kaudit audit``: recorded decisions judged per second on a large recording.

    python -m benchmarks.audit                        # 1,000 nodes, 10,000 recorded decisions
    python -m benchmarks.audit --nodes 200 --pods 1000 --json
    python -m benchmarks.audit --config traces/sample-bin-packing.yaml   # disagreements
    python -m benchmarks.audit --profile audit.prof   # the audit under cProfile, top functions
    python -m benchmarks.audit --baseline HEAD~1      # and the ratio against the parent

The recording is kaudit's own: :func:`kaudit.tracegen.synthetic.synthetic_events`' nodes and
pod arrivals (its recorded bindings and deletions left out, each pod's requests drawn from a
few shapes by ``--seed``) are ingested and replayed with kube-scheduler's defaults, and the run
is exported (:mod:`kaudit.queries.export`) as the recording: every pod bound where kaudit put
it, when it did. The build is cached under ``~/.cache/kaudit/benchmarks`` (``--cache DIR``;
``--rebuild`` builds it again), keyed by size, seed and a digest of kaudit's sources: a
recording made by another kaudit is not audited as this one's (recordings are small: 0.5 MB
at full size, and older ones are left in place).

The recording is then ingested into a fresh SQLite database (timed on its own) and ``kaudit
audit`` runs as a child process, so its wall time and peak resident memory (``wait4``) are the
command's alone. The figures: decisions judged, decisions per second, the command's wall time,
the audit replay's own time (the run's ``wallSeconds``), peak RSS and the count of
each class. Audited with the configuration that made it, every judged decision should agree,
tie, or be ``sampled`` (kaudit's replay scores a window of nodes at
``percentageOfNodesToScore``, the audit scores them all); any other class is a bug in kaudit,
and the benchmark lists those decisions with their reasons and exits 1. ``--config FILE``
audits with another configuration instead: disagreements are then expected (and every one
goes through the slower path that explains it), so they are counted, not reported as bugs.
``--baseline GIT_REF`` first runs the same with kaudit at that revision (its own recording)
and prints the ratio of the wall times.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import pstats
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import orjson

import kaudit
from benchmarks.baseline import checkout, ratio, run_there, without_baseline
from kaudit.queries.export import exported_events, run_source
from kaudit.queries.runs import get_run
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.readers.writers import write_native
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.tracegen.synthetic import synthetic_events

#: The issue's target: 10,000 recorded decisions on 1,000 nodes audited in under a minute.
TARGET_SECONDS = 60.0
#: Classes a kaudit export audited with its own configuration may take.
CONSISTENT = frozenset({"agrees", "tie", "sampled"})
#: Pod request shapes (CPU, memory) drawn per pod, so that scores differ between nodes.
SHAPES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("500m", "4Gi"),
          ("2", "1Gi"))
#: Bump when the recording's content changes, so that cached recordings are rebuilt.
RECORDING_FORMAT = 1
RECORDING_TRACE = "audit-bench-arrivals"
KAUDIT_SOURCES = Path(kaudit.__file__).resolve().parent


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kaudit" / "benchmarks"


def sources_digest() -> str:
    """A digest of kaudit's Python sources: the scheduler that made a recording."""
    digest = hashlib.sha256()
    for path in sorted(KAUDIT_SOURCES.rglob("*.py")):
        digest.update(str(path.relative_to(KAUDIT_SOURCES)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def recording_path(cache: Path, nodes: int, pods: int, seed: int) -> Path:
    return cache / (f"audit-recording-f{RECORDING_FORMAT}-{nodes}n-{pods}p-seed{seed}-"
                    f"{sources_digest()}.jsonl.gz")


def arrival_lines(nodes: int, pods: int, seed: int) -> Iterator[bytes]:
    """The synthetic trace's nodes and pod arrivals, without its round-robin bindings and its
    deletions (kaudit decides the placements; the pods stay): each pod's requests are one of
    ``SHAPES``, drawn with ``seed``."""
    shapes = random.Random(seed)
    for line in synthetic_events(nodes + 3 * pods, nodes):
        event = orjson.loads(line)
        if event["type"] != "ADDED":
            continue
        obj = event["object"]
        if obj["kind"] == "Pod":
            cpu, memory = shapes.choice(SHAPES)
            obj["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu,
                                                                     "memory": memory}
        yield orjson.dumps(event)


def build_recording(path: Path, nodes: int, pods: int, seed: int) -> dict[str, Any]:
    """Replay the arrivals with kube-scheduler's defaults and export the run to ``path``."""
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kaudit-bench-audit-build-") as tmp:
        arrivals = Path(tmp) / "arrivals.jsonl"
        with arrivals.open("wb") as handle:
            for line in arrival_lines(nodes, pods, seed):
                handle.write(line + b"\n")
        engine = open_database(f"sqlite:///{Path(tmp) / 'build.db'}")
        try:
            ingest_trace(engine, [TraceInput(arrivals)], name=RECORDING_TRACE)
            config, registry = load()
            run_id, summary = replay_trace(engine, get_trace(engine, RECORDING_TRACE), config,
                                           registry, name="recorded-scheduler", seed=seed)
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".partial")
            with gzip.open(partial, "wb", compresslevel=1) as out:
                write_native(exported_events(engine, run_source(engine, str(run_id))),
                             cast(IO[bytes], out))
            partial.replace(path)
        finally:
            engine.dispose()
    return {"buildSeconds": round(time.perf_counter() - began, 1),
            "podsBound": summary.pods_scheduled, "podsPendingAtEnd": summary.pods_unschedulable}


def timed_child(command: list[str]) -> tuple[float, int, str]:
    """Run ``command``; its wall seconds, peak RSS in KiB (``wait4``) and standard output."""
    with tempfile.TemporaryFile() as output:
        began = time.perf_counter()
        child = subprocess.Popen(command, stdout=output)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - began
        code = os.waitstatus_to_exitcode(status)
        output.seek(0)
        stdout = output.read().decode()
    if code != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed with exit code {code}")
    return elapsed, usage.ru_maxrss, stdout


def audit_recording(recording: Path, workdir: Path, config: Path | None,
                    profile: Path | None) -> dict[str, Any]:
    """Ingest ``recording`` into a new SQLite database, then time ``kaudit audit`` of it
    (under ``config``, else the defaults that made it)."""
    db = f"sqlite:///{workdir / 'audit.db'}"
    engine = open_database(db)
    try:
        began = time.perf_counter()
        ingest_trace(engine, [TraceInput(recording)], name="recording")
        ingest_seconds = time.perf_counter() - began
    finally:
        engine.dispose()
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile is not None else []
    judged_with = ["--config", str(config)] if config is not None else []
    seconds, peak_kib, stdout = timed_child(
        [sys.executable, *profiler, "-m", "kaudit", "audit", "recording", "--name", "audit",
         *judged_with, "--json", "--db", db])
    report = json.loads(stdout)
    engine = open_database(db)
    try:
        run = get_run(engine, "audit").summary or {}
    finally:
        engine.dispose()
    return {"ingestSeconds": round(ingest_seconds, 2), "seconds": seconds,
            "peakRSSMiB": round(peak_kib / 1024, 1), "report": report,
            "replaySeconds": run.get("wallSeconds")}


def figures(nodes: int, pods: int, seed: int, config: Path | None,
            build: dict[str, Any] | None, measured: dict[str, Any]) -> dict[str, Any]:
    report = measured["report"]
    classes = {name: count for name, count in report["classes"].items() if count}
    unexpected = [] if config is not None else [
        {"pod": d["pod"], "class": d["class"], "reason": d.get("reason")}
        for d in report["disagreements"] + report["notJudged"] if d["class"] not in CONSISTENT]
    seconds = measured["seconds"]
    replay_seconds = measured["replaySeconds"]
    return {
        "nodes": nodes, "pods": pods, "seed": seed, "database": "sqlite",
        "auditConfig": str(config) if config is not None else "defaults (the recording's)",
        "recordingBuilt": build,
        "ingestSeconds": measured["ingestSeconds"],
        "decisions": report["decisions"], "judged": report["judged"],
        "seconds": round(seconds, 2),
        "decisionsPerSecond": round(report["decisions"] / seconds, 1),
        "auditReplaySeconds": None if replay_seconds is None else round(replay_seconds, 2),
        "peakRSSMiB": measured["peakRSSMiB"],
        "classes": classes,
        "unexpected": unexpected,
        "targetSeconds": TARGET_SECONDS,
    }


def print_profile(profile: Path, top: int = 25) -> None:
    stats = pstats.Stats(str(profile), stream=sys.stderr)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def print_figures(result: dict[str, Any]) -> None:
    build = result["recordingBuilt"]
    print(f"kaudit audit, {result['nodes']:,} nodes, {result['pods']:,} pods (SQLite, seed "
          f"{result['seed']}, judged with {result['auditConfig']})")
    if build is not None:
        print(f"  recording built in {build['buildSeconds']} s ({build['podsBound']:,} pods "
              f"bound by kaudit's replay, {build['podsPendingAtEnd']:,} pending at the end)")
    else:
        print("  recording from the cache")
    print(f"  ingest of the recording: {result['ingestSeconds']} s")
    verdict = "met" if result["seconds"] < result["targetSeconds"] else "NOT met"
    print(f"  {result['decisions']:,} decisions ({result['judged']:,} judged) in "
          f"{result['seconds']} s: {result['decisionsPerSecond']:,} decisions/s (target "
          f"< {result['targetSeconds']:.0f} s: {verdict})")
    print(f"  the audit replay itself {result['auditReplaySeconds']} s; peak RSS "
          f"{result['peakRSSMiB']} MiB")
    print("  classes: " + ", ".join(f"{name} {count:,}"
                                    for name, count in result["classes"].items()))
    if "baseline" in result:
        before = result["baseline"]
        print(f"  at {before['ref']}: {before['seconds']} s, {before['decisionsPerSecond']:,} "
              f"decisions/s, classes {before['classes']}; speed-up {result['speedUp']}x")
    if result["unexpected"]:
        print(f"  {len(result['unexpected'])} decisions neither agree, tie nor are sampled "
              "(a bug: kaudit judges its own decisions):")
        for decision in result["unexpected"][:20]:
            print(f"    {decision['pod']}: {decision['class']}: {decision['reason']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000,
                        help="pods arriving, each a recorded decision")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the pods' shapes and of the recording replay's ties")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help="where built recordings are kept [default: "
                             "~/.cache/kaudit/benchmarks]")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="audit with this KubeSchedulerConfiguration instead of the "
                             "defaults that made the recording (disagreements expected)")
    parser.add_argument("--rebuild", action="store_true",
                        help="build the recording again even when it is cached")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="run the audit under cProfile, write its stats to FILE and print "
                             "the top functions (the figures then include the profiler)")
    parser.add_argument("--baseline", metavar="GIT_REF",
                        help="first run the same with kaudit at this revision, then print the "
                             "ratio (baseline seconds ÷ current seconds)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.pods < 1:
        parser.error("--nodes and --pods must be at least 1")
    if args.config is not None and not args.config.is_file():
        parser.error(f"--config {args.config}: no such file")
    baseline: dict[str, Any] | None = None
    if args.baseline:
        print(f"baseline: kaudit at {args.baseline} ...", file=sys.stderr)
        with checkout(args.baseline) as directory:
            baseline = run_there(directory, "benchmarks.audit",
                                 without_baseline(sys.argv[1:] if argv is None else argv))
    recording = recording_path(args.cache or default_cache(), args.nodes, args.pods, args.seed)
    build = None
    if args.rebuild or not recording.exists():
        print(f"building the recording ({args.nodes:,} nodes, {args.pods:,} pods) ...",
              file=sys.stderr)
        build = build_recording(recording, args.nodes, args.pods, args.seed)
    print(f"auditing {recording.name} ...", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="kaudit-bench-audit-") as tmp:
        measured = audit_recording(recording, Path(tmp), args.config, args.profile)
    result = figures(args.nodes, args.pods, args.seed, args.config, build, measured)
    if baseline is not None:
        result["baseline"] = {"ref": args.baseline, **baseline}
        result["speedUp"] = ratio(baseline["seconds"], result["seconds"])
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_figures(result)
    if args.profile is not None:
        print_profile(args.profile)
    return 1 if result["unexpected"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
