"""``OpenGpuShare``: the GPU-share filter and device allocation of the FGD authors' simulator.

Mirrors ``GpuSharePlugin`` of hkust-adsl/kubernetes-scheduler-simulator
(``pkg/simulator/plugin/open_gpu_share.go``):

* **Filter.** A pod that asks no GPU passes. A node passes when it has GPUs, their model is one
  the pod accepts (``alibabacloud.com/gpu-card-model``), and its devices can hold the pod: one
  device with at least the pod's GPU-milli free for a pod that shares a GPU, ``count`` wholly
  free devices otherwise (``AllocateGpuId``). The simulator's reason is ``Node:<name>``; kaudit
  says which of the three failed, so that ``0/N nodes are available`` groups them.
* **Reserve.** The devices are chosen by ``gpuSelMethod`` (``cfg.GpuSelMethod``):
  ``best`` (``allocateGpuIdBasedOnBestFit``: the fitting device with the least milli left, the
  lowest-numbered among equals), ``worst`` (the most left) or ``random`` (one fitting device
  uniformly, seeded by the replay's decision seed) or ``FGDScore`` (the device FGD scores
  best, ``allocateGpuIdBasedOnFGDScore``: :mod:`kaudit.fgd.fgd_score`, on the node as it was
  before the pod); a pod of whole GPUs takes the
  lowest-numbered wholly free devices (``AllocateExclusiveGpuId``). The assumed pod's
  provisional devices are replaced by the chosen ones; the binding's record names them.
* **Unreserve.** Nothing of its own: forgetting the assumed pod gives its devices back.

The paper's six scoring policies are their own modules of this package; each is paired with a
``gpuSelMethod`` (Random with ``random``, FGD with ``FGDScore``, the others with ``best``).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kaudit.cluster.gpu_frag import FragMeasure, cpu_left, pod_shape
from kaudit.cluster.gpus import fitting_devices, lowest_devices
from kaudit.cluster.state import ClusterState
from kaudit.config import ArgsSpec, FeatureGates, FieldError
from kaudit.config.fielderrors import invalid
from kaudit.config.schema import Obj
from kaudit.fgd.fgd_score import NAME as FGD_NAME
from kaudit.fgd.fgd_score import FGDScore, fgd_choice
from kaudit.fgd.workload import frag_measure
from kaudit.framework.cycle_state import DECISION_SEED_KEY, CycleState
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
)
from kaudit.framework.status import Code, Status
from kaudit.model.gpu import GpuDemand
from kaudit.model.pod import PodInfo

NAME = "OpenGpuShare"
SELECTION_METHODS = ("best", "worst", "random", "FGDScore")
NO_GPU = "node(s) had no GPU"
WRONG_MODEL = "node(s) had no GPU of the pod's model"
NO_DEVICE = "node(s) had no GPU device with room for the pod"
_CLUSTER_KEY = "PreFilter" + NAME


def _defaults(args: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    return {"gpuSelMethod": args.get("gpuSelMethod") or "best"}


def _validate(args: dict[str, Any], gates: FeatureGates) -> list[FieldError]:
    if args["gpuSelMethod"] not in SELECTION_METHODS:
        return [invalid("gpuSelMethod", args["gpuSelMethod"],
                        f"must be one of {', '.join(SELECTION_METHODS)}")]
    return []


def choose_devices(free: np.ndarray, demand: GpuDemand, method: str,
                   chooser: random.Random | None = None) -> tuple[int, ...] | None:
    """The devices ``method`` picks from one node's free milli (-1: no such device)."""
    if not demand.shares:
        return lowest_devices(free, demand)
    fitting = fitting_devices(free, demand)
    if not fitting:
        return None
    if method == "random":
        return ((chooser or random.Random(0)).choice(fitting),)
    # Upstream's loop compares strictly: the lowest-numbered device wins among equals.
    if method == "best":
        return (min(fitting, key=lambda d: (int(free[d]), d)),)
    return (max(fitting, key=lambda d: (int(free[d]), -d)),)


class OpenGpuShare(PreFilterPlugin, FilterPlugin, ReservePlugin):
    name = NAME
    reads_only_its_node = True
    added_pods_only_hinder = True

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return pod.gpu is not None  # the GPU devices the node's pods hold, for a GPU pod
    args_spec = ArgsSpec(kind="OpenGpuShareArgs", schema=Obj({"gpuSelMethod": "string"}),
                         set_defaults=_defaults, validate=_validate)

    #: The trace's pods, for the typical pods when the configuration names none.
    ports_needed = frozenset({"workload"})

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        if pod.gpu is None:
            return None, Status.of(Code.SKIP)
        state.write(_CLUSTER_KEY, cluster)
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        demand = pod.gpu
        if demand is None:
            return NodeVerdicts.passing(len(slots))
        gpus = cluster.gpus
        counts = (gpus.free[slots] >= 0).sum(axis=1)
        no_gpu = counts == 0
        wrong_model = np.zeros(len(slots), dtype=bool)
        if demand.models:
            wrong_model = ~no_gpu & np.fromiter(
                (gpus.models[s] not in demand.models for s in slots.tolist()), dtype=bool,
                count=len(slots))
        no_room = ~no_gpu & ~wrong_model & ~gpus.fits(slots, demand)
        ids = np.where(no_gpu, 1, np.where(wrong_model, 2, np.where(no_room, 3, 0)))
        return NodeVerdicts(np.where(ids > 0, np.int8(Code.UNSCHEDULABLE), np.int8(0))
                            .astype(np.int8), ids.astype(np.int32),
                            [(), (NO_GPU,), (WRONG_MODEL,), (NO_DEVICE,)])

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        demand = pod.gpu
        cluster = state.read(_CLUSTER_KEY)
        if demand is None or cluster is None:
            return Status.success()
        slot = cluster.slot_of[node_name]
        gpus = cluster.gpus
        provisional = gpus.release(pod.uid)  # what assuming the pod took
        seed = state.read(DECISION_SEED_KEY)
        chooser = random.Random(f"{seed}/{pod.uid}") if self.args["gpuSelMethod"] == "random" \
            else None
        method = self.args["gpuSelMethod"]
        if method == "FGDScore" and demand.shares:
            devices = self._fgd_device(cluster, pod, slot)
        else:
            devices = choose_devices(gpus.free[slot], demand, method, chooser)
        if devices is None:
            if provisional is not None:
                gpus.assign(pod.uid, provisional.slot, provisional.devices, provisional.milli)
            return Status.of(Code.ERROR, f"failed to allocate gpu to pod({pod.key}) to "
                                         f"node({node_name})")
        gpus.assign(pod.uid, slot, devices, demand.milli)
        return Status.success()

    def _fgd_device(self, cluster: ClusterState, pod: PodInfo, slot: int
                    ) -> tuple[int, ...] | None:
        """FGD's device on ``slot`` as the node was before the pod was assumed on it (the
        simulator's Reserve reads the cycle's snapshot)."""
        measure = self._measure()
        gpus = cluster.gpus
        cpu = cpu_left(cluster, np.asarray([slot])) + pod.requests.get("cpu", 0)
        _, device = fgd_choice(measure, pod_shape(pod.non_zero_cpu, pod.gpu), cpu,
                               gpus.free[[slot]], [gpus.models[slot]])
        return (int(device[0]),) if device[0] >= 0 else None

    def _measure(self) -> FragMeasure:
        framework = self.handle.framework if self.handle is not None else None
        scorer = framework.instances.get(FGD_NAME) if framework is not None else None
        if isinstance(scorer, FGDScore):
            return scorer.table().measure
        return frag_measure(self.handle)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None
