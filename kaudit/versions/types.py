"""What one supported kube-scheduler release is made of, as kaudit reads it.

A :class:`KubernetesVersion` holds every fact that differs between upstream releases and
that kaudit's configuration and plugins depend on: the feature-gate table (the
``featuregate.VersionedSpecs`` of ``pkg/features/kube_features.go`` resolved at the
release's minor), the default MultiPoint plugin list of
``pkg/scheduler/apis/config/v1/default_plugins.go`` (``getDefaultPlugins``) with the plugins
``applyFeatureGates`` adds under a gate, the constants of
``pkg/scheduler/apis/config/v1/defaults.go`` that kaudit's defaulting uses, and the named
behaviour changes that no gate controls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: ``featuregate.prerelease`` values, as kaudit spells them.
ALPHA, BETA, GA, DEPRECATED = "ALPHA", "BETA", "GA", "DEPRECATED"


@dataclass(frozen=True)
class GateSpec:
    """A gate's state at a release: its default, its stage and whether it is locked to the
    default (``LockToDefault``)."""

    default: bool
    stage: str
    locked: bool = False


@dataclass(frozen=True)
class DefaultPlugin:
    """One entry of the default MultiPoint list: a plugin and its score weight (``None``
    where upstream leaves ``Weight`` unset)."""

    name: str
    weight: int | None = None


@dataclass(frozen=True)
class GatedPlugin:
    """A plugin ``applyFeatureGates`` adds to the default MultiPoint list when ``gate`` is
    on: inserted just before ``before`` (which the base list always holds), or appended when
    ``before`` is ``None``. A version's gated plugins apply in their order."""

    gate: str
    plugin: DefaultPlugin
    before: str | None = None


@dataclass(frozen=True)
class ApiDefaults:
    """The constants of ``SetDefaults_KubeSchedulerConfiguration`` and the
    ``SetDefaults_<Plugin>Args`` functions (``apis/config/v1/defaults.go``) kaudit uses."""

    parallelism: int
    percentage_of_nodes_to_score: int  # config.DefaultPercentageOfNodesToScore
    pod_initial_backoff_seconds: int
    pod_max_backoff_seconds: int
    # DefaultPreemptionArgs
    min_candidate_nodes_percentage: int
    min_candidate_nodes_absolute: int
    # InterPodAffinityArgs
    hard_pod_affinity_weight: int
    # VolumeBindingArgs
    bind_timeout_seconds: int
    # DynamicResourcesArgs: DynamicResourcesFilterTimeoutDefault, applied when
    # DRASchedulerFilterTimeout is on.
    dra_filter_timeout: str
    # defaultResourceSpec (NodeResourcesFit, NodeResourcesBalancedAllocation).
    resources: tuple[tuple[str, int], ...]
    # NodeResourcesFitArgs.scoringStrategy.type when no strategy is given.
    scoring_strategy: str
    # PodTopologySpreadArgs.defaultingType.
    topology_spread_defaulting: str


@dataclass(frozen=True)
class UngatedChange:
    """A behaviour change without a feature gate that arrived in this release (since the
    previous supported one; for the oldest, since the start of its minor): ``key`` names it
    for code that branches on it, ``summary`` says what changed and ``upstream`` where (pull
    request and file). :func:`kaudit.versions.carries` tells whether a release has it."""

    key: str
    summary: str
    upstream: str
    #: The plugins whose decisions it changes ("*" for the choice among tied nodes, none for
    #: what no plugin decides: queueing, the API server).
    plugins: tuple[str, ...] = ()
    #: Whether kaudit's replays do it (docs/versions.md says why not, where they do not).
    modelled: bool = True


@dataclass(frozen=True, eq=False)
class KubernetesVersion:
    """Everything version-specific about one upstream release (compared by identity: each
    release is one object of :data:`kaudit.versions.SUPPORTED`)."""

    name: str  # "v1.34.2"
    gates: Mapping[str, GateSpec]
    default_multi_point: tuple[DefaultPlugin, ...]
    gated_plugins: tuple[GatedPlugin, ...]
    api_defaults: ApiDefaults
    ungated_changes: tuple[UngatedChange, ...]
    #: Gates upstream removed by this release, with the value their behaviour is fixed at (a
    #: GA gate's code path kept, the gate gone): asking about one answers that value, and
    #: setting one is an unrecognized gate, as upstream.
    removed_gates: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def release(self) -> tuple[int, int, int]:
        """``(major, minor, patch)`` of :attr:`name`."""
        major, minor, patch = self.name.removeprefix("v").split(".")
        return int(major), int(minor), int(patch)

    @property
    def minor(self) -> str:
        """The minor release: ``"v1.34"``."""
        major, minor, _ = self.release
        return f"v{major}.{minor}"

    def __repr__(self) -> str:
        return f"KubernetesVersion({self.name!r})"
