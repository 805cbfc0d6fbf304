"""Device taints and the tolerations of a device request.

Mirrors ``taintPreventsAllocation`` and ``taintTolerated`` of
``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
allocator_stable.go`` and ``ToleratesTaint`` of ``resourceclaim/devicetoleration.go``
(Kubernetes v1.37.2, the same in v1.36.3): only a ``NoSchedule`` or ``NoExecute`` taint keeps
a device from a request (``None`` and unknown effects are ignored), unless one of the
request's tolerations matches it: an effect and a key, when given, must equal the taint's;
operator ``Exists`` matches any value, ``Equal`` (or none) the same value, any other none.
"""

from __future__ import annotations

from typing import Any, Protocol

JSON = dict[str, Any]

#: The effects that keep a device from a request that does not tolerate them.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


class _Tainted(Protocol):
    obj: JSON


class _Tolerating(Protocol):
    tolerations: list[JSON]


def tolerates(toleration: JSON, taint: JSON) -> bool:
    """``ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def taint_prevents_allocation(device: _Tainted, request: _Tolerating) -> bool:
    """Whether a taint of ``device`` that blocks allocation is not tolerated by ``request``."""
    for taint in device.obj.get("taints") or ():
        if isinstance(taint, dict) and taint.get("effect") in BLOCKING_EFFECTS and not any(
                tolerates(toleration, taint) for toleration in request.tolerations):
            return True
    return False
