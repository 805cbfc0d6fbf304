"""Turning a sweep spec into cells: traces ingested, configurations loaded, content keys.

This runs where ``kaudit sweep`` runs (the coordinator): trace files are read here and stored
in the database, so workers need only the database, never the files. Each cell gets a key
over what decides its result (the stored trace's content hash, the effective configuration
with its Kubernetes release, feature gates and out-of-tree plugins, the seed and the replay
options), so the same cell in a sweep run again is recognised and skipped once finished. A
cell's release is its configuration's ``kubernetesVersion``, else its trace's own release when
kaudit mirrors it, else the fallback (:mod:`kaudit.services.versions`, as ``kaudit replay``).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.errors import InputError, KauditError
from kaudit.readers.alibaba import AlibabaOptions
from kaudit.readers.formats import ALIBABA
from kaudit.readers.ingest import EVENTS, SNAPSHOT, TraceInput, ingest_trace
from kaudit.scheduler.build import load_object_config
from kaudit.services.replay import ConfigChoice, release_gates, resolve_config, trace_version
from kaudit.services.versions import UNVERSIONED_RELEASE, resolve_version
from kaudit.store.models import Trace
from kaudit.store.traces import TraceSummary, get_trace
from kaudit.sweep.spec import SEED_TOKEN, ConfigSpec, SweepSpec, TraceSpec
from kaudit.versions import KubernetesVersion

#: Replay options of a cell, as ``replay_trace`` takes them, with kaudit replay's defaults.
#: Replay options added after sweeps were first keyed: in a cell's key only when set to other
#: than their default, so that cells finished before they existed keep their keys.
KEYED_WHEN_SET = frozenset({"cycleDuration"})
DEFAULT_REPLAY: dict[str, Any] = {
    "lifetime": "recorded", "recreatePreempted": True, "bindLatency": 0.0,
    "apiLatency": 0.02, "victimTermination": 1.0, "cycleDuration": 0.0, "oneTry": False,
    "gpuReport": False,
    "tieBreak": "random",
}


@dataclass(frozen=True)
class CellTask:
    """Everything a worker needs to replay one cell, plain data (sent over the network)."""

    position: int
    key: str
    trace: str
    config: str
    seed: int
    run_name: str
    trace_id: int
    #: The configuration to replay under; None for a ``fromTrace`` configuration (the
    #: worker resolves the trace's stored one, as ``kaudit replay`` does).
    config_document: dict[str, Any] | None
    config_source: str
    feature_gates: str
    plugins: tuple[str, ...]
    replay: dict[str, Any]
    #: The Kubernetes release the cell mirrors (resolved when the sweep was planned).
    kubernetes_version: str | None = None

    def config_choice(self) -> ConfigChoice:
        """What the cell asks :mod:`kaudit.services.replay` for: its document, or (None) the
        trace's stored configuration, else the defaults, as its release."""
        return ConfigChoice(document=self.config_document, source=self.config_source,
                            feature_gates=self.feature_gates, plugins=self.plugins,
                            kubernetes_version=self.kubernetes_version)

    def replay_kwargs(self) -> dict[str, Any]:
        r = self.replay
        return {"seed": self.seed, "lifetime": r["lifetime"],
                "recreate_preempted": r["recreatePreempted"],
                "bind_latency_us": round(r["bindLatency"] * 1_000_000),
                "api_latency_us": round(r["apiLatency"] * 1_000_000),
                "victim_termination_us": round(r["victimTermination"] * 1_000_000),
                "cycle_duration_us": round(r["cycleDuration"] * 1_000_000),
                "one_try": r["oneTry"], "gpu_report": r["gpuReport"],
                "tie_break": r["tieBreak"]}


def _located(exc: KauditError, where: str) -> KauditError:
    """``exc`` with ``where`` (the spec and its entry) before its message, of the same exit
    code: an input error stays an input error, a database error a database error."""
    located = InputError(f"{where}: {exc}")
    located.exit_code = exc.exit_code
    return located


def _number(value: Any) -> Any:
    """Numbers as floats, so that ``1`` and ``1.0`` in a spec key the same cell."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else value


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def config_digest(config: ConfigSpec, trace: TraceSummary | None = None,
                  release: str | None = None) -> str:
    """The digest of the effective configuration (what kube-scheduler would run after
    defaulting) as the Kubernetes release ``release`` (the configuration's, else the trace's,
    by the rule of :func:`kaudit.services.replay.trace_version`), its feature gates and the
    out-of-tree plugins it names; of ``trace``'s stored configuration for a ``fromTrace`` one.
    A release other than the one every run mirrored before releases were kept is in the
    digest, so cells keyed before keep their keys."""
    if config.from_trace:
        if trace is None:
            raise ValueError("a fromTrace configuration is digested per trace")
        loaded = resolve_config(trace, ConfigChoice(feature_gates=config.feature_gates,
                                                    plugins=config.plugins,
                                                    kubernetes_version=release)).config
    else:
        version = resolve_version_of(config, trace, release)
        loaded, _ = load_object_config(config.document, config.source,
                                       release_gates(config.feature_gates, version),
                                       config.plugins)
    name = loaded.feature_gates.version.name
    gates = dict(loaded.feature_gates)
    for late in LATE_GATES.get(name, ()):
        if late not in loaded.feature_gates.overrides:
            gates.pop(late, None)
    return _digest({"config": loaded.to_dict(), "featureGates": gates,
                    "plugins": sorted(config.plugins),
                    **({"kubernetesVersion": name} if name != UNVERSIONED_RELEASE else {})})


#: Gates added to a release's table after cells were first keyed with it: they enter the key
#: only when set, so those cells keep their keys.
LATE_GATES: dict[str, tuple[str, ...]] = {"v1.34.2": ("PodTopologyLabelsAdmission",)}


def resolve_version_of(config: ConfigSpec, trace: TraceSummary | None,
                       release: str | None = None) -> KubernetesVersion:
    """The release a cell of ``config`` on ``trace`` mirrors: ``release`` when given, else
    the configuration's ``kubernetesVersion``, else the trace's own release when kaudit
    mirrors it, else the fallback."""
    explicit = release or config.kubernetes_version
    if trace is None:
        return resolve_version(explicit).version
    return trace_version(trace, explicit).version


def _inputs(trace: TraceSpec) -> list[TraceInput]:
    return ([TraceInput(p, SNAPSHOT) for p in trace.snapshots]
            + [TraceInput(p, EVENTS, trace.format) for p in trace.files])


def _alibaba(trace: TraceSpec, seed: int) -> AlibabaOptions | None:
    options = dict(trace.alibaba or {})
    if not options and trace.format != ALIBABA and trace.step is None:
        return None
    if options.get("seed") == SEED_TOKEN:
        options["seed"] = seed
    kwargs: dict[str, Any] = {
        "shuffle": options.get("shuffle", False), "seed": options.get("seed", 42),
        "gpu_load": _number(options.get("gpuLoad")), "deletions": options.get("deletions", True),
        "gpu_sharing": options.get("gpuSharing", "whole")}
    if trace.step is not None:
        kwargs["step_us"] = round(trace.step * 1_000_000)
    return AlibabaOptions(**kwargs)


def _start_us(trace: TraceSpec) -> int | None:
    if trace.start is None:
        return None
    from kaudit.model.timestamps import parse_timestamp

    raw: Any = trace.start
    with contextlib.suppress(ValueError):
        raw = float(raw) if any(c in raw for c in ".eE") else int(raw)
    try:
        return parse_timestamp(raw)
    except ValueError as exc:
        raise InputError(f"start: {exc}") from None


def ingest_for(engine: Engine, spec: SweepSpec, trace: TraceSpec, seed: int) -> TraceSummary:
    """The stored trace of ``trace`` for a cell of ``seed``: a stored trace by name, or the
    files ingested (a second ingest of identical content stores nothing)."""
    if trace.stored is not None:
        try:
            return get_trace(engine, trace.stored)
        except KauditError as exc:
            raise _located(exc, f"{spec.path}: trace {trace.label}") from None
    suffix = f"-{seed}" if trace.per_seed else ""
    wanted: str | None = f"{spec.name}.{trace.label}{suffix}"
    with engine.connect() as connection:
        if connection.scalar(select(Trace.id).where(Trace.name == wanted)) is not None:
            wanted = None  # another content under that name (the files changed): name it anew
    try:
        result = ingest_trace(
            engine, _inputs(trace), name=wanted, start_us=_start_us(trace),
            step_us=round((trace.step or 0) * 1_000_000), sort=trace.sort,
            skip_invalid=trace.skip_invalid, alibaba=_alibaba(trace, seed),
            scheduler_config=trace.use_config)
    except KauditError as exc:
        raise _located(exc, f"{spec.path}: trace {trace.label}") from None
    return get_trace(engine, result.trace_id)


def _run_name(spec: SweepSpec, trace: str, config: str, seed: int) -> str:
    name = f"{spec.name}.{config}.{trace}.s{seed}"
    if len(name) > 200:
        name = f"{name[:180]}.{_digest(name)[:12]}"
    return re.sub(r"/", "-", name)


def plan_cells(engine: Engine, spec: SweepSpec,
               progress: Callable[[str], None] | None = None) -> list[CellTask]:
    """Ingest the spec's traces, load its configurations, and key every cell."""
    configs = {config.label: config for config in spec.configs}
    for config in spec.configs:  # a configuration that does not load fails before any ingest
        if not config.from_trace:
            try:
                config_digest(config, release=config.kubernetes_version)
            except KauditError as exc:
                raise _located(exc, f"{spec.path}: config {config.label}") from None
    digests: dict[tuple[str, int, str], str] = {}
    traces: dict[tuple[str, int | None], tuple[TraceSummary, str | None]] = {}
    tasks = []
    for position, cell in enumerate(spec.cells):
        trace = spec.trace(cell.trace)
        slot = (cell.trace, cell.seed if trace.per_seed else None)
        if slot not in traces:
            if progress is not None:
                progress(f"trace {cell.trace}" + (f" (seed {cell.seed})" if trace.per_seed
                                                  else ""))
            ingested = ingest_for(engine, spec, trace, cell.seed)
            traces[slot] = (ingested, stored_hash(engine, ingested))
        stored, content = traces[slot]
        config = configs[cell.config]
        release = resolve_version_of(config, stored).name
        # A fromTrace configuration is each trace's own; any other is the same on every trace
        # of one release.
        known = (cell.config, stored.id if config.from_trace else 0, release)
        if known not in digests:
            try:
                digests[known] = config_digest(config, stored, release)
            except KauditError as exc:
                raise _located(exc, f"{spec.path}: config {config.label}, trace "
                                    f"{cell.trace}") from None
        digest = digests[known]
        replay = {key: _number(value) for key, value in
                  {**DEFAULT_REPLAY, **spec.replay, **config.replay}.items()}
        key = _digest({"trace": content, "config": digest, "seed": cell.seed,
                       "replay": {k: v for k, v in replay.items()
                                  if not (k in KEYED_WHEN_SET and v == DEFAULT_REPLAY[k])}})
        tasks.append(CellTask(
            position=position, key=key, trace=cell.trace, config=cell.config, seed=cell.seed,
            run_name=_run_name(spec, cell.trace, cell.config, cell.seed), trace_id=stored.id,
            config_document=None if config.from_trace else config.document,
            config_source=config.source,
            feature_gates=config.feature_gates, plugins=config.plugins, replay=replay,
            kubernetes_version=release))
    _refuse_identical(spec, tasks)
    return tasks


def _refuse_identical(spec: SweepSpec, tasks: list[CellTask]) -> None:
    """Two cells with one key would be one replay under two labels: say which entries of the
    spec are the same, rather than run one and report it twice (or lose one)."""
    seen: dict[str, CellTask] = {}
    for task in tasks:
        first = seen.setdefault(task.key, task)
        if first is task:
            continue
        if first.config != task.config:
            what = (f"configs {first.config} and {task.config} are the same configuration "
                    "(the same effective KubeSchedulerConfiguration, Kubernetes release, "
                    "feature gates, plugins and replay options)")
        elif first.trace != task.trace:
            what = f"traces {first.trace} and {task.trace} are the same trace content"
        else:
            what = f"cells {first.position} and {task.position} are the same cell"
        raise InputError(f"{spec.path}: {what}: their cells would be one replay; remove one "
                         "or make them differ")


def stored_hash(engine: Engine, trace: TraceSummary) -> str | None:
    with engine.connect() as connection:
        return connection.scalar(select(Trace.content_hash).where(Trace.id == trace.id))


def task_from_json(data: dict[str, Any]) -> CellTask:
    fields = {k: v for k, v in data.items() if k in CellTask.__dataclass_fields__}
    return CellTask(**{**fields, "plugins": tuple(fields["plugins"])})

