"""Well-known labels the scheduler reads by name, those the trace readers and generators give
every node they make, and the taint of a cordoned node.

Mirrors ``staging/src/k8s.io/api/core/v1/well_known_labels.go`` (Kubernetes v1.34):
``LabelHostname``, ``LabelTopologyZone``, ``LabelTopologyRegion`` and the deprecated
``LabelFailureDomainBetaZone`` / ``LabelFailureDomainBetaRegion`` that volumes and nodes may
still carry; ``LabelOSStable`` and ``LabelArchStable``, which the kubelet sets on every node;
``LabelInstanceTypeStable``; ``LabelMetadataName``, which the API server sets on every
namespace. ``TaintNodeUnschedulable`` is from ``well_known_taints.go``.
"""

from __future__ import annotations

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_OS_STABLE = "kubernetes.io/os"
LABEL_ARCH_STABLE = "kubernetes.io/arch"
LABEL_INSTANCE_TYPE_STABLE = "node.kubernetes.io/instance-type"
LABEL_METADATA_NAME = "kubernetes.io/metadata.name"

#: ``v1.TaintNodeUnschedulable`` (``well_known_taints.go``): the taint a cordoned node carries.
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
