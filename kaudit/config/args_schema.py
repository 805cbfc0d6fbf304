"""Schemas of the v1 plugin-argument types, for strict decoding.

Mirrors ``staging/src/k8s.io/kube-scheduler/config/v1/types_pluginargs.go`` at v1.34 (the
``<Plugin>Args`` kinds and their JSON field names) and the ``k8s.io/api/core/v1`` types
they embed (``NodeAffinity``, ``TopologySpreadConstraint``, ``LabelSelector``).
"""

from __future__ import annotations

from kaudit.config.schema import ListOf, MapOf, Obj

_REQUIREMENT = Obj({"key": "string", "operator": "string", "values": ListOf("string")})
_NODE_SELECTOR_TERM = Obj({"matchExpressions": ListOf(_REQUIREMENT),
                           "matchFields": ListOf(_REQUIREMENT)})
NODE_AFFINITY = Obj({
    "requiredDuringSchedulingIgnoredDuringExecution":
        Obj({"nodeSelectorTerms": ListOf(_NODE_SELECTOR_TERM)}),
    "preferredDuringSchedulingIgnoredDuringExecution":
        ListOf(Obj({"weight": "int32", "preference": _NODE_SELECTOR_TERM})),
})
LABEL_SELECTOR = Obj({"matchLabels": MapOf("string"), "matchExpressions": ListOf(_REQUIREMENT)})
TOPOLOGY_SPREAD_CONSTRAINT = Obj({
    "maxSkew": "int32", "topologyKey": "string", "whenUnsatisfiable": "string",
    "labelSelector": LABEL_SELECTOR, "minDomains": "int32", "nodeAffinityPolicy": "string",
    "nodeTaintsPolicy": "string", "matchLabelKeys": ListOf("string"),
})
_RESOURCE_SPEC = Obj({"name": "string", "weight": "int64"})
_SHAPE = ListOf(Obj({"utilization": "int32", "score": "int32"}))
_TYPE_META = {"apiVersion": "string", "kind": "string"}

DEFAULT_PREEMPTION_ARGS = Obj({**_TYPE_META, "minCandidateNodesPercentage": "int32",
                               "minCandidateNodesAbsolute": "int32"})
DYNAMIC_RESOURCES_ARGS = Obj({**_TYPE_META, "filterTimeout": "duration"})
INTER_POD_AFFINITY_ARGS = Obj({**_TYPE_META, "hardPodAffinityWeight": "int32",
                               "ignorePreferredTermsOfExistingPods": "bool"})
NODE_AFFINITY_ARGS = Obj({**_TYPE_META, "addedAffinity": NODE_AFFINITY})
NODE_RESOURCES_BALANCED_ALLOCATION_ARGS = Obj({**_TYPE_META,
                                               "resources": ListOf(_RESOURCE_SPEC)})
NODE_RESOURCES_FIT_ARGS = Obj({
    **_TYPE_META, "ignoredResources": ListOf("string"),
    "ignoredResourceGroups": ListOf("string"),
    "scoringStrategy": Obj({"type": "string", "resources": ListOf(_RESOURCE_SPEC),
                            "requestedToCapacityRatio": Obj({"shape": _SHAPE})}),
})
POD_TOPOLOGY_SPREAD_ARGS = Obj({**_TYPE_META,
                                "defaultConstraints": ListOf(TOPOLOGY_SPREAD_CONSTRAINT),
                                "defaultingType": "string"})
VOLUME_BINDING_ARGS = Obj({**_TYPE_META, "bindTimeoutSeconds": "int64", "shape": _SHAPE})
