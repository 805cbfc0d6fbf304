"""kube-scheduler v1.36.3: the version facts kaudit mirrors.

Transcribed from upstream v1.36.3 (the newest v1.36 patch of ``k8s.io/kubernetes`` on the Go
module proxy), compared with v1.35.4 (:mod:`kaudit.versions.v1_35`):

* ``pkg/features/kube_features.go``: ``NodeDeclaredFeatures`` turns on (Beta), as do the DRA
  gates of consumable capacity, binding conditions, device taints, partitionable devices and
  extended resources, and pod-level in-place resize (whose accounting of the pods on a node,
  ``calculateResource`` with component-helpers v0.36.3, ``StatusOptions`` in
  :mod:`kaudit.model.resources` mirrors); ``DRAAdminAccess`` and
  ``VolumeAttributesClass`` lock; new alpha gates arrive off (topology-aware workload
  scheduling, workload-aware preemption, DRA list-type attributes, node-allocatable
  resources, workload claims); ``CSIMigrationPortworx`` is removed (its GA path stays);
* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``getDefaultPlugins`` unchanged;
  ``applyFeatureGates`` gains ``applyTopologyAwareWorkloadScheduling``
  (TopologyPlacementGenerator, PodGroupPodsCount with weight 1), so with the default gates
  NodeDeclaredFeatures is a default plugin (last);
* ``pkg/scheduler/apis/config/v1/defaults.go``: the constants kaudit uses are unchanged;
* the ungated changes below (``balanced_allocation.go``, ``image_locality.go``, the
  InterPodAffinity and PodTopologySpread queueing hints).
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
from kaudit.versions.v1_34 import API_DEFAULTS, DEFAULT_MULTI_POINT
from kaudit.versions.v1_35 import GATED_PLUGINS as GATED_PLUGINS_1_35
from kaudit.versions.v1_35 import GATES as GATES_1_35

GATES = MappingProxyType({
    **{name: spec for name, spec in GATES_1_35.items() if name != "CSIMigrationPortworx"},
    "DRAAdminAccess": GateSpec(True, GA, locked=True),
    "DRAConsumableCapacity": GateSpec(True, BETA),
    "DRADeviceBindingConditions": GateSpec(True, BETA),
    "DRADeviceTaintRules": GateSpec(False, BETA),
    "DRADeviceTaints": GateSpec(True, BETA),
    "DRAExtendedResource": GateSpec(True, BETA),
    "DRAListTypeAttributes": GateSpec(False, ALPHA),
    "DRANodeAllocatableResources": GateSpec(False, ALPHA),
    "DRAPartitionableDevices": GateSpec(True, BETA),
    "DRAPrioritizedList": GateSpec(True, GA),
    "DRAWorkloadResourceClaims": GateSpec(False, ALPHA),
    "InPlacePodLevelResourcesVerticalScaling": GateSpec(True, BETA),
    "NodeDeclaredFeatures": GateSpec(True, BETA),
    "TopologyAwareWorkloadScheduling": GateSpec(False, ALPHA),
    "VolumeAttributesClass": GateSpec(True, GA, locked=True),
    "WorkloadAwarePreemption": GateSpec(False, ALPHA),
})

GATED_PLUGINS = (
    *GATED_PLUGINS_1_35,
    GatedPlugin("TopologyAwareWorkloadScheduling", DefaultPlugin("TopologyPlacementGenerator")),
    GatedPlugin("TopologyAwareWorkloadScheduling", DefaultPlugin("PodGroupPodsCount", 1)),
)

UNGATED_CHANGES = (
    UngatedChange(
        "balanced-allocation-with-and-without-pod",
        "NodeResourcesBalancedAllocation scores how the pod changes a node's balance: "
        "50 + (50 + balance with the pod - balance without it) / 2, so a pod that leaves "
        "the balance as it was scores 75 (v1.35: the balance with the pod, up to 100)",
        "PR #135573; pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go "
        "(balancedResourceScorer)",
        plugins=("NodeResourcesBalancedAllocation",)),
    UngatedChange(
        "image-locality-counts-image-volumes",
        "ImageLocality adds the images of the pod's image volumes to the score (the cap "
        "still counts containers only)",
        "PR #130231; pkg/scheduler/framework/plugins/imagelocality/image_locality.go "
        "(sumImageScores)",
        plugins=("ImageLocality",)),
    UngatedChange(
        "nominated-pods-count-in-affinity-hints",
        "InterPodAffinity's and PodTopologySpread's queueing hints treat a pending pod with "
        "a nominated node like an assigned one (its nomination cleared or its deletion can "
        "requeue pods), and InterPodAffinity requeues a pod on its own label change and on "
        "the deletion of a pod whose required anti-affinity it matched",
        "PRs #135392, #135394, #135325; pkg/scheduler/framework/plugins/interpodaffinity/"
        "plugin.go, pkg/scheduler/framework/plugins/podtopologyspread/plugin.go",
        plugins=()),
    UngatedChange(
        "node-declared-features-fixed-reason",
        "NodeDeclaredFeatures' Filter reason is the fixed \"node(s) didn't match Pod's "
        "required features\" (v1.35: it listed the unsatisfied features)",
        "PR #136042; pkg/scheduler/framework/plugins/nodedeclaredfeatures/"
        "nodedeclaredfeatures.go",
        plugins=("NodeDeclaredFeatures",)),
    UngatedChange(
        "prebind-victims-cancelled-in-memory",
        "a preemption victim still in PreBind (or waiting on Permit) is not deleted: its "
        "binding is cancelled in the scheduler's memory and it goes back to the queue",
        "PRs #135719, #135502; pkg/scheduler/framework/preemption/executor.go",
        plugins=("DefaultPreemption",),
        modelled=False),
    UngatedChange(
        "parallel-prebind",
        "VolumeBinding's and DynamicResources' PreBind run in parallel when both have work",
        "PR #135393; pkg/scheduler/framework/runtime/framework.go (RunPreBindPlugins)",
        plugins=("VolumeBinding", "DynamicResources"),
        modelled=False),
    UngatedChange(
        "dra-deterministic-device-order",
        "the DRA allocator searches pools by (driver, pool) and slices by name, pools with "
        "binding conditions last (v1.35: the order of a Go map)",
        "PR #136641; k8s.io/dynamic-resource-allocation structured/internal/incubating/"
        "pools_incubating.go (used by pkg/scheduler/framework/plugins/dynamicresources)",
        plugins=("DynamicResources",)),
    UngatedChange(
        "dra-filter-timeout-is-error",
        "a DRA Filter that times out fails the cycle with an Error instead of leaving the "
        "node Unschedulable",
        "PR #137607; pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go",
        plugins=("DynamicResources",)),
    UngatedChange(
        "volume-limit-scaling-opt-in",
        "VolumeLimitScaling (off by default until v1.37) checks that a CSI driver is installed "
        "on the node only for drivers whose CSIDriver opts in with "
        "spec.preventPodSchedulingIfMissing (v1.35: every CSIDriver)",
        "no pull request named in the CHANGELOG (the field arrived in k8s.io/api v0.36); "
        "pkg/scheduler/framework/plugins/nodevolumelimits/csi.go (checkCSIDriverOnNode)",
        plugins=("NodeVolumeLimits",)),
    UngatedChange(
        "dra-shared-counter-slices-need-partitionable",
        "with DRAPartitionableDevices off, the allocator leaves out a ResourceSlice with "
        "shared counters too (before, only one selecting nodes per device), so its pool is "
        "incomplete",
        "no pull request named in the CHANGELOG; staging/src/k8s.io/dynamic-resource-"
        "allocation/structured/internal/stable/pools_stable.go (GatherPools), used by "
        "pkg/scheduler/framework/plugins/dynamicresources",
        plugins=("DynamicResources",)),
)

V1_36_3 = KubernetesVersion(
    name="v1.36.3",
    gates=GATES,
    default_multi_point=DEFAULT_MULTI_POINT,
    gated_plugins=GATED_PLUGINS,
    api_defaults=API_DEFAULTS,
    ungated_changes=UNGATED_CHANGES,
    removed_gates=MappingProxyType({"CSIMigrationPortworx": True}),
)
