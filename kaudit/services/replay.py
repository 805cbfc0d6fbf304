"""Replaying a stored trace: the one place that decides which scheduler configuration a replay
runs under.

``kaudit replay``, ``kaudit check``, ``kaudit compare``, ``kaudit demo`` and the sweep worker all
replay a stored trace, and a baseline made by one is compared with a run made by another; so
the rule lives here, once: an explicit configuration (a file, or a sweep's parsed document)
wins; ``--defaults`` asks for kube-scheduler's defaults; otherwise the configuration stored
with the trace (a kube-scheduler-simulator export carries one) is used, and the user is told
so; a trace without one replays under the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from kaudit.config.model import SchedulerConfiguration
from kaudit.errors import InputError
from kaudit.framework.plugin import Plugin
from kaudit.queries.runs import RunSummary, get_run
from kaudit.replay.options import ReplaySummary
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load, load_object_config
from kaudit.store.traces import TraceSummary

#: Where a resolved configuration came from.
FROM_FILE, FROM_DOCUMENT, FROM_DEFAULTS, FROM_TRACE = "file", "document", "defaults", "trace"


@dataclass(frozen=True)
class ConfigChoice:
    """What the user asked for. At most one of ``file``, ``document`` and ``defaults``; none
    of them means "the trace's stored configuration, else kube-scheduler's defaults"."""

    file: Path | None = None
    #: An already parsed KubeSchedulerConfiguration (a sweep's), named by ``source``.
    document: dict[str, Any] | None = None
    source: str = ""
    defaults: bool = False
    feature_gates: str | None = None
    plugins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        given = [name for name, on in (("--config", self.file is not None),
                                        ("a configuration document", self.document is not None),
                                        ("--defaults", self.defaults)) if on]
        if len(given) > 1:
            raise InputError(f"{' and '.join(given)} exclude each other")


@dataclass(frozen=True)
class ResolvedConfig:
    """The configuration a replay runs under, with its plugin registry and its origin."""

    config: SchedulerConfiguration
    registry: dict[str, type[Plugin]]
    #: One of FROM_FILE, FROM_DOCUMENT, FROM_DEFAULTS, FROM_TRACE.
    origin: str
    #: What the user should be told about the choice (the stored configuration was used).
    notices: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """A short name for reports: the file's name, ``default`` or ``trace``."""
        if self.origin in (FROM_FILE, FROM_DOCUMENT) and self.config.source:
            source = self.config.source
            return Path(source).name if self.origin == FROM_FILE else source
        return "default" if self.origin == FROM_DEFAULTS else "trace"


def stored_config_notice(trace: TraceSummary) -> str:
    return (f"using the scheduler configuration stored with trace '{trace.name}' "
            "(--defaults to ignore it)")


def resolve_config(trace: TraceSummary, choice: ConfigChoice) -> ResolvedConfig:
    """The configuration to replay ``trace`` under, by the one rule of this module."""
    gates, plugins = choice.feature_gates, choice.plugins
    if choice.file is not None:
        config, registry = load(choice.file, gates, plugins)
        return ResolvedConfig(config, registry, FROM_FILE)
    if choice.document is not None:
        config, registry = load_object_config(choice.document, choice.source, gates, plugins)
        return ResolvedConfig(config, registry, FROM_DOCUMENT)
    if not choice.defaults and trace.scheduler_config is not None:
        config, registry = load_object_config(
            trace.scheduler_config, f"trace {trace.name}: schedulerConfig", gates, plugins)
        return ResolvedConfig(config, registry, FROM_TRACE, (stored_config_notice(trace),))
    config, registry = load(None, gates, plugins)
    return ResolvedConfig(config, registry, FROM_DEFAULTS)


@dataclass(frozen=True)
class ReplayResult:
    run: RunSummary
    summary: ReplaySummary
    resolved: ResolvedConfig


def replay_stored_trace(engine: Engine, trace: TraceSummary, resolved: ResolvedConfig,
                        **options: Any) -> ReplayResult:
    """Replay ``trace`` under ``resolved`` (from :func:`resolve_config`); ``options`` are
    :func:`kaudit.replay.run.replay_trace`'s (name, seed, lifetime, ...)."""
    run_id, summary = replay_trace(engine, trace, resolved.config, resolved.registry, **options)
    return ReplayResult(get_run(engine, str(run_id)), summary, resolved)
