"""The limits every external input meets: JSON and YAML documents, CSV and CLI numbers.

One module says how deep a document may nest, how large an integer may be, which YAML tags
are allowed and how large a document read whole may be; every door uses it: the trace
readers (watch, audit, simulator, snapshot, Alibaba CSV), the configuration loader, what-if
manifests, sweep specs and the CLI's numeric options. A value beyond a limit is refused
naming the field and the limit, never with a traceback.

- **Depth**: :data:`MAX_DEPTH` levels. JSON is parsed by orjson (which itself gives up past
  1,024 levels) and then measured by :func:`check_json_value`; YAML is measured after
  composition by :class:`BoundedComposer`, as if its aliases were expanded (PyYAML shares the
  object an alias points to, so a "billion laughs" document loads quickly and explodes when
  anything walks it), and refused past :data:`MAX_EXPANDED_NODES` nodes, or when an alias
  refers to a node that contains it. Nesting deep enough to exhaust Python's stack while
  parsing YAML surfaces as ``RecursionError``, which callers report the same way
  (:data:`TOO_DEEP`).
- **Numbers**: integers must fit Kubernetes' ``int64`` (:data:`MIN_INT`..:data:`MAX_INT`),
  floats must be finite (JSON cannot hold infinity): :func:`check_json_value`, naming the
  field (a configuration or sweep spec checks its typed fields itself). YAML integers longer
  than any int64 can be written are refused while parsing, so that a 5,000-digit number
  costs nothing; so are CSV cells (:func:`integer_from_text`) and resource quantities of
  more than 1,000 digits (``kaudit.quantity.MAX_QUANTITY_DIGITS``, before conversion).
  CLI numbers are finite and within their option's range (:func:`number_option`).
- **YAML tags**: only the JSON-compatible ones (:data:`YAML_TAGS`): null, bool, int, float,
  str, seq, map. Timestamps stay strings, as they do when ``sigs.k8s.io/yaml`` converts YAML
  to JSON; ``!!binary``, ``!!set``, ``!!omap``, ``!!pairs`` and language tags are refused.
- **Size**: a document read whole (a configuration, a sweep spec) holds at most
  :data:`MAX_DOCUMENT_BYTES`, the API server's request body limit. Trace files are streamed
  and not limited in size.

YAML refusals are :class:`yaml.MarkedYAMLError` subclasses, so callers report them with the
file and line like any syntax error; JSON value refusals are :class:`ValueLimitError`, which
carries the field path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import orjson
import yaml

#: Far beyond any Kubernetes object or scheduler configuration, below orjson's 254-level
#: limit when writing (a stored event wraps its object) and far below Python's stack.
MAX_DEPTH = 200
MAX_EXPANDED_NODES = 2_000_000
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
#: Kubernetes' integers are int64 (``resource.Quantity`` and ``metav1`` alike).
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
#: The digits of the largest int64.
MAX_INTEGER_DIGITS = len(str(MAX_INT))
#: ``DefaultMaxRequestBodyBytes`` of the API server (3 MiB).
MAX_DOCUMENT_BYTES = 3 * 1024 * 1024
YAML_TAGS = frozenset(f"tag:yaml.org,2002:{name}"
                      for name in ("null", "bool", "int", "float", "str", "seq", "map"))
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# A JSON text with more than MAX_DEPTH brackets or a run of MAX_INTEGER_DIGITS digits may cross
# a limit; others cannot, and are not walked. Digits become "0" and everything else " ", so
# that a long number is found at C speed (a regular expression costs three times the parse).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_NUMBER = b"0" * MAX_INTEGER_DIGITS


class ValueLimitError(ValueError):
    """A parsed value beyond a limit: ``path`` names the field (``spec.x[0]``, or empty for
    the document itself), ``reason`` what is wrong."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


def integer_problem(value: int) -> str | None:
    """Why ``value`` is not an int64, or None."""
    if MIN_INT <= value <= MAX_INT:
        return None
    return f"integer {_short(str(value))} is beyond the 64-bit range"


def float_problem(value: float) -> str | None:
    """Why ``value`` cannot be a JSON number, or None."""
    return None if math.isfinite(value) else f"{value} is not a finite number"


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:10]}…({len(text)} digits)"


def _join(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def check_json_value(value: Any, path: str = "") -> None:
    """Refuse a parsed document nested deeper than :data:`MAX_DEPTH` or holding a number
    JSON and Kubernetes cannot (:class:`ValueLimitError` naming the first such field)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            if isinstance(node, bool):
                continue
            problem = (integer_problem(node) if isinstance(node, int)
                       else float_problem(node) if isinstance(node, float) else None)
            if problem is not None:
                raise ValueLimitError(where, problem)
            continue
        if depth > MAX_DEPTH:
            raise ValueLimitError(_elided(where), TOO_DEEP)
        stack.extend((child, _join(where, key), depth + 1) for key, child in children)


def _elided(path: str) -> str:
    """A field path hundreds of levels long, shortened to its start."""
    return path if len(path) <= 80 else f"{path[:60]}…"


def might_cross_limits(raw: bytes) -> bool:
    """Whether a JSON text may nest too deep or hold too large an integer (cheap, may say
    yes for text that does not)."""
    return (raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
            or _LONG_NUMBER in raw.translate(_DIGITS_AS_ZEROS))


def load_json(raw: bytes | str) -> Any:
    """orjson's parse of ``raw``, within the limits: raises ``orjson.JSONDecodeError`` for a
    syntax error and :class:`ValueLimitError` for a value beyond a limit."""
    doc = orjson.loads(raw)
    if might_cross_limits(raw.encode() if isinstance(raw, str) else raw):
        check_json_value(doc)
    return doc


def integer_from_text(text: str) -> int:
    """``int(text)`` for decimal digits (with an optional sign), refused past int64 before
    conversion; raises :class:`ValueError` naming the problem."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > MAX_INTEGER_DIGITS:
        raise ValueError(f"integer {_short(text)} is beyond the 64-bit range")
    value = int(text)
    problem = integer_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def number_option(text: str, option: str, minimum: float, maximum: float) -> float:
    """A CLI option's number: finite and within ``[minimum, maximum]``; raises
    :class:`ValueError` with a message naming ``option``."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a number") from None
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise ValueError(f"{option}: {text} is out of range: expected a number from "
                         f"{_number(minimum)} to {_number(maximum)}")
    return value


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def read_document(path: Path, on_error: Callable[[str], Exception]) -> bytes:
    """The bytes of a document read whole, refused (``on_error(message)``) past
    :data:`MAX_DOCUMENT_BYTES` or when unreadable."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise on_error(f"{path}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
        with path.open("rb") as stream:
            data = stream.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise on_error(f"{path}: {exc.strerror or exc}") from None
    if len(data) > MAX_DOCUMENT_BYTES:
        raise on_error(f"{path}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    return data


# ----------------------------------------------------------------------------- YAML

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
        # A child still unfinished here is an ancestor: an alias to a node that contains it,
        # which JSON cannot hold (go-yaml refuses it too).
        if any(id(child) not in sizes for child in children):
            raise LimitError(None, None, "an alias refers to a node that contains it (a "
                             "recursive document)", node.start_mark)
        measured = [sizes[id(child)] for child in children]
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


def _short_tag(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


class BoundedSafeLoader(BoundedComposer, yaml.SafeLoader):
    """``yaml.SafeLoader`` within the parsing limits: bounded depth and aliases, JSON-compatible
    tags only, integers of bounded length, timestamps as strings. What it loads may still hold
    numbers beyond int64 or infinite floats: :func:`check_json_value` refuses them naming the
    field, unless the caller validates its fields' types itself."""

    # PyYAML's stubs declare an instance variable; PyYAML itself reads this class attribute.
    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, Any]]]] = {  # type: ignore[misc]
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node.tag == _TIMESTAMP_TAG:
            return self.construct_scalar(node)  # type: ignore[arg-type]
        if node.tag not in YAML_TAGS:
            raise LimitError(None, None, f"tag {_short_tag(node.tag)} is not allowed: a "
                             "Kubernetes document holds only null, booleans, numbers, strings, "
                             "lists and maps", node.start_mark)
        return super().construct_object(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node)).replace("_", "")
        # Any form (decimal, 0b, 0x, octal, sexagesimal) of an int64 is at most 80 characters
        # long; longer ones are refused before Python converts them. Whether a shorter one
        # fits an int64 is checked with the field's path (check_json_value, or the reader's
        # own typed validation).
        if len(text.lstrip("+-")) > 4 * MAX_INTEGER_DIGITS:
            raise LimitError(None, None, f"integer {_short(text)} is beyond the 64-bit range",
                             node.start_mark)
        value: int = super().construct_yaml_int(node)
        return value


BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int",
                                  BoundedSafeLoader.construct_yaml_int)


def load_yaml_documents(content: bytes | str) -> list[Any]:
    """Every non-empty document of a YAML (or JSON) text, loaded with the bounded loader and
    checked against the value limits. Raises :class:`ValueLimitError`, ``RecursionError``
    or ``yaml.YAMLError``; each door words them for its own input."""
    documents = [doc for doc in yaml.load_all(content, Loader=BoundedSafeLoader)
                 if doc is not None]
    for number, doc in enumerate(documents):
        check_json_value(doc, f"documents[{number}]" if len(documents) > 1 else "")
    return documents
