"""Pod signatures for Opportunistic Batching (Kubernetes v1.35 on, KEP-5598): what each
plugin says makes two pods alike for scheduling.

Mirrors the signers of ``k8s.io/kube-scheduler/framework/signers.go`` and each in-tree
plugin's ``SignPod`` (v1.35.4). A plugin that signs declares ``signs_pods`` and returns its
fragments (``(signer name, value)`` pairs) from ``sign_pod``, or ``None`` where upstream's
``SignPod`` refuses the pod; a profile whose PreFilter, Filter, PreScore or Score plugins do
not all sign never batches (``computeBatchablePlugins``).

Upstream compares signatures as the JSON of a map from signer name to value; kaudit compares
the same values, normalised so that what Go's JSON encoding cannot tell apart (a field left
out or set to its zero value, map key order) is equal here too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kaudit.model.pod import PodInfo

#: Signer names (``signers.go``).
IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
NODE_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME = "v1.Pod.Spec.SchedulerName"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"

#: A plugin's part of a signature; a whole signature is the frozen union of its parts.
Fragments = tuple[tuple[str, Any], ...]


def canonical(value: Any) -> str:
    """JSON with sorted keys and Go's ``omitempty`` zero values left out: equal for values
    Go's encoding of the API types would make equal."""
    return json.dumps(_pruned(value), sort_keys=True, separators=(",", ":"))


def _pruned(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _pruned(v) for k, v in value.items() if v not in (None, "", [], {}, False)}
    if isinstance(value, list | tuple):
        return [_pruned(v) for v in value]
    return value


def _spec(pod: PodInfo) -> Mapping[str, Any]:
    spec = pod.obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _containers(pod: PodInfo) -> list[Mapping[str, Any]]:
    spec = _spec(pod)
    return [c for c in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ()))
            if isinstance(c, Mapping)]


def host_ports(pod: PodInfo) -> tuple[int, ...]:
    """``HostPortsSigner``: the distinct non-zero host ports, sorted."""
    return tuple(sorted({int(port.get("hostPort") or 0) for c in _containers(pod)
                         for port in c.get("ports") or () if isinstance(port, Mapping)} - {0}))


def tolerations(pod: PodInfo) -> tuple[str, ...]:
    """``TolerationsSigner``: the tolerations ordered by key, then value."""
    raw = [t for t in _spec(pod).get("tolerations") or () if isinstance(t, Mapping)]
    ordered = sorted(raw, key=lambda t: (str(t.get("key") or ""), str(t.get("value") or "")))
    return tuple(canonical(t) for t in ordered)


def _requirements(reqs: Any) -> list[str]:
    out = []
    for req in reqs or ():
        if isinstance(req, Mapping):
            out.append(canonical({**req, "values": sorted(str(v) for v in req.get("values")
                                                          or ())}))
    return sorted(out)


def _term(term: Any) -> str:
    term = term if isinstance(term, Mapping) else {}
    return json.dumps({"MatchExpressions": _requirements(term.get("matchExpressions")),
                       "MatchFields": _requirements(term.get("matchFields"))},
                      sort_keys=True)


def node_affinity(pod: PodInfo) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``NodeAffinitySigner``: the required terms and the weighted preferred terms, each
    sorted; None without a node affinity."""
    affinity = _spec(pod).get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    if not isinstance(node, Mapping):
        return None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    preferred = [json.dumps({"Weight": int(p.get("weight") or 0),
                             "Preference": _term(p.get("preference"))}, sort_keys=True)
                 for p in node.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
                 if isinstance(p, Mapping)]
    return tuple(sorted(_term(t) for t in terms or ())), tuple(sorted(preferred))


def volumes(pod: PodInfo) -> tuple[str, ...]:
    """``VolumesSigner``: every volume's source but config maps' and secrets', sorted."""
    sources = []
    for volume in _spec(pod).get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        source = {k: v for k, v in volume.items() if k != "name"}
        if source.get("configMap") is None and source.get("secret") is None:
            sources.append(canonical(source))
    return tuple(sorted(sources))


def image_names(pod: PodInfo, normalize: Any) -> tuple[str, ...]:
    """ImageLocality's signer: the distinct normalised images of all containers, sorted."""
    return tuple(sorted({normalize(str(c.get("image") or "")) for c in _containers(pod)}))


def resources(pod: PodInfo) -> tuple[tuple[str, int], ...]:
    """``computePodResourceRequest`` as NodeResourcesFit reads it."""
    return tuple(sorted(pod.requests.items()))


def resources_unless_dra_extended(gates: Any, pod: PodInfo) -> Fragments | None:
    """NodeResourcesFit's and BalancedAllocation's ``SignPod``: the pod's requests; nothing is
    signed with ``DRAExtendedResource`` on."""
    if gates is not None and "DRAExtendedResource" in gates \
            and gates.enabled("DRAExtendedResource"):
        return None
    return ((RESOURCES, resources(pod)),)


def mapping(value: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(value.items()))
