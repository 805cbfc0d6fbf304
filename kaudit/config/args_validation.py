"""Validation of in-tree plugin arguments (each plugin class names its function in its
``args_spec``).

Mirrors ``pkg/scheduler/apis/config/validation/validation_pluginargs.go`` as of v1.34:
the same checks, field paths and messages. Validators take args as a dict with v1 field
names; a missing field counts as Go's zero value, as in the internal type, so they work
on args as given (no defaulting) as well as on defaulted args. Two points follow v1.34
exactly: a missing ``scoringStrategy`` is not an error here, and RequestedToCapacityRatio
shape errors are reported under ``scoringStrategy.shape``. kaudit adds one check upstream
lacks in v1.34 (where the plugin would crash): type RequestedToCapacityRatio without
``requestedToCapacityRatio`` is Required, with the wording later upstream releases use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaudit.config.args_defaults import MAX_CUSTOM_PRIORITY_SCORE
from kaudit.config.duration import parse_duration
from kaudit.config.feature_gates import FeatureGates
from kaudit.config.fielderrors import (
    FieldError,
    GoStruct,
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    not_supported,
    required,
)
from kaudit.config.labels import validate_label_name
from kaudit.config.nodeselector import validate_node_selector, validate_preferred_terms

SCORING_STRATEGY_TYPES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
Args = dict[str, Any]


def _int(args: Mapping[str, Any], name: str) -> int:
    value = args.get(name)
    return 0 if value is None else int(value)


def validate_default_preemption_args(a: Args, _: FeatureGates) -> list[FieldError]:
    pct, absolute = _int(a, "minCandidateNodesPercentage"), _int(a, "minCandidateNodesAbsolute")
    errors = []
    if not 0 <= pct <= 100:
        errors.append(invalid("minCandidateNodesPercentage", pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errors.append(invalid("minCandidateNodesAbsolute", absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errors += [invalid("minCandidateNodesPercentage", pct,
                           "cannot be zero at the same time as minCandidateNodesAbsolute"),
                   invalid("minCandidateNodesAbsolute", absolute,
                           "cannot be zero at the same time as minCandidateNodesPercentage")]
    return errors


def validate_inter_pod_affinity_args(a: Args, _: FeatureGates) -> list[FieldError]:
    weight = _int(a, "hardPodAffinityWeight")
    if not 0 <= weight <= 100:
        return [invalid("hardPodAffinityWeight", weight, "not in valid range [0, 100]")]
    return []


def validate_pod_topology_spread_args(a: Args, _: FeatureGates) -> list[FieldError]:
    errors: list[FieldError] = []
    defaulting = a.get("defaultingType") or ""
    constraints = a.get("defaultConstraints") or []
    if defaulting not in ("System", "List"):
        errors.append(not_supported("defaultingType", defaulting, ("System", "List")))
    elif defaulting == "System" and constraints:
        errors.append(invalid("defaultingType", defaulting,
                              "when .defaultConstraints are not empty"))
    seen: list[tuple[str, str]] = []
    for i, c in enumerate(constraints):
        p = index("defaultConstraints", i)
        skew, topology_key = _int(c, "maxSkew"), c.get("topologyKey") or ""
        action = c.get("whenUnsatisfiable") or ""
        if skew <= 0:
            errors.append(invalid(child(p, "maxSkew"), skew, "not in valid range (0, inf)"))
        if not topology_key:
            errors.append(required(child(p, "topologyKey"), "can not be empty"))
        else:
            errors += validate_label_name(topology_key, child(p, "topologyKey"))
        if not action:
            errors.append(required(child(p, "whenUnsatisfiable"), "can not be empty"))
        elif action not in ("DoNotSchedule", "ScheduleAnyway"):
            errors.append(not_supported(child(p, "whenUnsatisfiable"), action,
                                        ("DoNotSchedule", "ScheduleAnyway")))
        if c.get("labelSelector") is not None:
            errors.append(forbidden(child(p, "labelSelector"), "constraint must not define a "
                                    "selector, as they deduced for each pod"))
        if (topology_key, action) in seen:
            errors.append(duplicate(p, f"{{{topology_key}, {action}}}"))
        seen.append((topology_key, action))
    return errors


def _shape_value(shape: list[dict[str, Any]]) -> list[GoStruct]:
    """``[]config.UtilizationShapePoint`` as ``field.Error`` prints it: each point's Go fields,
    ``Utilization`` then ``Score`` (0 when unset)."""
    return [GoStruct(Utilization=_int(point, "utilization"), Score=_int(point, "score"))
            for point in shape]


def validate_function_shape(shape: list[dict[str, Any]], path: str) -> list[FieldError]:
    if not shape:
        return [required(path, "at least one point must be specified")]
    errors: list[FieldError] = []
    for i in range(1, len(shape)):
        if _int(shape[i - 1], "utilization") >= _int(shape[i], "utilization"):
            errors.append(invalid(child(index(path, i), "utilization"),
                                  _int(shape[i], "utilization"),
                                  "values must be sorted in increasing order"))
            break
    for i, point in enumerate(shape):
        utilization, score = _int(point, "utilization"), _int(point, "score")
        if not 0 <= utilization <= 100:
            errors.append(invalid(child(index(path, i), "utilization"), utilization,
                                  "not in valid range [0, 100]"))
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(invalid(child(index(path, i), "score"), score,
                                  f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"))
    return errors


def _resources(resources: list[dict[str, Any]], path: str) -> list[FieldError]:
    errors = []
    for i, resource in enumerate(resources):
        weight = _int(resource, "weight")
        if weight <= 0 or weight > 100:
            errors.append(invalid(child(index(path, i), "weight"), weight,
                                  f"resource weight of {resource.get('name') or ''} "
                                  "not in valid range (0, 100]"))
    return errors


def validate_node_resources_balanced_allocation_args(a: Args, _: FeatureGates) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, resource in enumerate(a.get("resources") or []):
        p = index("resources", i)
        name = resource.get("name") or ""
        if name in seen:
            errors.append(duplicate(child(p, "name"), name))
        seen.add(name)
        if _int(resource, "weight") != 1:
            errors.append(invalid(child(p, "weight"), _int(resource, "weight"), "must be 1"))
    return errors


def validate_node_affinity_args(a: Args, _: FeatureGates) -> list[FieldError]:
    affinity = a.get("addedAffinity")
    if affinity is None:
        return []
    errors: list[FieldError] = []
    selector = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if selector is not None:
        errors += validate_node_selector(
            selector, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    terms = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    errors += validate_preferred_terms(
        terms, "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution")
    return errors


def validate_volume_binding_args(a: Args, gates: FeatureGates) -> list[FieldError]:
    errors: list[FieldError] = []
    timeout = _int(a, "bindTimeoutSeconds")
    if timeout < 0:
        errors.append(invalid("bindTimeoutSeconds", timeout,
                              "invalid BindTimeoutSeconds, should not be a negative value"))
    if gates.enabled("StorageCapacityScoring"):
        errors += validate_function_shape(a.get("shape") or [], "shape")
    elif a.get("shape") is not None:
        errors.append(invalid("shape", _shape_value(a["shape"]), "unexpected field `shape`, "
                              "remove it or turn on the feature gate StorageCapacityScoring"))
    return errors


def validate_node_resources_fit_args(a: Args, _: FeatureGates) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, name in enumerate(a.get("ignoredResources") or []):
        errors += validate_label_name(name, index("ignoredResources", i))
    for i, group in enumerate(a.get("ignoredResourceGroups") or []):
        p = index("ignoredResourceGroups", i)
        if "/" in group:
            errors.append(invalid(p, group, "resource group name can't contain '/'"))
        errors += validate_label_name(group, p)
    strategy = a.get("scoringStrategy")
    if strategy is None:
        return errors
    kind = strategy.get("type") or ""
    if kind not in SCORING_STRATEGY_TYPES:
        errors.append(not_supported("scoringStrategy.type", kind, SCORING_STRATEGY_TYPES))
    errors += _resources(strategy.get("resources") or [], "scoringStrategy.resources")
    ratio = strategy.get("requestedToCapacityRatio")
    if ratio is not None:
        errors += validate_function_shape(ratio.get("shape") or [], "scoringStrategy.shape")
    elif kind == "RequestedToCapacityRatio":
        errors.append(required("scoringStrategy.requestedToCapacityRatio",
                               "must be specified when type is RequestedToCapacityRatio"))
    return errors


def validate_dynamic_resources_args(a: Args, gates: FeatureGates) -> list[FieldError]:
    timeout = a.get("filterTimeout")
    if timeout is None:
        return []
    if not gates.enabled("DRASchedulerFilterTimeout"):
        return [forbidden("filterTimeout", "DRASchedulingFilterTimeout feature gate is disabled")]
    if parse_duration(timeout) < 0:
        return [invalid("filterTimeout", timeout, "must be zero or positive")]
    return []
