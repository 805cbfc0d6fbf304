"""The worst-case cost of a DRA selector, as the API server estimates it before admitting one.

Mirrors the estimate ``staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go``
(Kubernetes v1.34) asks of CEL-Go's ``checker.Cost`` (``cel-go/checker/cost.go``) with the
``sizeEstimator`` of that file and the Kubernetes libraries' ``library.CostEstimator``
(``staging/src/k8s.io/apiserver/pkg/cel/library/cost.go``); ``pkg/apis/resource/validation``
refuses an expression whose estimate exceeds ``CELSelectorExpressionMaxCost`` (1,000,000) with
``Forbidden: too complex, exceeds cost limit``.

Mirrored, for the constructs kaudit's CEL (``cel_env.py``) has:

- identifiers and field selections cost 1, literals 0, list literals 10, map literals 30,
  message literals 40, plus their parts;
- calls and operators cost 1 plus their arguments; ``&&`` and ``||`` only their arguments;
  ``?:`` its condition plus the dearer branch;
- string (and bytes) concatenation costs a tenth of the result's size; ``==``, ``!=`` and the
  string orderings a tenth of the smaller operand's size; ``x in list`` the list's size;
  ``contains``, ``startsWith``, ``endsWith`` and ``matches`` as CEL-Go; the regex library's
  ``find`` and ``findAll``, the string extension functions, ``quantity()``, ``isQuantity()``,
  ``semver()`` and ``isSemver()`` as ``library.CostEstimator`` (a tenth of the string's size
  per traversal);
- comprehensions as the macros expand: ``all``, ``exists``, ``exists_one``, ``map``, ``filter``
  cost their range plus the range's size times their loop condition and step (and their
  accumulator's set-up); ``cel.bind`` its value and body, the bound name then having the
  value's size;
- sizes: a string literal's length, a list literal's element count; the ``device`` variable's
  from the DRA limits (``driver`` 63 characters; ``attributes`` and ``capacity`` maps of at most
  32 domains of at most 32 entries; an attribute value at most 64 characters); a scalar's 1; an
  unknown size is the largest ``uint64``, as CEL-Go's.

Not mirrored: CEL-Go's type check, so a value's type is what the expression shows (a literal,
a list literal's elements, the ``device`` fields); where it is unknown the size is unknown,
which estimates high, never low. An index into a map or list gives its element's size (the
``@values`` step of the ``sizeEstimator``'s path).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

import lark

#: ``resourceapi.CELSelectorExpressionMaxCost``.
MAX_COST = 1_000_000
#: CEL-Go's largest estimate: ``math.MaxUint64``.
UNBOUNDED = 2**64 - 1

#: ``common.StringTraversalCostFactor``, ``common.RegexStringLengthCostFactor``.
STRING_TRAVERSAL = 0.1
REGEX_LENGTH = 0.25
LIST_CREATE, MAP_CREATE, STRUCT_CREATE = 10, 30, 40

#: The DRA limits the environment declares for the ``device`` variable.
DRIVER_NAME_MAX = 63  # DriverNameMaxLength
DOMAIN_MAX = 63  # DeviceMaxDomainLength
ID_MAX = 32  # DeviceMaxIDLength
ATTRIBUTE_VALUE_MAX = 64  # DeviceAttributeMaxValueLength
ENTRIES_MAX = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice

STRING, BYTES, LIST, MAP, SCALAR, DYN = "string", "bytes", "list", "map", "scalar", "dyn"


def _clamp(value: int) -> int:
    return min(value, UNBOUNDED)


def _factor(size: int, factor: float) -> int:
    """``multiplyByCostFactor``: rounded up."""
    if size >= UNBOUNDED:
        return UNBOUNDED
    return _clamp(math.ceil(size * factor))


@dataclass(frozen=True)
class Estimate:
    """A sub-expression's worst-case cost, and its value's kind and largest size."""

    cost: int
    kind: str = DYN
    size: int = UNBOUNDED
    #: A list's or map's elements (a map's keys are :attr:`key`).
    element: Estimate | None = None
    key: Estimate | None = None


_SCALAR = Estimate(0, SCALAR, 1)
_UNKNOWN = Estimate(0)


def _string(size: int) -> Estimate:
    return Estimate(0, STRING, size)


def _map(key: Estimate, value: Estimate, size: int) -> Estimate:
    return Estimate(0, MAP, size, value, key)


_ATTRIBUTES = _map(_string(DOMAIN_MAX), _map(_string(ID_MAX), Estimate(0, DYN, ATTRIBUTE_VALUE_MAX),
                                             ENTRIES_MAX), ENTRIES_MAX)
_CAPACITY = _map(_string(DOMAIN_MAX), _map(_string(ID_MAX), _SCALAR, ENTRIES_MAX), ENTRIES_MAX)
_DEVICE_FIELDS = {"driver": _string(DRIVER_NAME_MAX), "attributes": _ATTRIBUTES,
                  "capacity": _CAPACITY, "allowMultipleAllocations": _SCALAR}
_DEVICE = Estimate(0, "device", 0)


class _Estimator:
    """Walks celpy's parse tree, as ``checker.coster`` walks CEL-Go's checked AST."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Estimate]] = []

    @contextmanager
    def _bound(self, name: str, value: Estimate) -> Iterator[None]:
        self.scopes.append({name: replace(value, cost=0)})
        try:
            yield
        finally:
            self.scopes.pop()

    def estimate(self, tree: Any) -> Estimate:
        handler: Callable[[Any], Estimate] | None = getattr(self, "_" + tree.data, None)
        if handler is None:
            return self._call(1, [self.estimate(c) for c in _trees(tree)])
        return handler(tree)

    def _call(self, own: int, args: list[Estimate], result: Estimate = _UNKNOWN) -> Estimate:
        return replace(result, cost=_clamp(own + sum(a.cost for a in args)))

    def _pass(self, tree: Any) -> Estimate:
        return self.estimate(tree.children[-1])

    # -------------------------------------------------------------- operators

    def _expr(self, tree: Any) -> Estimate:
        if len(tree.children) == 1 or tree.children[1] is None:
            return self.estimate(tree.children[0])
        condition, yes, no = (self.estimate(c) for c in tree.children)
        kind = yes.kind if yes.kind == no.kind else DYN
        return Estimate(_clamp(condition.cost + max(yes.cost, no.cost)), kind,
                        max(yes.size, no.size), yes.element or no.element)

    def _logical(self, tree: Any) -> Estimate:
        if len(tree.children) == 1:
            return self.estimate(tree.children[0])
        left = self.estimate(tree.children[0])
        right = self.estimate(tree.children[1])
        return Estimate(_clamp(left.cost + right.cost), SCALAR, 1)

    _conditionalor = _conditionaland = _logical

    def _relation(self, tree: Any) -> Estimate:
        if len(tree.children) == 1:
            return self.estimate(tree.children[0])
        operator, right_tree = tree.children
        left = self.estimate(operator.children[0])
        right = self.estimate(right_tree)
        op = operator.data
        if op == "relation_in":
            own = right.size if right.kind != MAP else 1
        elif op in ("relation_eq", "relation_ne") or STRING in (left.kind, right.kind) \
                or BYTES in (left.kind, right.kind):
            own = _factor(min(left.size, right.size), STRING_TRAVERSAL)
        else:
            own = 1
        return self._call(own, [left, right], _SCALAR)

    def _addition(self, tree: Any) -> Estimate:
        if len(tree.children) == 1:
            return self.estimate(tree.children[0])
        operator, right_tree = tree.children
        left = self.estimate(operator.children[0])
        right = self.estimate(right_tree)
        if operator.data == "addition_add":
            kinds = {left.kind, right.kind}
            size = _clamp(left.size + right.size)
            if kinds & {STRING, BYTES}:
                kind = STRING if STRING in kinds else BYTES
                return self._call(_factor(size, STRING_TRAVERSAL), [left, right],
                                  Estimate(0, kind, size))
            if LIST in kinds:
                return self._call(1, [left, right],
                                  Estimate(0, LIST, size, left.element or right.element))
            if kinds == {SCALAR}:
                return self._call(1, [left, right], _SCALAR)
            # Of unknown type: priced as the dearest overload (string concatenation).
            return self._call(_factor(size, STRING_TRAVERSAL), [left, right],
                              Estimate(0, DYN, size))
        return self._call(1, [left, right], _SCALAR)

    def _multiplication(self, tree: Any) -> Estimate:
        if len(tree.children) == 1:
            return self.estimate(tree.children[0])
        operator, right_tree = tree.children
        return self._call(1, [self.estimate(operator.children[0]), self.estimate(right_tree)],
                          _SCALAR)

    def _unary(self, tree: Any) -> Estimate:
        if len(tree.children) == 1:
            return self.estimate(tree.children[0])
        return self._call(1, [self.estimate(tree.children[-1])], _SCALAR)

    _member = _primary = _paren_expr = _pass

    # -------------------------------------------------------------- members

    def _member_dot(self, tree: Any) -> Estimate:
        target = self.estimate(tree.children[0])
        name = str(tree.children[1])
        if target.kind == "device":
            field = _DEVICE_FIELDS.get(name, _UNKNOWN)
        elif target.kind == MAP and target.element is not None:
            field = target.element
        else:
            field = _UNKNOWN
        return replace(field, cost=_clamp(target.cost + 1))

    def _member_index(self, tree: Any) -> Estimate:
        target = self.estimate(tree.children[0])
        index = self.estimate(tree.children[1])
        element = target.element if target.kind in (LIST, MAP) and target.element else _UNKNOWN
        return self._call(1, [target, index], element)

    def _member_object(self, tree: Any) -> Estimate:
        return self._call(STRUCT_CREATE, [self.estimate(c) for c in _trees(tree)])

    def _member_dot_arg(self, tree: Any) -> Estimate:
        target_tree, name_token = tree.children[:2]
        name = str(name_token)
        args = list(_trees(tree.children[2])) if len(tree.children) > 2 and \
            tree.children[2] is not None else []
        variable = _ident(args[0]) if args else None
        if name == "bind" and _ident(target_tree) == "cel" and len(args) == 3 and variable:
            value = self.estimate(args[1])
            with self._bound(variable, value):
                body = self.estimate(args[2])
            return replace(body, cost=_clamp(LIST_CREATE + value.cost + body.cost))
        if name in _MACROS and variable and len(args) in (2, 3):
            return self._comprehension(name, self.estimate(target_tree), variable, args[1:])
        target = self.estimate(target_tree)
        values = [self.estimate(a) for a in args]
        return _method(name, target, values, self._call)

    def _comprehension(self, name: str, range_: Estimate, variable: str,
                       body_trees: list[Any]) -> Estimate:
        item = (range_.key if range_.kind == MAP else range_.element) or _UNKNOWN
        with self._bound(variable, item):
            bodies = [self.estimate(b) for b in body_trees]
        body = bodies[-1]
        count = range_.size
        if name in ("all", "exists"):
            per_item, fixed, result = 3 + body.cost, 1, _SCALAR  # @not_strictly_false, &&
        elif name == "exists_one":
            per_item, fixed, result = body.cost + 2, 2, _SCALAR
        elif name == "filter":
            per_item, fixed = body.cost + 13, LIST_CREATE + 1
            result = Estimate(0, LIST, count, item)
        else:  # map, with or without a filter
            per_item = body.cost + 12 + (bodies[0].cost if len(bodies) == 2 else 0)
            fixed, result = LIST_CREATE + 1, Estimate(0, LIST, count, body)
        total = range_.cost + fixed + _clamp(count * per_item)
        return replace(result, cost=_clamp(total))

    # -------------------------------------------------------------- primaries

    def _ident(self, tree: Any) -> Estimate:
        name = str(tree.children[0])
        for scope in reversed(self.scopes):
            if name in scope:
                return replace(scope[name], cost=1)
        if name == "device":
            return replace(_DEVICE, cost=1)
        return Estimate(1)

    def _dot_ident(self, tree: Any) -> Estimate:
        return Estimate(1)

    def _ident_arg(self, tree: Any) -> Estimate:
        name = str(tree.children[0])
        args = list(_trees(tree.children[1])) if len(tree.children) > 1 and \
            tree.children[1] is not None else []
        values = [self.estimate(a) for a in args]
        if name == "has":  # a presence test costs its selection
            return replace(_SCALAR, cost=sum(v.cost for v in values))
        return _function(name, values, self._call)

    _dot_ident_arg = _ident_arg

    def _list_lit(self, tree: Any) -> Estimate:
        items = [self.estimate(c) for c in _trees(tree.children[0])] \
            if tree.children and tree.children[0] is not None else []
        return self._call(LIST_CREATE, items, Estimate(0, LIST, len(items), _union(items)))

    def _map_lit(self, tree: Any) -> Estimate:
        parts = [self.estimate(c) for c in _trees(tree.children[0])] \
            if tree.children and tree.children[0] is not None else []
        keys, values = parts[0::2], parts[1::2]
        return self._call(MAP_CREATE, parts,
                          Estimate(0, MAP, len(keys), _union(values), _union(keys)))

    def _literal(self, tree: Any) -> Estimate:
        token = tree.children[0]
        if token.type in ("STRING_LIT", "MLSTRING_LIT"):
            return _string(_literal_length(str(token)))
        if token.type == "BYTES_LIT":
            return Estimate(0, BYTES, _literal_length(str(token)[1:]))
        return _SCALAR


_MACROS = {"all", "exists", "exists_one", "map", "filter"}


class _Call(Protocol):
    def __call__(self, own: int, args: list[Estimate], result: Estimate = ...) -> Estimate: ...


def _function(name: str, args: list[Estimate], call: _Call) -> Estimate:
    """A global function: the Kubernetes libraries' parsers traverse their string."""
    if name in ("quantity", "isQuantity", "semver", "isSemver") and args:
        own = _factor(args[0].size, STRING_TRAVERSAL)
        return call(own, args, _SCALAR)
    if name == "size" or name in ("int", "uint", "double", "bool", "dyn", "type"):
        return call(1, args, _SCALAR)
    if name == "string":
        return call(1, args, _string(UNBOUNDED))
    return call(1, args)


def _method(name: str, target: Estimate, args: list[Estimate], call: _Call) -> Estimate:
    """A member function: CEL-Go's string functions and ``library.CostEstimator``'s."""
    everything = [target, *args]
    size = target.size
    if name in ("contains",) and args:
        own = _clamp(_factor(size, STRING_TRAVERSAL) * _factor(args[0].size, STRING_TRAVERSAL))
        return call(max(own, 1), everything, _SCALAR)
    if name in ("startsWith", "endsWith") and args:
        return call(_factor(args[0].size, STRING_TRAVERSAL), everything,
                    _SCALAR)
    if name == "matches" and args:
        own = _clamp(_factor(_clamp(size + 1), STRING_TRAVERSAL)
                     * _factor(args[0].size, REGEX_LENGTH))
        return call(max(own, 1), everything, _SCALAR)
    if name in ("find", "findAll") and args:  # library/regex.go
        own = _clamp(_factor(size, STRING_TRAVERSAL) * _factor(args[0].size, REGEX_LENGTH))
        result = _string(size) if name == "find" else Estimate(0, LIST, size, _string(size))
        return call(own, everything, result)
    if name in ("lowerAscii", "upperAscii", "trim", "substring"):
        return call(_factor(size, STRING_TRAVERSAL), everything,
                    _string(size))
    if name == "charAt":
        return call(_factor(size, STRING_TRAVERSAL), everything,
                    _string(1))
    if name in ("indexOf", "lastIndexOf") and args:
        own = _clamp(_factor(size, STRING_TRAVERSAL) * max(1, _factor(args[0].size,
                                                                       STRING_TRAVERSAL)))
        return call(own, everything, _SCALAR)
    if name == "replace" and len(args) >= 2:
        built = _clamp(size + _clamp(_clamp(size + 1) * args[1].size))
        return call(_factor(size, 2 * STRING_TRAVERSAL), everything, _string(built))
    if name == "split":
        return call(_factor(size, 2 * STRING_TRAVERSAL), everything,
                    Estimate(0, LIST, size, _string(size)))
    if name == "join":
        element = target.element.size if target.element else UNBOUNDED
        separators = _clamp(max(size - 1, 0) * (args[0].size if args else 0))
        built = _clamp(_clamp(size * element) + separators)
        return call(_factor(built, STRING_TRAVERSAL), everything, _string(built))
    if name in ("compareTo", "isGreaterThan", "isLessThan", "add", "sub", "asInteger",
                "asApproximateFloat", "isInteger", "sign", "major", "minor", "patch", "size"):
        return call(1, everything, _SCALAR)
    return call(1, everything)


def _union(items: list[Estimate]) -> Estimate | None:
    if not items:
        return None
    kinds = {item.kind for item in items}
    return Estimate(0, kinds.pop() if len(kinds) == 1 else DYN, max(i.size for i in items),
                    _union([i.element for i in items if i.element is not None]))


def _literal_length(token: str) -> int:
    """The characters of a string literal's value (its source text without quotes or prefix,
    an upper bound when it has escapes)."""
    text = token.lstrip("rR")
    quote = 3 if text[:3] in ('"""', "'''") else 1
    return max(len(text) - 2 * quote, 0)


def _trees(node: Any) -> Iterator[Any]:
    if node is None:
        return
    for child in node.children:
        if isinstance(child, lark.Tree):
            yield child


def _ident(node: Any) -> str | None:
    while isinstance(node, lark.Tree):
        if node.data == "ident":
            return str(node.children[0])
        children = [c for c in node.children if c is not None]
        if len(children) != 1:
            return None
        node = children[0]
    return None


def estimate_cost(ast: Any) -> int:
    """The worst-case cost of a parsed expression (celpy's tree of the original text, with
    ``cel.bind`` unexpanded)."""
    try:
        return _Estimator().estimate(ast).cost
    except RecursionError:
        return UNBOUNDED
