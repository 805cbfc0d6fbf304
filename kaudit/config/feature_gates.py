"""Feature gates that change kube-scheduler's in-tree behaviour, at their v1.34 state.

Mirrors the v1.34 entries of ``defaultVersionedKubernetesFeatureGates`` in
``pkg/features/kube_features.go`` (for each gate, the last versioned spec at or before
1.34: default, stage, and whether it is locked to its default), restricted to the gates
read by ``pkg/scheduler/framework/plugins/feature/feature.go`` (``Features``) and by the
scheduler core (queue, preemption, nomination). Parsing mirrors
``k8s.io/component-base/featuregate`` (``Set``, ``SetFromMap``): the same messages for an
unknown gate, a locked gate and a value that is not a bool, and the ``AllAlpha`` /
``AllBeta`` pseudo-gates.

``SchedulerAsyncAPICalls`` is off: it shipped on in v1.34.0 and was turned off by default
in a v1.34 patch release, which is what the versioned spec records.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kaudit.errors import ConfigError

ALPHA, BETA, GA, DEPRECATED = "ALPHA", "BETA", "GA", "DEPRECATED"
ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"


@dataclass(frozen=True)
class GateSpec:
    default: bool
    stage: str
    locked: bool = False


GATE_SPECS: Mapping[str, GateSpec] = MappingProxyType({
    # DRA: plugin DynamicResources and its allocator.
    "DynamicResourceAllocation": GateSpec(True, GA),
    "DRAAdminAccess": GateSpec(True, BETA),
    "DRAConsumableCapacity": GateSpec(False, ALPHA),
    "DRADeviceBindingConditions": GateSpec(False, ALPHA),
    "DRADeviceTaints": GateSpec(False, ALPHA),
    "DRAExtendedResource": GateSpec(False, ALPHA),
    "DRAPartitionableDevices": GateSpec(False, ALPHA),
    "DRAPrioritizedList": GateSpec(True, BETA),
    "DRAResourceClaimDeviceStatus": GateSpec(True, BETA),
    "DRASchedulerFilterTimeout": GateSpec(True, BETA),
    # Storage plugins.
    "CSIMigrationPortworx": GateSpec(True, GA, locked=True),
    "StorageCapacityScoring": GateSpec(False, ALPHA),
    "VolumeAttributesClass": GateSpec(True, GA),
    # Pod resources (NodeResourcesFit, BalancedAllocation, queueing hints).
    "InPlacePodVerticalScaling": GateSpec(True, BETA),
    "PodLevelResources": GateSpec(True, BETA),
    "SidecarContainers": GateSpec(True, GA, locked=True),
    # PodTopologySpread and InterPodAffinity.
    "MatchLabelKeysInPodAffinity": GateSpec(True, GA, locked=True),
    "MatchLabelKeysInPodTopologySpread": GateSpec(True, BETA),
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": GateSpec(True, BETA),
    "NodeInclusionPolicyInPodTopologySpread": GateSpec(True, GA, locked=True),
    # Scheduling queue, preemption, binding.
    "ClearingNominatedNodeNameAfterBinding": GateSpec(False, ALPHA),
    "NominatedNodeNameForExpectation": GateSpec(False, ALPHA),
    "PodSchedulingReadiness": GateSpec(True, GA, locked=True),
    "SchedulerAsyncAPICalls": GateSpec(False, BETA),
    "SchedulerAsyncPreemption": GateSpec(True, BETA),
    "SchedulerPopFromBackoffQ": GateSpec(True, BETA),
    "SchedulerQueueingHints": GateSpec(True, GA, locked=True),
})

_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
          "0": False, "f": False, "F": False, "FALSE": False, "false": False,
          "False": False}


def _aggregate(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def _resolve(overrides: Mapping[str, bool]) -> dict[str, bool]:
    """Effective values after ``overrides``, or :class:`ConfigError` like ``SetFromMap``."""
    errors: list[str] = []
    for name, value in overrides.items():
        if name in (ALL_ALPHA, ALL_BETA):
            continue
        spec = GATE_SPECS.get(name)
        if spec is None:  # upstream stops at the first unknown gate
            errors.append(f"unrecognized feature gate: {name}")
            break
        if spec.locked and spec.default != value:
            errors.append(f"cannot set feature gate {name} to {str(value).lower()}, "
                          f"feature is locked to {str(spec.default).lower()}")
    if errors:
        raise ConfigError(_aggregate(errors))
    values = {name: spec.default for name, spec in GATE_SPECS.items()}
    for special, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
        if special in overrides:
            for name, spec in GATE_SPECS.items():
                if spec.stage == stage and not spec.locked and name not in overrides:
                    values[name] = bool(overrides[special])
    values.update({k: bool(v) for k, v in overrides.items() if k in GATE_SPECS})
    return values


class FeatureGates(Mapping[str, bool]):
    """An immutable set of feature-gate values: the v1.34 defaults plus ``overrides``."""

    __slots__ = ("_overrides", "_values")

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        self._overrides = dict(overrides or {})
        self._values = _resolve(self._overrides)

    def enabled(self, name: str) -> bool:
        if name not in self._values:
            raise KeyError(f"unrecognized feature gate: {name}")
        return self._values[name]

    def __getitem__(self, name: str) -> bool:
        return self.enabled(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def overrides(self) -> dict[str, bool]:
        """The gates set explicitly, as given."""
        return dict(self._overrides)

    def non_default(self) -> dict[str, bool]:
        """The gates whose effective value differs from their v1.34 default."""
        return {n: v for n, v in sorted(self._values.items()) if v != GATE_SPECS[n].default}

    def with_overrides(self, overrides: Mapping[str, bool]) -> FeatureGates:
        return FeatureGates({**self._overrides, **overrides})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FeatureGates):
            return self._values == other._values
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __str__(self) -> str:
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self._overrides.items()))

    def __repr__(self) -> str:
        return f"FeatureGates({self._overrides!r})"


def parse_feature_gates(text: str) -> FeatureGates:
    """Parse ``--feature-gates`` syntax (``A=true,B=false``) into :class:`FeatureGates`."""
    overrides: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError(f"missing bool value for {name}")
        raw = raw.strip()
        if raw not in _BOOLS:
            raise ConfigError(f"invalid value of {name}={raw}, err: strconv.ParseBool: "
                              f'parsing "{raw}": invalid syntax')
        overrides[name] = _BOOLS[raw]
    return FeatureGates(overrides)
