"""InterPodAffinity's label-selector errors (``metav1.LabelSelectorAsSelector`` →
``labels.NewRequirement``) quote values as Go's ``%q`` does, print the values list as
``json.Marshal`` does (``field.Error.ErrorBody``) and measure lengths as Go's ``len`` does, in
bytes (``apimachinery/pkg/util/validation/validation.go``); the texts were printed by
apimachinery v0.34.2."""

from __future__ import annotations

from kaudit.k8s.labels import is_qualified_name, is_valid_label_value, selector_error
from kaudit.model.pod import parse_pod
from kaudit.plugins.inter_pod_affinity.common import affinity_parse_error

_VALUE_REGEX = ("a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
_NAME_REGEX = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
               "or '123-abc', regex used for validation is "
               "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def test_a_value_is_quoted_as_strconv_quote_does() -> None:
    error = selector_error({"matchLabels": {"app": "a\u200bb\x07"}})
    assert error == f'values[0][app]: Invalid value: "a\\u200bb\\a": {_VALUE_REGEX}'


def test_an_unknown_operator_is_quoted_as_strconv_quote_does() -> None:
    error = selector_error({"matchExpressions": [{"key": "k", "operator": "In\u00a0"}]})
    assert error == '"In\\u00a0" is not a valid label selector operator'


def test_a_value_of_64_bytes_in_32_characters_is_too_long() -> None:
    value = "é" * 32
    assert is_valid_label_value(value) == ["must be no more than 63 characters", _VALUE_REGEX]
    assert selector_error({"matchLabels": {"app": value}}) == (
        f'values[0][app]: Invalid value: "{value}": must be no more than 63 characters; '
        f"{_VALUE_REGEX}")


def test_a_key_name_and_prefix_are_measured_in_bytes() -> None:
    name = "é" * 32
    assert is_qualified_name(name) == ["name part must be no more than 63 characters",
                                       _NAME_REGEX]
    prefix = "é" * 127  # 254 bytes
    assert is_qualified_name(f"{prefix}/a")[0] == \
        "prefix part must be no more than 253 characters"
    assert is_qualified_name("a" * 63) == []
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]


def test_the_values_list_prints_as_json() -> None:
    error = selector_error({"matchExpressions": [
        {"key": "k", "operator": "Exists", "values": ["a", "<b>"]}]})
    assert error == (
        '[values: Invalid value: ["a","\\u003cb\\u003e"]: values set must be empty for exists '
        'and does not exist, values[1][k]: Invalid value: "<b>": ' + _VALUE_REGEX + "]")


def test_missing_values_print_as_null() -> None:
    error = selector_error({"matchExpressions": [{"key": "k", "operator": "In"}]})
    assert error == ("values: Invalid value: null: for 'in', 'notin' operators, values set "
                     "can't be empty")


def test_the_pods_affinity_error_names_the_terms_and_prints_json() -> None:
    pod = parse_pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {
        "containers": [{"name": "c"}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchExpressions": [
                {"key": "app", "operator": "NotIn", "values": []}]}}]}}}})
    assert affinity_parse_error(pod) == (
        "requiredAntiAffinityTerms: values: Invalid value: null: for 'in', 'notin' operators, "
        "values set can't be empty")
