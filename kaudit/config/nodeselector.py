"""Parse-time checks of node selectors, as NodeAffinityArgs validation runs them.

Mirrors ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``
(``NewNodeSelector``, ``NewPreferredSchedulingTerms``: empty terms and zero-weight
preferred terms are skipped; a preferred term's errors are reported under
``[i].matchExpressions``, without ``preference``) and the requirement checks of
``k8s.io/apimachinery/pkg/labels/selector.go`` (``NewRequirement``).
"""

from __future__ import annotations

from typing import Any

from kaudit.config.fielderrors import FieldError, child, index, invalid, key, not_supported
from kaudit.config.labels import is_qualified_name, is_valid_label_value
from kaudit.k8s.labels import parse_int64

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_SELECTOR_OPERATORS = ("In", "NotIn")


def _requirement(expr: dict[str, Any], path: str) -> list[FieldError]:
    """``labels.NewRequirement`` for one node selector requirement."""
    k, op = expr.get("key") or "", expr.get("operator") or ""
    values: list[str] = list(expr.get("values") or [])
    if op not in SELECTOR_OPERATORS:
        return [not_supported(child(path, "operator"), op, SELECTOR_OPERATORS)]
    errors = [invalid(child(path, "key"), k, "; ".join(msgs))
              for msgs in [is_qualified_name(k)] if msgs]
    values_path = child(path, "values")
    if op in ("In", "NotIn") and not values:
        errors.append(invalid(values_path, values,
                              "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist") and values:
        errors.append(invalid(values_path, values,
                              "values set must be empty for exists and does not exist"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(invalid(values_path, values,
                                  "for 'Gt', 'Lt' operators, exactly one value is required"))
        errors.extend(invalid(index(values_path, i), v,
                              "for 'Gt', 'Lt' operators, the value must be an integer")
                      for i, v in enumerate(values) if parse_int64(v) is None)
    for i, v in enumerate(values):
        msgs = is_valid_label_value(v)
        if msgs:
            errors.append(invalid(key(index(values_path, i), k), v, "; ".join(msgs)))
    return errors


def _field_requirement(expr: dict[str, Any], path: str) -> list[FieldError]:
    op = expr.get("operator") or ""
    values = list(expr.get("values") or [])
    if op not in FIELD_SELECTOR_OPERATORS:
        return [not_supported(child(path, "operator"), op, FIELD_SELECTOR_OPERATORS)]
    if len(values) != 1:
        return [invalid(child(path, "values"), values, "must have one element")]
    return []


def _is_empty(term: dict[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def validate_term(term: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for name, check in (("matchExpressions", _requirement), ("matchFields", _field_requirement)):
        p = child(path, name)
        for i, expr in enumerate(term.get(name) or []):
            errors.extend(check(expr or {}, index(p, i)))
    return errors


def validate_node_selector(selector: dict[str, Any], path: str) -> list[FieldError]:
    terms_path = child(path, "nodeSelectorTerms")
    return [e for i, term in enumerate(selector.get("nodeSelectorTerms") or [])
            if term and not _is_empty(term)
            for e in validate_term(term, index(terms_path, i))]


def validate_preferred_terms(terms: list[dict[str, Any]], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, term in enumerate(terms):
        preference = (term or {}).get("preference") or {}
        if not (term or {}).get("weight") or _is_empty(preference):
            continue
        errors.extend(validate_term(preference, index(path, i)))
    return errors
