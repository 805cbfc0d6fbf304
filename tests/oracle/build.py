"""Build kaudit's upstream oracle: the Go programs in ``tests/oracle/k8s-<version>/`` that run
upstream kube-scheduler's own code (``cmd/cycle``: one scheduling cycle per scenario;
``cmd/sequence``: a sequence of pods through the whole scheduler).

:func:`build_oracle` runs ``go build`` once per content of the module (``go.mod``, ``go.sum``
and the Go sources) and keeps the programs in a cache folder, so later calls return at once.
Two processes building at the same time (pytest workers) serialise on a file lock.

Go's build cache and module cache default to ``<cache>/kaudit-oracle/{gocache,gomodcache}``
(``<cache>`` is ``$XDG_CACHE_HOME`` or ``~/.cache``) unless ``GOCACHE`` / ``GOMODCACHE`` are
set. ``GOFLAGS=-mod=readonly``: the committed ``go.sum`` is complete, so the build never
changes ``go.mod`` or ``go.sum`` and never asks the checksum database (``sum.golang.org``)
anything: it is only consulted for modules missing from ``go.sum``, and every module the build
downloads from ``GOPROXY`` is checked against ``go.sum``. ``GOPROXY``, ``GOSUMDB`` and
``GOTOOLCHAIN`` are left as the environment sets them.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

#: The folder holding one Go module per supported upstream release.
ORACLE_DIR = Path(__file__).resolve().parent
#: The programs every module builds (``cmd/<name>``).
PROGRAMS = ("cycle", "sequence")
#: Lines of ``go build``'s output quoted in a build error.
STDERR_TAIL_LINES = 40
#: Builds kept per release (each is some 200 MB); older ones are removed after a build.
KEEP_BUILDS = 3


class OracleBuildError(RuntimeError):
    """``go build`` of the oracle failed; the message names the command and quotes its output."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/kaudit-oracle`` (``~/.cache/kaudit-oracle`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kaudit-oracle"


def module_dir(version: str) -> Path:
    """The Go module of an upstream release, e.g. ``v1.34`` -> ``tests/oracle/k8s-v1.34``."""
    return ORACLE_DIR / f"k8s-{version}"


def skip_reason() -> str | None:
    """Why the oracle cannot be built here (no ``go`` on ``PATH``), or None."""
    if shutil.which("go") is None:
        return "the Go toolchain (go) is not on PATH"
    return None


def go_env() -> dict[str, str]:
    """The environment of ``go build``: the caller's, with the oracle's cache defaults and
    ``-mod=readonly``."""
    env = dict(os.environ)
    root = cache_root()
    env["GOCACHE"] = os.environ.get("GOCACHE") or str(root / "gocache")
    env["GOMODCACHE"] = os.environ.get("GOMODCACHE") or str(root / "gomodcache")
    # -buildvcs=false: the module lives inside kaudit's git checkout; stamping its state into
    # the programs would make them depend on uncommitted changes elsewhere in the tree.
    env["GOFLAGS"] = "-mod=readonly -buildvcs=false"
    return env


def _sources(directory: Path) -> Iterator[Path]:
    yield directory / "go.mod"
    yield directory / "go.sum"
    yield from sorted(p for p in directory.rglob("*.go") if p.is_file())


def source_hash(directory: Path) -> str:
    """A hash of the module's ``go.mod``, ``go.sum`` and Go sources (paths and contents)."""
    digest = hashlib.sha256()
    for path in _sources(directory):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _prune(out_dir: Path, keep: Path) -> None:
    """Remove all but the :data:`KEEP_BUILDS` newest builds (``keep`` always stays)."""
    builds = sorted((p for p in out_dir.iterdir() if p.is_dir() and not p.name.startswith(".")
                     and p != keep), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[KEEP_BUILDS - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def build_module(directory: Path, out_dir: Path) -> dict[str, Path]:
    """Build the module's programs into ``out_dir/<key>/`` unless already there; their paths
    by name. ``<key>`` is :func:`source_hash`, so a changed module builds anew."""
    if not (directory / "go.mod").is_file():
        raise OracleBuildError(f"no Go module at {directory}")
    return build_staged(out_dir, source_hash(directory), PROGRAMS, directory, lambda staging: [
        "go", "build", "-o", str(staging) + os.sep, *(f"./cmd/{name}" for name in PROGRAMS)])


def build_staged(out_dir: Path, key: str, names: Sequence[str], directory: Path,
                 command_for: Callable[[Path], list[str]]) -> dict[str, Path]:
    """The programs ``names`` in ``out_dir/key/``, built unless already there: under
    ``out_dir``'s lock (one build among processes), ``command_for(staging)`` runs in
    ``directory`` and writes them into a staging folder, which then replaces ``out_dir/key``
    whole (so a half-built folder is never used) and older keys are pruned."""
    target = out_dir / key
    programs = {name: target / name for name in names}
    if all(p.is_file() for p in programs.values()):
        return programs
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if all(p.is_file() for p in programs.values()):
                return programs  # another process built it while this one waited
            staging = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir))
            try:
                command = command_for(staging)
                try:
                    done = subprocess.run(command, cwd=directory, env=go_env(),
                                          capture_output=True, text=True, check=False)
                except OSError as exc:
                    raise OracleBuildError(f"{' '.join(command)} could not run: {exc}") from exc
                if done.returncode != 0:
                    raise OracleBuildError(
                        f"{' '.join(command)} (in {directory}) failed with exit status "
                        f"{done.returncode}:\n{_tail(done.stderr + done.stdout)}")
                missing = [n for n in names if not (staging / n).is_file()]
                if missing:
                    raise OracleBuildError(
                        f"{' '.join(command)} (in {directory}) did not produce "
                        f"{', '.join(missing)}")
                if target.exists():
                    shutil.rmtree(target)
                staging.chmod(0o755)
                staging.rename(target)
                _prune(out_dir, keep=target)
            finally:
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return programs


def build_oracle(version: str = "v1.34") -> dict[str, Path]:
    """Build (or find already built) the oracle of an upstream release: the paths of its
    ``cycle`` and ``sequence`` programs."""
    return build_module(module_dir(version), cache_root() / "bin" / version)
