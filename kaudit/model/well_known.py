"""Well-known node labels the scheduler reads by name.

Mirrors ``staging/src/k8s.io/api/core/v1/well_known_labels.go`` (Kubernetes v1.34):
``LabelHostname``, ``LabelTopologyZone``, ``LabelTopologyRegion`` and the deprecated
``LabelFailureDomainBetaZone`` / ``LabelFailureDomainBetaRegion`` that volumes and nodes may
still carry.
"""

from __future__ import annotations

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
