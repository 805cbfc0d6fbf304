"""kube-scheduler v1.34.2: the version facts kaudit mirrors.

Transcribed from upstream v1.34.2:

* ``pkg/features/kube_features.go``: for each gate the scheduler reads, the last entry of its
  ``defaultVersionedKubernetesFeatureGates`` specs at or before 1.34 (default, stage,
  ``LockToDefault``), restricted to the gates read by
  ``pkg/scheduler/framework/plugins/feature/feature.go`` (``Features``) and by the scheduler
  core (queue, preemption, nomination, API dispatcher);
* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``getDefaultPlugins`` (the MultiPoint
  list and weights) and ``applyFeatureGates`` (DynamicResources before DefaultPreemption when
  ``DynamicResourceAllocation`` is on);
* ``pkg/scheduler/apis/config/v1/defaults.go``: ``SetDefaults_KubeSchedulerConfiguration``
  and the ``SetDefaults_<Plugin>Args`` constants (``DefaultPercentageOfNodesToScore`` from
  ``pkg/scheduler/apis/config/types.go``; ``DynamicResourcesFilterTimeoutDefault``, 10s in
  ``pkg/scheduler/apis/config/types_pluginargs.go`` and ``k8s.io/kube-scheduler/config/v1``).

The patch level matters. ``SchedulerAsyncAPICalls`` shipped on by default in v1.34.0 and was
turned off in v1.34.2 (upstream PR #134400, cherry-picked to release-1.34 by #134401); the
table below records the v1.34.2 spec. The TaintToleration reason changed without a gate (see
:data:`UNGATED_CHANGES`).
"""

from __future__ import annotations

from types import MappingProxyType

from kaudit.versions.types import (
    ALPHA,
    BETA,
    GA,
    ApiDefaults,
    DefaultPlugin,
    GatedPlugin,
    GateSpec,
    KubernetesVersion,
    UngatedChange,
)

GATES = MappingProxyType({
    # DRA: plugin DynamicResources and its allocator.
    "DynamicResourceAllocation": GateSpec(True, GA),  # locked from 1.35
    "DRAAdminAccess": GateSpec(True, BETA),
    "DRAConsumableCapacity": GateSpec(False, ALPHA),
    "DRADeviceBindingConditions": GateSpec(False, ALPHA),
    "DRADeviceTaints": GateSpec(False, ALPHA),
    "DRAExtendedResource": GateSpec(False, ALPHA),
    "DRAPartitionableDevices": GateSpec(False, ALPHA),
    "DRAPrioritizedList": GateSpec(True, BETA),
    "DRAResourceClaimDeviceStatus": GateSpec(True, BETA),
    "DRASchedulerFilterTimeout": GateSpec(True, BETA),
    # Storage plugins.
    "CSIMigrationPortworx": GateSpec(True, GA, locked=True),
    "StorageCapacityScoring": GateSpec(False, ALPHA),
    "VolumeAttributesClass": GateSpec(True, GA),
    # Pod resources (NodeResourcesFit, BalancedAllocation, queueing hints).
    "InPlacePodVerticalScaling": GateSpec(True, BETA),
    "PodLevelResources": GateSpec(True, BETA),
    "SidecarContainers": GateSpec(True, GA, locked=True),
    # PodTopologySpread and InterPodAffinity.
    "MatchLabelKeysInPodAffinity": GateSpec(True, GA, locked=True),
    "MatchLabelKeysInPodTopologySpread": GateSpec(True, BETA),
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": GateSpec(True, BETA),
    "NodeInclusionPolicyInPodTopologySpread": GateSpec(True, GA, locked=True),
    # Scheduling queue, preemption, binding (the API server's part of binding included).
    "ClearingNominatedNodeNameAfterBinding": GateSpec(False, ALPHA),
    "PodTopologyLabelsAdmission": GateSpec(False, ALPHA),
    "NominatedNodeNameForExpectation": GateSpec(False, ALPHA),
    "PodSchedulingReadiness": GateSpec(True, GA, locked=True),
    "SchedulerAsyncAPICalls": GateSpec(False, BETA),  # on in v1.34.0, off from v1.34.2
    "SchedulerAsyncPreemption": GateSpec(True, BETA),
    "SchedulerPopFromBackoffQ": GateSpec(True, BETA),
    "SchedulerQueueingHints": GateSpec(True, GA, locked=True),
})

DEFAULT_MULTI_POINT = (
    DefaultPlugin("SchedulingGates"),
    DefaultPlugin("PrioritySort"),
    DefaultPlugin("NodeUnschedulable"),
    DefaultPlugin("NodeName"),
    DefaultPlugin("TaintToleration", 3),
    DefaultPlugin("NodeAffinity", 2),
    DefaultPlugin("NodePorts"),
    DefaultPlugin("NodeResourcesFit", 1),
    DefaultPlugin("VolumeRestrictions"),
    DefaultPlugin("NodeVolumeLimits"),
    DefaultPlugin("VolumeBinding"),
    DefaultPlugin("VolumeZone"),
    DefaultPlugin("PodTopologySpread", 2),
    DefaultPlugin("InterPodAffinity", 2),
    DefaultPlugin("DefaultPreemption"),
    DefaultPlugin("NodeResourcesBalancedAllocation", 1),
    DefaultPlugin("ImageLocality", 1),
    DefaultPlugin("DefaultBinder"),
)

GATED_PLUGINS = (
    # applyDynamicResources: freeing an idle claim beats evicting a pod.
    GatedPlugin("DynamicResourceAllocation", DefaultPlugin("DynamicResources"),
                before="DefaultPreemption"),
)

API_DEFAULTS = ApiDefaults(
    parallelism=16,
    percentage_of_nodes_to_score=0,
    pod_initial_backoff_seconds=1,
    pod_max_backoff_seconds=10,
    min_candidate_nodes_percentage=10,
    min_candidate_nodes_absolute=100,
    hard_pod_affinity_weight=1,
    bind_timeout_seconds=600,
    dra_filter_timeout="10s",
    resources=(("cpu", 1), ("memory", 1)),
    scoring_strategy="LeastAllocated",
    topology_spread_defaulting="System",
)

UNGATED_CHANGES = (
    UngatedChange(
        "taint-toleration-reason-without-taint",
        "TaintToleration's Filter reason reads \"node(s) had untolerated taint(s)\" instead of "
        "naming the first untolerated taint (\"node(s) had untolerated taint {key: value}\" "
        "in v1.34.0), so pods failing on different taints share one reason",
        "PR #134740, cherry-picked to release-1.34 by #135023 (first in v1.34.2); "
        "pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go",
        plugins=("TaintToleration",)),
)

V1_34_2 = KubernetesVersion(
    name="v1.34.2",
    gates=GATES,
    default_multi_point=DEFAULT_MULTI_POINT,
    gated_plugins=GATED_PLUGINS,
    api_defaults=API_DEFAULTS,
    ungated_changes=UNGATED_CHANGES,
)
