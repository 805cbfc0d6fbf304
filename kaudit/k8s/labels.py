"""Label keys, label values and label selectors as apimachinery validates them, with its
messages: one place for ``config`` (plugin arguments, extenders) and ``model`` (selectors).

Mirrors, for apimachinery v0.34.2 (Kubernetes v1.34):

* ``pkg/util/validation/validation.go``: ``IsQualifiedName``, ``IsDNS1123Subdomain``,
  ``IsValidLabelValue``, ``RegexError`` and ``MaxLenError`` (lengths are Go's ``len``, in
  bytes); :func:`regex_error` is kaudit's one writer of ``RegexError``'s text;
* ``pkg/labels/selector.go``: ``NewRequirement``'s aggregated field errors
  (:func:`requirement_error`), bad values printed as ``field.Error`` prints them
  (:mod:`kaudit.k8s.values`: a key or value with ``%q``, the value list as JSON, ``null`` when
  nil);
* ``pkg/apis/meta/v1/helpers.go``: ``LabelSelectorAsSelector``'s errors
  (:func:`selector_error`), including ``"%q is not a valid label selector operator"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kaudit.gostrings import aggregate, go_len, go_quote
from kaudit.k8s.values import render_value

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must "
                      "start and end with an alphanumeric character")
QUALIFIED_NAME_MAX = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case "
                         "alphanumeric characters, '-' or '.', and must start and end with "
                         "an alphanumeric character")
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric "
                   "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                   "character")
LABEL_VALUE_MAX = 63

_QUALIFIED = re.compile(QUALIFIED_NAME_FMT)
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``: ``msg``, the examples if any, and the regex."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """``validation.MaxLenError``."""
    return f"must be no more than {length} characters"


def is_dns1123_subdomain(value: str) -> list[str]:
    errors = []
    if go_len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN.fullmatch(value):
        errors.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def is_qualified_name(value: str) -> list[str]:
    """Messages for a label key (``[prefix/]name``); empty when valid."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT,
                                                  "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif go_len(name) > QUALIFIED_NAME_MAX:
        errors.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED.fullmatch(name):
        errors.append("name part " + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT,
                                                 "MyName", "my.name", "123-abc"))
    return errors


def is_valid_label_value(value: str) -> list[str]:
    errors = []
    if go_len(value) > LABEL_VALUE_MAX:
        errors.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value",
                                  "12345"))
    return errors


def valid_label_key(key: str) -> bool:
    """``IsQualifiedName`` finds nothing wrong with ``key``."""
    return not is_qualified_name(key)


def valid_label_value(value: str) -> bool:
    """``IsValidLabelValue`` finds nothing wrong with ``value``."""
    return not is_valid_label_value(value)


# --------------------------------------------------------------------------- selectors

#: ``metav1.LabelSelectorOperator`` → ``selection.Operator``, as ``LabelSelectorAsSelector``
#: maps them.
LABEL_SELECTOR_OPERATORS: Mapping[str, str] = {
    "In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
#: ``v1.NodeSelectorOperator`` → ``selection.Operator`` (``nodeSelectorRequirementsAsSelector``).
NODE_SELECTOR_OPERATORS: Mapping[str, str] = {
    **LABEL_SELECTOR_OPERATORS, "Gt": "gt", "Lt": "lt"}


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _invalid(path: str, value: Any, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()``."""
    return f"{path}: Invalid value: {render_value(value)}: {detail}"


def requirement_error(key: str, operator: str, values: Sequence[str] | None,
                      path: str = "") -> str | None:
    """``labels.NewRequirement``'s aggregated errors for ``key``, the ``selection.Operator``
    ``operator`` (``in``, ``notin``, ``=``, ``exists``, ``!``, ``gt``, ``lt``) and ``values``
    (``None`` is Go's nil slice, printed ``null``), under ``path`` (``field.WithPath``); None
    when the requirement is valid."""
    errors = []
    key_errors = is_qualified_name(key)
    if key_errors:
        errors.append(_invalid(_child(path, "key"), key, "; ".join(key_errors)))
    shown = None if values is None else list(values)
    values = shown or []
    value_path = _child(path, "values")
    if operator in ("in", "notin") and not values:
        errors.append(_invalid(value_path, shown,
                               "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in ("=", "==", "!=") and len(values) != 1:
        errors.append(_invalid(value_path, shown,
                               "exact-match compatibility requires one single value"))
    elif operator in ("exists", "!") and values:
        errors.append(_invalid(value_path, shown,
                               "values set must be empty for exists and does not exist"))
    elif operator in ("gt", "lt"):
        if len(values) != 1:
            errors.append(_invalid(value_path, shown,
                                   "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, value in enumerate(values):
            if parse_int64(value) is None:
                errors.append(_invalid(f"{value_path}[{i}]", value,
                                       "for 'Gt', 'Lt' operators, the value must be an integer"))
    for i, value in enumerate(values):
        value_errors = is_valid_label_value(value)
        if value_errors:
            errors.append(_invalid(f"{value_path}[{i}][{key}]", value, "; ".join(value_errors)))
    return aggregate(errors) if errors else None


_INT64 = re.compile(r"[+-]?[0-9]+")


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: the number, or None where Go fails (not an optional
    sign and ASCII digits only, or out of int64's range)."""
    if _INT64.fullmatch(text) is None:
        return None
    number = int(text)
    return number if -(1 << 63) <= number < (1 << 63) else None



def selector_error(raw: Any) -> str | None:
    """Why ``metav1.LabelSelectorAsSelector`` rejects the ``metav1.LabelSelector`` ``raw``, or
    None. ``matchLabels`` are checked first (in key order: Go's map order is random), then
    each of ``matchExpressions`` in turn; the first failing requirement is the error."""
    if not isinstance(raw, dict):
        return None
    for key, value in sorted((raw.get("matchLabels") or {}).items()):
        error = requirement_error(str(key), "=", [str(value)])
        if error:
            return error
    for expression in raw.get("matchExpressions") or []:
        if not isinstance(expression, dict):
            continue
        operator = LABEL_SELECTOR_OPERATORS.get(str(expression.get("operator")))
        if operator is None:
            return (f"{go_quote(str(expression.get('operator') or ''))} is not a valid label "
                    "selector operator")
        values = expression.get("values")
        error = requirement_error(str(expression.get("key") or ""), operator,
                                  [str(v) for v in values] if values else None)
        if error:
            return error
    return None
