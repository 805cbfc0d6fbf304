"""The node-tree zone key, against ``GetZoneKey`` of
``k8s.io/component-helpers/node/topology/helpers.go`` (v0.34.2)."""

from __future__ import annotations

import pytest

from kaudit.k8s.well_known import (
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
)
from kaudit.model.node import zone_key


@pytest.mark.parametrize(("labels", "key"), [
    ({}, ""),
    ({LABEL_TOPOLOGY_ZONE: "a"}, ":\x00:a"),
    ({LABEL_TOPOLOGY_REGION: "r"}, "r:\x00:"),
    ({LABEL_TOPOLOGY_REGION: "r", LABEL_TOPOLOGY_ZONE: "a"}, "r:\x00:a"),
    # the deprecated labels first
    ({LABEL_FAILURE_DOMAIN_BETA_ZONE: "old", LABEL_TOPOLOGY_ZONE: "a",
      LABEL_FAILURE_DOMAIN_BETA_REGION: "r0", LABEL_TOPOLOGY_REGION: "r"}, "r0:\x00:old"),
    # a deprecated label the node has, even empty, hides the new one (Go's ``v, ok :=``)
    ({LABEL_FAILURE_DOMAIN_BETA_ZONE: "", LABEL_TOPOLOGY_ZONE: "a"}, ""),
    ({LABEL_FAILURE_DOMAIN_BETA_ZONE: "", LABEL_TOPOLOGY_ZONE: "a", LABEL_TOPOLOGY_REGION: "r"},
     "r:\x00:"),
    ({LABEL_FAILURE_DOMAIN_BETA_REGION: "", LABEL_TOPOLOGY_REGION: "r",
      LABEL_TOPOLOGY_ZONE: "a"}, ":\x00:a"),
])
def test_zone_key_is_get_zone_key(labels: dict[str, str], key: str) -> None:
    assert zone_key(labels) == key
