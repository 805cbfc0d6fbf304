"""ResourceClaims in a replay: the resourceclaim controller's part, and whose status counts.

kube-scheduler only allocates and reserves claims; the resourceclaim controller
(``pkg/controller/resourceclaim/controller.go``, Kubernetes v1.34) does the rest, and a replay
has to do it too:

* **Claims from templates.** A pending pod whose ``spec.resourceClaims`` entry names a
  ResourceClaimTemplate gets a claim generated from it
  (:mod:`kaudit.cluster.generated_claims`). Claims a trace already names for the pod are used
  as they are.
* **Release.** When a pod is deleted or completes, it leaves the ``reservedFor`` of its claims;
  a claim nobody uses any more is deallocated, and one generated for the pod is deleted.
* **Status.** A claim's allocation and reservations are the scheduler's decision: for the pods
  kaudit schedules they are kaudit's, so the status a trace records for such a claim (the
  recorded cluster's scheduler's choice) is not applied, as a pod's recorded binding is not.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from typing import Any

from kaudit.cluster.generated_claims import generate_claims
from kaudit.cluster.state import ClusterState, object_key
from kaudit.model import dra

JSON = dict[str, Any]
CLAIM, TEMPLATE = "ResourceClaim", "ResourceClaimTemplate"


class ClaimController:
    """The resourceclaim controller's work, applied through ``write(obj, deleted)`` (which
    updates the cluster and delivers the watch event)."""

    def __init__(self, cluster: ClusterState,
                 write: Callable[[JSON, bool], None]) -> None:
        self.cluster = cluster
        self.write = write
        #: Claims whose status kaudit decides (allocated or reserved for pods it schedules).
        self.owned: set[str] = set()
        #: Claims generated for each pod, by pod uid.
        self.generated: dict[str, list[str]] = {}
        #: Claims the controller deleted: a trace's later updates of them are not applied.
        self.deleted: set[str] = set()
        #: Claims kaudit's scheduler wrote (their finalizer is kaudit's too).
        self.written_keys: set[str] = set()

    # ------------------------------------------------------------------ templates

    def generate(self, pod: JSON) -> JSON:
        """The pod with a claim for each template entry that has none yet (the claims are
        created); the pod unchanged when there is nothing to do."""
        def create(claim: JSON) -> None:
            self.write(claim, False)
            self.owned.add(object_key(claim))
            uid = str(((claim.get("metadata") or {}).get("ownerReferences") or [{}])[0]
                      .get("uid") or "")
            self.generated.setdefault(uid, []).append(object_key(claim))
        return generate_claims(self.cluster, pod, create)

    def keep_generated(self, pod: JSON, previous: JSON) -> JSON:
        """A trace's update of a pending pod, with the claims kaudit generated for it kept
        (the trace's own generated claims are the recorded cluster's)."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if uid not in self.generated:
            return pod
        statuses = (previous.get("status") or {}).get("resourceClaimStatuses")
        updated = dict(pod)
        updated["status"] = {**(pod.get("status") or {}), "resourceClaimStatuses": statuses}
        return updated

    # ------------------------------------------------------------------ status

    def from_trace(self, claim: JSON, kaudit_pods: Collection[str],
                   event_type: str = "MODIFIED") -> JSON | None:
        """The trace's version of a claim, with kaudit's status where kaudit decides it; None
        for an update of a claim the controller deleted in the replay (a new claim of that
        name, ``ADDED``, counts again)."""
        key = object_key(claim)
        if key in self.deleted:
            if event_type != "ADDED":
                return None
            self.deleted.discard(key)
        incoming = {ref.get("uid") for ref in dra.reserved_for(claim)}
        if key not in self.owned and not incoming & set(kaudit_pods):
            return claim
        self.owned.add(key)
        stored = self.cluster.objects[CLAIM].get(key)
        kept = dict(claim)
        status = dict(claim.get("status") or {})
        for field in ("allocation", "reservedFor", "devices"):
            status.pop(field, None)
            if stored is not None and (stored.get("status") or {}).get(field) is not None:
                status[field] = stored["status"][field]
        kept["status"] = status
        if stored is not None and key in self.written_keys:
            finalizers = (stored.get("metadata") or {}).get("finalizers")
            if finalizers and dra.FINALIZER in finalizers:
                meta = dict(claim.get("metadata") or {})
                meta["finalizers"] = sorted({*(meta.get("finalizers") or []), dra.FINALIZER})
                kept["metadata"] = meta
        return kept

    def written(self, claim: JSON) -> None:
        """kaudit's scheduler wrote the claim (its status is kaudit's from now on)."""
        self.owned.add(object_key(claim))
        self.written_keys.add(object_key(claim))

    # ------------------------------------------------------------------ release

    def release(self, pod_uid: str) -> None:
        """The pod is gone or done: it leaves its claims' reservations; unused claims are
        deallocated, and the ones generated for it deleted."""
        generated = set(self.generated.pop(pod_uid, []))
        for key, claim in list(self.cluster.objects[CLAIM].items()):
            reserved = dra.reserved_for(claim)
            owned_by_pod = key in generated or any(
                ref.get("controller") and ref.get("uid") == pod_uid
                for ref in (claim.get("metadata") or {}).get("ownerReferences") or [])
            if not any(ref.get("uid") == pod_uid for ref in reserved) and not owned_by_pod:
                continue
            remaining = [ref for ref in reserved if ref.get("uid") != pod_uid]
            updated = copy.deepcopy(claim)
            status = updated.setdefault("status", {})
            meta = updated.setdefault("metadata", {})
            if len(remaining) < len(reserved):
                status["reservedFor"] = remaining
                finalizers = meta.get("finalizers") or []
                if not remaining and dra.FINALIZER in finalizers and \
                        status.get("allocation") is not None:
                    # No consumer left: the controller deallocates (an update, which wakes
                    # pods waiting for devices) and drops its finalizer.
                    for field in ("reservedFor", "allocation", "devices"):
                        status.pop(field, None)
                    meta["finalizers"] = [f for f in finalizers if f != dra.FINALIZER]
                self.write(updated, False)
            if owned_by_pod and not remaining:
                self.write(updated, True)  # generated for the pod, which is gone
                self.owned.discard(key)
                self.written_keys.discard(key)
                self.deleted.add(key)


def claims_record(cluster: ClusterState, pod: JSON) -> JSON:
    """The devices the pod's claims hold, for its ``bind`` record: ``{"claims": [{claim,
    request, driver, pool, device}]}``, with a share's ``shareID`` and ``consumedCapacity``
    (nothing for a pod without claims)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    held = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name, _, _ = dra.claim_name(pod, entry)
        claim = cluster.objects[CLAIM].get(f"{namespace}/{name}") if name else None
        if claim is None or not dra.is_reserved_for_pod(uid, claim):
            continue
        allocation = dra.allocation(claim) or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            held.append({"claim": name, "podClaim": entry.get("name"),
                         **{k: result[k] for k in ("request", "driver", "pool", "device",
                                                   "shareID", "consumedCapacity")
                            if k in result},
                         **({"adminAccess": True} if result.get("adminAccess") else {})})
    return {"claims": held} if held else {}

