"""``untolerated_taint``: ``v1helper.FindMatchingUntoleratedTaint`` with TaintToleration's
NoSchedule/NoExecute filter (``component-helpers/scheduling/corev1/helpers.go``)."""

from __future__ import annotations

from kaudit.model.pod import Taint, Toleration
from kaudit.model.taints import untolerated_taint

GPU = Taint("gpu", "true", "NoSchedule")
DRAIN = Taint("drain", "", "NoExecute")
SOFT = Taint("soft", "", "PreferNoSchedule")


def test_the_first_untolerated_taint_in_the_node_order() -> None:
    assert untolerated_taint((SOFT, GPU, DRAIN), ()) == GPU
    assert untolerated_taint((SOFT, DRAIN, GPU), ()) == DRAIN


def test_prefer_no_schedule_never_keeps_a_pod_off() -> None:
    assert untolerated_taint((SOFT,), ()) is None


def test_tolerated_taints_are_skipped() -> None:
    gpu_ok = (Toleration("gpu", "Equal", "true", "NoSchedule"),)
    assert untolerated_taint((GPU, DRAIN), gpu_ok) == DRAIN
    everything = (Toleration("", "Exists", "", ""),)
    assert untolerated_taint((GPU, DRAIN), everything) is None
    wrong_value = (Toleration("gpu", "Equal", "false", "NoSchedule"),)
    assert untolerated_taint((GPU,), wrong_value) == GPU
    wrong_effect = (Toleration("gpu", "Exists", "", "NoExecute"),)
    assert untolerated_taint((GPU,), wrong_effect) == GPU
