"""The runtime cost limit of a DRA selector's evaluation.

Mirrors ``cel.CostLimit(resourceapi.CELSelectorExpressionMaxCost)``, which
``staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go`` (Kubernetes v1.34) sets on
every selector program: CEL-Go's interpreter (``interpreter/runtimecost.go``) counts the cost of
what it evaluates and stops with ``operation cancelled: actual cost limit exceeded`` past
1,000,000 units. The allocator reports that as a CEL runtime error, which fails the scheduling
attempt (``statusError`` in the DynamicResources Filter).

The units are CEL-Go's: 1 per identifier, field selection, index, call and operator, 10 per list
literal, 30 per map literal, 3 per comprehension step (the loop condition and accumulator), and
for string, bytes and list concatenation and the string functions a tenth of the characters they
traverse or build. The cost of a concatenation or string function is charged *before* the
interpreter builds its result, so a selector that doubles a string stops at the limit instead of
growing memory (CEL-Go charges after; list concatenation, constant time in Go, is charged by
size here because it copies in Python).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sized
from contextvars import ContextVar
from functools import reduce
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator, base_functions

from kaudit.plugins.dynamic_resources.cel_cost import LIST_CREATE, MAP_CREATE, MAX_COST

#: CEL-Go's message (``interpreter.EvalCancelledError`` with ``CostLimitExceeded``).
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class CostLimitExceeded(Exception):
    """The evaluation went past its cost limit."""

    def __init__(self) -> None:
        super().__init__(COST_LIMIT_EXCEEDED)


#: The parse-tree nodes one evaluation may visit: celpy does far more work per cost unit than
#: CEL-Go where the units are cheap (a list literal costs 10 however long it is; celpy visits
#: about ten nodes per element), so the limit stands for upstream's ~0.1 s (its comment on
#: ``CELSelectorExpressionMaxCost``) in celpy's work too: about 2 s of CPU at most.
MAX_INTERPRETER_STEPS = 200_000


class CostBudget:
    """The cost one evaluation has spent, against its limits."""

    def __init__(self, limit: int = MAX_COST, steps: int = MAX_INTERPRETER_STEPS) -> None:
        self.limit = limit
        self.spent = 0
        self.step_limit = steps
        self.steps = 0

    def charge(self, units: int) -> None:
        self.spent += units
        if self.spent > self.limit:
            raise CostLimitExceeded()

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.step_limit:
            raise CostLimitExceeded()


_CURRENT: ContextVar[CostBudget | None] = ContextVar("cel_cost_budget", default=None)


def charge(units: int) -> None:
    """Charge the evaluation under way (nothing outside an evaluation)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.charge(units)


def charge_traversal(characters: int) -> None:
    """A tenth of the characters traversed or built, rounded up."""
    charge(math.ceil(characters * 0.1))


def evaluate_within(program: Any, activation: dict[str, Any], budget: CostBudget) -> Any:
    """Run ``program`` with ``budget`` charged; raises :class:`CostLimitExceeded`."""
    token = _CURRENT.set(budget)
    try:
        return program.evaluate(activation)
    finally:
        _CURRENT.reset(token)


#: What a parse-tree node costs when evaluated: operators only when they operate (celpy's
#: tree has a pass-through node per precedence level).
_NODE_COST = {"ident": 1, "member_dot": 1, "member_index": 1, "member_dot_arg": 1,
              "ident_arg": 1, "dot_ident": 1, "dot_ident_arg": 1,
              "list_lit": LIST_CREATE, "map_lit": MAP_CREATE, "member_object": 40}
_OPERATORS = {"relation", "addition", "multiplication", "unary", "expr"}
_COMPREHENSION_STEP = 3


def _no_overload() -> CELEvalError:
    return CELEvalError("no such overload")


def logical_or(left: Any, right: Any) -> Any:
    """``||`` of CEL: commutative over errors. celpy's words an error of two errors with both
    operands' text, which doubles at each step of an ``exists`` over failing elements (memory
    grows as 2^n); here the result of two non-bools is one short error."""
    if not isinstance(left, celtypes.BoolType) and not isinstance(right, celtypes.BoolType):
        return _no_overload()
    return celtypes.logical_or(left, right)


def logical_and(left: Any, right: Any) -> Any:
    """``&&`` of CEL, as :func:`logical_or`."""
    if not isinstance(left, celtypes.BoolType) and not isinstance(right, celtypes.BoolType):
        return _no_overload()
    return celtypes.logical_and(left, right)


class BudgetedEvaluator(Evaluator):
    """celpy's tree-walking evaluator, charging each node it evaluates (and reducing ``all``
    and ``exists`` with :func:`logical_and` and :func:`logical_or`)."""

    def member_dot_arg(self, tree: lark.Tree[Any]) -> Any:
        method = str(tree.children[1])
        if method not in ("all", "exists"):
            return super().member_dot_arg(tree)
        items = self.visit(tree.children[0])
        if isinstance(items, CELEvalError):
            return items
        step = self.build_ss_macro_eval(tree)
        if method == "all":
            return reduce(logical_and, map(step, items), celtypes.BoolType(True))
        return reduce(logical_or, map(step, items), celtypes.BoolType(False))

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        budget = _CURRENT.get()
        if budget is not None:
            budget.step()
            kind = tree.data
            cost = _NODE_COST.get(kind)
            if cost is not None:
                budget.charge(cost)
            elif kind in _OPERATORS and len(tree.children) > 1:
                budget.charge(1)
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _MacroStep(ast, activation=self.activation)


class _MacroStep(BudgetedEvaluator):
    """A comprehension's body: each step costs its loop condition and accumulator too."""

    def evaluate(self, context: Any = None) -> Any:
        charge(_COMPREHENSION_STEP)
        return super().evaluate(context)


class BudgetedRunner(celpy.InterpretedRunner):
    """``InterpretedRunner`` with :class:`BudgetedEvaluator`."""

    def evaluate(self, context: Any) -> Any:
        return BudgetedEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, Sized) else 1


def _concatenate(left: Any, right: Any) -> Any:
    if isinstance(left, (str, bytes, list)) and isinstance(right, (str, bytes, list)):
        charge_traversal(_size(left) + _size(right))
    return base_functions["_+_"](left, right)


def traversing(function: Callable[..., Any],
               result_size: Callable[..., int] | None = None) -> Callable[..., Any]:
    """``function`` (a string function) charged for the characters it traverses, and for
    those its result may hold, before it runs."""
    def charged(*args: Any) -> Any:
        characters = _size(args[0]) if args and isinstance(args[0], (str, list)) else 1
        if result_size is not None:
            characters += result_size(*args)
        charge_traversal(characters)
        return function(*args)
    charged.__name__ = getattr(function, "__name__", "function")
    return charged


def replace_result_size(text: Any, old: Any, new: Any, limit: Any = -1) -> int:
    """The most characters ``replace`` can build."""
    text, old, new = str(text), str(old), str(new)
    count = text.count(old) if old else len(text) + 1
    if int(limit) >= 0:
        count = min(count, int(limit))
    return len(text) + count * len(new)


def join_result_size(items: Any, separator: Any = "") -> int:
    return sum(len(str(item)) for item in items) + len(str(separator)) * max(len(items) - 1, 0)


OPERATORS: dict[str, Callable[..., Any]] = {"_+_": _concatenate, "_||_": logical_or,
                                            "_&&_": logical_and}

__all__ = ["COST_LIMIT_EXCEEDED", "BudgetedRunner", "CostBudget", "CostLimitExceeded",
           "evaluate_within", "traversing"]
