"""Build the real control plane kaudit's end-to-end tests and benchmark start: etcd,
kube-apiserver, kube-scheduler and kube-controller-manager from ``k8s.io/kubernetes``
(``cmd/...``) at the release kaudit mirrors, and KWOK (``sigs.k8s.io/kwok``) for the nodes.

Each program comes from a Go module in ``benchmarks/realcluster/go/``: ``k8s-<release>/``
requires ``k8s.io/kubernetes`` (with its staging modules replaced, as upstream's own ``go.mod``
does) and ``go.etcd.io/etcd/server/v3`` (``cmd/etcd`` embeds a single-member etcd); ``kwok/``
requires KWOK. The programs are built once per content of their module and kept in
``<cache>/kaudit-oracle/realcluster/<module>/<hash>/`` (the Go caches are the oracle's, see
``tests/oracle/build.py``), so only the first run on a machine pays for ``go build``.
``-ldflags -X`` stamps the release into ``k8s.io/component-base/version`` and client-go, as
upstream's release build does, so ``/version`` answers ``v1.34.2`` rather than
``v0.0.0-master``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: The Go modules of the harness.
GO_DIR = Path(__file__).resolve().parent / "go"
#: Lines of ``go build``'s output quoted in a build error.
STDERR_TAIL_LINES = 40
#: The oldest Go that builds every module here (KWOK v0.8.0 declares go 1.26).
MINIMUM_GO = (1, 26)
#: Builds kept per module (the Kubernetes programs are some 400 MB together).
KEEP_BUILDS = 2


class BuildError(RuntimeError):
    """``go build`` failed; the message names the command and quotes its output."""


@dataclass(frozen=True)
class Release:
    """An upstream release the harness can run: its full version and its Go module."""

    version: str  # e.g. "v1.34.2"

    @property
    def minor(self) -> str:
        """``v1.34`` of ``v1.34.2``."""
        return ".".join(self.version.split(".")[:2])

    @property
    def module(self) -> Path:
        return GO_DIR / f"k8s-{self.minor}"

    def ldflags(self) -> str:
        """The version stamp of upstream's release build (``hack/lib/version.sh``)."""
        major, minor = self.version.lstrip("v").split(".")[:2]
        flags = []
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [f"-X {package}.gitVersion={self.version}",
                      f"-X {package}.gitMajor={major}", f"-X {package}.gitMinor={minor}",
                      f"-X {package}.gitTreeState=clean"]
        return " ".join(flags)


#: The releases with a module in ``go/``.
RELEASES = {"v1.34": Release("v1.34.2")}
#: Programs of a release's module: name -> Go package.
KUBERNETES_PROGRAMS = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "etcd": "./cmd/etcd",
}
KWOK_PROGRAMS = {"kwok": "sigs.k8s.io/kwok/cmd/kwok"}


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/kaudit-oracle`` (``~/.cache/kaudit-oracle`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kaudit-oracle"


def skip_reason() -> str | None:
    """Why the control plane cannot be built or started here, or None."""
    if shutil.which("go") is None:
        return "the Go toolchain (go) is not on PATH"
    done = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True,
                          check=False)
    version = tuple(int(part) for part in re.findall(r"\d+", done.stdout)[:2])
    if version < MINIMUM_GO:
        return (f"Go {'.'.join(map(str, MINIMUM_GO))} or newer is needed (KWOK v0.8.0's "
                f"go.mod); found {done.stdout.strip() or 'none'}")
    if shutil.which("openssl") is None:
        return "openssl (for the control plane's certificates) is not on PATH"
    return None


def go_env() -> dict[str, str]:
    """The caller's environment with the oracle's Go caches, ``-mod=readonly`` and a static
    build (no cgo: the programs then run wherever the cache is)."""
    env = dict(os.environ)
    root = cache_root()
    env["GOCACHE"] = os.environ.get("GOCACHE") or str(root / "gocache")
    env["GOMODCACHE"] = os.environ.get("GOMODCACHE") or str(root / "gomodcache")
    env["GOFLAGS"] = "-mod=readonly -buildvcs=false"
    env["CGO_ENABLED"] = "0"
    return env


def source_hash(directory: Path, extra: str = "") -> str:
    """A hash of the module's ``go.mod``, ``go.sum``, Go sources and ``extra`` (the flags)."""
    digest = hashlib.sha256(extra.encode() + b"\0")
    paths = [directory / "go.mod", directory / "go.sum",
             *sorted(p for p in directory.rglob("*.go") if p.is_file())]
    for path in paths:
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-STDERR_TAIL_LINES:])


def build_programs(directory: Path, programs: dict[str, str],
                   ldflags: str = "") -> dict[str, Path]:
    """Build ``programs`` (name -> package) of the module in ``directory`` unless already
    built; their paths by name. Concurrent callers serialise on a file lock."""
    if not (directory / "go.mod").is_file():
        raise BuildError(f"no Go module at {directory}")
    out_dir = cache_root() / "realcluster" / directory.name
    target = out_dir / source_hash(directory, ldflags + repr(sorted(programs.items())))
    paths = {name: target / name for name in programs}
    if all(p.is_file() for p in paths.values()):
        return paths
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(p.is_file() for p in paths.values()):
            return paths  # another process built them while this one waited
        staging = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir))
        try:
            for name, package in programs.items():
                command = ["go", "build", "-trimpath", "-ldflags", ldflags,
                           "-o", str(staging / name), package]
                done = subprocess.run(command, cwd=directory, env=go_env(),
                                      capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    output = _tail(done.stderr + done.stdout)
                    raise BuildError(f"{' '.join(command)} (in {directory}) failed with exit "
                                     f"status {done.returncode}:\n{output}")
            staging.chmod(0o755)
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
            old = sorted((p for p in out_dir.iterdir()
                          if p.is_dir() and not p.name.startswith(".") and p != target),
                         key=lambda p: p.stat().st_mtime, reverse=True)
            for stale in old[KEEP_BUILDS - 1:]:
                shutil.rmtree(stale, ignore_errors=True)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return paths


def build_control_plane(minor: str = "v1.34") -> dict[str, Path]:
    """The paths of etcd, kube-apiserver, kube-scheduler, kube-controller-manager (at the
    release ``minor`` names) and kwok, building what is missing."""
    try:
        release = RELEASES[minor]
    except KeyError:
        raise BuildError(f"no real-cluster module for {minor}; "
                         f"have {', '.join(RELEASES)}") from None
    paths = build_programs(release.module, KUBERNETES_PROGRAMS, release.ldflags())
    paths.update(build_programs(GO_DIR / "kwok", KWOK_PROGRAMS))
    return paths
