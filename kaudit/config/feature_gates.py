"""Feature gates that change kube-scheduler's in-tree behaviour, and ``--feature-gates``.

A :class:`FeatureGates` is a set of gate values of one Kubernetes release
(:class:`~kaudit.versions.KubernetesVersion`, :data:`kaudit.versions.DEFAULT` unless given):
that release's gate table (default, stage, lock; for v1.34.2 see ``kaudit.versions.v1_34``,
which mirrors ``pkg/features/kube_features.go``) with overrides laid over it. Parsing
mirrors ``k8s.io/component-base/featuregate`` (``Set``, ``SetFromMap``): the same messages
for an unknown gate, a locked gate and a value that is not a bool, and the ``AllAlpha`` /
``AllBeta`` pseudo-gates.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from kaudit.errors import ConfigError
from kaudit.gostrings import aggregate
from kaudit.versions import ALPHA, BETA, DEFAULT, DEPRECATED, GA, GateSpec, KubernetesVersion

__all__ = ["ALL_ALPHA", "ALL_BETA", "ALPHA", "BETA", "DEPRECATED", "GA", "GATE_SPECS",
           "FeatureGates", "GateSpec", "parse_feature_gates"]

ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"

#: The gate table of the default release (:data:`kaudit.versions.DEFAULT`).
GATE_SPECS: Mapping[str, GateSpec] = DEFAULT.gates

_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
          "0": False, "f": False, "F": False, "FALSE": False, "false": False,
          "False": False}


def _resolve(overrides: Mapping[str, bool], specs: Mapping[str, GateSpec]) -> dict[str, bool]:
    """Effective values of the gates ``specs`` after ``overrides``, or :class:`ConfigError`
    like ``SetFromMap``."""
    errors: list[str] = []
    for name, value in overrides.items():
        if name in (ALL_ALPHA, ALL_BETA):
            continue
        spec = specs.get(name)
        if spec is None:  # upstream stops at the first unknown gate
            errors.append(f"unrecognized feature gate: {name}")
            break
        if spec.locked and spec.default != value:
            errors.append(f"cannot set feature gate {name} to {str(value).lower()}, "
                          f"feature is locked to {str(spec.default).lower()}")
    if errors:
        raise ConfigError(aggregate(errors))
    values = {name: spec.default for name, spec in specs.items()}
    for special, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
        if special in overrides:
            for name, spec in specs.items():
                if spec.stage == stage and not spec.locked and name not in overrides:
                    values[name] = bool(overrides[special])
    values.update({k: bool(v) for k, v in overrides.items() if k in specs})
    return values


class FeatureGates(Mapping[str, bool]):
    """An immutable set of feature-gate values: the defaults of ``version`` plus
    ``overrides``."""

    __slots__ = ("_overrides", "_values", "_version")

    def __init__(self, overrides: Mapping[str, bool] | None = None,
                 version: KubernetesVersion = DEFAULT) -> None:
        self._version = version
        self._overrides = dict(overrides or {})
        self._values = _resolve(self._overrides, version.gates)

    @property
    def version(self) -> KubernetesVersion:
        """The release whose gate table these values are of."""
        return self._version

    def enabled(self, name: str) -> bool:
        if name not in self._values:
            fixed = self._version.removed_gates.get(name)
            if fixed is not None:
                return fixed  # the gate is gone; its GA behaviour stays
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
        """The gates whose effective value differs from their default in :attr:`version`."""
        specs = self._version.gates
        return {n: v for n, v in sorted(self._values.items()) if v != specs[n].default}

    def with_overrides(self, overrides: Mapping[str, bool]) -> FeatureGates:
        return FeatureGates({**self._overrides, **overrides}, self._version)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FeatureGates):
            return self._version is other._version and self._values == other._values
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __str__(self) -> str:
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self._overrides.items()))

    def __repr__(self) -> str:
        if self._version is DEFAULT:
            return f"FeatureGates({self._overrides!r})"
        return f"FeatureGates({self._overrides!r}, version={self._version.name!r})"


def parse_feature_gates(text: str, version: KubernetesVersion = DEFAULT) -> FeatureGates:
    """Parse ``--feature-gates`` syntax (``A=true,B=false``) into :class:`FeatureGates` of
    ``version``."""
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
    return FeatureGates(overrides, version)
