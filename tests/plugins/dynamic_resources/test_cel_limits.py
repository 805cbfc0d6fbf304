"""The cost limits of DRA selectors: the admission estimate against upstream's ``TestCEL``
expectations, the runtime limit with upstream's error, and memory-safe string building."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from kaudit.plugins.dynamic_resources.cel_budget import COST_LIMIT_EXCEEDED, CostBudget
from kaudit.plugins.dynamic_resources.cel_cost import MAX_COST
from kaudit.plugins.dynamic_resources.cel_env import (
    CelError,
    SelectorCache,
    device_activation,
    estimated_cost,
)
from tests.plugins.dynamic_resources.conftest import NESTED_ALL, string_doubling

CpuLimit = Callable[[float], AbstractContextManager[None]]
CASES = json.loads((Path(__file__).parents[2] / "data" / "dra" / "cel_cases.json")
                   .read_text())["cases"]
COSTED = [c for c in CASES if c.get("expectCost") is not None and not c["expectCompileError"]]
DEVICE = device_activation("dra.example.com", {"attributes": {"model": {"string": "a100"}}})


@pytest.mark.parametrize("case", COSTED, ids=[c["name"] for c in COSTED])
def test_the_estimate_is_upstreams(case: dict[str, object]) -> None:
    """``CompilationResult.MaxCost`` as upstream's table expects it, to the unit."""
    assert estimated_cost(str(case["expression"])) == case["expectCost"]


def test_a_selector_past_the_runtime_cost_limit_fails_with_upstreams_error(
        cpu_limit: CpuLimit) -> None:
    with cpu_limit(8), pytest.raises(CelError) as failure:
        compiled = SelectorCache().get(NESTED_ALL)  # a constant: compiling evaluates it too
        assert compiled.error is None  # the scheduler does not estimate; the API server does
        compiled.matches(DEVICE)
    assert str(failure.value) == COST_LIMIT_EXCEEDED


def test_string_doubling_stops_at_the_cost_limit_before_memory_grows(
        cpu_limit: CpuLimit) -> None:
    """String concatenation costs a tenth of its result: the limit stops the doubling while
    the string is at most ten million characters, charged before it is built."""
    compiled = SelectorCache().get(string_doubling())
    assert compiled.error is None
    budget = CostBudget()
    tracemalloc.start()
    try:
        with cpu_limit(8), pytest.raises(CelError, match="actual cost limit exceeded"):
            compiled.matches(DEVICE, budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert budget.spent > MAX_COST
    assert peak < 64 * 2**20


def test_a_cheap_selector_spends_a_few_units() -> None:
    budget = CostBudget()
    compiled = SelectorCache().get('device.attributes["dra.example.com"].model == "a100"')
    assert compiled.matches(DEVICE, budget) is True
    assert 0 < budget.spent < 10
