"""Well-known node labels the scheduler reads by name, and those the trace readers give
every node they make.

Mirrors ``staging/src/k8s.io/api/core/v1/well_known_labels.go`` (Kubernetes v1.34):
``LabelHostname``, ``LabelTopologyZone``, ``LabelTopologyRegion`` and the deprecated
``LabelFailureDomainBetaZone`` / ``LabelFailureDomainBetaRegion`` that volumes and nodes may
still carry; ``LabelOSStable`` and ``LabelArchStable``, which the kubelet sets on every node.
"""

from __future__ import annotations

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_OS_STABLE = "kubernetes.io/os"
LABEL_ARCH_STABLE = "kubernetes.io/arch"
