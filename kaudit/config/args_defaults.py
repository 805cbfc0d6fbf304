"""Defaulting of in-tree plugin arguments (each plugin class names its function in its
``args_spec``).

Mirrors the ``SetDefaults_<Plugin>Args`` functions of
``pkg/scheduler/apis/config/v1/defaults.go`` (v1.34), including their feature-gate
dependencies (``StorageCapacityScoring`` for the VolumeBinding shape,
``DRASchedulerFilterTimeout`` for the DynamicResources filter timeout). The result is a
complete dict: every field of the v1 type, camelCase, with Go's zero value where upstream
leaves a non-pointer field unset (``[]`` for lists, ``False``); ``None`` stands for an
unset pointer (``addedAffinity``, ``filterTimeout`` with the gate off).
"""

from __future__ import annotations

import copy
from typing import Any

from kaudit.config.duration import format_duration, parse_duration
from kaudit.config.feature_gates import FeatureGates

MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
DRA_FILTER_TIMEOUT_DEFAULT = "10s"  # DynamicResourcesFilterTimeoutDefault


def default_resources() -> list[dict[str, Any]]:
    return [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def _resources(given: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Resources with the default set for an empty list and weight 0 turned into 1."""
    if not given:
        return default_resources()
    return [{"name": r.get("name") or "", "weight": int(r.get("weight") or 0) or 1}
            for r in given]


def _shape(points: list[dict[str, Any]]) -> list[dict[str, int]]:
    return [{"utilization": int(p.get("utilization") or 0), "score": int(p.get("score") or 0)}
            for p in points]


def set_defaults_default_preemption(a: dict[str, Any], _: FeatureGates) -> dict[str, Any]:
    pct, absolute = a.get("minCandidateNodesPercentage"), a.get("minCandidateNodesAbsolute")
    return {"minCandidateNodesPercentage": 10 if pct is None else int(pct),
            "minCandidateNodesAbsolute": 100 if absolute is None else int(absolute)}


def set_defaults_dynamic_resources(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    timeout = a.get("filterTimeout")
    if timeout is None and gates.enabled("DRASchedulerFilterTimeout"):
        timeout = DRA_FILTER_TIMEOUT_DEFAULT
    return {"filterTimeout": None if timeout is None
            else format_duration(parse_duration(timeout))}


def set_defaults_inter_pod_affinity(a: dict[str, Any], _: FeatureGates) -> dict[str, Any]:
    weight = a.get("hardPodAffinityWeight")
    return {"hardPodAffinityWeight": 1 if weight is None else int(weight),
            "ignorePreferredTermsOfExistingPods":
                bool(a.get("ignorePreferredTermsOfExistingPods"))}


def set_defaults_node_affinity(a: dict[str, Any], _: FeatureGates) -> dict[str, Any]:
    return {"addedAffinity": copy.deepcopy(a.get("addedAffinity"))}


def set_defaults_node_resources_balanced_allocation(a: dict[str, Any], _: FeatureGates
                                                   ) -> dict[str, Any]:
    return {"resources": _resources(a.get("resources"))}


def set_defaults_node_resources_fit(a: dict[str, Any], _: FeatureGates) -> dict[str, Any]:
    given = a.get("scoringStrategy")
    if given is None:
        strategy: dict[str, Any] = {"type": "LeastAllocated", "resources": default_resources()}
    else:
        strategy = {"type": given.get("type") or "",
                    "resources": _resources(given.get("resources"))}
        ratio = given.get("requestedToCapacityRatio")
        if ratio is not None:
            strategy["requestedToCapacityRatio"] = {"shape": _shape(ratio.get("shape") or [])}
    return {"ignoredResources": list(a.get("ignoredResources") or []),
            "ignoredResourceGroups": list(a.get("ignoredResourceGroups") or []),
            "scoringStrategy": strategy}


def set_defaults_pod_topology_spread(a: dict[str, Any], _: FeatureGates) -> dict[str, Any]:
    return {"defaultConstraints": copy.deepcopy(a.get("defaultConstraints") or []),
            "defaultingType": a.get("defaultingType") or "System"}


def set_defaults_volume_binding(a: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    timeout = a.get("bindTimeoutSeconds")
    args: dict[str, Any] = {"bindTimeoutSeconds": 600 if timeout is None else int(timeout)}
    shape = a.get("shape")
    if not shape and gates.enabled("StorageCapacityScoring"):
        shape = [{"utilization": 0, "score": MAX_CUSTOM_PRIORITY_SCORE},
                 {"utilization": 100, "score": 0}]
    if shape is not None:
        args["shape"] = _shape(shape)
    return args
