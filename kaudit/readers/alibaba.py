"""Read Alibaba ``cluster-trace-gpu-v2023`` ("openb") CSVs as Kubernetes watch events.

The trace (github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2023/``; the data of the
USENIX ATC '23 paper "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent") is a node list ``sn,cpu_milli,memory_mib,gpu,model`` and a
pod list ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time`` (the ``multigpu*`` lists have only the first five columns).
Units: milli-CPU, MiB, whole GPUs, GPU milli per GPU (1000 = a whole GPU), seconds.

Mapping (mirrors the authors' converter ``cluster-trace-gpu-v2023/pod_csv_to_yaml.py`` and
their node YAML ``cluster-trace-gpu-v2023/node_yaml/openb_node_list_gpu_node.yaml`` where
Kubernetes allows; details in ``docs/alibaba-gpu-trace.md``):

* a node row becomes a Ready ``v1`` Node named ``sn`` with labels ``kubernetes.io/hostname``,
  ``kubernetes.io/os: linux`` and ``alibabacloud.com/gpu-card-model`` (if ``model`` is set);
  capacity = allocatable = ``cpu: <cpu_milli>m``, ``memory: <memory_mib>Mi``, ``pods: 1001``
  (as the authors' node YAML), ``nvidia.com/gpu: <gpu>`` and, in ``milli`` mode,
  ``alibabacloud.com/gpu-milli: <1000 * gpu>``;
* a pod row becomes a Pending ``v1`` Pod in ``default`` with one container ``main`` whose
  requests = limits are ``cpu: <cpu_milli>m``, ``memory: <memory_mib>Mi`` (omitted when 0)
  and the GPU resources of the chosen mode: ``whole`` asks ``nvidia.com/gpu: <num_gpu>`` (a
  GPU-sharing pod asks one whole GPU, as with the NVIDIA device plugin); ``milli`` asks
  ``alibabacloud.com/gpu-milli: <gpu_milli>`` for a GPU-sharing pod and ``nvidia.com/gpu: n``
  plus ``alibabacloud.com/gpu-milli: 1000 n`` for a whole-GPU pod (an aggregate per node: it
  ignores which GPU of the node a share lands on). GPU pods carry the converter's annotations
  ``alibabacloud.com/gpu-milli``, ``alibabacloud.com/gpu-count`` and
  ``alibabacloud.com/gpu-card-model``; ``gpu_spec`` (``V100M16|V100M32``) also becomes a
  required node affinity ``alibabacloud.com/gpu-card-model In [...]``; ``qos`` becomes the
  label ``alibabacloud.com/qos``.

Replay order. Nodes are ``ADDED`` at ``start_us``. Pods are, by default, ``ADDED`` at
``start_us + creation_time`` and ``DELETED`` at ``start_us + deletion_time`` (stable order by
time, each pod's creation before its deletion, as ``syncClusterResourceList`` in
hkust-adsl/kubernetes-scheduler-simulator ``pkg/simulator/simulator.go`` orders its events).
A list without time columns is replayed in file order, ``step_us`` apart. The paper's protocol
is reproduced by the options of the authors' simulator (hkust-adsl/kubernetes-scheduler-simulator,
read at 331c110e: ``Simulate`` in ``pkg/simulator/core.go``; ``SortClusterPods``,
``TunePodsByNodeTotalResource``, ``tuneDownPods`` and ``tuneUpPods`` in
``pkg/simulator/simulator.go``; the flags ``--shuffle-pod``, ``-tune``, ``-tuneseed`` in
``scripts/generate_config_and_run.py``; the published runs in
``experiments/run_scripts/generate_run_scripts.py``):

* ``shuffle``: pods sorted by name, then shuffled with the seed; they arrive ``step_us`` apart.
  The artifact uses Go's ``math/rand`` (``rand.Seed(seed)``, one ``rand.Int()``, then
  ``rand.Shuffle``); this module uses Python's ``random.Random(seed)``, so a seed gives a
  different (but equally deterministic) order than the artifact's.
* ``gpu_load``: the artifact's tuning. Target = ``gpu_load`` x the node list's GPU milli.
  Above it, pods are removed at random positions of the ordered list until the total GPU
  request is at most the target. Below it, copies of pods drawn at random from the
  name-sorted list (named ``<pod>-tuned-<i>``) are appended after the originals until the
  next draw would exceed the target; like the artifact, that test adds the drawn pod's
  *per-GPU* milli, so a multi-GPU copy can overshoot the target by up to (n - 1) GPUs and the
  result stays within one pod's request of the target. Copies are not shuffled. Without
  ``shuffle``, a copy keeps its source's creation and deletion times.
* ``deletions=False``: no ``DELETED`` events (the converter comments out the time annotations,
  so the artifact never deletes a pod). With ``shuffle`` and deletions, a pod keeps its
  lifetime (``deletion_time - creation_time``) from its arrival.

Not mirrored: the artifact's node renaming (``rand.Perm`` prefixes after sorting by name),
its own scheduler plugins (``Open-Gpu-Share`` packs shares onto GPU indices), and the
converter's namespace ``paib-gpu``.

Every bad row is a :class:`~kaudit.readers.events.Rejected` naming the column; a missing
column or an unreadable header is a :class:`~kaudit.errors.TraceError` (line 1).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaudit.errors import InputError, TraceError
from kaudit.input_limits import integer_from_text
from kaudit.k8s.well_known import LABEL_HOSTNAME, LABEL_OS_STABLE
from kaudit.model.timestamps import MAX_SECONDS as LATEST_SECONDS
from kaudit.readers.events import Rejected, StreamStats, WatchEvent
from kaudit.readers.files import iter_lines
from kaudit.tracegen.builders import stable_uid

ALIBABA = "alibaba"

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_OPTIONAL_COLUMNS = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time",
                        "scheduled_time")
GPU_SHARING_MODES = ("whole", "milli")

MILLI = 1000
MAX_GPUS_PER_POD = 8          # the trace README: "integers from 0 to 8"
MAX_GPU_LOAD = 100.0
MAX_COPIES = 1_000_000
MAX_QUANTITY = 10**15         # bigger numbers are typos, not clusters
MAX_SECONDS = 10**12          # keeps microsecond timestamps inside 64 bits
LATEST_US = LATEST_SECONDS * 1_000_000
MAX_POD_NAME = 253 - len("-tuned-") - 8   # room for the copies' suffix

NAMESPACE = "default"
NODE_PODS = "1001"            # as in the authors' openb_node_list_gpu_node.yaml
NVIDIA_GPU = "nvidia.com/gpu"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
QOS_LABEL = "alibabacloud.com/qos"
# The converter's pod template (pod_csv_to_yaml.py): image, pull and restart policy, DNS.
IMAGE = "tensorflow:latest"

DROP_TUNED_DOWN = "gpu_load: left out at random to bring the GPU request down to the target"

_SNIPPET = 1000
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_DIGITS = re.compile(r"[0-9]+")
_NEGATIVE = re.compile(r"-[0-9]+")


@dataclass(frozen=True)
class AlibabaOptions:
    """How to turn the trace into a replay; see the module docstring and the docs page."""

    shuffle: bool = False          # paper protocol: seeded random order instead of creation time
    seed: int = 42
    gpu_load: float | None = None  # e.g. 1.3: copy or drop pods until GPU request ~ 1.3 x capacity
    deletions: bool = True         # False: no DELETED events (the paper's protocol)
    gpu_sharing: str = "whole"     # "whole" | "milli"
    step_us: int = 10_000          # arrival spacing when shuffled (or without time columns)
    start_us: int = 0              # nodes are ADDED here; trace seconds are offsets from it

    def __post_init__(self) -> None:
        if self.gpu_sharing not in GPU_SHARING_MODES:
            raise InputError(f"gpu sharing {self.gpu_sharing!r}: expected whole or milli")
        if self.step_us < 0:
            raise InputError(f"step {self.step_us} us: must not be negative")
        if self.gpu_load is not None and not (
                math.isfinite(self.gpu_load) and 0 < self.gpu_load <= MAX_GPU_LOAD):
            raise InputError(f"gpu load {self.gpu_load}: expected a ratio above 0 and at most "
                             f"{MAX_GPU_LOAD:g} (1.3 = 130 % of the cluster's GPUs)")


@dataclass
class AlibabaSummary:
    """Totals of one read, for reporting: filled by :func:`read_alibaba` as it goes."""

    nodes: int = 0
    gpu_capacity: int = 0            # GPUs of the node list
    pods_read: int = 0               # valid pod rows
    gpu_request_read_milli: int = 0  # their GPU request (num_gpu x gpu_milli)
    pods: int = 0                    # pods replayed, after tuning
    gpu_request_milli: int = 0       # their GPU request
    tuned: bool = False              # gpu_load was applied
    copies: int = 0                  # ``-tuned-`` copies added by gpu_load
    dropped: int = 0                 # pods left out by gpu_load

    @property
    def load(self) -> float:
        """GPU request of the replayed pods / GPU capacity (0 without GPUs)."""
        return self.gpu_request_milli / (MILLI * self.gpu_capacity) if self.gpu_capacity else 0.0

    def describe(self) -> str:
        verb = "tuned to" if self.tuned else "read"
        return (f"{verb} {self.pods:,} pods, GPU request {self.gpu_request_milli / MILLI:,.1f} "
                f"of {self.gpu_capacity:,} GPUs ({100 * self.load:.1f} %)")


@dataclass(frozen=True, slots=True)
class _Node:
    name: str
    line: int
    cpu_milli: int
    memory_mib: int
    gpu: int
    model: str


@dataclass(frozen=True, slots=True)
class _Pod:
    name: str
    line: int
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...]
    qos: str
    creation: int | None
    deletion: int | None

    @property
    def gpu_request_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


class _RowError(ValueError):
    """A field of a row is invalid; the message starts with the column."""


# ----------------------------------------------------------------------------- headers

def _clean_header(header: list[str]) -> list[str]:
    return [name.strip().lstrip("\ufeff").strip() for name in header]


def is_node_list(header: list[str]) -> bool:
    """Whether a CSV header is an openb node list's (for format sniffing)."""
    return set(NODE_COLUMNS) <= set(_clean_header(header))


def is_pod_list(header: list[str]) -> bool:
    """Whether a CSV header is an openb pod list's (for format sniffing)."""
    return set(POD_COLUMNS) <= set(_clean_header(header))


def missing_columns(header: list[str]) -> tuple[str, list[str]] | None:
    """For a header that is nearly an openb list's (its key column and some others), what it
    is meant to be and the columns it lacks; ``None`` for any other header."""
    names = set(_clean_header(header))
    for shape, columns in (("node list", NODE_COLUMNS), ("pod list", POD_COLUMNS)):
        if columns[0] in names and len(names & set(columns)) >= 2:
            return shape, [column for column in columns if column not in names]
    return None


_NODE_SHAPE = f"an openb node list ({','.join(NODE_COLUMNS)})"
_POD_SHAPE = (f"an openb pod list ({','.join(POD_COLUMNS)}"
              f"[,{','.join(POD_OPTIONAL_COLUMNS)}])")


def _header_index(path: Path, header: list[str], required: tuple[str, ...],
                  shape: str) -> dict[str, int]:
    names = _clean_header(header)
    index: dict[str, int] = {}
    for position, name in enumerate(names):
        if name in index:
            raise TraceError(str(path), 1, f"column {name!r} appears twice")
        index[name] = position
    missing = [name for name in required if name not in index]
    if missing:
        hint = ""
        if required == NODE_COLUMNS and is_pod_list(header):
            hint = " (this is a pod list: the node list comes first)"
        elif required == POD_COLUMNS and is_node_list(header):
            hint = " (this is a node list: the pod list comes second)"
        raise TraceError(str(path), 1, f"missing column(s) {', '.join(missing)}; expected "
                                       f"{shape}{hint}")
    if "deletion_time" in index and "creation_time" not in index:
        raise TraceError(str(path), 1, "deletion_time without creation_time")
    return index


# ----------------------------------------------------------------------------- rows

def _split(text: str) -> list[str]:
    return next(csv.reader([text], strict=True))


_Row = tuple[int, dict[str, str], str]


def _open_table(path: Path, stats: StreamStats, required: tuple[str, ...], shape: str
                ) -> tuple[dict[str, int], Iterator[_Row | Rejected]]:
    """The header's column index, and ``(line, {column: value}, text)`` per row after it (or
    a :class:`Rejected` per row that is not UTF-8 CSV with one field per column)."""
    stats.format = ALIBABA
    lines = iter_lines(path)
    first = next(lines, None)
    if first is None:
        raise TraceError(str(path), 1, f"empty file; expected {shape}")
    stats.lines = 1
    try:
        header = _split(first[1].decode("utf-8").rstrip("\r\n"))
    except (UnicodeDecodeError, csv.Error) as exc:
        lines.close()
        raise TraceError(str(path), 1, f"unreadable header ({exc}); expected {shape}") from None
    try:
        index = _header_index(path, header, required, shape)
    except TraceError:
        lines.close()
        raise
    return index, _rows(lines, index, len(header), stats)


def _rows(lines: Iterator[tuple[int, bytes]], index: dict[str, int], width: int,
          stats: StreamStats) -> Iterator[_Row | Rejected]:
    for number, raw in lines:
        stats.lines = number
        if not raw.strip():
            continue
        snippet = raw[:_SNIPPET].decode("utf-8", errors="replace").rstrip("\r\n")
        try:
            fields = _split(raw.decode("utf-8").rstrip("\r\n"))
        except UnicodeDecodeError as exc:
            yield Rejected(number, f"row: not UTF-8 text ({exc.reason} at byte {exc.start})",
                           snippet)
            continue
        except csv.Error as exc:
            yield Rejected(number, f"row: not CSV ({exc})", snippet)
            continue
        if len(fields) != width:
            yield Rejected(number, f"row: {len(fields)} fields, the header has {width}", snippet)
            continue
        yield number, {name: fields[position].strip() for name, position in index.items()}, \
            snippet


def _integer(row: dict[str, str], column: str, limit: int = MAX_QUANTITY) -> int:
    text = row[column]
    if not text:
        raise _RowError(f"{column}: empty")
    if _NEGATIVE.fullmatch(text):
        raise _RowError(f"{column}: {text} is negative")
    if not _DIGITS.fullmatch(text):
        raise _RowError(f"{column}: {text!r} is not a non-negative integer")
    try:
        value = integer_from_text(text)
    except ValueError:
        value = limit + 1  # more digits than any int64: certainly beyond the limit
    if value > limit:
        raise _RowError(f"{column}: {text} is larger than {limit:,}")
    return value


def _optional_seconds(row: dict[str, str], column: str) -> int | None:
    if not row.get(column):
        return None
    return _integer(row, column, MAX_SECONDS)


def _object_name(row: dict[str, str], column: str, limit: int) -> str:
    name = row[column]
    if not name:
        raise _RowError(f"{column}: empty")
    if len(name) > limit:
        raise _RowError(f"{column}: longer than {limit} characters")
    if not _DNS_SUBDOMAIN.fullmatch(name):
        raise _RowError(f"{column}: {name!r} is not a valid Kubernetes object name (lowercase "
                        "letters, digits, '-' and '.')")
    return name


def _label_value(value: str, column: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise _RowError(f"{column}: {value!r} is not a valid Kubernetes label value (at most "
                        "63 letters, digits, '-', '_' and '.')")
    return value


def _parse_node(number: int, row: dict[str, str]) -> _Node:
    return _Node(name=_object_name(row, "sn", 253), line=number,
                 cpu_milli=_integer(row, "cpu_milli"), memory_mib=_integer(row, "memory_mib"),
                 gpu=_integer(row, "gpu", 10**6), model=_label_value(row["model"], "model"))


def _gpu_fields(row: dict[str, str]) -> tuple[int, int]:
    num_gpu = _integer(row, "num_gpu")
    if num_gpu > MAX_GPUS_PER_POD:
        raise _RowError(f"num_gpu: {num_gpu} is outside 0..{MAX_GPUS_PER_POD}")
    gpu_milli = _integer(row, "gpu_milli")
    if gpu_milli > MILLI:
        raise _RowError(f"gpu_milli: {gpu_milli} is outside 0..{MILLI}")
    if num_gpu == 0 and gpu_milli != 0:
        raise _RowError(f"gpu_milli: {gpu_milli} with num_gpu 0 (a CPU-only pod has 0)")
    if num_gpu > 0 and gpu_milli == 0:
        raise _RowError(f"gpu_milli: 0 with num_gpu {num_gpu} (expected 1..{MILLI})")
    if num_gpu > 1 and gpu_milli != MILLI:
        raise _RowError(f"gpu_milli: {gpu_milli} with num_gpu {num_gpu} (GPU sharing is for "
                        f"1-GPU pods; a multi-GPU pod has {MILLI})")
    return num_gpu, gpu_milli


def _parse_pod(number: int, row: dict[str, str]) -> _Pod:
    name = _object_name(row, "name", MAX_POD_NAME)
    cpu_milli, memory_mib = _integer(row, "cpu_milli"), _integer(row, "memory_mib")
    num_gpu, gpu_milli = _gpu_fields(row)
    models = tuple(_label_value(part.strip(), "gpu_spec")
                   for part in row.get("gpu_spec", "").split("|") if part.strip())
    qos = _label_value(row.get("qos", ""), "qos")
    creation = _optional_seconds(row, "creation_time")
    deletion = _optional_seconds(row, "deletion_time")
    _optional_seconds(row, "scheduled_time")
    if creation is not None and deletion is not None and deletion < creation:
        raise _RowError(f"deletion_time: {deletion} is before creation_time {creation}")
    return _Pod(name, number, cpu_milli, memory_mib, num_gpu, gpu_milli, models, qos,
                creation, deletion)


# ----------------------------------------------------------------------------- objects

def node_object(node: _Node, gpu_sharing: str) -> dict[str, Any]:
    labels = {LABEL_HOSTNAME: node.name, LABEL_OS_STABLE: "linux"}
    if node.model:
        labels[GPU_MODEL] = node.model
    resources = {"cpu": f"{node.cpu_milli}m", "memory": f"{node.memory_mib}Mi",
                 "pods": NODE_PODS}
    if node.gpu > 0:
        resources[NVIDIA_GPU] = str(node.gpu)
        if gpu_sharing == "milli":
            resources[GPU_MILLI] = str(MILLI * node.gpu)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "uid": stable_uid("node", node.name), "labels": labels},
        "spec": {},
        "status": {"capacity": resources, "allocatable": dict(resources),
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _pod_resources(pod: _Pod, gpu_sharing: str) -> dict[str, str]:
    resources = {"cpu": f"{pod.cpu_milli}m"}
    if pod.memory_mib:
        resources["memory"] = f"{pod.memory_mib}Mi"
    if pod.num_gpu == 0:
        return resources
    sharing = pod.num_gpu == 1 and pod.gpu_milli < MILLI
    if gpu_sharing == "whole" or not sharing:
        resources[NVIDIA_GPU] = str(pod.num_gpu)
    if gpu_sharing == "milli":
        resources[GPU_MILLI] = str(pod.gpu_request_milli)
    return resources


def pod_object(pod: _Pod, gpu_sharing: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": pod.name, "namespace": NAMESPACE,
                                "uid": stable_uid("pod", NAMESPACE, pod.name)}
    if pod.qos:
        metadata["labels"] = {QOS_LABEL: pod.qos}
    resources = _pod_resources(pod, gpu_sharing)
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": IMAGE, "imagePullPolicy": "Always",
                        "resources": {"requests": resources, "limits": dict(resources)}}],
        "restartPolicy": "OnFailure", "dnsPolicy": "Default",
        "schedulerName": "default-scheduler",
    }
    if pod.num_gpu > 0:
        # pod_csv_to_yaml.py writes these for GPU pods only, gpu_spec included.
        metadata["annotations"] = {GPU_MILLI: str(pod.gpu_milli), GPU_COUNT: str(pod.num_gpu)}
        if pod.models:
            metadata["annotations"][GPU_MODEL] = "|".join(pod.models)
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": GPU_MODEL, "operator": "In", "values": list(pod.models)}]}]}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
            "status": {"phase": "Pending"}}


# ----------------------------------------------------------------------------- reading

def _read_nodes(path: Path, options: AlibabaOptions, stats: StreamStats,
                summary: AlibabaSummary) -> Iterator[WatchEvent | Rejected]:
    _, rows = _open_table(path, stats, NODE_COLUMNS, _NODE_SHAPE)
    seen: dict[str, int] = {}
    for item in rows:
        if isinstance(item, Rejected):
            yield item
            continue
        number, row, text = item
        try:
            node = _parse_node(number, row)
            if node.name in seen:
                raise _RowError(f"sn: duplicate of line {seen[node.name]}")
        except _RowError as exc:
            yield Rejected(number, str(exc), text)
            continue
        seen[node.name] = number
        summary.nodes += 1
        summary.gpu_capacity += node.gpu
        yield WatchEvent(options.start_us, "ADDED", "Node", "", node.name,
                         stable_uid("node", node.name), node_object(node, options.gpu_sharing),
                         number)


def _read_pods(rows: Iterator[_Row | Rejected], need_times: bool, pods: list[_Pod]
               ) -> Iterator[Rejected]:
    """Append the valid rows to ``pods``; yield a :class:`Rejected` per invalid one."""
    seen: dict[str, int] = {}
    for item in rows:
        if isinstance(item, Rejected):
            yield item
            continue
        number, row, text = item
        try:
            pod = _parse_pod(number, row)
            if pod.name in seen:
                raise _RowError(f"name: duplicate of line {seen[pod.name]}")
            if need_times and pod.creation is None:
                raise _RowError("creation_time: empty (a replay by time needs it; --shuffle "
                                "replays without)")
        except _RowError as exc:
            yield Rejected(number, str(exc), text)
            continue
        seen[pod.name] = number
        pods.append(pod)


def _order(pods: list[_Pod], options: AlibabaOptions, timed: bool,
           rng: random.Random) -> list[_Pod]:
    if options.shuffle:  # SortClusterPods: sort by name, then rand.Shuffle
        ordered = sorted(pods, key=lambda pod: pod.name)
        rng.shuffle(ordered)
        return ordered
    if timed:
        return sorted(pods, key=lambda pod: pod.creation or 0)
    return list(pods)


def _tune_down(ordered: list[_Pod], target: float, total: int, rng: random.Random,
               stats: StreamStats) -> tuple[list[_Pod], int]:
    """tuneDownPods: remove pods at random positions until the request is at most the target."""
    ordered = list(ordered)
    while total > target and ordered:
        pod = ordered.pop(rng.randrange(len(ordered)))
        total -= pod.gpu_request_milli
        stats.drop(DROP_TUNED_DOWN, pod.line)
    return ordered, total


def _tune_up(ordered: list[_Pod], target: float, total: int, rng: random.Random,
             path: Path) -> tuple[list[_Pod], int]:
    """tuneUpPods: append copies of random pods until the next one would pass the target.

    Copies are drawn from the name-sorted list (the artifact's ``workloadPods``); as in the
    artifact, the test adds the drawn pod's per-GPU milli, not its total."""
    by_name = sorted(ordered, key=lambda pod: pod.name)
    names = {pod.name for pod in ordered}
    copies: list[_Pod] = []
    while True:
        source = by_name[rng.randrange(len(by_name))]
        if total + source.gpu_milli > target:
            break
        if len(copies) >= MAX_COPIES:
            raise TraceError(str(path), None, f"gpu_load: more than {MAX_COPIES:,} copies "
                                              "would be needed to reach the target")
        name = f"{source.name}-tuned-{len(copies)}"
        if name in names:
            raise TraceError(str(path), source.line, f"gpu_load: the copy {name!r} would "
                                                     "have the name of a pod of the list")
        copies.append(dataclasses.replace(source, name=name))
        total += source.gpu_request_milli
    return ordered + copies, total


def _tune(ordered: list[_Pod], options: AlibabaOptions, summary: AlibabaSummary,
          rng: random.Random, stats: StreamStats, nodes: Path, pods: Path) -> list[_Pod]:
    total = summary.gpu_request_read_milli
    if options.gpu_load is None or not ordered:
        return ordered
    if summary.gpu_capacity == 0:
        raise TraceError(str(nodes), None, "gpu_load: the node list has no GPU")
    if total == 0:
        raise TraceError(str(pods), None, "gpu_load: no pod of the list requests a GPU")
    target = options.gpu_load * MILLI * summary.gpu_capacity
    summary.tuned = True
    if total > target:
        tuned, total = _tune_down(ordered, target, total, rng, stats)
        summary.dropped = len(ordered) - len(tuned)
    elif total < target:
        tuned, total = _tune_up(ordered, target, total, rng, pods)
        summary.copies = len(tuned) - len(ordered)
    else:
        tuned = ordered
    summary.gpu_request_milli = total
    return tuned


def _schedule(pods: list[_Pod], options: AlibabaOptions, timed: bool
              ) -> list[tuple[int, str, _Pod]]:
    """(time, event type, pod) in replay order: stable by time, creation before deletion."""
    events: list[tuple[int, str, _Pod]] = []
    by_time = timed and not options.shuffle
    for position, pod in enumerate(pods):
        if by_time:
            added = options.start_us + (pod.creation or 0) * 1_000_000
        else:
            added = options.start_us + position * options.step_us
        events.append((added, "ADDED", pod))
        if not options.deletions or pod.deletion is None or pod.creation is None:
            continue
        if by_time:
            events.append((options.start_us + pod.deletion * 1_000_000, "DELETED", pod))
        else:
            events.append((added + (pod.deletion - pod.creation) * 1_000_000, "DELETED", pod))
    events.sort(key=lambda event: event[0])
    return events


def read_alibaba(nodes: Path, pods: Path, options: AlibabaOptions,
                 node_stats: StreamStats, pod_stats: StreamStats, *,
                 summary: AlibabaSummary | None = None
                 ) -> Iterator[tuple[int, WatchEvent | Rejected]]:
    """Yield ``(0, item)`` per node row, then ``(1, item)`` for the pod list in replay order.

    Rows of the pod list that are rejected come before its events (the whole list is read
    first: ordering and ``gpu_load`` need all of it). ``summary``, if given, is filled in.
    """
    summary = summary if summary is not None else AlibabaSummary()
    for item in _read_nodes(nodes, options, node_stats, summary):
        yield 0, item
    index, rows = _open_table(pods, pod_stats, POD_COLUMNS, _POD_SHAPE)
    timed = "creation_time" in index
    valid: list[_Pod] = []
    for rejected in _read_pods(rows, timed and not options.shuffle, valid):
        yield 1, rejected
    summary.pods_read = len(valid)
    summary.gpu_request_read_milli = summary.gpu_request_milli = sum(
        pod.gpu_request_milli for pod in valid)
    rng = random.Random(options.seed)
    ordered = _tune(_order(valid, options, timed, rng), options, summary, rng, pod_stats,
                    nodes, pods)
    summary.pods = len(ordered)
    for ts_us, event_type, pod in _schedule(ordered, options, timed):
        if abs(ts_us) > LATEST_US:
            yield 1, Rejected(pod.line, f"{pod.name}: its time ({event_type}) is beyond the "
                              "year 9999: --start plus its position times --step is too far",
                              pod.name)
            continue
        yield 1, WatchEvent(ts_us, event_type, "Pod", NAMESPACE, pod.name,
                            stable_uid("pod", NAMESPACE, pod.name),
                            pod_object(pod, options.gpu_sharing), pod.line)
