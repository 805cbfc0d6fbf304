"""Label selectors and node selectors, matched as the Kubernetes API machinery matches them.

Mirrors ``metav1.LabelSelectorAsSelector`` (``staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/
helpers.go``) and ``component-helpers/scheduling/corev1/nodeaffinity`` (Kubernetes v1.34):

* a label selector ``{}`` matches everything, a missing one (``None``) nothing;
  ``matchLabels`` and ``matchExpressions`` (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``)
  are ANDed; ``NotIn`` and ``DoesNotExist`` match objects without the key;
* a node selector's terms are ORed; within a term, ``matchExpressions`` (also ``Gt`` and
  ``Lt``, comparing integers) and ``matchFields`` (``metadata.name`` only) are ANDed; a term
  with neither matches nothing, and so does an empty list of terms.

A malformed selector raises :class:`SelectorError` with upstream's words
(:mod:`kaudit.k8s.labels`: ``LabelSelectorAsSelector`` and ``NewRequirement``); a node selector
term keeps its error and matches nothing (``LazyErrorNodeSelector``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaudit.gostrings import go_quote
from kaudit.k8s.labels import (
    LABEL_SELECTOR_OPERATORS,
    NODE_SELECTOR_OPERATORS,
    parse_int64,
    requirement_error,
    selector_error,
)
from kaudit.k8s.labels import valid_label_key as valid_label_key
from kaudit.k8s.labels import valid_label_value as valid_label_value
from kaudit.k8s.values import GoNamedString, render_value

Labels = Mapping[str, str]


class SelectorError(ValueError):
    """A selector is malformed (unknown operator, missing values, bad integer)."""


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
        number = parse_int64(value) if value is not None else None
        bound = parse_int64(next(iter(self.values), ""))
        if number is None or bound is None:
            return False  # ``Requirement.Matches``: a label or bound ParseInt refuses
        return number > bound if op == "Gt" else number < bound


def _requirement(raw: Any, operators: Mapping[str, str], where: str) -> Requirement:
    """One ``matchExpressions`` entry. The shape is checked here; what ``NewRequirement``
    checks (key, values, their count and integers for ``Gt``/``Lt``) is
    :func:`~kaudit.k8s.labels.requirement_error`'s, with its messages under ``where``. An
    operator outside ``operators`` is ``field.NotSupported`` (node selectors; a label
    selector's operator was checked by :func:`~kaudit.k8s.labels.selector_error`)."""
    if not isinstance(raw, dict):
        raise SelectorError(f"{where}: must be an object")
    key = raw.get("key")
    operator = raw.get("operator")
    values = raw.get("values")
    if not isinstance(key, str):
        raise SelectorError(f"{where}.key: must be a string")
    if not isinstance(values, list | None) or not all(isinstance(v, str) for v in values or []):
        raise SelectorError(f"{where}.values: must be a list of strings")
    if not isinstance(operator, str) or operator not in operators:
        supported = ", ".join(go_quote(op) for op in operators)
        shown = render_value(GoNamedString(str(operator or "")))  # a v1.NodeSelectorOperator
        raise SelectorError(f"{where}.operator: Unsupported value: {shown}: "
                            f"supported values: {supported}")
    error = requirement_error(key, operators[operator], values, where)
    if error is not None:
        raise SelectorError(error)
    return Requirement(key, operator, frozenset(values or ()))


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
        error = selector_error(raw)  # LabelSelectorAsSelector's error, as upstream words it
        if error is not None:
            raise SelectorError(error)
        requirements = [Requirement(k, "In", frozenset([v]))
                        for k, v in sorted((raw.get("matchLabels") or {}).items())]
        for i, expression in enumerate(raw.get("matchExpressions") or []):
            requirements.append(_requirement(expression, LABEL_SELECTOR_OPERATORS,
                                             f"{where}.matchExpressions[{i}]"))
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
            expressions.append(_requirement(e, NODE_SELECTOR_OPERATORS,
                                            f"{where}.matchExpressions[{i}]"))
        fields = []
        for i, f in enumerate(raw.get("matchFields") or []):
            requirement = _requirement(f, NODE_SELECTOR_OPERATORS, f"{where}.matchFields[{i}]")
            if requirement.key != "metadata.name":
                raise SelectorError(f"{where}.matchFields[{i}].key: not a valid field selector "
                                    f"key {go_quote(requirement.key)}")
            fields.append(requirement)
    except SelectorError as exc:
        return NodeSelectorTerm((), (), str(exc))
    return NodeSelectorTerm(tuple(expressions), tuple(fields))
