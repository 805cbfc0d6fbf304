"""Defaulting of in-tree plugin arguments (each plugin class names its function in its
``args_spec``).

Mirrors the ``SetDefaults_<Plugin>Args`` functions of
``pkg/scheduler/apis/config/v1/defaults.go`` (v1.34), including their feature-gate
dependencies (``StorageCapacityScoring`` for the VolumeBinding shape,
``DRASchedulerFilterTimeout`` for the DynamicResources filter timeout). The result is a
complete dict: every field of the v1 type, camelCase, with Go's zero value where upstream
leaves a non-pointer field unset (``[]`` for lists, ``False``); ``None`` stands for an
unset pointer (``addedAffinity``, ``filterTimeout`` with the gate off). The constants are the
release's: ``api_defaults`` of the :class:`~kaudit.versions.KubernetesVersion` of the gates
each function is given.
"""

from __future__ import annotations

import copy
from typing import Any

from kaudit.config.duration import format_duration, parse_duration
from kaudit.config.feature_gates import FeatureGates
from kaudit.versions import DEFAULT, KubernetesVersion

MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
#: DynamicResourcesFilterTimeoutDefault of the default release.
DRA_FILTER_TIMEOUT_DEFAULT = DEFAULT.api_defaults.dra_filter_timeout


def default_resources(version: KubernetesVersion = DEFAULT) -> list[dict[str, Any]]:
    """``defaultResourceSpec`` of ``version``."""
    return [{"name": name, "weight": weight} for name, weight in version.api_defaults.resources]


def _resources(given: list[dict[str, Any]] | None,
               version: KubernetesVersion) -> list[dict[str, Any]]:
    """Resources with the default set for an empty list and weight 0 turned into 1."""
    if not given:
        return default_resources(version)
    return [{"name": r.get("name") or "", "weight": int(r.get("weight") or 0) or 1}
            for r in given]


def _shape(points: list[dict[str, Any]]) -> list[dict[str, int]]:
    return [{"utilization": int(p.get("utilization") or 0), "score": int(p.get("score") or 0)}
            for p in points]


def set_defaults_default_preemption(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    defaults = gates.version.api_defaults
    pct, absolute = a.get("minCandidateNodesPercentage"), a.get("minCandidateNodesAbsolute")
    return {"minCandidateNodesPercentage":
                defaults.min_candidate_nodes_percentage if pct is None else int(pct),
            "minCandidateNodesAbsolute":
                defaults.min_candidate_nodes_absolute if absolute is None else int(absolute)}


def set_defaults_dynamic_resources(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    timeout = a.get("filterTimeout")
    if timeout is None and gates.enabled("DRASchedulerFilterTimeout"):
        timeout = gates.version.api_defaults.dra_filter_timeout
    return {"filterTimeout": None if timeout is None
            else format_duration(parse_duration(timeout))}


def set_defaults_inter_pod_affinity(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    weight = a.get("hardPodAffinityWeight")
    default_weight = gates.version.api_defaults.hard_pod_affinity_weight
    return {"hardPodAffinityWeight": default_weight if weight is None else int(weight),
            "ignorePreferredTermsOfExistingPods":
                bool(a.get("ignorePreferredTermsOfExistingPods"))}


def set_defaults_node_affinity(a: dict[str, Any], _: FeatureGates) -> dict[str, Any]:
    return {"addedAffinity": copy.deepcopy(a.get("addedAffinity"))}


def set_defaults_node_resources_balanced_allocation(a: dict[str, Any], gates: FeatureGates
                                                   ) -> dict[str, Any]:
    return {"resources": _resources(a.get("resources"), gates.version)}


def set_defaults_node_resources_fit(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    version = gates.version
    given = a.get("scoringStrategy")
    if given is None:
        strategy: dict[str, Any] = {"type": version.api_defaults.scoring_strategy,
                                    "resources": default_resources(version)}
    else:
        strategy = {"type": given.get("type") or "",
                    "resources": _resources(given.get("resources"), version)}
        ratio = given.get("requestedToCapacityRatio")
        if ratio is not None:
            strategy["requestedToCapacityRatio"] = {"shape": _shape(ratio.get("shape") or [])}
    return {"ignoredResources": list(a.get("ignoredResources") or []),
            "ignoredResourceGroups": list(a.get("ignoredResourceGroups") or []),
            "scoringStrategy": strategy}


def set_defaults_pod_topology_spread(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    return {"defaultConstraints": copy.deepcopy(a.get("defaultConstraints") or []),
            "defaultingType": a.get("defaultingType")
                              or gates.version.api_defaults.topology_spread_defaulting}


def set_defaults_volume_binding(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    timeout = a.get("bindTimeoutSeconds")
    default_timeout = gates.version.api_defaults.bind_timeout_seconds
    args: dict[str, Any] = {"bindTimeoutSeconds":
                                default_timeout if timeout is None else int(timeout)}
    shape = a.get("shape")
    if not shape and gates.enabled("StorageCapacityScoring"):
        shape = [{"utilization": 0, "score": MAX_CUSTOM_PRIORITY_SCORE},
                 {"utilization": 100, "score": 0}]
    if shape is not None:
        args["shape"] = _shape(shape)
    return args
