"""Which upstream release the differential suites run: the oracle built at that release
(``tests/oracle/k8s-<minor>``) and kaudit configured as that release.

``KAUDIT_ORACLE_VERSION`` names the minor (``v1.34`` unless set); ``.ci/run`` runs the suites
once per release kaudit mirrors.
"""

from __future__ import annotations

import os

from kaudit.versions import KubernetesVersion
from kaudit.versions.v1_34 import V1_34_2
from kaudit.versions.v1_35 import V1_35_4
from kaudit.versions.v1_36 import V1_36_3
from kaudit.versions.v1_37 import V1_37_2

#: The oracle's module per minor, and the kaudit release it is compared with.
RELEASES: dict[str, KubernetesVersion] = {"v1.34": V1_34_2, "v1.35": V1_35_4,
                                          "v1.36": V1_36_3, "v1.37": V1_37_2}

VERSION = os.environ.get("KAUDIT_ORACLE_VERSION", "v1.34")
if VERSION not in RELEASES:
    raise RuntimeError(f"KAUDIT_ORACLE_VERSION={VERSION!r}: the oracle is built for "
                       f"{', '.join(RELEASES)}")
RELEASE = RELEASES[VERSION]


def release_gate(name: str) -> bool:
    """The default of gate ``name`` in :data:`RELEASE` (False when it has no such gate)."""
    spec = RELEASE.gates.get(name)
    return spec is not None and spec.default
