"""Bounded YAML reading: refuse alias bombs and absurd nesting before they cost anything.

PyYAML shares the object an alias points to, so a "billion laughs" document loads quickly
and then explodes when anything walks it (JSON encoding, validation). Every document is
measured after composition, as if its aliases were expanded, and refused past
``MAX_EXPANDED_NODES`` nodes or ``MAX_DEPTH`` levels; the refusal is a
:class:`yaml.MarkedYAMLError`, so callers report it with the file and line like any
syntax error. Nesting deep enough to exhaust Python's stack while parsing surfaces as
``RecursionError``, which callers report the same way (:data:`TOO_DEEP`).
"""

from __future__ import annotations

from typing import Any

import yaml

# Far beyond any Kubernetes object or scheduler configuration, far below trouble.
MAX_EXPANDED_NODES = 2_000_000
MAX_DEPTH = 200
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"


class LimitError(yaml.constructor.ConstructorError):
    """A document beyond the limits; carries the mark of the node that crossed them."""


def _measure(root: yaml.Node) -> None:
    """Expanded size and height of the node graph, each node visited once (post-order)."""
    sizes: dict[int, tuple[int, int]] = {}  # id -> (expanded nodes, height)
    entered: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if not done:
            if id(node) in entered:
                continue
            entered.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in entered)
            continue
        # A child still unfinished here is an ancestor (a recursive alias): count it once.
        measured = [sizes.get(id(child), (1, 1)) for child in children]
        size = 1 + sum(s for s, _ in measured)
        height = 1 + max((h for _, h in measured), default=0)
        if height > MAX_DEPTH:
            raise LimitError(None, None, TOO_DEEP, node.start_mark)
        if size > MAX_EXPANDED_NODES:
            raise LimitError(None, None, f"expands to more than {MAX_EXPANDED_NODES:,} nodes "
                             "through its aliases (an alias bomb?)", node.start_mark)
        sizes[id(node)] = (size, height)


class BoundedComposer:
    """A mixin for a PyYAML loader class: measure each document before it is constructed."""

    def compose_document(self) -> Any:
        node = super().compose_document()  # type: ignore[misc]
        if node is not None:
            _measure(node)
        return node


class BoundedSafeLoader(BoundedComposer, yaml.SafeLoader):
    """``yaml.SafeLoader`` with the limits."""
