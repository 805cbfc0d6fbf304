"""The FGD paper's six policies as ``KubeSchedulerConfiguration`` objects.

As ``experiments/run_scripts/generate_run_scripts.py`` and ``scripts/generate_config_and_run.py``
of hkust-adsl/kubernetes-scheduler-simulator configure them: every score plugin of the default
profile disabled, the policy's score plugin enabled with weight 1000, ``OpenGpuShare`` at
preFilter, filter and reserve with the policy's GPU selection, ``RandomScore`` also at
preScore, all nodes scored (``percentageOfNodesToScore: 100``), and no preemption (the protocol
tries each pod once).
"""

from __future__ import annotations

from typing import Any

#: Policy → (score plugin, ``gpuSelMethod``), in the paper's order.
POLICIES: dict[str, tuple[str, str]] = {
    "Random": ("RandomScore", "random"),
    "DotProd": ("DotProductScore", "best"),
    "GpuClustering": ("GpuClusteringScore", "best"),
    "GpuPacking": ("GpuPackingScore", "best"),
    "BestFit": ("BestFitScore", "best"),
    "FGD": ("FGDScore", "FGDScore"),
}


def paper_configuration(policy: str) -> dict[str, Any]:
    """The configuration of one policy (a key of :data:`POLICIES`)."""
    score, selection = POLICIES[policy]
    pre_score = {"preScore": {"enabled": [{"name": score}]}} if score == "RandomScore" else {}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"disabled": [{"name": "DefaultPreemption"}]},
                "preFilter": {"enabled": [{"name": "OpenGpuShare"}]},
                "filter": {"enabled": [{"name": "OpenGpuShare"}]},
                "reserve": {"enabled": [{"name": "OpenGpuShare"}]},
                **pre_score,
                "score": {"disabled": [{"name": "*"}],
                          "enabled": [{"name": score, "weight": 1000}]},
            },
            "pluginConfig": [{"name": "OpenGpuShare", "args": {"gpuSelMethod": selection}}],
        }],
    }
