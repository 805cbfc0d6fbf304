"""Reading a sweep spec (``kaudit sweep SPEC.yaml``): traces × configurations × seeds.

The spec is YAML (or JSON). Every error names the spec file and the field, e.g.
``fgd.yaml: configs[2].file: no such file fgd.yaml``. Relative paths are relative to the spec's
own directory, and ``$VAR`` / ``${VAR}`` in paths are taken from the environment (a shared
trace directory differs between machines). In a trace's ``alibaba`` options, the value
``"{seed}"`` stands for the cell's seed (the FGD paper's protocol shuffles the pod list with
the seed of the replay). ``kubernetesVersion`` (at the top, for every configuration, or in one
configuration) names the Kubernetes release a configuration's cells mirror; without it each
trace's own release is mirrored when kaudit mirrors it (:mod:`kaudit.services.versions`). See
``docs/sweeps.md`` for the format.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit import versions
from kaudit.config.source import read_file
from kaudit.errors import ConfigError, InputError
from kaudit.readers.formats import AUTO, FAMILIES

SEED_TOKEN = "{seed}"
MAX_CELLS = 100_000
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
#: Seeds are stored as 64-bit integers.
SEED_LIMIT = 2**63
_VAR = re.compile(r"\$(\w+|\{[^}]*\})")

#: Replay options a spec may set (``replay:`` and per-configuration), with their types.
REPLAY_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "lifetime": str, "recreatePreempted": bool, "bindLatency": (int, float),
    "apiLatency": (int, float), "victimTermination": (int, float),
    "cycleDuration": (int, float), "oneTry": bool,
    "gpuReport": bool, "tieBreak": str,
}
_CHOICES = {"lifetime": ("recorded", "relative"),
            "tieBreak": ("random", "name", "shuffled-name")}
_ALIBABA: dict[str, type | tuple[type, ...]] = {
    "shuffle": bool, "seed": int, "gpuLoad": (int, float), "deletions": bool, "gpuSharing": str}
_TOP = {"apiVersion", "kind", "name", "description", "traces", "configs", "seeds", "replay",
        "baseline", "cells", "reference", "kubernetesVersion"}


@dataclass(frozen=True)
class TraceSpec:
    """A trace of the sweep: a stored trace by name, or files to ingest with options."""

    label: str
    stored: str | None = None
    files: tuple[Path, ...] = ()
    snapshots: tuple[Path, ...] = ()
    format: str = AUTO
    alibaba: dict[str, Any] | None = None
    start: str | None = None
    step: float | None = None
    sort: bool = False
    skip_invalid: bool = False
    use_config: bool = True

    @property
    def per_seed(self) -> bool:
        """The ingested trace depends on the cell's seed (``seed: "{seed}"``)."""
        return SEED_TOKEN in (self.alibaba or {}).values()


@dataclass(frozen=True)
class ConfigSpec:
    """A scheduler configuration of the sweep: a file, kube-scheduler's defaults, or a base
    with a merge patch; with its feature gates, out-of-tree plugins and replay options."""

    label: str
    document: dict[str, Any]
    source: str
    feature_gates: str = ""
    plugins: tuple[str, ...] = ()
    replay: dict[str, Any] = field(default_factory=dict)
    #: ``fromTrace: true``: each trace's stored configuration (a simulator export's), else
    #: kube-scheduler's defaults, as ``kaudit replay TRACE`` chooses without --config;
    #: ``document`` is then unused.
    from_trace: bool = False
    #: The Kubernetes release its cells mirror (``kubernetesVersion``, the configuration's or
    #: the spec's), by its full name; None: each trace's own release when kaudit mirrors it.
    kubernetes_version: str | None = None


@dataclass(frozen=True)
class CellSpec:
    trace: str
    config: str
    seed: int


@dataclass(frozen=True)
class SweepSpec:
    name: str
    path: Path
    traces: tuple[TraceSpec, ...]
    configs: tuple[ConfigSpec, ...]
    seeds: tuple[int, ...]
    replay: dict[str, Any]
    baseline: str
    cells: tuple[CellSpec, ...]
    description: str = ""
    document: dict[str, Any] = field(default_factory=dict)
    #: Published values to print beside the sweep's (``reference:``): a metric, where the
    #: values come from, and per configuration label the value (or per trace label, then
    #: per configuration).
    reference: dict[str, Any] | None = None

    def trace(self, label: str) -> TraceSpec:
        return next(t for t in self.traces if t.label == label)


class _Reader:
    """Field-path errors for one spec file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.resolve().parent

    def fail(self, where: str, message: str) -> InputError:
        return InputError(f"{self.path}: {where}: {message}" if where else f"{self.path}: "
                          f"{message}")

    def mapping(self, value: Any, where: str, allowed: set[str] | dict[str, Any]
                ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a mapping, got {_kind(value)}")
        unknown = sorted(str(k) for k in value if k not in allowed)
        if unknown:
            raise self.fail(where, f"unknown field {unknown[0]!r} (known: "
                                   f"{', '.join(sorted(allowed))})")
        return value

    def typed(self, value: Any, where: str, kind: type | tuple[type, ...]) -> Any:
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(where, f"expected {_names(kinds)}, got a boolean")
        if not isinstance(value, kinds):
            raise self.fail(where, f"expected {_names(kinds)}, got {_kind(value)}")
        return value

    def label(self, value: Any, where: str) -> str:
        text = str(self.typed(value, where, str))
        if not _LABEL.fullmatch(text):
            raise self.fail(where, f"{text!r} is not a label: 1 to 64 letters, digits, '_', "
                                   "'.', '+' or '-', starting with a letter or digit")
        return text

    def path_of(self, value: Any, where: str, *, must_exist: bool = True) -> Path:
        text = self.typed(value, where, str)

        def variable(match: re.Match[str]) -> str:
            name = match.group(1).strip("{}")
            if name not in os.environ:
                raise self.fail(where, f"environment variable {name} is not set (in {text!r})")
            return os.environ[name]

        path = Path(_VAR.sub(variable, text)).expanduser()
        if not path.is_absolute():
            path = self.base / path
        if must_exist and not path.is_file():
            raise self.fail(where, f"no such file {path}" if not path.exists()
                            else f"{path} is not a regular file")
        return path

    def release(self, value: Any, where: str) -> str | None:
        """A ``kubernetesVersion``: a supported release (``v1.34.2``, ``1.34``), by its full
        name; None when not given."""
        if value is None:
            return None
        text = str(self.typed(value, where, str))
        try:
            return versions.get(text).name
        except ConfigError as exc:
            raise self.fail(where, str(exc)) from None

    def replay_options(self, value: Any, where: str) -> dict[str, Any]:
        options = self.mapping(value, where, REPLAY_OPTIONS)
        for key, kind in REPLAY_OPTIONS.items():
            if key not in options:
                continue
            self.typed(options[key], f"{where}.{key}", kind)
            if key in _CHOICES and options[key] not in _CHOICES[key]:
                raise self.fail(f"{where}.{key}", f"{options[key]!r}: expected one of "
                                                  f"{', '.join(_CHOICES[key])}")
            if kind == (int, float) and not 0 <= options[key] <= 3600:
                raise self.fail(f"{where}.{key}", f"{options[key]} seconds: expected 0 to 3600")
        return dict(options)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


def _names(kinds: tuple[type, ...]) -> str:
    words = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
             list: "a list", dict: "a mapping"}
    return " or ".join(dict.fromkeys(words.get(k, k.__name__) for k in kinds))


def _seed(reader: _Reader, value: Any, where: str) -> int:
    seed = int(reader.typed(value, where, int))
    if not -SEED_LIMIT <= seed < SEED_LIMIT:
        raise reader.fail(where, f"{seed} is beyond a 64-bit integer")
    return seed


def _seeds(reader: _Reader, value: Any) -> tuple[int, ...]:
    if value is None:
        return (0,)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+)\s*(?:-|\.\.)\s*(-?\d+)\s*", value)
        if match is None:
            raise reader.fail("seeds", f"{value!r}: expected a list of integers or a range "
                                       "such as 42-51")
        low, high = int(match.group(1)), int(match.group(2))
        if high < low:
            raise reader.fail("seeds", f"{value!r}: the range is empty")
        if high - low >= MAX_CELLS:
            raise reader.fail("seeds", f"{value!r}: {high - low + 1:,} seeds; at most "
                                       f"{MAX_CELLS:,} cells in one sweep")
        value = list(range(low, high + 1))
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise reader.fail("seeds", "expected a non-empty list of integers or a range such as "
                                   "42-51")
    seeds = [_seed(reader, s, f"seeds[{i}]") for i, s in enumerate(value)]
    if len(set(seeds)) != len(seeds):
        raise reader.fail("seeds", "a seed is listed twice")
    return tuple(seeds)


def _trace(reader: _Reader, value: Any, where: str, index: int) -> TraceSpec:
    if isinstance(value, str):
        value = {"trace": value}
    entry = reader.mapping(value, where, {"name", "trace", "files", "snapshots", "format",
                                          "alibaba", "start", "step", "sort", "skipInvalid",
                                          "noConfig"})
    stored = entry.get("trace")
    files = entry.get("files") or None
    if (stored is None) == (files is None and not entry.get("snapshots")):
        raise reader.fail(where, "give either trace (a stored trace's name) or files "
                                 "(trace files to ingest)")
    if stored is not None:
        stored = reader.typed(stored, f"{where}.trace", str)
        extra = sorted(set(entry) - {"name", "trace"})
        if extra:
            raise reader.fail(f"{where}.{extra[0]}", "applies to files, not a stored trace")
        return TraceSpec(label=reader.label(entry.get("name", stored), f"{where}.name"),
                         stored=stored)
    if isinstance(files, str):
        files = [files]
    files = files or []
    if not isinstance(files, list):
        raise reader.fail(f"{where}.files", f"expected a list of paths, got {_kind(files)}")
    paths = tuple(reader.path_of(f, f"{where}.files[{i}]") for i, f in enumerate(files))
    snapshots = entry.get("snapshots") or []
    if not isinstance(snapshots, list):
        raise reader.fail(f"{where}.snapshots", f"expected a list of paths, got "
                                                f"{_kind(snapshots)}")
    snaps = tuple(reader.path_of(f, f"{where}.snapshots[{i}]") for i, f in enumerate(snapshots))
    fmt = reader.typed(entry.get("format", AUTO), f"{where}.format", str)
    if fmt not in FAMILIES:
        raise reader.fail(f"{where}.format", f"{fmt!r}: expected one of {', '.join(FAMILIES)}")
    alibaba = None
    if "alibaba" in entry:
        alibaba = dict(reader.mapping(entry["alibaba"], f"{where}.alibaba", _ALIBABA))
        for key, kind in _ALIBABA.items():
            if key in alibaba and not (key == "seed" and alibaba[key] == SEED_TOKEN):
                reader.typed(alibaba[key], f"{where}.alibaba.{key}", kind)
    step = entry.get("step")
    if step is not None:
        step = float(reader.typed(step, f"{where}.step", (int, float)))
        if not math.isfinite(step) or not 0 <= step <= 86_400:
            raise reader.fail(f"{where}.step", f"{step} seconds: expected 0 to 86400")
    start = entry.get("start")
    if start is not None:
        start = str(reader.typed(start, f"{where}.start", (str, int, float)))
    label: Any = entry.get("name")
    if label is None:
        first = (paths or snaps)[-1]
        label = re.sub(r"[^A-Za-z0-9_.+-]", "-", first.name.split(".")[0])[:64] or f"t{index}"
    return TraceSpec(
        label=reader.label(label, f"{where}.name"), files=paths, snapshots=snaps, format=fmt,
        alibaba=alibaba, start=start, step=step,
        sort=reader.typed(entry.get("sort", False), f"{where}.sort", bool),
        skip_invalid=reader.typed(entry.get("skipInvalid", False), f"{where}.skipInvalid",
                                  bool),
        use_config=not reader.typed(entry.get("noConfig", False), f"{where}.noConfig", bool))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: mappings merge, ``null`` deletes, anything else replaces
    (lists included)."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


_EMPTY_CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1",
                 "kind": "KubeSchedulerConfiguration"}


def _config(reader: _Reader, value: Any, where: str, sweep: str,
            release: str | None = None) -> ConfigSpec:
    if isinstance(value, str):
        value = {"file": value}
    entry = reader.mapping(value, where, {"name", "file", "base", "patch", "featureGates",
                                          "plugins", "replay", "fromTrace",
                                          "kubernetesVersion"})
    if "file" in entry and ("base" in entry or "patch" in entry):
        raise reader.fail(where, "give file, or base and patch, not both")
    from_trace = reader.typed(entry.get("fromTrace", False), f"{where}.fromTrace", bool)
    if from_trace and {"file", "base", "patch"} & set(entry):
        raise reader.fail(where, "fromTrace takes each trace's stored configuration: give no "
                                 "file, base or patch with it")
    source_path = entry.get("file", entry.get("base"))
    key = "file" if "file" in entry else "base"
    if source_path is not None:
        path = reader.path_of(source_path, f"{where}.{key}")
        try:
            document = read_file(path)
        except ConfigError as exc:
            raise reader.fail(f"{where}.{key}", str(exc)) from None
        if not isinstance(document, dict):
            raise reader.fail(f"{where}.{key}", f"{path} is not a KubeSchedulerConfiguration "
                                                "mapping")
        source = str(path)
        default_label = path.stem
    elif from_trace:
        document, source, default_label = (dict(_EMPTY_CONFIG), "the trace's stored "
                                           "configuration, else kube-scheduler's defaults",
                                           "trace")
    else:
        document, source, default_label = (dict(_EMPTY_CONFIG), "kube-scheduler's defaults",
                                           "defaults")
    if "patch" in entry:
        patch = reader.mapping(entry["patch"], f"{where}.patch",
                               set(entry["patch"]) if isinstance(entry["patch"], dict) else {})
        document = merge_patch(document, patch)
        source = f"{source} + patch"
    label = reader.label(entry.get("name", default_label), f"{where}.name")
    gates = entry.get("featureGates", "")
    if isinstance(gates, dict):
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())
    gates = reader.typed(gates, f"{where}.featureGates", str)
    plugins = entry.get("plugins", [])
    if not isinstance(plugins, list):
        raise reader.fail(f"{where}.plugins", f"expected a list of MODULE:CLASS, got "
                                              f"{_kind(plugins)}")
    for i, plugin in enumerate(plugins):
        reader.typed(plugin, f"{where}.plugins[{i}]", str)
    replay = reader.replay_options(entry.get("replay", {}), f"{where}.replay")
    own = reader.release(entry.get("kubernetesVersion"), f"{where}.kubernetesVersion")
    return ConfigSpec(label=label, document=document,
                      source=f"{source} [sweep {sweep}, config {label}]",
                      feature_gates=gates, plugins=tuple(plugins), replay=replay,
                      from_trace=from_trace, kubernetes_version=own or release)


def _unique(reader: _Reader, labels: list[str], where: str) -> None:
    seen: set[str] = set()
    for i, label in enumerate(labels):
        if label in seen:
            raise reader.fail(f"{where}[{i}].name", f"{label!r} is used twice; give each "
                                                    "entry its own name")
        seen.add(label)


def _list(reader: _Reader, document: dict[str, Any], key: str) -> list[Any]:
    value = document.get(key)
    if not isinstance(value, list) or not value:
        raise reader.fail(key, f"expected a non-empty list, got {_kind(value)}")
    return value


def read_spec(path: Path) -> SweepSpec:
    """Read and check the spec at ``path``; :class:`InputError` names the file and field."""
    reader = _Reader(path)
    if not path.is_file():
        raise InputError(f"{path}: no such sweep spec file")
    try:
        document = read_file(path)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    document = reader.mapping(document, "", _TOP)
    if document.get("kind", "Sweep") != "Sweep":
        raise reader.fail("kind", f"{document['kind']!r}: expected Sweep")
    name = reader.label(document.get("name", re.sub(r"[^A-Za-z0-9_.+-]", "-", path.stem)[:64]),
                        "name")
    traces = [_trace(reader, t, f"traces[{i}]", i)
              for i, t in enumerate(_list(reader, document, "traces"))]
    _unique(reader, [t.label for t in traces], "traces")
    release = reader.release(document.get("kubernetesVersion"), "kubernetesVersion")
    if "configs" in document:
        configs = [_config(reader, c, f"configs[{i}]", name, release)
                   for i, c in enumerate(_list(reader, document, "configs"))]
    else:
        configs = [_config(reader, {}, "configs[0]", name, release)]
    _unique(reader, [c.label for c in configs], "configs")
    seeds = _seeds(reader, document.get("seeds"))
    replay = reader.replay_options(document.get("replay", {}), "replay")
    labels = [c.label for c in configs]
    baseline = document.get("baseline", labels[0])
    if baseline not in labels:
        raise reader.fail("baseline", f"{baseline!r} is not one of the configs "
                                      f"({', '.join(labels)})")
    if "cells" in document:
        cells = []
        for i, cell in enumerate(_list(reader, document, "cells")):
            where = f"cells[{i}]"
            entry = reader.mapping(cell, where, {"trace", "config", "seed"})
            trace = entry.get("trace", traces[0].label if len(traces) == 1 else None)
            config = entry.get("config", labels[0] if len(labels) == 1 else None)
            if not isinstance(trace, str):
                raise reader.fail(f"{where}.trace", "expected a trace's name"
                                  + (f", got {_kind(trace)}" if trace is not None else
                                     " (the spec has several traces)"))
            if not isinstance(config, str):
                raise reader.fail(f"{where}.config", "expected a config's name"
                                  + (f", got {_kind(config)}" if config is not None else
                                     " (the spec has several configs)"))
            if trace not in {t.label for t in traces}:
                raise reader.fail(f"{where}.trace", f"{trace!r} is not one of the traces")
            if config not in labels:
                raise reader.fail(f"{where}.config", f"{config!r} is not one of the configs")
            seed = _seed(reader, entry.get("seed", seeds[0]), f"{where}.seed")
            cells.append(CellSpec(trace, config, seed))
        if len(set(cells)) != len(cells):
            raise reader.fail("cells", "a cell is listed twice")
    else:
        cells = [CellSpec(t.label, c.label, s) for t in traces for c in configs for s in seeds]
    if len(cells) > MAX_CELLS:
        raise reader.fail("", f"{len(cells):,} cells; at most {MAX_CELLS:,} in one sweep")
    reference = None
    if "reference" in document:
        reference = dict(reader.mapping(document["reference"], "reference",
                                        {"metric", "source", "values"}))
        reader.typed(reference.get("metric"), "reference.metric", str)
        reader.typed(reference.get("source", ""), "reference.source", str)
        values = reader.mapping(reference.get("values"), "reference.values",
                                {*labels, *(t.label for t in traces)})
        for label, value in values.items():
            where = f"reference.values.{label}"
            if isinstance(value, dict):
                reader.mapping(value, where, set(labels))
                for config, number in value.items():
                    reader.typed(number, f"{where}.{config}", (int, float))
            else:
                reader.typed(value, where, (int, float))
    return SweepSpec(name=name, path=path, traces=tuple(traces), configs=tuple(configs),
                     seeds=seeds, replay=replay, baseline=baseline, cells=tuple(cells),
                     description=str(document.get("description", "")), document=document,
                     reference=reference)
