"""Shared fixtures: every test that touches the database runs on SQLite and on PostgreSQL.

PostgreSQL tests use a fresh database per test on the server named by
``KAUDIT_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``, used
only to create and drop the per-test databases). When that server is unreachable the
PostgreSQL variants are skipped, unless ``KAUDIT_REQUIRE_POSTGRES=1`` (set by ``.ci/run``)
makes that an error. ``--backends sqlite`` runs only one backend.

Hypothesis runs derandomized (the same examples on every run, so CI never fails on a draw
nobody can repeat); ``HYPOTHESIS_PROFILE=explore`` searches anew each run, for finding bugs.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result
from hypothesis import settings
from sqlalchemy import Engine, create_engine, select, text
from sqlalchemy.engine import make_url

from kaudit import versions
from kaudit.cli import cli
from kaudit.config import FeatureGates, parse_feature_gates
from kaudit.store.engine import resolve_url
from kaudit.store.models import Base
from kaudit.store.schema import open_database
from kaudit.versions import KubernetesVersion

settings.register_profile("kaudit", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kaudit"))

BACKENDS = ("sqlite", "postgresql")
POSTGRES_ADMIN_URL = os.environ.get("KAUDIT_TEST_POSTGRES_URL",
                                    "postgresql://postgres@127.0.0.1:5432/test")
REQUIRE_POSTGRES = os.environ.get("KAUDIT_REQUIRE_POSTGRES") == "1"
SHARED = Path(__file__).resolve().parents[2] / "shared"
#: Test data shipped with the project.
DATA = Path(__file__).resolve().parent / "data"

_ran: Counter[str] = Counter()
_postgres_error: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backends", default=",".join(BACKENDS),
                     help="comma-separated database backends to test (sqlite,postgresql)")


def _admin_engine() -> Engine | None:
    if _postgres_error:
        return None
    try:
        engine = create_engine(resolve_url(POSTGRES_ADMIN_URL), isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text("select 1"))
        return engine
    except Exception as exc:  # any failure means "no server"
        _postgres_error.append(f"{type(exc).__name__}: {exc}".splitlines()[0])
        return None


def pytest_report_header(config: pytest.Config) -> list[str]:
    backends = config.getoption("--backends")
    return [f"kaudit database backends: {backends} (PostgreSQL server: "
            f"{make_url(resolve_url(POSTGRES_ADMIN_URL)).render_as_string(hide_password=True)}"
            f"{', required' if REQUIRE_POSTGRES else ''})"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        markers = metafunc.definition.iter_markers("parametrize")
        if any("backend" in str(m.args[0]) for m in markers):
            return  # the test picks its backends itself
        chosen = [b.strip() for b in metafunc.config.getoption("--backends").split(",")]
        metafunc.parametrize("backend", [b for b in BACKENDS if b in chosen])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        for backend in BACKENDS:
            if f"[{backend}" in report.nodeid or f"-{backend}]" in report.nodeid:
                _ran[backend] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    line = ", ".join(f"{_ran[b]} passed on {b}" for b in BACKENDS)
    terminalreporter.write_line(f"kaudit database tests: {line}")
    if _postgres_error:
        terminalreporter.write_line(f"PostgreSQL unavailable: {_postgres_error[0]}")


@pytest.fixture
def db_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database on ``backend``, removed after the test."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'kaudit.db'}"
        return
    admin = _admin_engine()
    if admin is None:
        message = f"PostgreSQL unavailable: {_postgres_error[0]}"
        if REQUIRE_POSTGRES:
            pytest.fail(message)
        pytest.skip(message)
    name = f"kaudit_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(resolve_url(POSTGRES_ADMIN_URL)).set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a migrated, empty database."""
    engine = open_database(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def run_kaudit(db_url: str) -> Callable[..., Result]:
    """Run a kaudit command against the test database (``--db`` is added)."""
    runner = CliRunner()

    def run(*args: str, db: bool = True) -> Result:
        argv = [*args, "--db", db_url] if db else list(args)
        return runner.invoke(cli, argv, catch_exceptions=False)

    return run


def database_contents(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every kaudit table, for "the database is exactly as it was" checks."""
    contents = {}
    with engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            primary = list(table.primary_key.columns)
            rows = connection.execute(select(table).order_by(*primary)).all()
            contents[table.name] = [tuple(row) for row in rows]
    return contents


@pytest.fixture
def extender_service() -> Iterator[Any]:
    """A scheduler extender service on 127.0.0.1 (:class:`tests.extender_service.FakeExtender`)."""
    from tests.extender_service import FakeExtender

    fake = FakeExtender()
    yield fake
    fake.close()


def stored_digest(engine: Engine, run_id: int) -> str:
    """The event log digest of a stored run."""
    from kaudit.queries.runs import run_digest

    return run_digest(engine, run_id)


@pytest.fixture
def sample_path() -> Path:
    from kaudit.datadirs import sample_trace

    return sample_trace()


def replay_sample_twice(engine: Engine) -> tuple[str, str]:
    """Ingest the sample trace and replay it, as ``kaudit replay`` does (as the release its
    header names, v1.34.2), with the default configuration (run ``default``) and the
    bin-packing one (run ``packing``); returns the two run names."""
    from kaudit.datadirs import sample_config, sample_trace
    from kaudit.readers.ingest import TraceInput, ingest_trace
    from kaudit.replay.run import replay_trace
    from kaudit.services.replay import ConfigChoice, resolve_config
    from kaudit.store.traces import get_trace

    ingest_trace(engine, [TraceInput(sample_trace())])
    trace = get_trace(engine, "sample")
    for name, path in (("default", None), ("packing", sample_config())):
        resolved = resolve_config(trace, ConfigChoice(file=path))
        replay_trace(engine, trace, resolved.config, resolved.registry, name=name)
    return "default", "packing"


@pytest.fixture
def sample_runs(engine: Engine) -> Engine:
    """A database holding the sample trace replayed under two configurations."""
    replay_sample_twice(engine)
    return engine


#: The release named by the tests written against v1.34.2's behaviour (upstream's v1.34 tables
#: and oracle answers, event logs recorded at v1.34.2); the default release is the newest.
V1_34 = "v1.34.2"


def gates_at(release: str = V1_34, text: str = "") -> FeatureGates:
    """The feature gates of ``release`` with ``text`` (``--feature-gates``) applied."""
    return parse_feature_gates(text, versions.get(release))


#: The made-up release of :func:`made_up_release`.
MADE_UP = "v1.99.0"


def made_up_release(name: str = MADE_UP) -> KubernetesVersion:
    """A made-up Kubernetes release, built as ``tests/versions``' ``_other_release`` is (v1.34.2
    with ``dataclasses.replace``), that differs from v1.34.2 in every kind of fact yet replays
    any trace: a new gate (``MadeUpGate``, on) and a gate at another stage
    (``DRAConsumableCapacity``, BETA), TaintToleration weighted 5, parallelism 8 and one
    ungated change."""
    base = versions.get("v1.34.2")
    gates = dict(base.gates)
    gates["MadeUpGate"] = versions.GateSpec(True, versions.BETA)
    gates["DRAConsumableCapacity"] = versions.GateSpec(False, versions.BETA)
    plugins = tuple(versions.DefaultPlugin(p.name, 5) if p.name == "TaintToleration" else p
                    for p in base.default_multi_point)
    return replace(base, name=name, gates=MappingProxyType(gates), default_multi_point=plugins,
                   api_defaults=replace(base.api_defaults, parallelism=8),
                   ungated_changes=(versions.UngatedChange(
                       "made-up-change", "a made-up behaviour change",
                       "PR #99999; pkg/scheduler/schedule_one.go"),))


@pytest.fixture
def second_release(monkeypatch: pytest.MonkeyPatch) -> KubernetesVersion:
    """kaudit mirrors v1.34.2, its default here, and the made-up v1.99.0
    (:func:`made_up_release`), in this process: ``kaudit.versions.SUPPORTED``, which
    ``versions.get`` reads, holds both, and ``kaudit.versions.DEFAULT``, which the fallback
    release is, is v1.34.2."""
    other = made_up_release()
    monkeypatch.setattr(versions, "SUPPORTED", (versions.get(V1_34), other))
    monkeypatch.setattr(versions, "DEFAULT", versions.get(V1_34))
    return other


def write_trace(path: Path, *events: tuple[float, str, dict[str, Any]]) -> Path:
    """A native JSON Lines trace of ``(seconds after 2026-01-05T09:00:00Z, type, object)``."""
    lines = []
    for seconds, kind, obj in events:
        stamp = f"2026-01-05T09:{int(seconds) // 60:02d}:{seconds % 60:06.3f}Z"
        lines.append(orjson.dumps({"ts": stamp, "type": kind, "object": obj}))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


GPU_MODEL = "alibabacloud.com/gpu-card-model"


def gpu_share_events() -> list[tuple[float, str, dict[str, Any]]]:
    """A small GPU-sharing cluster in the Alibaba trace's shape: two 8-GPU V100 nodes and two
    4-GPU T4 nodes, then 48 pods sharing GPUs, taking whole ones or none, 0.1 s apart."""
    from kaudit.tracegen.builders import make_node, make_pod

    events: list[tuple[float, str, dict[str, Any]]] = []
    for i, (gpus, model) in enumerate(((8, "V100M16"), (8, "V100M16"), (4, "T4"), (4, "T4"))):
        events.append((0.0, "ADDED", make_node(f"gpu-{i}").capacity(
            cpu="32", memory="256Gi", pods="110").extended("nvidia.com/gpu", str(gpus))
            .extended("alibabacloud.com/gpu-milli", str(1000 * gpus)).label(GPU_MODEL, model)
            .obj()))
    shapes = [(500, 1, ""), (250, 1, ""), (1000, 1, ""), (700, 1, "T4"), (1000, 2, ""),
              (0, 0, ""), (300, 1, ""), (1000, 4, "V100M16")]
    for j in range(48):
        milli, count, models = shapes[j % len(shapes)]
        pod = make_pod(f"job-{j:02d}").req(cpu="2", memory="4Gi")
        if count:
            pod = pod.extended("alibabacloud.com/gpu-milli", str(milli * count)).annotation(
                "alibabacloud.com/gpu-milli", str(milli)).annotation(
                "alibabacloud.com/gpu-count", str(count))
            if count > 1:
                pod = pod.extended("nvidia.com/gpu", str(count))
            if models:
                pod = pod.annotation(GPU_MODEL, models)
        events.append((1.0 + 0.1 * j, "ADDED", pod.obj()))
    return events


def replay_gpu_policies(engine: Engine, directory: Path,
                        policies: tuple[str, ...] = ("FGD", "BestFit")) -> list[str]:
    """Ingest :func:`gpu_share_events` as trace ``gpus`` and replay it with each of the FGD
    paper's ``policies`` under its protocol (one try, GPU report); returns the run names."""
    from kaudit.fgd.paper import paper_configuration
    from kaudit.readers.ingest import TraceInput, ingest_trace
    from kaudit.replay.run import replay_trace
    from kaudit.scheduler.build import load_object_config
    from kaudit.store.traces import get_trace

    ingest_trace(engine, [TraceInput(write_trace(directory / "gpus.jsonl",
                                                 *gpu_share_events()))], name="gpus")
    names = []
    for policy in policies:
        config, registry = load_object_config(paper_configuration(policy), policy)
        replay_trace(engine, get_trace(engine, "gpus"), config, registry,
                     name=policy.lower(), seed=42, one_try=True, gpu_report=True,
                     tie_break="shuffled-name")
        names.append(policy.lower())
    return names
