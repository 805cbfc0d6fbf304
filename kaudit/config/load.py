"""``load_configuration``: file to effective :class:`SchedulerConfiguration`.

Runs the stages kube-scheduler runs on ``--config``, in its order: strict decoding
(``decode``), defaulting (``defaulting``, ``apis/config/v1/defaults.go``), validation
(``validation``, ``apis/config/validation/validation.go``), then per profile the
framework's plugin expansion (``framework``, ``framework/runtime/framework.go``) and the
profile-map check that every profile uses the same queue sort plugin and args
(``pkg/scheduler/profile/profile.go``). Every failure is a :class:`ConfigError` whose
message starts with the file name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from kaudit.config.decode import DecodeError, decode_configuration
from kaudit.config.defaulting import default_configuration
from kaudit.config.extenders import ignored_resources, in_call_order, validate_extenders
from kaudit.config.feature_gates import FeatureGates
from kaudit.config.fielderrors import FieldError, child, format_errors, invalid
from kaudit.config.model import Profile, SchedulerConfiguration
from kaudit.config.plugins import PluginSpec, Registry, build_registry
from kaudit.config.profiles import (
    FrameworkError,
    closest_plugin,
    expand_plugins,
    needed_plugins,
)
from kaudit.config.source import read_file
from kaudit.config.v1types import ConfigurationV1, ProfileV1
from kaudit.config.validation import validate_configuration
from kaudit.errors import ConfigError

DEFAULTS_SOURCE = "<default configuration>"


def _plugin_args(profile: ProfileV1, registry: Registry) -> dict[str, dict[str, Any]]:
    """Args of every plugin the profile instantiates (enabled anywhere) that has args."""
    needed = set(needed_plugins(profile.plugins or {}))
    args: dict[str, dict[str, Any]] = {}
    for config in profile.plugin_config:
        if config.name in needed and config.name in registry.specs and config.args is not None:
            args.setdefault(config.name, config.args)
    return dict(sorted(args.items()))


def _profile(profile: ProfileV1, registry: Registry) -> Profile:
    name = profile.scheduler_name or ""
    plugins = expand_plugins(profile.plugins or {}, registry, name, profile.origin)
    plugin_args = _plugin_args(profile, registry)
    kinds = {plugin: spec.kind for plugin in plugin_args
             if (spec := registry.args_spec(plugin)) is not None}
    return Profile(scheduler_name=name, plugins=plugins, plugin_args=plugin_args,
                   percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
                   args_kinds=kinds)


def _same_queue_sort(profiles: list[tuple[ProfileV1, Profile]]) -> list[FieldError]:
    """``cfgValidator.validate`` of pkg/scheduler/profile: one queue sort for all."""
    first = profiles[0][1]
    sort = first.enabled("QueueSort")[0]
    errors = []
    for raw, profile in profiles[1:]:
        mine = profile.enabled("QueueSort")[0]
        path = child(raw.origin, "plugins.queueSort")
        if mine != sort:
            errors.append(invalid(path, mine, f'different queue sort plugins for profile '
                                  f'"{profile.scheduler_name}": "{mine}", first: "{sort}"'))
        elif profile.plugin_args.get(mine) != first.plugin_args.get(sort):
            errors.append(invalid(path, mine, "different queue sort plugin args for profile "
                                  f'"{profile.scheduler_name}"'))
    return errors


def build_configuration(config: ConfigurationV1, registry: Registry,
                        source: str) -> SchedulerConfiguration:
    """Default, validate and expand a decoded v1 configuration."""
    _refuse_unmodelled_gates(registry.gates)
    config = default_configuration(config, registry)
    # ``buildExtenders`` replaces NodeResourcesFit's ignoredResources before the plugin checks
    # its args (which kaudit checks with the rest of the configuration): replace them first.
    ignored = ignored_resources(config.extenders)
    without_fit: list[ProfileV1] = []
    if ignored and not validate_extenders(config.extenders):
        profiles = [_ignoring(raw, ignored) for raw in config.profiles]
        without_fit = [raw for raw, changed in zip(config.profiles, profiles, strict=True)
                       if changed is None]
        config = replace(config, profiles=tuple(
            changed or raw for raw, changed in zip(config.profiles, profiles, strict=True)))
    errors = validate_configuration(config, registry)
    if errors:
        raise ConfigError(format_errors(source, errors))
    if without_fit:
        raise ConfigError(f"{source}: {without_fit[0].origin}: can't find NodeResourcesFitArgs "
                          "in plugin config (extenders manage resources with "
                          "ignoredByScheduler)")
    built: list[tuple[ProfileV1, Profile]] = []
    for raw in config.profiles:
        try:
            built.append((raw, _profile(raw, registry)))
        except FrameworkError as exc:
            raise ConfigError(format_errors(source, [exc.error])) from None
    errors = _same_queue_sort(built)
    if errors:
        raise ConfigError(format_errors(source, errors))
    return SchedulerConfiguration(
        profiles={p.scheduler_name: p for _, p in built},
        feature_gates=registry.gates,
        percentage_of_nodes_to_score=config.percentage_of_nodes_to_score or 0,
        pod_initial_backoff_seconds=min(config.pod_initial_backoff_seconds or 1,
                                        MAX_DURATION_SECONDS),
        pod_max_backoff_seconds=min(config.pod_max_backoff_seconds or 10, MAX_DURATION_SECONDS),
        parallelism=config.parallelism or 16,
        source=None if source == DEFAULTS_SOURCE else source,
        warnings=tuple(f"{source}: {w}" for w in (*_unknown_plugin_config(config, registry),
                                                  *_saturated_backoffs(config)))
        + _unmodelled_gates(registry.gates),
        extenders=in_call_order(config.extenders),
    )


#: The longest Go ``time.Duration``, in whole seconds (about 292 years).
MAX_DURATION_SECONDS = (2**63 - 1) // 1_000_000_000


def _saturated_backoffs(config: ConfigurationV1) -> list[str]:
    """Upstream turns the backoff seconds (int64, validated only as positive) into a
    ``time.Duration``, which overflows past :data:`MAX_DURATION_SECONDS`; kaudit saturates
    there instead, and says so."""
    return [f"{name}: {value} is beyond the longest duration ({MAX_DURATION_SECONDS} s, "
            "about 292 years); the replay uses that"
            for name, value in (("podInitialBackoffSeconds", config.pod_initial_backoff_seconds),
                                ("podMaxBackoffSeconds", config.pod_max_backoff_seconds))
            if value is not None and value > MAX_DURATION_SECONDS]


def _ignoring(profile: ProfileV1, ignored: list[str]) -> ProfileV1 | None:
    """``buildExtenders``: the profile with NodeResourcesFit's ``ignoredResources`` replaced by
    the resources extenders manage with ``ignoredByScheduler``; None without that plugin."""
    for i, plugin_config in enumerate(profile.plugin_config):
        if plugin_config.name == "NodeResourcesFit":
            configs = list(profile.plugin_config)
            configs[i] = replace(plugin_config, args={**(plugin_config.args or {}),
                                                      "ignoredResources": list(ignored)})
            return replace(profile, plugin_config=tuple(configs))
    return None


#: DRA gates whose features kaudit does not model: DynamicResources behaves as with them off
#: (see docs/dra.md). Alpha and off in v1.34 and v1.35; on by default from v1.36.
UNMODELLED_GATES = ("DRAPartitionableDevices", "DRADeviceTaints", "DRAConsumableCapacity",
                    "DRADeviceBindingConditions", "DRAExtendedResource", "DRADeviceTaintRules")
#: The minor release from which kaudit models a gate of :data:`UNMODELLED_GATES` or
#: :data:`UNMODELLED_OTHER_GATES` (DRA: the allocator of that release on, v1.36 moved shared
#: counters into slices of their own; VolumeLimitScaling: the opt-in of v1.36).
MODELLED_FROM = {"DRAPartitionableDevices": (1, 36), "DRADeviceTaints": (1, 36),
                 "DRAConsumableCapacity": (1, 36), "DRADeviceTaintRules": (1, 37),
                 "VolumeLimitScaling": (1, 36)}


def unmodelled_at(name: str, gates: FeatureGates) -> bool:
    """Whether kaudit does not model the gate ``name`` at the release of ``gates``."""
    since = MODELLED_FROM.get(name)
    return since is None or gates.version.release[:2] < since
#: Other gates whose features kaudit does not model; what objects that use them get instead.
UNMODELLED_OTHER_GATES = {
    "VolumeLimitScaling": "NodeVolumeLimits does not check that an opted-in CSI driver is "
                          "installed on the node",
}


#: Gates whose features kaudit does not model at all, by what they turn on, and the minor
#: release from which kaudit models it after all (None: none yet). Turning one on is refused:
#: the scheduler kaudit would run is not the one the user asked for.
REFUSED_GATES: dict[str, tuple[str, tuple[int, int] | None]] = {
    "GenericWorkload": ("the Workload API (spec.workloadRef)", None),
    "GangScheduling": ("gang scheduling (the GangScheduling plugin)", None),
    "NodeDeclaredFeatures": ("the NodeDeclaredFeatures plugin of this release (its alpha "
                             "reason and feature registry)", (1, 36)),
    "TaintTolerationComparisonOperators": ("the toleration operators Lt and Gt", None),
    "TopologyAwareWorkloadScheduling": ("topology-aware workload scheduling", None),
    "WorkloadAwarePreemption": ("workload-aware preemption", None),
    "DRAWorkloadResourceClaims": ("workload resource claims", None),
    "DRANodeAllocatableResources": ("DRA node-allocatable resources", None),
    "DRAListTypeAttributes": ("DRA list-type attributes", None),
    "CompositePodGroup": ("composite pod groups", None),
    "PodGroupPreemptionPolicy": ("pod-group preemption policies", None),
    "InPlacePodVerticalScalingSchedulerPreemption": ("deferred scheduling of resized pods "
                                                     "(DeferredPodScheduling)", None),
    "InterPodAffinityHostnameFastPath": ("InterPodAffinity's hostname fast path", None),
    "SchedulerPreQueueingHints": ("pre-queueing hints", None),
    "DRADerivedAttributes": ("DRA derived attributes", None),
    "DRADeviceCompatibilityGroups": ("DRA device compatibility groups", None),
    "DRAOptionalNodeOperations": ("DRA optional node operations", None),
    "DRAFractionalCapacityRange": ("DRA fractional capacity ranges", None),
}


def _refuse_unmodelled_gates(gates: FeatureGates) -> None:
    release = gates.version.release[:2]
    refused = [f"{name}=true: kaudit does not model {what} (at {gates.version.name})"
               for name, (what, since) in REFUSED_GATES.items()
               if name in gates and gates.enabled(name) and (since is None or release < since)]
    if refused:
        raise ConfigError("feature gates: " + "; ".join(refused))


def _unmodelled_gates(gates: FeatureGates) -> tuple[str, ...]:
    """A warning per unmodelled gate the user turned on. Those a release turns on by default
    are not warned about here, on every load, but where an object uses one
    (:mod:`kaudit.model.unmodelled_features`)."""
    dra = [name for name in UNMODELLED_GATES
           if gates.enabled("DynamicResourceAllocation") and name in gates
           and gates.enabled(name) and unmodelled_at(name, gates)]
    other = [name for name in UNMODELLED_OTHER_GATES if name in gates and gates.enabled(name)
             and unmodelled_at(name, gates)]
    set_here = gates.overrides
    warnings = [f"feature gate {name}: kaudit does not model it; DynamicResources "
                "allocates as with it off" for name in dra if name in set_here]
    warnings += [f"feature gate {name}: kaudit does not model it; "
                 f"{UNMODELLED_OTHER_GATES[name]}" for name in other if name in set_here]
    return tuple(warnings)


def _unknown_plugin_config(config: ConfigurationV1, registry: Registry) -> list[str]:
    """``pluginConfig`` entries naming no registered plugin: upstream ignores them silently;
    kaudit keeps the behaviour and says so."""
    warnings = []
    for profile in config.profiles:
        for entry in profile.plugin_config:
            if entry.name in registry.specs:
                continue
            close = closest_plugin(entry.name, registry)
            hint = f'; did you mean "{close}"?' if close else ""
            warnings.append(f'{entry.origin}: pluginConfig for "{entry.name}", which is no '
                            f"registered plugin: ignored, as kube-scheduler ignores it{hint}")
    return warnings


def load_object(obj: Any, source: str, *, plugins: Mapping[str, PluginSpec],
                feature_gates: FeatureGates | None = None) -> SchedulerConfiguration:
    """Like :func:`load_configuration` for an already parsed document."""
    registry = build_registry(feature_gates or FeatureGates(), plugins)
    try:
        decoded = decode_configuration(obj, registry)
    except DecodeError as exc:
        raise ConfigError(format_errors(source, exc.errors)) from None
    return build_configuration(decoded, registry, source)


def load_configuration(path: Path | None = None, *, plugins: Mapping[str, PluginSpec],
                       feature_gates: FeatureGates | None = None) -> SchedulerConfiguration:
    """The effective configuration in the YAML or JSON file ``path``, or kube-scheduler's
    defaults (one ``default-scheduler`` profile) when ``path`` is ``None``. ``plugins`` are
    the registered plugins' specs (``kaudit.scheduler.registry.plugin_specs``)."""
    if path is None:
        registry = build_registry(feature_gates or FeatureGates(), plugins)
        return build_configuration(ConfigurationV1(), registry, DEFAULTS_SOURCE)
    path = Path(path)
    return load_object(read_file(path), str(path), plugins=plugins,
                       feature_gates=feature_gates)
