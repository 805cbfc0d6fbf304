"""The ``pod-requests`` oracle: upstream's ``resourcehelper.PodRequests``
(``k8s.io/component-helpers/resource/helpers.go``) with the options kube-scheduler's
``calculateResource`` (``pkg/scheduler/framework/types.go``) passes for the pods on a node, at
component-helpers v0.34.2, v0.35.4, v0.36.3 and v0.37.2 (Kubernetes v1.34.2, v1.35.4, v1.36.3,
v1.37.2).

``pod-requests/`` is one small Go module (``main.go``) depending only on ``k8s.io/api``,
``k8s.io/apimachinery`` and ``k8s.io/component-helpers``; each release is built from it with an
alternate go.mod (``go build -modfile``: ``go.mod`` is v1.37, ``go.v1.3N.mod`` the others, each
with its ``.sum``). The build reuses :mod:`tests.oracle.build`'s environment (``go_env``: the
oracle's ``GOCACHE`` / ``GOMODCACHE``, ``-mod=readonly``), cache folder and error type; the
program is kept under ``<cache>/bin/pod-requests/<minor>/<hash of its sources>/``, so later
calls return at once (older builds are pruned as the oracle's are).

:func:`unavailable` says why the oracle cannot run here: no Go, or (unless
``KAUDIT_REQUIRE_ORACLE=1``, which then builds and downloads what is missing) a Go module cache
without the release's k8s.io modules.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from tests.oracle.build import build_staged, cache_root, go_env, skip_reason
from tests.oracle.conftest import run_cycles

#: The Go module of the program.
MODULE_DIR = Path(__file__).resolve().parent / "pod-requests"
PROGRAM = "pod-requests"
#: The component-helpers (and k8s.io/api, apimachinery) release of each Kubernetes minor.
HELPERS = {"v1.34": "v0.34.2", "v1.35": "v0.35.4", "v1.36": "v0.36.3", "v1.37": "v0.37.2"}
REQUIRE = os.environ.get("KAUDIT_REQUIRE_ORACLE") == "1"


def modfile(minor: str) -> Path:
    """The go.mod a minor is built with (``go.mod`` for v1.37, ``go.v1.3N.mod`` otherwise)."""
    return MODULE_DIR / ("go.mod" if minor == "v1.37" else f"go.{minor}.mod")


def _sources(minor: str) -> list[Path]:
    mod = modfile(minor)
    return [MODULE_DIR / "main.go", mod, mod.with_suffix(".sum")]


def source_hash(minor: str) -> str:
    """A hash of the program's source, its go.mod and its go.sum at ``minor``."""
    digest = hashlib.sha256()
    for path in _sources(minor):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def unavailable(minor: str) -> str | None:
    """Why the oracle of ``minor`` cannot be built here, or None."""
    reason = skip_reason()
    if reason is not None or REQUIRE:
        return reason
    cache = Path(go_env()["GOMODCACHE"])
    missing = [f"k8s.io/{name}@{HELPERS[minor]}" for name in ("api", "apimachinery",
                                                              "component-helpers")
               if not (cache / "k8s.io" / f"{name}@{HELPERS[minor]}").is_dir()]
    if missing:
        return f"the Go module cache {cache} lacks {', '.join(missing)}"
    return None


def build(minor: str) -> Path:
    """Build (or find already built) the program of ``minor``; its path."""
    return build_staged(
        cache_root() / "bin" / PROGRAM / minor, source_hash(minor), [PROGRAM], MODULE_DIR,
        lambda staging: ["go", "build", f"-modfile={modfile(minor).name}", "-o",
                         str(staging / PROGRAM), "."])[PROGRAM]


def run(program: Path, requests: list[dict[str, Any]], timeout: float = 300
        ) -> dict[str, dict[str, Any]]:
    """Send every request (``{"id", "pod", "useStatus", "podLevelStatus", "skipPodLevel"}``)
    to one process; its answers by id (``{"requests", "nonZero"}`` or ``{"error"}``)."""
    return run_cycles(program, requests, timeout)
