"""Malformed selectors fail with upstream's words: ``metav1.LabelSelectorAsSelector`` and
``labels.NewRequirement`` (apimachinery v0.34.2, ``pkg/apis/meta/v1/helpers.go`` and
``pkg/labels/selector.go``); the texts were printed by those functions."""

from __future__ import annotations

import pytest

from kaudit.model.selectors import LabelSelector, SelectorError, parse_term

_VALUE_REGEX = ("a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
_NAME_REGEX = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
               "or '123-abc', regex used for validation is "
               "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def _error(raw: object) -> str:
    with pytest.raises(SelectorError) as caught:
        LabelSelector.parse(raw, "spec.selector")
    return str(caught.value)


@pytest.mark.parametrize(("raw", "message"), [
    # the values list prints as JSON (a nil slice as null), a value with %q
    ({"matchExpressions": [{"key": "k", "operator": "In"}]},
     "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "k", "operator": "In", "values": []}]},
     "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a", "<b>"]}]},
     '[values: Invalid value: ["a","\\u003cb\\u003e"]: values set must be empty for exists '
     'and does not exist, values[1][k]: Invalid value: "<b>": ' + _VALUE_REGEX + "]"),
    ({"matchExpressions": [{"key": "bad key", "operator": "DoesNotExist"}]},
     f'key: Invalid value: "bad key": {_NAME_REGEX}'),
    ({"matchExpressions": [{"key": "", "operator": "Exists"}]},
     f'key: Invalid value: "": name part must be non-empty; {_NAME_REGEX}'),
    ({"matchLabels": {"app": "a b"}},
     f'values[0][app]: Invalid value: "a b": {_VALUE_REGEX}'),
    ({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]},
     '"Gt" is not a valid label selector operator'),
])
def test_a_label_selector_fails_as_label_selector_as_selector_does(raw: object,
                                                                   message: str) -> None:
    assert _error(raw) == message


def test_a_valid_label_selector_parses() -> None:
    selector = LabelSelector.parse({"matchLabels": {"app": "web"},
                                    "matchExpressions": [{"key": "tier", "operator": "Exists"}]})
    assert selector.matches({"app": "web", "tier": "x"})
    assert not selector.matches({"app": "web"})


@pytest.mark.parametrize(("values", "message"), [
    # NewRequirement checks every value as a label value, also for Gt and Lt
    (["-5"], f'values[0][k]: Invalid value: "-5": {_VALUE_REGEX}'),
    # strconv.ParseInt: no underscores, no spaces, int64 only
    (["1_0"], "values[0]: Invalid value: \"1_0\": for 'Gt', 'Lt' operators, the value must "
              "be an integer"),
    (["99999999999999999999"], "values[0]: Invalid value: \"99999999999999999999\": for "
                               "'Gt', 'Lt' operators, the value must be an integer"),
    (["1", "2"], "values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one "
                 "value is required"),
    (None, "values: Invalid value: null: for 'Gt', 'Lt' operators, exactly one value is "
           "required"),
])
def test_a_node_selector_term_fails_as_new_requirement_does(values: list[str] | None,
                                                            message: str) -> None:
    expression = {"key": "k", "operator": "Gt", **({"values": values} if values else {})}
    term = parse_term({"matchExpressions": [expression]}, "t")
    assert term.error == f"t.matchExpressions[0].{message}"
    assert not term.matches({"k": "100"}, "node-a")


def test_a_node_selector_term_names_an_unknown_operator() -> None:
    term = parse_term({"matchExpressions": [{"key": "k", "operator": "Above"}]}, "t")
    assert term.error == ('t.matchExpressions[0].operator: Unsupported value: "Above": '
                          'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", '
                          '"Lt"')


def test_a_valid_gt_term_compares_integers() -> None:
    term = parse_term({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["5"]}]},
                      "t")
    assert term.error is None
    assert term.matches({"k": "6"}, "n") and not term.matches({"k": "5"}, "n")


@pytest.mark.parametrize("label", ["1_0", " 7", "7 ", "٣", "9223372036854775808", "0x10", ""])
def test_gt_reads_a_node_label_as_parse_int_does(label: str) -> None:
    """``Requirement.Matches``: a label value ``strconv.ParseInt(v, 10, 64)`` refuses (an
    underscore, a space, a non-ASCII digit, beyond int64) matches neither Gt nor Lt."""
    for operator in ("Gt", "Lt"):
        term = parse_term({"matchExpressions": [
            {"key": "k", "operator": operator, "values": ["5"]}]}, "t")
        assert not term.matches({"k": label}, "n1"), (operator, label)


def test_gt_accepts_a_signed_label() -> None:
    term = parse_term({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["5"]}]},
                      "t")
    assert term.matches({"k": "+6"}, "n1") and not term.matches({"k": "-6"}, "n1")
