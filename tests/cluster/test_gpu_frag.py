"""The FGD paper's fragmentation measure and typical pods, against the authors' own tests
(``pkg/utils/frag_test.go`` of hkust-adsl/kubernetes-scheduler-simulator)."""

from __future__ import annotations

import numpy as np
import pytest

from kaudit.cluster.gpu_frag import (
    CATEGORIES,
    FragMeasure,
    PodShape,
    TypicalPod,
    typical_pods,
)

# ``TestingGenerateGetTypicalPods``: (cpu milli, gpu milli, gpu count, model, percent).
AUTHORS_TYPICAL = [
    (6000, 465, 1, "", 9.33), (8000, 440, 1, "2080", 9.15), (8000, 475, 1, "T4", 8.76),
    (8000, 440, 1, "P100", 8.72), (2000, 465, 1, "", 8.68), (12000, 900, 1, "", 8.65),
    (4000, 900, 1, "", 8.43), (16000, 678, 1, "T4", 8.36), (8000, 500, 1, "", 8.29),
    (6000, 511, 1, "", 8.11), (14000, 1000, 2, "2080", 0.54), (4000, 1000, 1, "2080", 0.43),
    (32000, 1000, 2, "T4", 0.43), (16000, 1000, 1, "V100M16", 0.40),
    (64000, 1000, 2, "", 0.40), (10000, 1000, 2, "", 0.40), (11400, 1000, 1, "T4", 0.36),
    (16000, 1000, 1, "T4", 0.36), (4000, 1000, 2, "", 0.36), (14000, 1000, 2, "V100M16", 0.36),
    (8000, 1000, 4, "", 0.36), (16000, 1000, 2, "", 0.32), (2000, 1000, 1, "T4", 0.32),
    (6000, 1000, 1, "", 0.32), (4000, 1000, 1, "", 0.32), (5000, 1000, 1, "", 0.32),
    (32000, 1000, 4, "V100M16", 0.32), (32000, 1000, 2, "", 0.32),
    (24000, 1000, 8, "2080", 0.32), (40000, 1000, 4, "", 0.29), (32000, 1000, 8, "", 0.29),
    (32000, 1000, 1, "T4", 0.29), (16000, 1000, 1, "", 0.25), (7000, 1000, 1, "V100M16", 0.25),
    (24000, 1000, 1, "T4", 0.25),
]


def _measure(rows: list[tuple[int, int, int, str, float]]) -> FragMeasure:
    return FragMeasure([TypicalPod(PodShape(cpu, milli, count, model), percent / 100)
                        for cpu, milli, count, model, percent in rows])


def _fragment(measure: FragMeasure, cpu: int, left: list[int], model: str) -> float:
    return float(measure.fragment(np.array([cpu]), np.array([left], dtype=np.int32),
                                  [model])[0])


@pytest.mark.parametrize(("left", "expected"), [
    ([200, 1000, 1000, 500], 2566.62),
    ([1000, 1000, 1000, 1000], 3802.40),
    ([1000] * 8, 7604.80),
])
def test_fragment_amounts_equal_the_authors(left: list[int], expected: float) -> None:
    # ``TestNodeGpuShareFragAmountScore``: 1 CPU left on a 1080 node.
    assert _fragment(_measure(AUTHORS_TYPICAL), 1000, left, "1080") == \
        pytest.approx(expected, abs=0.01)


def test_a_node_lacking_cpu_counts_all_its_gpu_as_fragment() -> None:
    one = _measure(AUTHORS_TYPICAL[:1])
    assert _fragment(one, 1000, [200, 1000, 1000, 500], "1080") == pytest.approx(251.91,
                                                                                abs=0.01)
    amounts = one.amounts(np.array([1000]), np.array([[200, 1000, 1000, 500]], np.int32),
                          ["1080"])[0]
    assert dict(zip(CATEGORIES, amounts.round(2), strict=True))["q4_lack_cpu"] == 251.91


def test_categories_of_one_typical_pod() -> None:
    measure = FragMeasure([TypicalPod(PodShape(4000, 500, 1, "T4"), 0.5),
                           TypicalPod(PodShape(8000, 0, 0), 0.5)])

    def categories(cpu: int, left: list[int], model: str) -> dict[str, float]:
        row = measure.amounts(np.array([cpu]), np.array([left], np.int32), [model])[0]
        return {name: value for name, value in zip(CATEGORIES, row, strict=True) if value}

    # fits: the 300 left on GPU 1 is too little for the pod (q2), the rest is usable (q3)
    assert categories(16000, [1000, 300], "T4") == {"q2_lack_gpu": 150, "q3_satisfied": 500,
                                                     "xl_satisfied": 650}
    assert categories(16000, [1000, 300], "V100M16") == {"no_access": 650,
                                                         "xl_satisfied": 650}
    assert categories(2000, [400, -1], "T4") == {"q1_lack_both": 200, "xr_lack_cpu": 200}
    assert categories(2000, [1000, 1000], "T4") == {"q4_lack_cpu": 1000, "xr_lack_cpu": 1000}
    assert categories(16000, [-1, -1], "") == {}  # no GPU: nothing idle to fragment


def test_typical_pods_are_the_most_popular_shapes_covering_95_percent() -> None:
    big, small, rare = PodShape(8000, 1000, 1), PodShape(2000, 500, 1), PodShape(1000, 0, 0)
    shapes = [big] * 60 + [small] * 36 + [rare] * 4
    typical = typical_pods(shapes)
    assert [t.shape for t in typical] == [big, small]   # 96 % covered, the rest left out
    assert [round(t.frequency, 4) for t in typical] == [0.625, 0.375]
    # equal counts: the larger shape first (the authors' ``PodResource.Less``, reversed)
    tied = typical_pods([small, big, rare, small, big, rare], threshold=100)
    assert [t.shape for t in tied] == [big, small, rare]
    assert typical_pods([]) == ()
