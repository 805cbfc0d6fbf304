"""What a recording says about the cluster it came from: the Kubernetes release.

A trace keeps the release it was recorded from, as its source says it (``v1.34.2``,
``v1.35.0-rc.1``, ``v1.34.2-eks-4a6f1c2``), whether kaudit mirrors that release or not; the
services choose the release to mirror from it (``kaudit.services.versions``). Sources:

* ``kaudit record`` opens its native trace with a **header**: a ``BOOKMARK`` watch event (a
  watch's progress marker, which every watch reader skips) whose object is a
  ``kaudit.io/v1`` ``Recording`` carrying the API server's ``/version`` ``gitVersion`` in its
  annotations, as Kubernetes' own bookmarks carry ``k8s.io/initial-events-end``::

    {"ts": "…", "type": "BOOKMARK", "object": {"apiVersion": "kaudit.io/v1",
     "kind": "Recording", "metadata": {"annotations": {
       "kaudit.io/kubernetes-version": "v1.34.2", "kaudit.io/recorder": "kaudit/0.1.0"}}}}

* an audit log names kube-scheduler's release in the user agent of its requests:
  ``kube-scheduler/v1.34.2 (linux/amd64) kubernetes/<sha>``.
"""

from __future__ import annotations

import re
from typing import Any

HEADER_API_VERSION = "kaudit.io/v1"
HEADER_KIND = "Recording"
#: The annotation of the header naming the API server's release (``/version``'s gitVersion).
VERSION_ANNOTATION = "kaudit.io/kubernetes-version"
#: The annotation of the header naming what wrote the recording (``kaudit/0.1.0``).
RECORDER_ANNOTATION = "kaudit.io/recorder"
#: The user agent kube-scheduler's requests carry: ``kube-scheduler/RELEASE (OS/ARCH) ...``.
SCHEDULER_AGENT = "kube-scheduler/"
#: The longest release string kept (the store's column).
MAX_RELEASE = 32

#: A release as sources write it: ``v1.34.2``, ``1.34``, ``v1.35.0-rc.1``,
#: ``v1.34.2-eks-4a6f1c2``, ``v1.34.2+k3s1`` (a pre-release's or a vendor's suffix).
RELEASE = re.compile(r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:[-+][0-9A-Za-z.+-]*)?")


def parse_release(text: str) -> tuple[int, int, int | None] | None:
    """``(major, minor, patch)`` of a release as a source writes it (patch None when only a
    minor is given), or None when ``text`` names no release."""
    match = RELEASE.fullmatch(text.strip())
    if match is None:
        return None
    return int(match[1]), int(match[2]), None if match[3] is None else int(match[3])


def recorded_release(value: Any) -> str | None:
    """``value`` when it is a string naming a release that fits the store, else None: what a
    reader keeps of the release a source gives."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text if len(text) <= MAX_RELEASE and parse_release(text) is not None else None


def header_object(kubernetes_version: str, recorder: str) -> dict[str, Any]:
    """The object of a recording's header event (a ``BOOKMARK``)."""
    return {"apiVersion": HEADER_API_VERSION, "kind": HEADER_KIND,
            "metadata": {"annotations": {VERSION_ANNOTATION: kubernetes_version,
                                         RECORDER_ANNOTATION: recorder}}}


def is_header(obj: Any) -> bool:
    """Whether a ``BOOKMARK`` event's object is a recording's header."""
    return (isinstance(obj, dict) and obj.get("apiVersion") == HEADER_API_VERSION
            and obj.get("kind") == HEADER_KIND)


def header_release(obj: Any) -> str | None:
    """The release a recording's header names (None when it names none, or no release)."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return None
    return recorded_release(annotations.get(VERSION_ANNOTATION))


def user_agent_release(agent: Any) -> str | None:
    """kube-scheduler's release in an audit event's user agent (``kube-scheduler/v1.34.2
    (linux/amd64) kubernetes/abc1234``); None for another client's, or no release."""
    if not isinstance(agent, str) or not agent.startswith(SCHEDULER_AGENT):
        return None
    token = agent[len(SCHEDULER_AGENT):].split(" ", 1)[0]
    return recorded_release(token)
