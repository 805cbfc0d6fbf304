"""The CEL environment of DRA device selectors, on the ``cel-python`` interpreter.

Mirrors ``staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go`` (Kubernetes v1.34):
an expression sees one variable, ``device``, with ``driver`` (string), ``attributes`` and
``capacity``: maps from a domain to the device's attributes (or capacities) of that domain by
their short name. A qualified name ``domain/id`` lands under ``domain``; an unqualified name
under the driver's name. Looking up a domain the device has nothing in gives an empty map, so
``device.attributes["other.example.com"].model`` fails with ``no such key: model`` rather than
on the domain. Attribute values are ints, bools, strings and semantic versions; capacities are
quantities. The Kubernetes CEL libraries the environment enables for them are here too
(``staging/src/k8s.io/apiserver/pkg/cel/library/{quantity.go,semver.go}``): ``quantity()``,
``isQuantity()``, ``semver()``, ``isSemver()`` and their member functions (``compareTo``,
``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``,
``isInteger``, ``sign``, ``major``, ``minor``, ``patch``).

An expression must yield a bool. Compile errors and runtime errors are reported in the words
of CEL-Go where the interpreters differ (``no such key: x``, ``no such overload``). Not
modelled: CEL's static type check (a type mismatch such as ``device.driver > 1`` is a runtime
error here, a compile error upstream).

Evaluation is bounded as upstream's: every program runs under the runtime cost limit of
``cel_budget.py`` (``operation cancelled: actual cost limit exceeded``), and
:func:`estimated_cost` gives the worst-case estimate the API server checks at admission
(``cel_cost.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache, total_ordering
from typing import Any

import celpy
from celpy import celtypes

from kaudit.errors import QuantityError
from kaudit.plugins.dynamic_resources.cel_budget import (
    COST_LIMIT_EXCEEDED,
    OPERATORS,
    BudgetedRunner,
    CostBudget,
    CostLimitExceeded,
    evaluate_within,
    join_result_size,
    replace_result_size,
    traversing,
)
from kaudit.plugins.dynamic_resources.cel_cost import UNBOUNDED, estimate_cost
from kaudit.quantity import Quantity, canonical_string, parse_quantity

MAX_INT64 = 2**63 - 1


class CelError(Exception):
    """A CEL compile or runtime error, in CEL-Go's words."""


# --------------------------------------------------------------------------- quantities

@total_ordering
class CelQuantity:
    """A ``resource.Quantity`` value in CEL (``library/quantity.go``)."""

    __slots__ = ("quantity",)

    def __init__(self, quantity: Quantity) -> None:
        self.quantity = quantity

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelQuantity) and self.quantity.nanos == other.quantity.nanos

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, CelQuantity):
            return NotImplemented  # CEL has no ordering of quantities with other types
        return self.quantity.nanos < other.quantity.nanos

    def __hash__(self) -> int:
        return hash(self.quantity.nanos)

    def __repr__(self) -> str:
        return f"quantity({canonical_string(self.quantity)!r})"


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


@dataclass(frozen=True)
class CelSemver:
    """A semantic version (``blang/semver`` as ``library/semver.go`` uses it)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    def compare(self, other: CelSemver) -> int:
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if self.pre == other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            a_num, b_num = a.isdigit(), b.isdigit()
            if a_num and b_num:
                return -1 if int(a) < int(b) else 1
            if a_num != b_num:
                return -1 if a_num else 1
            return -1 if a < b else 1
        return -1 if len(self.pre) < len(other.pre) else 1


def parse_semver(text: str, normalize: bool = False) -> CelSemver:
    """A version as ``semver.Parse`` reads it; with ``normalize``, a leading ``v`` and missing
    minor or patch numbers are accepted (``library/semver.go``'s normalization)."""
    if normalize:
        core, rest = re.match(r"^([0-9.]*)(.*)$", text.removeprefix("v")).groups()  # type: ignore[union-attr]
        parts = core.split(".") if core else []
        parts += ["0"] * (3 - len(parts))
        text = ".".join(p.lstrip("0") or "0" for p in parts) + rest
    match = _SEMVER.match(text)
    if match is None:
        raise CelError(f"invalid semver: {text}")
    pre = tuple(match.group(4).split(".")) if match.group(4) else ()
    return CelSemver(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre)


# --------------------------------------------------------------------------- library

def _error(message: str) -> celpy.CELEvalError:
    return celpy.CELEvalError(message)


def _quantity(text: Any) -> Any:
    try:
        return CelQuantity(parse_quantity(str(text)))
    except (QuantityError, ValueError):
        return _error("quantities must match the regular expression "
                      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def _is_quantity(text: Any) -> Any:
    try:
        parse_quantity(str(text))
    except (QuantityError, ValueError):
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver(text: Any, normalize: Any = False) -> Any:
    try:
        return parse_semver(str(text), bool(normalize))
    except CelError as exc:
        return _error(str(exc))


def _is_semver(text: Any, normalize: Any = False) -> Any:
    try:
        parse_semver(str(text), bool(normalize))
    except CelError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _compare(a: Any, b: Any) -> Any:
    if isinstance(a, CelQuantity) and isinstance(b, CelQuantity):
        return celtypes.IntType((a.quantity.nanos > b.quantity.nanos)
                                - (a.quantity.nanos < b.quantity.nanos))
    if isinstance(a, CelSemver) and isinstance(b, CelSemver):
        return celtypes.IntType(a.compare(b))
    return _error("no such overload")


def _greater(a: Any, b: Any) -> Any:
    result = _compare(a, b)
    return celtypes.BoolType(result > 0) if isinstance(result, celtypes.IntType) else result


def _less(a: Any, b: Any) -> Any:
    result = _compare(a, b)
    return celtypes.BoolType(result < 0) if isinstance(result, celtypes.IntType) else result


def _as_nanos(value: Any) -> int | None:
    if isinstance(value, CelQuantity):
        return value.quantity.nanos
    if isinstance(value, (celtypes.IntType, int)) and not isinstance(value, bool):
        return int(value) * 10**9
    return None


def _arith(sign: int) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        left, right = _as_nanos(a), _as_nanos(b)
        if not isinstance(a, CelQuantity) or right is None or left is None:
            return _error("no such overload")
        return CelQuantity(Quantity(left + sign * right, a.quantity.format))
    return apply


def _as_integer(a: Any) -> Any:
    if not isinstance(a, CelQuantity):
        return _error("no such overload")
    whole, rest = divmod(a.quantity.nanos, 10**9)
    if rest or not -MAX_INT64 - 1 <= whole <= MAX_INT64:
        return _error("cannot convert value to integer")
    return celtypes.IntType(whole)


def _as_float(a: Any) -> Any:
    if not isinstance(a, CelQuantity):
        return _error("no such overload")
    return celtypes.DoubleType(float(Decimal(a.quantity.nanos).scaleb(-9)))


def _is_integer(a: Any) -> Any:
    if not isinstance(a, CelQuantity):
        return _error("no such overload")
    whole, rest = divmod(a.quantity.nanos, 10**9)
    return celtypes.BoolType(rest == 0 and -MAX_INT64 - 1 <= whole <= MAX_INT64)


def _sign(a: Any) -> Any:
    if not isinstance(a, CelQuantity):
        return _error("no such overload")
    return celtypes.IntType((a.quantity.nanos > 0) - (a.quantity.nanos < 0))


def _part(name: str) -> Callable[[Any], Any]:
    def get(a: Any) -> Any:
        if not isinstance(a, CelSemver):
            return _error("no such overload")
        return celtypes.IntType(getattr(a, name))
    return get


def _split(text: Any, separator: Any, limit: Any = -1) -> Any:
    limit = int(limit)
    if limit == 0:
        return celtypes.ListType()
    text, separator = str(text), str(separator)
    if not separator:  # each character, as ext.Strings splits on ""
        characters = list(text)
        parts = characters if limit < 0 or limit >= len(characters) else \
            [*characters[:limit - 1], "".join(characters[limit - 1:])]
        return celtypes.ListType([celtypes.StringType(p) for p in parts])
    parts = text.split(separator) if limit < 0 else text.split(separator, limit - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _replace(text: Any, old: Any, new: Any, limit: Any = -1) -> Any:
    return celtypes.StringType(str(text).replace(str(old), str(new), int(limit)))


def _substring(text: Any, start: Any, end: Any = None) -> Any:
    value = str(text)
    stop = len(value) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(value):
        return _error(f"index out of range: {stop if end is not None else start}")
    return celtypes.StringType(value[int(start):stop])


def _join(items: Any, separator: Any = "") -> Any:
    return celtypes.StringType(str(separator).join(str(item) for item in items))


def _index_of(text: Any, sub: Any, start: Any = 0) -> Any:
    return celtypes.IntType(str(text).find(str(sub), int(start)))


def _last_index_of(text: Any, sub: Any) -> Any:
    return celtypes.IntType(str(text).rfind(str(sub)))


STRING_FUNCTIONS: dict[str, Callable[..., Any]] = {
    # ``ext.Strings`` (version 2), which the Kubernetes CEL base environment enables; each
    # charged to the cost budget for what it traverses and builds, before it runs.
    "split": traversing(_split, lambda text, *_: len(str(text))),
    "replace": traversing(_replace, replace_result_size),
    "substring": traversing(_substring), "join": traversing(_join, join_result_size),
    "indexOf": traversing(_index_of), "lastIndexOf": traversing(_last_index_of),
    "charAt": traversing(lambda text, i: celtypes.StringType(str(text)[int(i):int(i) + 1])),
    "lowerAscii": traversing(lambda text: celtypes.StringType(
        "".join(c.lower() if c.isascii() else c for c in str(text)))),
    "upperAscii": traversing(lambda text: celtypes.StringType(
        "".join(c.upper() if c.isascii() else c for c in str(text)))),
    "trim": traversing(lambda text: celtypes.StringType(str(text).strip())),
}

FUNCTIONS: dict[str, Callable[..., Any]] = {
    **OPERATORS,
    **STRING_FUNCTIONS,
    "quantity": _quantity, "isQuantity": _is_quantity, "semver": _semver,
    "isSemver": _is_semver, "compareTo": _compare, "isGreaterThan": _greater,
    "isLessThan": _less, "add": _arith(1), "sub": _arith(-1), "asInteger": _as_integer,
    "asApproximateFloat": _as_float, "isInteger": _is_integer, "sign": _sign,
    "major": _part("major"), "minor": _part("minor"), "patch": _part("patch"),
}


# --------------------------------------------------------------------------- devices

class _IdMap(celtypes.MapType):
    """One domain's attributes or capacities: a missing id is CEL-Go's ``no such key``."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return _error(f"no such key: {key}")


class _DomainMap(celtypes.MapType):
    """``newStringInterfaceMapWithDefault``: a missing domain reads as an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return _IdMap()


def _attribute_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return None
    if "int" in value:
        return celtypes.IntType(int(value["int"]))
    if "bool" in value:
        return celtypes.BoolType(bool(value["bool"]))
    if "string" in value:
        return celtypes.StringType(str(value["string"]))
    if "version" in value:
        try:
            return parse_semver(str(value["version"]))
        except CelError:
            return None
    return None


def _by_domain(driver: str, items: dict[str, Any], convert: Callable[[Any], Any]) -> Any:
    domains: dict[str, dict[Any, Any]] = {}
    for name, raw in items.items():
        domain, sep, short = str(name).partition("/")
        if not sep:
            domain, short = driver, str(name)
        value = convert(raw)
        if value is not None:
            domains.setdefault(domain, {})[celtypes.StringType(short)] = value
    return _DomainMap({celtypes.StringType(d): _IdMap(v) for d, v in domains.items()})


def _capacity_value(raw: Any) -> Any:
    value = raw.get("value") if isinstance(raw, dict) else raw
    try:
        return CelQuantity(parse_quantity(str(value)))
    except (QuantityError, ValueError):
        return None


def device_activation(driver: str, device: dict[str, Any]) -> dict[str, Any]:
    """The ``device`` variable for one device of a ResourceSlice (v1 shape)."""
    return {"device": celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): _by_domain(
            driver, device.get("attributes") or {}, _attribute_value),
        celtypes.StringType("capacity"): _by_domain(
            driver, device.get("capacity") or {}, _capacity_value),
        celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
            bool(device.get("allowMultipleAllocations"))),
    })}


# --------------------------------------------------------------------------- expressions

_ENV = celpy.Environment(runner_class=BudgetedRunner)
_NO_MEMBER = re.compile(r"no such member in mapping: '(.*)'")


def _go_message(exc: Exception) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    found = _NO_MEMBER.search(text)
    if found:
        return f"no such key: {found.group(1)}"
    if text.startswith("found no matching overload") or "no such overload" in text:
        return "no such overload"
    return text


@dataclass
class CompiledSelector:
    """One compiled expression, or why it does not compile."""

    expression: str
    program: Any = None
    error: str | None = None

    def matches(self, activation: dict[str, Any], budget: CostBudget | None = None) -> bool:
        """Evaluate against a device within ``budget`` (a fresh one at upstream's limit when
        not given; its ``spent`` then says what the evaluation cost); raises
        :class:`CelError` on a runtime error, the cost limit's included."""
        try:
            result = evaluate_within(self.program, activation, budget or CostBudget())
        except CostLimitExceeded as exc:
            raise CelError(COST_LIMIT_EXCEEDED) from exc
        except celpy.CELEvalError as exc:
            raise CelError(_go_message(exc)) from exc
        except TypeError as exc:
            raise CelError("no such overload") from exc
        except RecursionError as exc:
            raise CelError("expression nested too deeply to evaluate") from exc
        except Exception as exc:  # the interpreter's own failure on this expression
            raise CelError(f"{type(exc).__name__}: {exc}") from exc
        if isinstance(result, celpy.CELEvalError):
            raise CelError(_go_message(result))
        if not isinstance(result, celtypes.BoolType):
            raise CelError(f"CEL result of type {_type_name(result)} could not be converted "
                           "to bool")
        return bool(result)


def _type_name(value: Any) -> str:
    names = {celtypes.IntType: "int", celtypes.StringType: "string",
             celtypes.DoubleType: "double", celtypes.MapType: "map", celtypes.ListType: "list",
             celtypes.UintType: "uint", CelQuantity: "kubernetes.Quantity",
             CelSemver: "kubernetes.Semver"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    return type(value).__name__


class SelectorCache:
    """Compiled expressions by text (upstream keeps an LRU cache of them; kaudit keeps all,
    as a replay meets only a handful)."""

    def __init__(self) -> None:
        self._compiled: dict[str, CompiledSelector] = {}
        #: (expression, device content) → result: a selector sees only the device's driver,
        #: attributes and capacity, so devices alike in those get one evaluation.
        #: A runtime error is kept as the result.
        self.results: dict[tuple[str, bytes], bool | CelError] = {}

    def get(self, expression: str) -> CompiledSelector:
        compiled = self._compiled.get(expression)
        if compiled is None:
            compiled = _compile(expression)
            self._compiled[expression] = compiled
        return compiled


#: ``CELSelectorExpressionMaxLength``: the API server refuses longer expressions.
MAX_EXPRESSION_LENGTH = 10 * 1024


def _compile(expression: str) -> CompiledSelector:
    if len(expression) > MAX_EXPRESSION_LENGTH:
        return CompiledSelector(expression, error=f"compilation failed: expression is "
                                f"{len(expression)} characters long, more than "
                                f"{MAX_EXPRESSION_LENGTH}")
    try:
        ast = _ENV.compile(_rewrite_bind(expression))
    except celpy.CELParseError as exc:
        return CompiledSelector(expression, error=_syntax_error(expression, exc))
    except RecursionError:
        return CompiledSelector(expression, error="compilation failed: expression nested too "
                                "deeply")
    undeclared = _undeclared(ast)
    if undeclared:
        return CompiledSelector(expression, error="compilation failed: ERROR: <input>: "
                                f"undeclared reference to '{undeclared}' (in container '')")
    try:
        program = _ENV.program(ast, functions=FUNCTIONS)
    except RecursionError:
        return CompiledSelector(expression, error="compilation failed: expression nested too "
                                "deeply")
    if "device" not in expression:
        # A constant expression: its type is known before any device is seen, as CEL-Go's
        # type check knows it.
        try:
            value = evaluate_within(program, {}, CostBudget())
        except Exception:  # any failure, the cost limit's included, is left to evaluation
            value = None
        if value is not None and not isinstance(value, (celtypes.BoolType, celpy.CELEvalError)):
            return CompiledSelector(expression, error="must evaluate to bool or the unknown "
                                    f"type, not {_type_name(value)}")
    return CompiledSelector(expression, program=program)


@lru_cache(maxsize=4096)
def estimated_cost(expression: str) -> int | None:
    """The worst-case cost the API server estimates for ``expression`` at admission
    (``cel_cost.py``), or None when it does not parse (left to the allocator's compile)."""
    try:
        ast = _ENV.compile(expression)
    except (celpy.CELParseError, RecursionError):
        return None
    cost = estimate_cost(ast)
    return cost if cost < UNBOUNDED else UNBOUNDED


def _syntax_error(expression: str, exc: Exception) -> str:
    """CEL-Go's shape of a syntax error: ``ERROR: <input>:LINE:COLUMN: Syntax error: …``,
    with the source line and a caret."""
    line = getattr(exc, "line", None)
    column = getattr(exc, "column", None)
    lines = expression.splitlines() or [""]
    if isinstance(line, int) and isinstance(column, int) and 1 <= line <= len(lines):
        where = f"{line}:{column}"
        source = lines[line - 1]
        caret = "." * max(column - 1, 0) + "^"
        return (f"compilation failed: ERROR: <input>:{where}: Syntax error: unexpected "
                f"input\n | {source}\n | {caret}")
    return f"compilation failed: ERROR: <input>: Syntax error: {str(exc).strip()}"


def _rewrite_bind(expression: str) -> str:
    """``cel.bind(name, init, body)`` (``ext.Bindings``, which celpy lacks) as the equivalent
    ``[init].map(name, body)[0]``."""
    marker = "cel.bind("
    while True:
        at = expression.find(marker)
        if at < 0:
            return expression
        args, end = _call_args(expression, at + len(marker))
        if len(args) != 3:
            return expression  # left for the parser to reject
        name, init, body = (arg.strip() for arg in args)
        expression = (f"{expression[:at]}[{init}].map({name}, {body})[0]"
                      f"{expression[end:]}")


def _call_args(text: str, start: int) -> tuple[list[str], int]:
    """The top-level arguments of a call whose ``(`` ends just before ``start``, and the
    index after its ``)``."""
    depth, quote, args, current = 0, "", [], start
    i = start
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                args.append(text[current:i])
                return args, i + 1
            depth -= 1
        elif char == "," and depth == 0:
            args.append(text[current:i])
            current = i + 1
        i += 1
    return args, len(text)


_KNOWN_NAMES = {"device", "true", "false", "null", "int", "uint", "double", "bool", "string",
                "bytes", "list", "map", "type", "dyn", "null_type"}


def _undeclared(ast: Any) -> str | None:
    """The first top-level identifier that is not ``device`` (nor a macro's variable)."""
    bound: set[str] = set()
    for node in ast.iter_subtrees_topdown():
        if node.data == "member_dot_arg" and len(node.children) > 2:
            args = node.children[2]
            first = getattr(args, "children", [None])[0] if args is not None else None
            name = _ident(first)
            if name:
                bound.add(name)
    for node in ast.iter_subtrees_topdown():
        if node.data == "ident":
            name = str(node.children[0])
            if name not in _KNOWN_NAMES and name not in bound:
                return name
    return None


def _ident(node: Any) -> str | None:
    while node is not None and hasattr(node, "children"):
        if node.data == "ident":
            return str(node.children[0])
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None
