"""ResourceClaims generated from ResourceClaimTemplates, as the resourceclaim controller makes
them (``handleClaim`` in ``pkg/controller/resourceclaim/controller.go``, Kubernetes v1.34).

For each ``spec.resourceClaims`` entry of a pod that names a template and has no claim yet (no
entry in ``status.resourceClaimStatuses``), a claim with the template's ``spec.spec`` and
``spec.metadata`` labels and annotations, the ``resource.kubernetes.io/pod-claim-name``
annotation, and the pod as its controlling owner, named ``<pod>-<claim>-`` and five characters
(:func:`kaudit.model.dra.generated_claim_name`; the characters are derived from the pod's uid,
so a replay repeats). An entry whose template does not exist yet is left for later, as the
controller retries it.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from kaudit.cluster.objects import apply_object
from kaudit.cluster.state import ClusterState
from kaudit.model import dra

JSON = dict[str, Any]
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName alphabet


def _suffix(*parts: str) -> str:
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def generate_claims(cluster: ClusterState, pod: JSON, create: Callable[[JSON], None]) -> JSON:
    """The pod with a claim for each template entry that has none yet (each claim handed to
    ``create``); the pod itself when there is nothing to do."""
    spec = pod.get("spec") or {}
    entries = spec.get("resourceClaims") or []
    if not any(entry.get("resourceClaimTemplateName") for entry in entries):
        return pod
    meta = pod.get("metadata") or {}
    namespace, name, uid = (str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                            str(meta.get("uid") or ""))
    statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
    known = {status.get("name") for status in statuses}
    added = False
    for entry in entries:
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name or entry.get("name") in known:
            continue
        template = cluster.objects["ResourceClaimTemplate"].get(f"{namespace}/{template_name}")
        if template is None:
            continue  # the controller waits for the template; so does the pod
        entry_name = str(entry.get("name") or "")
        claim_name = dra.generated_claim_name(name, entry_name, _suffix(uid, entry_name))
        template_meta = (template.get("spec") or {}).get("metadata") or {}
        create({
            "apiVersion": dra.API_VERSION, "kind": "ResourceClaim",
            "metadata": {
                "name": claim_name, "namespace": namespace,
                "uid": f"claim-{_suffix(uid, claim_name, 'uid')}-{uid}",
                "labels": dict(template_meta.get("labels") or {}),
                "annotations": {**(template_meta.get("annotations") or {}),
                                dra.POD_CLAIM_NAME_ANNOTATION: entry_name},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name,
                                     "uid": uid, "controller": True,
                                     "blockOwnerDeletion": True}],
            },
            "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
        })
        statuses.append({"name": entry_name, "resourceClaimName": claim_name})
        added = True
    if not added:
        return pod
    return {**pod, "status": {**(pod.get("status") or {}), "resourceClaimStatuses": statuses}}


def with_generated_claims(cluster: ClusterState, pod: JSON) -> JSON:
    """``pod`` with its template claims generated into ``cluster`` (for a what-if, which asks
    where a new pod would go: the controller would have made its claims first)."""
    return generate_claims(cluster, pod, lambda claim: apply_object(cluster, claim))
