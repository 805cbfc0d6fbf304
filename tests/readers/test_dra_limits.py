"""Ingest refuses the DRA selectors the API server refuses (``validateCELSelector``: longer than
10 KiB, or an estimated cost over ``CELSelectorExpressionMaxCost``), in upstream's words, naming
file, line and field; and any generated selector is either refused so or evaluated within the
runtime limit."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaudit.plugins.dynamic_resources.cel_budget import COST_LIMIT_EXCEEDED
from kaudit.plugins.dynamic_resources.cel_env import CelError, SelectorCache, device_activation
from kaudit.readers.validate import ObjectError, validate_object
from kaudit.tracegen.dra import claim, claim_spec, device_class, exact_request, write_events
from tests.plugins.dynamic_resources.conftest import (
    NESTED_ALL,
    cpu_time_limit,
    string_doubling,
)

FORBIDDEN = "Forbidden: too complex, exceeds cost limit"


def _write(path: Path, expression: str) -> Path:
    write_events(path, [(0.0, "ADDED", device_class("fine", 'device.driver == "d"')),
                        (0.0, "ADDED", claim("c", claim_spec(
                            exact_request("r", "fine", 1, expression))))])
    return path


def test_a_selector_over_the_cost_limit_is_refused_naming_file_line_and_field(
        tmp_path: Path, run_kaudit: Callable[..., Result]) -> None:
    trace = _write(tmp_path / "nested.jsonl", NESTED_ALL)
    result = run_kaudit("ingest", str(trace), "--name", "t")
    assert result.exit_code == 2, result.output
    assert (f"{trace}:2: object.spec.devices.requests[0].exactly.selectors[0].cel.expression: "
            f"{FORBIDDEN} (estimated cost 72562811, limit 1000000)") in result.output


def test_string_doubling_is_refused_at_ingest_and_cheap_selectors_are_not() -> None:
    validate_object(device_class("ok", 'device.attributes["d"].model == "a100"',
                                 'device.attributes["d"].all(k, k.size() < 64)'), "ADDED")
    cls = device_class("doubling", string_doubling())
    try:
        validate_object(cls, "ADDED")
    except ObjectError as exc:
        assert str(exc).startswith(f"object.spec.selectors[0].cel.expression: {FORBIDDEN}")
    else:
        raise AssertionError("accepted")


def test_a_selector_too_long_is_refused_in_upstreams_words() -> None:
    cls = device_class("long", " || ".join(["true"] * 3000))
    try:
        validate_object(cls, "ADDED")
    except ObjectError as exc:
        assert str(exc) == ("object.spec.selectors[0].cel.expression: Too long: may not be "
                            "more than 10240 bytes (23996 bytes)")
    else:
        raise AssertionError("accepted")


# -------------------------------------------------------------------------- generated

_LEAF = st.sampled_from(["device.driver", '"ab"', "1", 'device.attributes["d"].model',
                         "[1, 2, 3]", "true"])


def _grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Concatenation, comparison, comprehensions over lists of up to 200 elements (nested, they
    multiply), ``cel.bind`` doubling its value, ``split`` and ``map``."""
    lists = st.integers(1, 200).map(lambda n: "[" + ",".join(["7"] * n) + "]")
    return st.one_of(
        st.tuples(inner, inner).map(lambda p: f"({p[0]} + {p[1]})"),
        st.tuples(inner, inner).map(lambda p: f"({p[0]} == {p[1]})"),
        st.tuples(lists, inner).map(lambda p: f"{p[0]}.all(x, {p[1]} != x)"),
        st.tuples(lists, inner).map(lambda p: f"{p[0]}.exists(x, size(string({p[1]}) + "
                                              "string(x)) < 0)"),
        st.tuples(inner, inner).map(lambda p: f"cel.bind(s, {p[0]}, {p[1]} == s + s)"),
        st.tuples(inner, st.integers(1, 30)).map(lambda p: _doubling(p[0], p[1])),
        inner.map(lambda e: f'string({e}).split("").map(x, x + x).size() > 0'),
        inner.map(lambda e: f"size(string({e})) > 0"),
    )


def _doubling(seed: str, times: int) -> str:
    chain = f"cel.bind(v0, string({seed}), "
    for i in range(1, times + 1):
        chain += f"cel.bind(v{i}, v{i - 1} + v{i - 1}, "
    return chain + f"v{times}.size() > 0" + ")" * (times + 1)


SELECTORS = st.recursive(_LEAF, _grow, max_leaves=12)
DEVICE = device_activation("d", {"attributes": {"model": {"string": "a100"}}})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SELECTORS)
def test_any_selector_is_refused_with_a_field_path_or_evaluated_within_the_limit(
        expression: str) -> None:
    try:
        validate_object(device_class("generated", expression), "ADDED")
    except ObjectError as exc:
        assert str(exc).startswith("object.spec.selectors[0].cel.expression: ")
        return
    with cpu_time_limit(6):  # compiling evaluates a constant selector
        compiled = SelectorCache().get(expression)
        if compiled.error is not None:
            return  # a compile error: the allocator's, as upstream's
        try:
            compiled.matches(DEVICE)
        except CelError as exc:
            assert str(exc) == COST_LIMIT_EXCEEDED or "cost" not in str(exc)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SELECTORS)
def test_any_selector_the_scheduler_meets_ends_within_the_runtime_limit(expression: str) -> None:
    """What a trace ingested before the estimate was checked may carry: the scheduler does not
    estimate (as upstream's), and the runtime limit ends every evaluation."""
    with cpu_time_limit(6):  # compiling evaluates a constant selector
        compiled = SelectorCache().get(expression)
        if compiled.error is not None:
            return
        with contextlib.suppress(CelError):
            compiled.matches(DEVICE)


def test_a_slice_of_more_devices_than_the_api_server_takes_is_refused() -> None:
    """``ResourceSliceMaxDevices`` (128 in v1.34) and no device name twice in one slice, as
    the API server's ``validateSet`` refuses them; a pool of many slices stays possible."""
    from kaudit.readers.validate import RESOURCE_SLICE_MAX_DEVICES
    from kaudit.tracegen.dra import resource_slice

    def devices(count: int) -> list[dict[str, str]]:
        return [{"name": f"d{i}"} for i in range(count)]

    validate_object(resource_slice("s", "d", "p", devices(RESOURCE_SLICE_MAX_DEVICES),
                                   node="n1"), "ADDED")
    refusals = {
        "object.spec.devices: Too many: 129: must have at most 128 items":
            resource_slice("s", "d", "p", devices(129), node="n1"),
        'object.spec.devices[2].name: Duplicate value: "d1"':
            resource_slice("s", "d", "p", [*devices(2), {"name": "d1"}], node="n1"),
    }
    for message, obj in refusals.items():
        try:
            validate_object(obj, "ADDED")
        except ObjectError as exc:
            assert str(exc) == message
        else:
            raise AssertionError(f"accepted: {message}")
