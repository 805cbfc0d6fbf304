"""Replaying a stored trace: the one place that decides which scheduler configuration a replay
runs under.

``kaudit replay``, ``kaudit check``, ``kaudit compare``, ``kaudit demo`` and the sweep worker all
replay a stored trace, and a baseline made by one is compared with a run made by another; so
the rule lives here, once: an explicit configuration (a file, or a sweep's parsed document)
wins; ``--defaults`` asks for kube-scheduler's defaults; otherwise the configuration stored
with the trace (a kube-scheduler-simulator export carries one) is used, and the user is told
so; a trace without one replays under the defaults.

The configuration is loaded as the Kubernetes release chosen by the one rule of
:mod:`kaudit.services.versions` (``--kubernetes-version``, else the release the trace was
recorded from when kaudit mirrors it, else the fallback release): its feature gates belong to
that release, so its defaults, default plugins and plugin behaviour are that release's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from kaudit.config import FeatureGates, parse_feature_gates
from kaudit.config.model import SchedulerConfiguration
from kaudit.errors import InputError
from kaudit.framework.plugin import Plugin
from kaudit.queries.runs import RunSummary, get_run
from kaudit.replay.options import ReplaySummary
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load, load_object_config
from kaudit.services.versions import ResolvedVersion, resolve_version
from kaudit.store.traces import TraceSummary
from kaudit.versions import KubernetesVersion

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
    #: The Kubernetes release the user asked for (``--kubernetes-version``); None: the
    #: release the trace was recorded from when kaudit mirrors it, else the fallback.
    kubernetes_version: str | None = None

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
    #: What the user should be told about the choice (the stored configuration was used,
    #: the trace's release is not one kaudit mirrors).
    notices: tuple[str, ...] = ()
    #: Where the release came from (:mod:`kaudit.services.versions`' FROM_USER,
    #: FROM_RECORDING or FROM_FALLBACK).
    version_origin: str = ""

    @property
    def kubernetes_version(self) -> KubernetesVersion:
        """The release the configuration was loaded as (its feature gates')."""
        return self.config.feature_gates.version

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


def trace_version(trace: TraceSummary, explicit: str | None) -> ResolvedVersion:
    """The release to replay ``trace`` as: ``explicit`` (``--kubernetes-version``), else the
    release it was recorded from when kaudit mirrors it, else the fallback release."""
    return resolve_version(explicit, trace.kubernetes_version,
                           subject=f"trace '{trace.name}' was recorded from")


def release_gates(feature_gates: str | None, version: KubernetesVersion) -> FeatureGates:
    """``--feature-gates`` of ``version``, parsed as kube-scheduler of that release does."""
    return parse_feature_gates(feature_gates or "", version)


def resolve_config(trace: TraceSummary, choice: ConfigChoice) -> ResolvedConfig:
    """The configuration to replay ``trace`` under, by the one rule of this module, loaded as
    the release of :func:`trace_version`."""
    release = trace_version(trace, choice.kubernetes_version)
    gates, plugins = release_gates(choice.feature_gates, release.version), choice.plugins
    notices = release.notices
    if choice.file is not None:
        config, registry = load(choice.file, gates, plugins)
        origin = FROM_FILE
    elif choice.document is not None:
        config, registry = load_object_config(choice.document, choice.source, gates, plugins)
        origin = FROM_DOCUMENT
    elif not choice.defaults and trace.scheduler_config is not None:
        config, registry = load_object_config(
            trace.scheduler_config, f"trace {trace.name}: schedulerConfig", gates, plugins)
        origin, notices = FROM_TRACE, (stored_config_notice(trace), *notices)
    else:
        config, registry = load(None, gates, plugins)
        origin = FROM_DEFAULTS
    return ResolvedConfig(config, registry, origin, notices, release.origin)


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
