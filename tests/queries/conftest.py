"""Fixtures of the query tests: one SQLite database, built once per session, holding the runs
every door of a pod's verdict is compared on (the sample under two configurations, the DRA
sample, and a generated 2,000-node trace with preemption, sampling and a gated pod)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from kaudit.datadirs import data_dir, sample_config, sample_trace
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.models import Run, RunEvent
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import NodeBuilder, PodBuilder, make_node, make_pod
from tests.conftest import V1_34, gates_at, write_trace

#: Nodes of the generated trace; four of them (``pool=tight``) are where preemption happens.
WIDE_NODES = 2000
TIGHT_NODES = 4


def wide_cluster_events() -> list[tuple[float, str, dict[str, Any]]]:
    """2,000 equal nodes, four of them labelled ``pool=tight`` and filled by low-priority
    pods; two high-priority pods that only fit there preempt (among tied candidates), small
    pods fit anywhere (so filtering stops at percentageOfNodesToScore and the top score is a
    wide tie), a pod too big for any node, and a pod held by a scheduling gate for 150 s."""
    events: list[tuple[float, str, dict[str, Any]]] = []
    for i in range(WIDE_NODES):
        node = make_node(f"node-{i:04d}").capacity(cpu="4", memory="16Gi", pods="110")
        if i < TIGHT_NODES:
            node.label("pool", "tight")
        events.append((0.0, "ADDED", node.obj()))
    for i in range(2 * TIGHT_NODES):
        events.append((1.0 + 0.01 * i, "ADDED", make_pod(f"filler-{i}", "batch").req(
            cpu="2", memory="1Gi").priority(10).node_selector(pool="tight").obj()))
    for i in range(2):
        events.append((5.0 + i, "ADDED", make_pod(f"urgent-{i}", "prod").req(
            cpu="2", memory="1Gi").priority(1000).node_selector(pool="tight").obj()))
    for i in range(6):
        events.append((10.0 + 0.1 * i, "ADDED", make_pod(f"web-{i}", "web").req(
            cpu="100m", memory="128Mi").obj()))
    events.append((12.0, "ADDED", make_pod("huge", "batch").req(cpu="8", memory="1Gi").obj()))
    gated = make_pod("report", "batch").req(cpu="250m", memory="256Mi").gate("example.com/hold")
    events.append((13.0, "ADDED", gated.obj()))
    released = make_pod("report", "batch").req(cpu="250m", memory="256Mi").obj()
    events.append((163.0, "MODIFIED", released))
    return events


def _node_name_in(pod: PodBuilder, names: list[str]) -> dict[str, Any]:
    """``pod`` with required node affinity ``matchFields metadata.name In names`` (a
    DaemonSet pod's shape: NodeAffinity's PreFilterResult names the nodes)."""
    obj = pod.obj()
    obj["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}]}}}
    return obj


def small_cluster_events() -> list[tuple[float, str, dict[str, Any]]]:
    """Six nodes that each reject ``tolerant`` for another resource (n4 has one pod slot and
    holds one pod, n5 1500Mi of ephemeral-storage against 2Gi asked), a gated pod, and
    DaemonSet-shaped pods whose PreFilterResult names an absent node beside a real one."""
    def node(name: str, cpu: str, memory: str, pods: str = "110",
             storage: str = "20Gi") -> NodeBuilder:
        return make_node(name).capacity(cpu=cpu, memory=memory, pods=pods,
                                        ephemeral_storage=storage)
    events: list[tuple[float, str, dict[str, Any]]] = [
        (0.0, "ADDED", node("n1", "1", "4Gi").obj()),
        (0.0, "ADDED", node("n2", "4", "2Gi").obj()),
        (0.0, "ADDED", node("n3", "4", "8Gi").taint("other", "x", "NoSchedule").obj()),
        (0.0, "ADDED", node("n4", "4", "8Gi", pods="1").obj()),
        (0.0, "ADDED", node("n5", "4", "8Gi", storage="1500Mi").obj()),
        (0.0, "ADDED", node("n6", "4", "8Gi").extended("example.com/foo", "1").obj()),
        (0.5, "ADDED", make_pod("busy").req(cpu="600m", memory="1Gi").node("n1").obj()),
        (0.5, "ADDED", make_pod("busy2").req(cpu="100m", memory="600Mi").node("n2").obj()),
        (0.5, "ADDED", make_pod("busy4").req(cpu="100m").node("n4").obj()),
        (0.5, "ADDED", make_pod("busy6").req(cpu="100m").extended("example.com/foo", "1")
         .node("n6").obj()),
        (1.0, "ADDED", make_pod("tolerant").req(cpu="500m", memory="1536Mi",
                                                ephemeral_storage="2Gi")
         .extended("example.com/foo", "1").toleration("dedicated").obj()),
        (2.0, "ADDED", make_pod("gated").req(cpu="100m").gate("example.com/wait").obj()),
    ]
    for name, nodes in (("ds-mixed", ["gone-node", "n3"]), ("ds-ok", ["gone-node", "n5"])):
        events.append((3.0, "ADDED", _node_name_in(make_pod(name).req(cpu="100m"), nodes)))
    return events


def replay_small_cluster(engine: Engine, directory: Path) -> None:
    """:func:`small_cluster_events` stored as trace ``small`` and replayed as run ``small``."""
    path = write_trace(directory / "small.jsonl", *small_cluster_events())
    ingest_trace(engine, [TraceInput(path)], name="small")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "small"), config, registry, name="small")


@pytest.fixture
def small_run(engine: Engine, tmp_path: Path) -> Engine:
    """A database holding run ``small`` (:func:`small_cluster_events`)."""
    replay_small_cluster(engine, tmp_path)
    return engine


@dataclass(frozen=True)
class DoorRuns:
    """The session's database, its URL, and each run with its pods."""

    engine: Engine
    url: str
    pods: dict[str, list[str]]


def _pods(engine: Engine) -> dict[str, list[str]]:
    with engine.connect() as connection:
        runs = dict(connection.execute(select(Run.id, Run.name)).all())
        rows = connection.execute(select(RunEvent.run_id, RunEvent.pod).where(
            RunEvent.pod.is_not(None)).distinct()).all()
    pods: dict[str, list[str]] = {name: [] for name in runs.values()}
    for run_id, pod in rows:
        if pod is not None:
            pods[runs[run_id]].append(pod)
    return {name: sorted(keys) for name, keys in pods.items()}


@pytest.fixture(scope="session")
def door_runs(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorRuns]:
    """The runs every door is compared on, replayed once per session on SQLite (skipped when
    ``--backends`` leaves SQLite out)."""
    if "sqlite" not in request.config.getoption("--backends").split(","):
        pytest.skip("the door runs are replayed on SQLite only")
    directory = tmp_path_factory.mktemp("doors")
    url = f"sqlite:///{directory / 'doors.db'}"
    engine = open_database(url)
    defaults, registry = load()
    ingest_trace(engine, [TraceInput(sample_trace())])
    sample = get_trace(engine, "sample")
    replay_trace(engine, sample, defaults, registry, name="default")
    packing, packing_registry = load(sample_config())
    replay_trace(engine, sample, packing, packing_registry, name="packing")
    ingest_trace(engine, [TraceInput(data_dir("traces") / "dra-gpu.jsonl")], name="dra")
    replay_trace(engine, get_trace(engine, "dra"), defaults, registry, name="dra")
    wide = write_trace(Path(directory) / "wide.jsonl", *wide_cluster_events())
    ingest_trace(engine, [TraceInput(wide)], name="wide")
    # v1.34.2 breaks ties at random (v1.35 takes the score heap's root): the winner of the
    # wide tie is then anywhere in name order, which the score table must not hide.
    random_ties, random_registry = load(None, gates_at(V1_34))
    replay_trace(engine, get_trace(engine, "wide"), random_ties, random_registry, name="wide")
    replay_small_cluster(engine, Path(directory))
    yield DoorRuns(engine, url, _pods(engine))
    engine.dispose()
