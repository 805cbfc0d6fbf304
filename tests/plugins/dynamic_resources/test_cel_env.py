"""The DRA CEL environment against upstream's ``TestCEL`` table
(``staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go``, v1.34.2), transcribed
into ``tests/data/dra/cel_cases.json``: compile errors, matches and runtime errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kaudit.plugins.dynamic_resources.cel_env import CelError, SelectorCache, device_activation

CASES = json.loads((Path(__file__).parents[2] / "data" / "dra" / "cel_cases.json")
                   .read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_cel_case(case: dict[str, Any]) -> None:
    if case.get("skip"):
        pytest.skip(case["skip"])
    if case.get("envType") == "NewExpressions" and not case.get("enableConsumableCapacity"):
        pytest.skip("the NewExpressions environment (API validation of new objects); the "
                    "scheduler compiles with StoredExpressions")
    compiled = SelectorCache().get(case["expression"])
    if case["expectCompileError"]:
        assert compiled.error is not None and case["expectCompileError"] in compiled.error
        return
    assert compiled.error is None, compiled.error
    device = {"attributes": case.get("attributes") or {}, "capacity": case.get("capacity") or {},
              "allowMultipleAllocations": case.get("allowMultipleAllocations")}
    activation = device_activation(case["driver"], device)
    if case["expectMatchError"]:
        with pytest.raises(CelError, match=case["expectMatchError"]):
            compiled.matches(activation)
        return
    assert compiled.matches(activation) is case["expectMatch"]


@pytest.mark.parametrize(("expression", "message"), [
    ("(" * 80 + "true" + ")" * 80, "nested too deeply"),
    ('device.capacity["d"].memory < 5', "no such overload"),
    ('device.capacity["d"].memory >= "40Gi"', "no such overload"),
])
def test_what_the_interpreter_cannot_evaluate_is_a_cel_error(expression: str,
                                                             message: str) -> None:
    """Expressions upstream's type check or stack would refuse end as CEL errors (the pod's
    attempt fails with them), never as a crash of the replay."""
    compiled = SelectorCache().get(expression)
    activation = device_activation("d", {"capacity": {"memory": {"value": "1Gi"}}})
    if compiled.error is not None:
        assert message in compiled.error
        return
    with pytest.raises(CelError, match=message):
        compiled.matches(activation)


def test_long_expressions_and_syntax_errors_are_named() -> None:
    cache = SelectorCache()
    error = cache.get(" || ".join(["true"] * 3000)).error
    assert error is not None and "more than 10240" in error
    error = cache.get("device.x ==").error
    assert error == ("compilation failed: ERROR: <input>:1:10: Syntax error: unexpected input\n"
                     " | device.x ==\n | .........^")
