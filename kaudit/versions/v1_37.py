"""kube-scheduler v1.37.2: the version facts kaudit mirrors.

Transcribed from upstream v1.37.2 (the newest v1.37 patch of ``k8s.io/kubernetes`` on the Go
module proxy), compared with v1.36.3 (:mod:`kaudit.versions.v1_36`):

* ``pkg/features/kube_features.go``: ``StorageCapacityScoring`` (VolumeBinding scores) and
  ``VolumeLimitScaling`` turn on (Beta), ``DRADeviceTaintRules`` turns on (GA), and
  ``NodeDeclaredFeatures``, ``DRAExtendedResource``, ``DRAPrioritizedList`` and
  ``DRAResourceClaimDeviceStatus`` lock; ``GenericWorkload`` goes beta (still off) and carries
  gang scheduling, so ``GangScheduling`` and ``WorkloadAwarePreemption`` are removed, as are
  ``SchedulerQueueingHints`` and ``SidecarContainers`` (their GA paths stay); new alpha gates
  arrive off. ``DRAFractionalCapacityRange`` is beta with two specs, the one on needing
  compatibility version 1.37, so it is off at the default (1.36);
* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``getDefaultPlugins`` lists NodeName
  before NodeUnschedulable; ``applyFeatureGates`` adds DeferredPodScheduling before
  NodeResourcesFit under ``InPlacePodVerticalScalingSchedulerPreemption`` and GangScheduling
  under ``GenericWorkload``;
* the ungated changes below (``interpodaffinity/filtering.go`` and ``scoring.go``,
  ``imagelocality/image_locality.go``).
"""

from __future__ import annotations

from types import MappingProxyType

from kaudit.versions.types import (
    ALPHA,
    BETA,
    GA,
    DefaultPlugin,
    GatedPlugin,
    GateSpec,
    KubernetesVersion,
    UngatedChange,
)
from kaudit.versions.v1_34 import API_DEFAULTS
from kaudit.versions.v1_34 import DEFAULT_MULTI_POINT as DEFAULT_MULTI_POINT_1_34
from kaudit.versions.v1_36 import GATES as GATES_1_36

_REMOVED = ("GangScheduling", "WorkloadAwarePreemption", "SchedulerQueueingHints",
            "SidecarContainers")

GATES = MappingProxyType({
    **{name: spec for name, spec in GATES_1_36.items() if name not in _REMOVED},
    "CompositePodGroup": GateSpec(False, ALPHA),
    "DRADerivedAttributes": GateSpec(False, ALPHA),
    "DRADeviceCompatibilityGroups": GateSpec(False, ALPHA),
    "DRADeviceTaintRules": GateSpec(True, GA),
    "DRADeviceTaints": GateSpec(True, GA),
    "DRAExtendedResource": GateSpec(True, GA, locked=True),
    "DRAFractionalCapacityRange": GateSpec(False, BETA),
    "DRAOptionalNodeOperations": GateSpec(False, ALPHA),
    "DRAPrioritizedList": GateSpec(True, GA, locked=True),
    "DRAResourceClaimDeviceStatus": GateSpec(True, GA, locked=True),
    "DRAWorkloadResourceClaims": GateSpec(False, BETA),
    "GenericWorkload": GateSpec(False, BETA),
    "InPlacePodVerticalScalingSchedulerPreemption": GateSpec(False, ALPHA),
    "InterPodAffinityHostnameFastPath": GateSpec(False, ALPHA),
    "NodeDeclaredFeatures": GateSpec(True, GA, locked=True),
    "PodGroupPreemptionPolicy": GateSpec(False, ALPHA),
    "SchedulerPreQueueingHints": GateSpec(False, ALPHA),
    "StorageCapacityScoring": GateSpec(True, BETA),
    "VolumeLimitScaling": GateSpec(True, BETA),
})

_BY_NAME = {plugin.name: plugin for plugin in DEFAULT_MULTI_POINT_1_34}
DEFAULT_MULTI_POINT = tuple(_BY_NAME[name] for name in (
    "SchedulingGates", "PrioritySort", "NodeName", "NodeUnschedulable", "TaintToleration",
    "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
    "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DefaultPreemption",
    "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder"))

GATED_PLUGINS = (
    GatedPlugin("NodeDeclaredFeatures", DefaultPlugin("NodeDeclaredFeatures")),
    GatedPlugin("InPlacePodVerticalScalingSchedulerPreemption",
                DefaultPlugin("DeferredPodScheduling"), before="NodeResourcesFit"),
    GatedPlugin("DynamicResourceAllocation", DefaultPlugin("DynamicResources", 2),
                before="DefaultPreemption"),
    GatedPlugin("GenericWorkload", DefaultPlugin("GangScheduling")),
    GatedPlugin("TopologyAwareWorkloadScheduling", DefaultPlugin("TopologyPlacementGenerator")),
    GatedPlugin("TopologyAwareWorkloadScheduling", DefaultPlugin("PodGroupPodsCount", 1)),
)

UNGATED_CHANGES = (
    UngatedChange(
        "affinity-namespace-selector-replaced",
        "an incoming pod's (anti-)affinity term with a namespaceSelector matches only the "
        "namespaces the selector picks (before, a selector of only NotIn / DoesNotExist "
        "requirements, tried on an empty label set, matched pods in every namespace)",
        "no pull request named in the CHANGELOG (found comparing v1.36.3 with v1.37.2: "
        "mergeAffinityTermNamespacesIfNotEmpty takes a pointer); pkg/scheduler/framework/"
        "plugins/interpodaffinity/plugin.go, filtering.go, scoring.go",
        plugins=("InterPodAffinity",)),
    UngatedChange(
        "image-locality-caps-image-volumes",
        "ImageLocality's cap counts image volumes as well as containers",
        "PR #138951; pkg/scheduler/framework/plugins/imagelocality/image_locality.go "
        "(calculatePriority, sumImageScores)",
        plugins=("ImageLocality",)),
    UngatedChange(
        "pdb-first-violation-stops",
        "preemption's PodDisruptionBudget split stops at the first budget a victim exhausts "
        "(before, a victim counted against every budget it matched); the budgets come in the "
        "informer's order, so a victim of two budgets can be judged either way",
        "PR #137981; pkg/scheduler/framework/preemption/util.go "
        "(FilterVictimsWithPDBViolation)",
        plugins=("DefaultPreemption",)),
    UngatedChange(
        "victim-start-time-fixed",
        "a potential victim without a start time reads the clock once, when its victim is "
        "built in its node's pod order (v1.36 read it in every comparison), so such pods "
        "are ordered, the first built the most important",
        "PR #137981; pkg/scheduler/framework/preemption/types.go (the Victim type), "
        "pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go",
        plugins=("DefaultPreemption",)),
    UngatedChange(
        "pod-requests-aggregate-status",
        "a pod on a node is accounted as the largest of its spec's, its allocated and its "
        "actuated requests, each summed over every container (regular init containers too, "
        "their statuses found by name) before the maximum is taken, and a pod's pod-level "
        "allocated and actuated requests, when its status has both, stand in for its "
        "containers' (v1.36 took the maximum per container, of regular and sidecar "
        "containers only)",
        "no pull request named in the CHANGELOG (the code arrived with the "
        "DRANodeAllocatableResources rework, #140009); pkg/scheduler/framework/types.go "
        "(calculateResource), staging/src/k8s.io/component-helpers/resource/helpers.go "
        "(AggregateContainerRequests)"),  # resized pods alone: named for no plugin's decisions
    UngatedChange(
        "post-filter-message-without-dra",
        "the FitError message no longer carries DynamicResources' PostFilter reasons (\"no "
        "new claims to deallocate\"), and a successful preemption adds \"preemption: found a "
        "potential placement for pod on node X, preempting N victims\"",
        "PR #140180 (the preemption message); pkg/scheduler/framework/plugins/"
        "dynamicresources/dynamicresources.go (PostFilter), "
        "pkg/scheduler/framework/preemption/preemption.go",
        plugins=("DynamicResources", "DefaultPreemption")),
    UngatedChange(
        "dra-counter-slices-by-node",
        "while consumable capacity or binding conditions are on (as by default), the DRA "
        "allocator reaches a ResourceSlice with shared counters only from the node it is "
        "published for (v1.36: from every node), so a pool whose counters are published for "
        "another node is completed, and judged valid or not, from all its slices",
        "no pull request named in the CHANGELOG (found comparing v1.36.3 with v1.37.2); "
        "staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/"
        "pools_incubating.go (GatherPools, buildPool), allocator_incubating.go (NewAllocator), "
        "used by pkg/scheduler/framework/plugins/dynamicresources",
        plugins=("DynamicResources",)),
    UngatedChange(
        "dra-claim-limit-per-request",
        "the DRA allocator checks a claim's limit of 32 devices request by request: \"claim "
        "C, request R: adding N devices exceeds the claim limit of 32, with M already "
        "accounted for\" (v1.36: after every request, \"claim C: number of requested "
        "devices N exceeds the claim limit of 32\")",
        "no pull request named in the CHANGELOG (found comparing v1.36.3 with v1.37.2); "
        "staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/"
        "allocator_stable.go and incubating/allocator_incubating.go (Allocate), used by "
        "pkg/scheduler/framework/plugins/dynamicresources",
        plugins=("DynamicResources",)),
    UngatedChange(
        "dra-capacity-checks-v1-37",
        "with consumable capacity on, an All request takes a shared device by its capacity "
        "alone (v1.36: by what its shares left), a capacity request its device's range "
        "cannot represent fails the allocation, and a device with allocated shares counts as "
        "in use for its counters even when the shares name no capacity",
        "no pull request named in the CHANGELOG (found comparing v1.36.3 with v1.37.2); "
        "staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/"
        "consumable_capacity.go, allocator_incubating.go, used by "
        "pkg/scheduler/framework/plugins/dynamicresources",
        plugins=("DynamicResources",)),
    UngatedChange(
        "dra-cel-runtime-error-names-device",
        "a DRA selector's CEL runtime error names the device (\"class C: selector #0 on device "
        "driver/pool/device: CEL runtime error: ...\"), and a missing key's adds a hint to use "
        "optional chaining or has()",
        "no pull request named in the CHANGELOG (found comparing v1.36.3 with v1.37.2); "
        "staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/"
        "allocator_stable.go (selectorsMatch), cel/errors.go (EnhanceRuntimeError), used by "
        "pkg/scheduler/framework/plugins/dynamicresources",
        plugins=("DynamicResources",)),
    UngatedChange(
        "dra-taint-rules-select-nothing-without-selector",
        "a DeviceTaintRule without a device selector taints no device (v1.36: every device)",
        "no pull request named in the CHANGELOG (found comparing v1.36.3 with v1.37.2); "
        "staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker/tracker.go "
        "(applyPatches), used by pkg/scheduler/scheduler.go",
        plugins=("DynamicResources",)),
)

V1_37_2 = KubernetesVersion(
    name="v1.37.2",
    gates=GATES,
    default_multi_point=DEFAULT_MULTI_POINT,
    gated_plugins=GATED_PLUGINS,
    api_defaults=API_DEFAULTS,
    ungated_changes=UNGATED_CHANGES,
    removed_gates=MappingProxyType({"CSIMigrationPortworx": True,
                                    "SchedulerQueueingHints": True,
                                    "SidecarContainers": True}),
)
