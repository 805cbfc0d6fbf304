"""Label selectors and node selectors, matched as the Kubernetes API machinery matches them.

Mirrors ``metav1.LabelSelectorAsSelector`` (``staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/
helpers.go``) and ``component-helpers/scheduling/corev1/nodeaffinity`` (Kubernetes v1.34):

* a label selector ``{}`` matches everything, a missing one (``None``) nothing;
  ``matchLabels`` and ``matchExpressions`` (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``)
  are ANDed; ``NotIn`` and ``DoesNotExist`` match objects without the key;
* a node selector's terms are ORed; within a term, ``matchExpressions`` (also ``Gt`` and
  ``Lt``, comparing integers) and ``matchFields`` (``metadata.name`` only) are ANDed; a term
  with neither matches nothing, and so does an empty list of terms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Labels = Mapping[str, str]

_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_NODE_OPERATORS = _LABEL_OPERATORS | {"Gt", "Lt"}


class SelectorError(ValueError):
    """A selector is malformed (unknown operator, missing values, bad integer)."""


_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def valid_label_value(value: str) -> bool:
    """``validation.IsValidLabelValue``: at most 63 characters, alphanumeric at both ends."""
    return value == "" or (len(value) <= 63 and _NAME.fullmatch(value) is not None)


def valid_label_key(key: str) -> bool:
    """``validation.IsQualifiedName``: an optional DNS-subdomain prefix, then a name."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253
                       or _DNS_SUBDOMAIN.fullmatch(prefix) is None):
        return False
    return 0 < len(name) <= 63 and _NAME.fullmatch(name) is not None


def _check_labels(requirement: Requirement, where: str) -> None:
    if not valid_label_key(requirement.key):
        raise SelectorError(f"{where}.key: Invalid value: {requirement.key!r}: name part must "
                            "consist of alphanumeric characters, '-', '_' or '.'")
    if requirement.operator in ("In", "NotIn"):
        for value in sorted(requirement.values):
            if not valid_label_value(value):
                raise SelectorError(f"{where}.values: Invalid value: {value!r}: a valid label "
                                    "must be an empty string or consist of alphanumeric "
                                    "characters, '-', '_' or '.'")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Labels) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = next(iter(self.values))
        return number > int(bound) if op == "Gt" else number < int(bound)


def _requirement(raw: Any, operators: frozenset[str], where: str) -> Requirement:
    if not isinstance(raw, dict):
        raise SelectorError(f"{where}: must be an object")
    key = raw.get("key")
    operator = raw.get("operator")
    values = raw.get("values") or []
    if not isinstance(key, str) or not key:
        raise SelectorError(f"{where}.key: must be a non-empty string")
    if operator not in operators:
        raise SelectorError(f"{where}.operator: {operator!r} is not a valid selector operator")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SelectorError(f"{where}.values: must be a list of strings")
    if operator in ("In", "NotIn") and not values:
        raise SelectorError(f"{where}.values: must be specified when `operator` is 'In' or "
                            "'NotIn'")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"{where}.values: may not be specified when `operator` is "
                            "'Exists' or 'DoesNotExist'")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError(f"{where}.values: must be specified single value when "
                                "`operator` is 'Lt' or 'Gt'")
        try:
            int(values[0])
        except ValueError:
            raise SelectorError(f"{where}.values[0]: must be an integer") from None
    return Requirement(key, operator, frozenset(values))


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed ``metav1.LabelSelector``; ``nothing`` stands for a missing selector."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def parse(cls, raw: Any, where: str = "labelSelector") -> LabelSelector:
        if raw is None:
            return cls(nothing=True)
        if not isinstance(raw, dict):
            raise SelectorError(f"{where}: must be an object")
        requirements = [Requirement(k, "In", frozenset([v]))
                        for k, v in sorted((raw.get("matchLabels") or {}).items())]
        for i, expression in enumerate(raw.get("matchExpressions") or []):
            requirements.append(_requirement(expression, _LABEL_OPERATORS,
                                             f"{where}.matchExpressions[{i}]"))
        for requirement in requirements:
            _check_labels(requirement, where)
        return cls(tuple(requirements))

    @property
    def empty(self) -> bool:
        """True for ``{}``, which matches every object."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Labels) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def with_requirement(self, requirement: Requirement) -> LabelSelector:
        if self.nothing:
            return self
        return LabelSelector((*self.requirements, requirement))


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]
    #: A term that failed to parse never matches (``LazyErrorNodeSelector``).
    error: str | None = None

    def matches(self, labels: Labels, node_name: str) -> bool:
        if self.error is not None or (not self.expressions and not self.fields):
            return False
        if not all(r.matches(labels) for r in self.expressions):
            return False
        return all(r.matches({"metadata.name": node_name}) for r in self.fields)

    def field_node_names(self) -> frozenset[str] | None:
        """Names from ``matchFields metadata.name In``, or None when the term has none."""
        names: frozenset[str] | None = None
        for requirement in self.fields:
            if requirement.key == "metadata.name" and requirement.operator == "In":
                names = requirement.values if names is None else names & requirement.values
        return names


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A parsed ``v1.NodeSelector``: terms ORed."""

    terms: tuple[NodeSelectorTerm, ...]

    @classmethod
    def parse(cls, raw: Any, where: str = "nodeSelector") -> NodeSelector:
        if not isinstance(raw, dict):
            raise SelectorError(f"{where}: must be an object")
        terms = []
        for i, term in enumerate(raw.get("nodeSelectorTerms") or []):
            terms.append(parse_term(term, f"{where}.nodeSelectorTerms[{i}]"))
        return cls(tuple(terms))

    def matches(self, labels: Labels, node_name: str) -> bool:
        return any(term.matches(labels, node_name) for term in self.terms)


def parse_term(raw: Any, where: str) -> NodeSelectorTerm:
    """Parse a node selector term; a malformed one becomes a term that matches nothing."""
    if not isinstance(raw, dict):
        return NodeSelectorTerm((), (), f"{where}: must be an object")
    try:
        expressions = []
        for i, e in enumerate(raw.get("matchExpressions") or []):
            requirement = _requirement(e, _NODE_OPERATORS, f"{where}.matchExpressions[{i}]")
            _check_labels(requirement, f"{where}.matchExpressions[{i}]")
            expressions.append(requirement)
        fields = []
        for i, f in enumerate(raw.get("matchFields") or []):
            requirement = _requirement(f, _NODE_OPERATORS, f"{where}.matchFields[{i}]")
            if requirement.key != "metadata.name":
                raise SelectorError(f"{where}.matchFields[{i}].key: not a valid field selector "
                                    f"key {requirement.key!r}")
            fields.append(requirement)
    except SelectorError as exc:
        return NodeSelectorTerm((), (), str(exc))
    return NodeSelectorTerm(tuple(expressions), tuple(fields))
