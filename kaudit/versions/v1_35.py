"""kube-scheduler v1.35.4: the version facts kaudit mirrors.

Transcribed from upstream v1.35.4 (the newest v1.35 patch of ``k8s.io/kubernetes`` on the Go
module proxy), compared with v1.34.2 (:mod:`kaudit.versions.v1_34`):

* ``pkg/features/kube_features.go``: the last ``defaultVersionedKubernetesFeatureGates`` spec
  at or before 1.35 of each gate the scheduler reads (``NominatedNodeNameForExpectation`` and
  ``ClearingNominatedNodeNameAfterBinding`` turn on, ``OpportunisticBatching`` arrives on,
  ``DynamicResourceAllocation`` and ``InPlacePodVerticalScaling`` lock, and the alpha gates of
  the Workload API, gang scheduling, declared node features, toleration comparison operators,
  volume-limit scaling, pod-level in-place resize and DRA device-taint rules arrive off);
* the API server's gates of binding kaudit models: ``ClearingNominatedNodeNameAfterBinding``
  (``pkg/registry/core/pod/storage/storage.go``) and ``PodTopologyLabelsAdmission``
  (``plugin/pkg/admission/podtopologylabels``: a binding copies the node's zone and region
  labels onto the pod), both on from v1.35;
* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``getDefaultPlugins`` (unchanged) and
  ``applyFeatureGates``: NodeDeclaredFeatures appended under its gate, DynamicResources
  inserted before DefaultPreemption with score weight 2 (it scores from v1.35), GangScheduling
  appended under its gate;
* ``pkg/scheduler/apis/config/v1/defaults.go``: the constants kaudit uses are unchanged
  (``DynamicResourcesArgs.bindingTimeout`` is new, defaulted only with the alpha
  ``DRADeviceBindingConditions`` on);
* ``pkg/scheduler/schedule_one.go``, ``eventhandlers.go`` and
  ``framework/preemption/preemption.go`` for the ungated changes below.
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
from kaudit.versions.v1_34 import GATES as GATES_1_34

GATES = MappingProxyType({
    **GATES_1_34,
    "DynamicResourceAllocation": GateSpec(True, GA, locked=True),
    "DRADeviceTaintRules": GateSpec(False, ALPHA),
    "InPlacePodVerticalScaling": GateSpec(True, GA, locked=True),
    "InPlacePodLevelResourcesVerticalScaling": GateSpec(False, ALPHA),
    "NodeDeclaredFeatures": GateSpec(False, ALPHA),
    "TaintTolerationComparisonOperators": GateSpec(False, ALPHA),
    "VolumeLimitScaling": GateSpec(False, ALPHA),
    "ClearingNominatedNodeNameAfterBinding": GateSpec(True, BETA),
    "PodTopologyLabelsAdmission": GateSpec(True, BETA),
    "NominatedNodeNameForExpectation": GateSpec(True, BETA),
    "OpportunisticBatching": GateSpec(True, BETA),
    "GenericWorkload": GateSpec(False, ALPHA),
    "GangScheduling": GateSpec(False, ALPHA),
})

GATED_PLUGINS = (
    GatedPlugin("NodeDeclaredFeatures", DefaultPlugin("NodeDeclaredFeatures")),
    # applyDynamicResources: freeing an idle claim beats evicting a pod; it scores from v1.35.
    GatedPlugin("DynamicResourceAllocation", DefaultPlugin("DynamicResources", 2),
                before="DefaultPreemption"),
    GatedPlugin("GangScheduling", DefaultPlugin("GangScheduling")),
)

UNGATED_CHANGES = (
    UngatedChange(
        "select-host-heap",
        "selectHost no longer draws among the nodes tied at the highest score: the nodes go "
        "into a max-heap (container/heap) in the order Filter found them, and the root wins; "
        "only nodes an extender scored get a random tie-breaker",
        "PR #135231 (KEP-5598); pkg/scheduler/schedule_one.go (prioritizeNodes, "
        "newSortedNodeScores, nodeScoreHeap)",
        plugins=("*",)),
    UngatedChange(
        "failure-clears-nomination",
        "a scheduling or binding failure always clears the pod's nominatedNodeName, also "
        "when no PostFilter plugin ran",
        "PR #135007; pkg/scheduler/schedule_one.go (clearNominatedNode)"),
    UngatedChange(
        "binding-moves-no-pods",
        "the informer's binding of a pod (unassigned to assigned) only takes it out of the "
        "queue: a nominated pod's binding no longer moves the pods of equal or lower "
        "priority waiting in unschedulablePods (v1.34 saw it as the pending pod's deletion)",
        "PR #134157 (one pod handler instead of two filtered ones); "
        "pkg/scheduler/eventhandlers.go (updatePod, deletePodFromSchedulingQueue)"),
    UngatedChange(
        "assumed-pod-deletion-frees-node",
        "deleting an assumed pod (in PreBind, Bind or waiting on Permit), or marking it for "
        "deletion, forgets it from the cache at once and moves all pods on AssignedPodDelete",
        "PR #134157; pkg/scheduler/eventhandlers.go (handleAssumedPodDeletion)"),
    UngatedChange(
        "preemption-skips-terminating-victims",
        "preemption sends no API call for a victim already terminating, and the preemptor "
        "stays gated (PreEnqueue) until its last victim is being deleted",
        "PRs #134294, #134730; pkg/scheduler/framework/preemption/preemption.go",
        plugins=("DefaultPreemption",)),
    UngatedChange(
        "dra-pool-completeness-spans-nodes",
        "a ResourceSlice pool that looks incomplete from one node counts the slices of its "
        "generation published for other nodes too (and is ignored when a newer generation "
        "exists), so a pool spread over nodes is complete on each",
        "PR #134466; k8s.io/dynamic-resource-allocation structured/internal/incubating/"
        "pools_incubating.go (GatherPools, checkSlicesInPool), used by "
        "pkg/scheduler/framework/plugins/dynamicresources",
        plugins=("DynamicResources",)),
    UngatedChange(
        "dra-invalid-pools-unschedulable",
        "an invalid or incomplete ResourceSlice pool is skipped by the allocator; a node left "
        "without devices for it is Unschedulable (\"invalid resource pools were "
        "encountered\"), no longer an error of the whole cycle",
        "PR #134189; pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, "
        "k8s.io/dynamic-resource-allocation structured/internal",
        plugins=("DynamicResources",)),
)

V1_35_4 = KubernetesVersion(
    name="v1.35.4",
    gates=GATES,
    default_multi_point=DEFAULT_MULTI_POINT,
    gated_plugins=GATED_PLUGINS,
    api_defaults=API_DEFAULTS,
    ungated_changes=UNGATED_CHANGES,
)
