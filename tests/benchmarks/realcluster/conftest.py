"""Fixtures of the real-control-plane tests: the programs (built once per machine by
``benchmarks/realcluster/build.py``) and a control plane per test that asks for one.

Without Go or openssl the tests skip, unless ``KAUDIT_REQUIRE_REALCLUSTER=1`` (set by CI) makes
that a failure. The tests are slow (a real API server, minutes of churn): ``-m 'not
realcluster'`` leaves them out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.realcluster.build import BuildError, build_control_plane, skip_reason
from benchmarks.realcluster.controlplane import ControlPlane

REQUIRE = os.environ.get("KAUDIT_REQUIRE_REALCLUSTER") == "1"


@pytest.fixture(scope="session")
def realcluster_binaries() -> dict[str, Path]:
    """etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok."""
    reason = skip_reason()
    if reason is not None:
        if REQUIRE:
            pytest.fail(f"KAUDIT_REQUIRE_REALCLUSTER=1 but {reason}")
        pytest.skip(reason)
    try:
        return build_control_plane()
    except BuildError as exc:
        if REQUIRE:
            raise
        pytest.skip(f"the control plane could not be built: {exc}")


@pytest.fixture(scope="session")
def oracle() -> dict[str, Path]:
    """Upstream's own cycle and sequence programs (tests/oracle), which judge the
    disagreements on the states kaudit judged."""
    from tests.oracle.conftest import oracle_programs
    return oracle_programs()


@pytest.fixture
def control_plane(realcluster_binaries: dict[str, Path], tmp_path: Path) -> Iterator[ControlPlane]:
    """A started control plane with the scheduler's default configuration."""
    with ControlPlane(tmp_path / "cluster", realcluster_binaries) as plane:
        yield plane
