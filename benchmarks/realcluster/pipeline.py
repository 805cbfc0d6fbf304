"""The whole user path on a real control plane, end to end: start it, record it with
``kaudit record`` while the workload driver churns it, ingest the recording and the API
server's audit log, check that both traces hold the same objects and transitions, then
``kaudit audit`` every decision of the real kube-scheduler (in both traces) and
``kaudit replay`` + ``kaudit diff … recorded`` the recording.

kaudit is run as its users run it, through its command line (``python -m kaudit … --json``),
with the scheduler's own configuration file: the file kube-scheduler was started with is the
one given to kaudit.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import kubernetes

from benchmarks.realcluster.build import RELEASES, build_control_plane
from benchmarks.realcluster.controlplane import ControlPlane, node_monitor_grace_seconds
from benchmarks.realcluster.lag import decision_lags
from benchmarks.realcluster.trace_compare import TraceComparison, compare_traces
from benchmarks.realcluster.workload import Driver, WorkloadSpec
from kaudit.store.engine import make_engine
from kaudit.store.traces import StoredEvent, get_trace, iter_events

#: The scheduler configurations of the fidelity run: the profile part of the
#: ``KubeSchedulerConfiguration`` (the harness adds the client connection).
CONFIGURATIONS = {
    "default": "",
    "binpacking": (
        "profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n"
        "  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        "        type: MostAllocated\n        resources:\n"
        "        - name: cpu\n          weight: 1\n        - name: memory\n          weight: 1\n"),
}
#: How far the real scheduler's view may lag the recording (``kaudit audit --window``), at
#: least. On this control plane at 20 nodes bindings committed up to ~20 ms out of the order
#: the scheduler decided them, and a failure's PodScheduled=False write lands tens of ms after
#: its cycle; larger clusters lag more (:func:`audit_window`).
AUDIT_WINDOW_SECONDS = 0.1


def audit_window(lags: dict[str, Any]) -> float:
    """The audit's window for a run: the 99th percentile of its decisions' lag behind their
    cycles (measured from the scheduler's log, :mod:`benchmarks.realcluster.lag`), rounded
    up to a tenth of a second, and never below :data:`AUDIT_WINDOW_SECONDS`."""
    p99_ms = lags.get("p99Ms")
    if p99_ms is None:
        return AUDIT_WINDOW_SECONDS
    return max(AUDIT_WINDOW_SECONDS, math.ceil(float(p99_ms) / 100) / 10)
RECORDER_READY_TIMEOUT = 60.0
RECORDER_STOP_TIMEOUT = 60.0
#: Made once kaudit record runs: when it is in the file, the recorder lists and watches.
SENTINEL_NAMESPACE = "kaudit-harness"

Progress = Callable[[str], None]


class PipelineError(RuntimeError):
    """A step of the end-to-end run failed; the message names the step and quotes it."""


#: The pipeline's stages, in order; a run may stop after any of them.
STAGES = ("ingest", "audit", "replay")


@dataclass
class FidelityRun:
    """What one end-to-end run found."""

    nodes: int
    pods: int
    seed: int
    configuration: str
    version: str
    workload: dict[str, Any]
    comparison: TraceComparison
    audits: dict[str, dict[str, Any]]
    diff: dict[str, Any]
    #: How far the real scheduler's decisions precede their recording (its -v=3 log).
    lags: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    memory_kib: dict[str, int] = field(default_factory=dict)
    workdir: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "pods": self.pods, "seed": self.seed,
                "configuration": self.configuration, "version": self.version,
                "workload": self.workload, "traces": self.comparison.as_json(),
                "audits": self.audits, "diff": self.diff, "decisionLags": self.lags,
                "timings": self.timings,
                "memoryKiB": self.memory_kib, "workdir": self.workdir}


def kaudit_command(*args: str, db: str) -> dict[str, Any]:
    """Run ``python -m kaudit ARGS --json --db DB``; its JSON answer. Exit status 0 and 1
    (a ``--fail-on`` condition held) are answers; anything else raises."""
    command = [sys.executable, "-m", "kaudit", *args, "--json", "--db", db]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise PipelineError(f"{' '.join(command[1:])} exited {done.returncode}:\n"
                            f"{(done.stderr or done.stdout)[-3000:]}")
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise PipelineError(f"{' '.join(command[1:])} printed no JSON ({exc}):\n"
                            f"{done.stdout[-2000:]}{done.stderr[-2000:]}") from None
    return answer


class Recording:
    """``kaudit record`` running against the control plane, in its own process."""

    def __init__(self, plane: ControlPlane, output: Path) -> None:
        self.output = output
        self.log = plane.workdir / "logs" / "kaudit-record.log"
        self.command = [sys.executable, "-m", "kaudit", "record", "--kubeconfig",
                        str(plane.kubeconfigs["recorder"]), "--force", "--json", str(output)]
        self.process: subprocess.Popen[bytes] | None = None
        self.stopped_at_us = 0

    def start(self, api: Any) -> Recording:
        """Start recording; return once it has listed everything and watches: a namespace
        made after the start (:data:`SENTINEL_NAMESPACE`) has reached its file."""
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        kubernetes.client.CoreV1Api(api).create_namespace(kubernetes.client.V1Namespace(
            metadata=kubernetes.client.V1ObjectMeta(name=SENTINEL_NAMESPACE)))
        marker = f'"name":"{SENTINEL_NAMESPACE}"'.encode()
        deadline = time.monotonic() + RECORDER_READY_TIMEOUT
        while not (self.output.exists() and marker in self.output.read_bytes()):
            if self.process.poll() is not None:
                raise PipelineError(f"kaudit record exited {self.process.returncode}:\n"
                                    f"{self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                self.kill()
                raise PipelineError("kaudit record did not record its first objects in "
                                    f"{RECORDER_READY_TIMEOUT:.0f}s")
            time.sleep(0.1)
        return self

    def kill(self) -> None:
        """End the recorder at once (a failed run must not leave it watching)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> dict[str, Any]:
        """Stop it as a user would (SIGINT) and return its JSON summary."""
        if self.process is None:
            raise PipelineError("kaudit record was not started")
        self.stopped_at_us = time.time_ns() // 1000
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(RECORDER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise PipelineError("kaudit record did not stop within "
                                f"{RECORDER_STOP_TIMEOUT:.0f}s of SIGINT") from None
        text = self.log.read_text(errors="replace")
        if self.process.returncode != 0:
            raise PipelineError(f"kaudit record exited {self.process.returncode}:\n{text[-3000:]}")
        start = text.rfind("\n{")
        try:
            summary: dict[str, Any] = json.loads(text[start + 1:] if start >= 0 else text)
        except json.JSONDecodeError:
            summary = {"log": text[-2000:]}
        return summary


def stored_events(db: str, name: str, until_us: int | None = None) -> list[StoredEvent]:
    """A stored trace's events (up to ``until_us`` when given)."""
    engine = make_engine(db)
    try:
        trace = get_trace(engine, name)
        return [e for e in iter_events(engine, trace.id) if until_us is None or e.ts_us <= until_us]
    finally:
        engine.dispose()


def run_fidelity(workdir: Path, nodes: int, pods: int, seed: int,
                 configuration: str = "default", minor: str = "v1.34",
                 db: str | None = None, progress: Progress | None = None,
                 window_s: float | None = None,
                 duration_s: float | None = None, until: str = "replay") -> FidelityRun:
    """One end-to-end run in ``workdir``; the database defaults to ``workdir/kaudit.db``.

    ``until`` stops after a stage of :data:`STAGES`: ``ingest`` keeps the recorded and
    ingested traces (audit them later with ``kaudit audit``), ``audit`` skips the full
    replay, which at thousands of nodes takes longer than everything before it. ``window_s``
    is the audit's window; by default :func:`audit_window` of the run's measured lags."""
    if until not in STAGES:
        raise PipelineError(f"unknown stage {until!r}; choose from {', '.join(STAGES)}")
    say = progress or (lambda _message: None)
    timings: dict[str, float] = {}
    clock = time.monotonic()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        timings[name] = round(now - clock, 2)
        clock = now

    if configuration not in CONFIGURATIONS:
        raise PipelineError(f"unknown configuration {configuration!r}; "
                            f"choose from {', '.join(CONFIGURATIONS)}")
    db = db or f"sqlite:///{workdir / 'kaudit.db'}"
    say(f"building the control plane ({minor}) if not cached")
    binaries = build_control_plane(minor)
    lap("build")
    plane = ControlPlane(workdir / "cluster", binaries, CONFIGURATIONS[configuration],
                         node_monitor_grace_seconds=node_monitor_grace_seconds(nodes))
    trace_file = workdir / "recording.jsonl"
    say(f"starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok in "
        f"{plane.workdir}")
    with plane:
        lap("start")
        api = kubernetes.config.new_client_from_config(config_file=str(plane.kubeconfigs["admin"]))
        recording = Recording(plane, trace_file)
        try:
            recording.start(api)
            lap("recorder ready")
            say(f"driving the workload: {nodes} nodes, {pods} pods, seed {seed}")
            spec = WorkloadSpec(nodes=nodes, pods=pods, seed=seed, duration_seconds=duration_s)
            summary = Driver(api, spec).run(say)
            lap("workload")
            plane.check_running()
            plane.pause_writers()
            record_summary = recording.stop()
        finally:
            recording.kill()
            api.close()
        memory = plane.memory_kib()
    lap("stop")
    workload = asdict(summary)
    workload["recorder"] = record_summary
    say("ingesting the recording and the audit log")
    kaudit_command("ingest", str(trace_file), "--name", "recording", db=db)
    kaudit_command("ingest", *map(str, plane.audit_logs()), "--format", "audit",
                   "--name", "audit-log", db=db)
    lap("ingest")
    recorded = stored_events(db, "recording")
    comparison = compare_traces(recorded,
                                stored_events(db, "audit-log", until_us=recording.stopped_at_us))
    lags = decision_lags(recorded, plane.workdir / "logs" / "kube-scheduler.log")
    del recorded
    lap("compare")
    audits: dict[str, dict[str, Any]] = {}
    diff: dict[str, Any] = {}

    def found() -> FidelityRun:
        return FidelityRun(nodes, pods, seed, configuration, RELEASES[minor].version, workload,
                           comparison, audits, diff, lags, timings, memory, str(workdir))

    if until == "ingest":
        return found()
    window = audit_window(lags) if window_s is None else window_s
    config = str(plane.scheduler_config)
    for trace in ("recording", "audit-log"):
        say(f"auditing the real scheduler's decisions in the {trace}")
        audits[trace] = kaudit_command("audit", trace, "--config", config,
                                       "--window", str(window),
                                       "--name", f"audit-{trace}", db=db)
    lap("audit")
    if until == "audit":
        return found()
    say("replaying the recording and comparing with the real placements")
    replay = kaudit_command("replay", "recording", "--config", config, "--name", "replay",
                            db=db)
    diff = kaudit_command("diff", str(replay.get("run", "replay")), "recorded", db=db)
    lap("replay and diff")
    return found()
