"""What queueing hints read from the objects of a cluster event.

A hint gets kaudit's models for pods and nodes (``PodInfo``, ``NodeInfo``, with the API object
as ``.obj``) and the API object's dict for other kinds. ``typed`` plays upstream's
``util.As[T]``: an object of another kind is an error, which the queue counts as Queue.
"""

from __future__ import annotations

from typing import Any


def typed(kind: str, obj: Any) -> dict[str, Any] | None:
    """The API object of ``obj`` (None stays None), which must be a ``kind``."""
    if obj is None:
        return None
    raw = getattr(obj, "obj", obj)
    if not isinstance(raw, dict) or raw.get("kind") != kind:
        raise TypeError(f"expected a {kind}, got {type(obj).__name__}")
    return raw


def metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def namespace_of(obj: dict[str, Any]) -> str:
    return metadata(obj).get("namespace") or ""


def name_of(obj: dict[str, Any]) -> str:
    return metadata(obj).get("name") or ""


def volumes(pod_obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list((pod_obj.get("spec") or {}).get("volumes") or [])


def claim_names(pod_obj: dict[str, Any], ephemeral: bool) -> list[str]:
    """The PVC names a pod's volumes use; with ``ephemeral``, generic ephemeral volumes' too
    (named ``<pod>-<volume>``, as ``ephemeral.VolumeClaimName``)."""
    names = []
    for volume in volumes(pod_obj):
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            names.append(claim.get("claimName") or "")
        elif ephemeral and volume.get("ephemeral") is not None:
            names.append(f"{name_of(pod_obj)}-{volume.get('name') or ''}")
    return names


def uses_claim(pod: Any, claim: dict[str, Any], ephemeral: bool) -> bool:
    """The claim is in the pod's namespace and one of its volumes names it (generic ephemeral
    volumes' claims too, with ``ephemeral``)."""
    return (namespace_of(claim) == pod.namespace
            and name_of(claim) in claim_names(pod.obj, ephemeral=ephemeral))


def pod_uid(pod: Any) -> str:
    """A pod's uid as kaudit's PodInfo has it (``namespace/name`` when the object has none)."""
    uid = getattr(pod, "uid", None)
    if uid is not None:
        return str(uid)
    raw = typed("Pod", pod) or {}
    return metadata(raw).get("uid") or f"{namespace_of(raw)}/{name_of(raw)}"


def as_pod(obj: Any) -> Any:
    """kaudit's PodInfo of a pod event's object (None stays None)."""
    from kaudit.model.pod import PodInfo, parse_pod

    if obj is None or isinstance(obj, PodInfo):
        return obj
    return parse_pod(typed("Pod", obj) or {})


def as_node(obj: Any) -> Any:
    """kaudit's NodeInfo of a node event's object (None stays None)."""
    from kaudit.model.node import NodeInfo, parse_node

    if obj is None or isinstance(obj, NodeInfo):
        return obj
    return parse_node(typed("Node", obj) or {})
