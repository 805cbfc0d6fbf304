"""The workload's typical pods, which FGD's score and the fragmentation measure expect.

The FGD authors' simulator computes them once, from every pod of the pod list, before it
schedules any (``SetTypicalPods`` in ``pkg/simulator/core.go``). kaudit's replay reads the
trace's pods first and hands their shapes to the scheduler through the handle's ``workload``
port (plugins that read it declare ``ports_needed = {"workload"}``); a configuration may
instead name the typical pods itself (plugin argument ``typicalPods``), as a real scheduler
would have to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kaudit.cluster.gpu_frag import FragMeasure, PodShape, TypicalPod, typical_pods
from kaudit.config import FieldError
from kaudit.config.fielderrors import invalid
from kaudit.config.schema import ListOf, Obj
from kaudit.errors import InputError
from kaudit.framework.plugin import Handle

_MEASURE_KEY = "fgdFragMeasure"


class NoWorkload(InputError):
    """Neither the replay nor the configuration told the plugin the typical pods."""


#: The schema of the ``typicalPods`` plugin argument.
TYPICAL_PODS_SCHEMA = ListOf(Obj({"cpuMilli": "int64", "gpuMilli": "int64", "gpuCount": "int64",
                                  "gpuModels": "string", "frequency": "float"}))


def validate_typical_pods(value: Any) -> list[FieldError]:
    """Range errors of a (type-checked) ``typicalPods`` argument."""
    if value is None:
        return []
    if not value:
        return [invalid("typicalPods", value, "must not be empty")]
    errors = []
    for i, item in enumerate(value):
        where = f"typicalPods[{i}]"
        for name in ("cpuMilli", "gpuMilli", "gpuCount"):
            if item.get(name, 0) < 0:
                errors.append(invalid(f"{where}.{name}", item[name], "must not be negative"))
        if item.get("gpuMilli", 0) > 1000:
            errors.append(invalid(f"{where}.gpuMilli", item["gpuMilli"], "must be at most 1000"))
        if (item.get("gpuMilli", 0) > 0) != (item.get("gpuCount", 0) > 0):
            errors.append(invalid(where, item, "gpuMilli and gpuCount must both be 0 or both "
                                               "be positive"))
        frequency = item.get("frequency")
        if frequency is None or not 0 < frequency <= 1:
            errors.append(invalid(f"{where}.frequency", frequency, "must be in (0, 1]"))
    return errors


def _configured(value: Sequence[Mapping[str, Any]]) -> tuple[TypicalPod, ...]:
    total = sum(float(item["frequency"]) for item in value)
    return tuple(TypicalPod(PodShape(int(item.get("cpuMilli", 0)), int(item.get("gpuMilli", 0)),
                                     int(item.get("gpuCount", 0)),
                                     "|".join(sorted(m for m in str(item.get("gpuModels", ""))
                                                     .split("|") if m))),
                            float(item["frequency"]) / total)
                 for item in value)


def frag_measure(handle: Handle | None, configured: Any = None) -> FragMeasure:
    """The fragmentation measure of the profile: the configured typical pods, else those of
    the workload the replay handed over (computed once per handle)."""
    if configured:
        return FragMeasure(_configured(configured))
    if handle is None or handle.ports.workload is None:
        raise NoWorkload("no typical pods: give the plugin args.typicalPods, or replay a "
                         "trace (whose pods are the workload)")
    measure = handle.extra.get(_MEASURE_KEY)
    if measure is None:
        measure = FragMeasure(typical_pods(handle.ports.workload))
        handle.extra[_MEASURE_KEY] = measure
    assert isinstance(measure, FragMeasure)
    return measure
