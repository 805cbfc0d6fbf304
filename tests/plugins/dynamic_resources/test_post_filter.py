"""DynamicResources' PostFilter when its PreFilter never ran (``dynamicresources.go``
PostFilter → ``getStateData``, v1.34.2): an earlier PreFilter rejected the pod as
unresolvable, the cycle state has no entry, and the Error ends PostFilter before
DefaultPreemption (upstream's message ends in ``not found``)."""

from __future__ import annotations

from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.config import FeatureGates
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.plugin import Handle
from kaudit.framework.status import Code
from kaudit.plugins.dynamic_resources.plugin import DynamicResources
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.builders import make_node, make_pod


def test_without_its_cycle_state_post_filter_fails_with_not_found() -> None:
    cluster, _ = cluster_from_objects([make_node("n1").capacity(cpu="4").obj()])
    plugin = DynamicResources({}, Handle(feature_gates=FeatureGates()))
    pod = pod_info(cluster, make_pod("p").req(cpu="1").obj())
    result, status = plugin.post_filter(CycleState(), pod, cluster, None)
    assert result is None and status.code == Code.ERROR and status.message == "not found"


def test_a_pod_with_an_unbound_immediate_claim_is_not_preempted_for() -> None:
    """VolumeBinding's PreFilter rejects a pod whose claim does not exist yet: the FitError is
    followed by DynamicResources' ``not found`` and DefaultPreemption does not run."""
    node = make_node("n1").capacity(cpu="4", memory="8Gi").obj()
    low = make_pod("low").req(cpu="4").priority(0).node("n1").obj()
    cluster, _ = cluster_from_objects([node, low])
    pod = pod_info(cluster, make_pod("p").req(cpu="4").priority(100).pvc("data", "missing").obj())
    config, registry = load()
    attempt = build_scheduler(config, registry).schedule(cluster, pod)
    assert attempt.post_filter is not None and attempt.post_filter.code == Code.ERROR
    assert attempt.post_filter_result is None or \
        attempt.post_filter_result.nominated_node_name is None
    assert attempt.message.endswith(". not found"), attempt.message
