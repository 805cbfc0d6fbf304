"""The effective scheduler configuration that the rest of kaudit reads.

Mirrors what kube-scheduler ends up running with (``pkg/scheduler/apis/config/types.go``
after defaulting, and each profile's plugin lists as the framework expands them in
``pkg/scheduler/framework/runtime/framework.go``). :meth:`SchedulerConfiguration.to_dict`
renders it back as a ``kubescheduler.config.k8s.io/v1`` KubeSchedulerConfiguration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaudit.config.extenders import ExtenderConfig
from kaudit.config.feature_gates import FeatureGates

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
EXTENSION_POINTS: tuple[str, ...] = (
    "PreEnqueue", "QueueSort", "PreFilter", "Filter", "PostFilter", "PreScore", "Score",
    "Reserve", "Permit", "PreBind", "Bind", "PostBind",
)


def yaml_name(point: str) -> str:
    """The v1 field name of an extension point: ``PreFilter`` -> ``preFilter``."""
    return point[0].lower() + point[1:]


@dataclass(frozen=True)
class PluginRef:
    """A plugin enabled at an extension point; ``weight`` matters only at Score."""

    name: str
    weight: int = 0


@dataclass(frozen=True)
class Profile:
    """One scheduling profile, with its final ordered plugin list at every point."""

    scheduler_name: str
    plugins: Mapping[str, tuple[PluginRef, ...]]
    plugin_args: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    #: The v1 args kind of each plugin in ``plugin_args`` that has one (in-tree plugins).
    args_kinds: Mapping[str, str] = field(default_factory=dict)

    def enabled(self, point: str) -> tuple[str, ...]:
        """Names of the plugins run at ``point``, in order."""
        if point not in EXTENSION_POINTS:
            raise KeyError(f"unknown extension point {point!r}")
        return tuple(ref.name for ref in self.plugins.get(point, ()))

    def weight(self, plugin_name: str) -> int:
        """The score weight of a plugin enabled at Score."""
        for ref in self.plugins.get("Score", ()):
            if ref.name == plugin_name:
                return ref.weight
        raise KeyError(f"{plugin_name} is not a Score plugin of profile {self.scheduler_name}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schedulerName": self.scheduler_name}
        if self.percentage_of_nodes_to_score is not None:
            out["percentageOfNodesToScore"] = self.percentage_of_nodes_to_score
        # multiPoint "*" switches the default plugins off, so the lists below are exactly
        # what runs: loading this output again gives the same profile.
        plugins: dict[str, Any] = {"multiPoint": {"disabled": [{"name": "*"}]}}
        for point in EXTENSION_POINTS:
            refs = self.plugins.get(point, ())
            if refs:
                plugins[yaml_name(point)] = {"enabled": [
                    {"name": r.name, "weight": r.weight} if point == "Score" else {"name": r.name}
                    for r in refs]}
        out["plugins"] = plugins
        out["pluginConfig"] = [{"name": name, "args": _args_dict(self.args_kinds.get(name), args)}
                               for name, args in sorted(self.plugin_args.items())]
        return out


def _args_dict(kind: str | None, args: Mapping[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in args.items() if v is not None}
    if kind is not None:  # a typed (in-tree) args kind
        return {"apiVersion": API_VERSION, "kind": kind, **fields}
    return dict(fields)


@dataclass(frozen=True, kw_only=True)
class SchedulerConfiguration:
    """A loaded, defaulted and validated KubeSchedulerConfiguration."""

    profiles: Mapping[str, Profile]
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    pod_max_in_unschedulable_pods_duration_seconds: int = 300
    parallelism: int = 16
    source: str | None = None
    #: What loading noticed but upstream accepts (a ``pluginConfig`` entry for no plugin).
    warnings: tuple[str, ...] = ()
    #: Scheduler extenders, shared by every profile, in the order they are called
    #: (ignorable ones last).
    extenders: tuple[ExtenderConfig, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The effective configuration as a v1 KubeSchedulerConfiguration object."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "parallelism": self.parallelism,
            "percentageOfNodesToScore": self.percentage_of_nodes_to_score,
            "podInitialBackoffSeconds": self.pod_initial_backoff_seconds,
            "podMaxBackoffSeconds": self.pod_max_backoff_seconds,
            "profiles": [profile.to_dict() for profile in self.profiles.values()],
            **({"extenders": [e.to_dict() for e in self.extenders]} if self.extenders else {}),
        }
