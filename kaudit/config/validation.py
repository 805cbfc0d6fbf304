"""Validation of a defaulted configuration, collecting every error.

Mirrors ``ValidateKubeSchedulerConfiguration`` in
``pkg/scheduler/apis/config/validation/validation.go`` (v1.34): parallelism > 0; per
profile a schedulerName, percentageOfNodesToScore in [0, 100], no removed plugin names
(``EBSLimits`` ...), no repeated pluginConfig, valid args; unique scheduler names; the same
queueSort plugins and args in every profile; global percentageOfNodesToScore in
[0, 100]; podInitialBackoffSeconds > 0 and podMaxBackoffSeconds >= it.

Differences: upstream's table keys NodeResourcesFit's validator as
``"NodeResourcesFitArgs"`` so config validation skips it and the plugin rejects bad args
when it starts; kaudit validates them here, with the full field path. Extenders are
validated as upstream validates them (``kaudit/config/extenders.py``), plus the TLS settings
client-go's transport refuses when the scheduler starts (``insecure`` with a CA), so that
every door (``config show``, replay, what-if, sweeps, the dashboard) refuses the same
configurations through this one function.
"""

from __future__ import annotations

from kaudit.config.extenders import validate_extenders
from kaudit.config.fielderrors import (
    FieldError,
    GoStruct,
    child,
    duplicate,
    index,
    invalid,
    required,
)
from kaudit.config.model import EXTENSION_POINTS, yaml_name
from kaudit.config.plugins import Registry
from kaudit.config.v1types import API_VERSION, ConfigurationV1, PluginSet, ProfileV1

REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
_REMOVED = (f'was invalid in version "{API_VERSION}" '
            f'(KubeSchedulerConfiguration is version "{API_VERSION}")')


def _percentage(path: str, value: int | None) -> list[FieldError]:
    if value is not None and not 0 <= value <= 100:
        return [invalid(path, value, "not in valid range [0-100]")]
    return []


def _plugin_config(profile: ProfileV1, registry: Registry) -> list[FieldError]:
    errors: list[FieldError] = []
    for point in EXTENSION_POINTS:
        plugin_set = (profile.plugins or {}).get(point, PluginSet())
        for i, plugin in enumerate(plugin_set.enabled):
            if plugin.name in REMOVED_PLUGINS:
                path = plugin.origin or index(child(
                    profile.origin, f"plugins.{yaml_name(point)}.enabled"), i)
                errors.append(invalid(path, plugin.name, _REMOVED))
    seen: set[str] = set()
    for config in profile.plugin_config:
        if config.name in seen:
            errors.append(duplicate(config.origin, config.name))
        seen.add(config.name)
        if config.name in REMOVED_PLUGINS:
            errors.append(invalid(config.origin, config.name, _REMOVED))
        elif (spec := registry.args_spec(config.name)) is not None and config.args is not None:
            errors += [e.under(child(config.origin, "args"))
                       for e in spec.validate(config.args, registry.gates)]
    return errors


def _set_value(plugin_set: PluginSet) -> GoStruct:
    """The internal ``config.PluginSet`` as ``field.Error`` prints it and as
    ``apiequality.Semantic.DeepEqual`` compares it: ``Enabled`` then ``Disabled``, each a list
    of ``{Name, Weight}`` (an unset weight is 0 after conversion; ``mergePluginSet`` keeps a
    disabled plugin's name only) or nil when empty, as ``mergePluginSet`` leaves it."""
    enabled = [GoStruct(Name=p.name, Weight=p.weight or 0) for p in plugin_set.enabled]
    disabled = [GoStruct(Name=p.name, Weight=0) for p in plugin_set.disabled]
    return GoStruct(Enabled=enabled or None, Disabled=disabled or None)


def _common_queue_sort(profiles: tuple[ProfileV1, ...]) -> list[FieldError]:
    """``validateCommonQueueSort``, on the queueSort point as configured (not expanded)."""
    def queue_sort(profile: ProfileV1) -> PluginSet:
        return (profile.plugins or {}).get("QueueSort", PluginSet())

    errors: list[FieldError] = []
    canon = queue_sort(profiles[0])
    name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errors.append(invalid(child(profiles[0].origin, "plugins.queueSort.Enabled"),
                              len(canon.enabled), "only one queue sort plugin can be enabled"))
    args = next((c.args for c in profiles[0].plugin_config if name and c.name == name), None)
    for profile in profiles[1:]:
        current = queue_sort(profile)
        if _set_value(current) != _set_value(canon):
            errors.append(invalid(child(profile.origin, "plugins.queueSort"), _set_value(current),
                                  "must be the same for all profiles"))
        for config in profile.plugin_config:
            if config.name == name and config.args != args:
                errors.append(invalid(child(profile.origin, "pluginConfig.args"), config.args,
                                      "queueSort must be the same for all profiles"))
    return errors


def validate_configuration(config: ConfigurationV1, registry: Registry) -> list[FieldError]:
    errors: list[FieldError] = []
    if config.parallelism is not None and config.parallelism <= 0:
        errors.append(invalid("parallelism", config.parallelism,
                              "should be an integer value greater than zero"))
    if not config.profiles:
        errors.append(required("profiles"))
    last_seen: dict[str | None, str] = {}
    for profile in config.profiles:
        if not profile.scheduler_name:
            errors.append(required(child(profile.origin, "schedulerName")))
        errors += _percentage(child(profile.origin, "percentageOfNodesToScore"),
                              profile.percentage_of_nodes_to_score)
        errors += _plugin_config(profile, registry)
        if profile.scheduler_name in last_seen:
            errors.append(duplicate(child(profile.origin, "schedulerName"),
                                    last_seen[profile.scheduler_name]))
        last_seen[profile.scheduler_name] = child(profile.origin, "schedulerName")
    if config.profiles:
        errors += _common_queue_sort(config.profiles)
    errors += _percentage("percentageOfNodesToScore", config.percentage_of_nodes_to_score)
    initial = config.pod_initial_backoff_seconds
    if initial is not None and initial <= 0:
        errors.append(invalid("podInitialBackoffSeconds", initial, "must be greater than 0"))
    maximum = config.pod_max_backoff_seconds
    if maximum is not None and initial is not None and maximum < initial:
        errors.append(invalid("podMaxBackoffSeconds", maximum,
                              "must be greater than or equal to PodInitialBackoffSeconds"))
    errors += validate_extenders(config.extenders)
    return errors
