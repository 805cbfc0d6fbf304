"""ImageLocality: favour nodes that already hold the pod's images, scaled by how widely each
image is spread over the cluster.

Mirrors ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go`` (Kubernetes v1.34);
from v1.36 (``sumImageScores``, upstream PR #130231) the images of the pod's image volumes
count too, while the cap still counts containers only (until v1.37, PR #138951).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kaudit import versions
from kaudit.cluster.state import ClusterState
from kaudit.framework import signing
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import MAX_NODE_SCORE, ScorePlugin
from kaudit.model.pod import PodInfo
from kaudit.plugins import names

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Append ``:latest`` when the name has no tag (the last ``:`` is not after the last ``/``)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


class ImageLocality(ScorePlugin):
    name = names.IMAGE_LOCALITY

    signs_pods = True

    def sign_pod(self, pod: PodInfo) -> signing.Fragments | None:
        """``SignPod`` (v1.35): the normalised images of all containers."""
        return ((signing.IMAGE_NAMES, signing.image_names(pod, normalized_image_name)),)

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        #: v1.36: image volumes' images count too (the cap still counts containers).
        self.image_volumes = versions.handle_carries(handle, "image-locality-counts-image-volumes")
        #: v1.37: the cap counts image volumes too.
        self.caps_image_volumes = versions.handle_carries(
            handle, "image-locality-caps-image-volumes")

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        total_nodes = cluster.node_count
        sums = np.zeros(len(slots), dtype=np.int64)
        images = list(pod.images)
        volume_images: list[str] = []
        if self.image_volumes:
            volume_images = [str(volume["image"].get("reference") or "") for volume in
                             ((pod.obj.get("spec") or {}).get("volumes") or ())
                             if isinstance(volume, dict)
                             and isinstance(volume.get("image"), dict)]
            images += volume_images
        for image in (normalized_image_name(i) for i in images):
            with_image = cluster.image_nodes.get(image, 0)
            if with_image <= 0 or total_nodes == 0:
                continue
            spread = with_image / total_nodes
            for i, slot in enumerate(slots.tolist()):
                size = cluster.node(slot).images.get(image)
                if size is not None:
                    sums[i] += int(size * spread)
        counted = len(pod.images) + (len(volume_images) if self.caps_image_volumes else 0)
        max_threshold = MAX_CONTAINER_THRESHOLD * counted
        clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
