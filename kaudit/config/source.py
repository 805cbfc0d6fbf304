"""Reading a configuration file: YAML or JSON, with errors naming the file and line.

kube-scheduler reads its config through ``sigs.k8s.io/yaml`` (YAML, of which JSON is a
subset) and decodes strictly, so a key repeated in one mapping is an error (upstream:
``key "x" already set in map``). Timestamps stay strings, as they do when go-yaml
decodes into an untyped value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from kaudit.errors import ConfigError
from kaudit.input_limits import (
    TOO_DEEP,
    BoundedSafeLoader,
    check_json_value,
    integer_from_text,
    read_document,
)


class _StrictLoader(BoundedSafeLoader):
    """The bounded SafeLoader (timestamps stay strings), rejecting repeated keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: SafeLoader reports it below
                continue
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f'key "{key}" already set in map', key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f'key "{key}" already set in map')
        obj[key] = value
    return obj


def _parse_json(text: str, source: str) -> Any:
    try:
        document = json.loads(text, object_pairs_hook=_json_object, parse_int=integer_from_text)
        check_json_value(document)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}:{exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{source}: {TOO_DEEP}") from None
    except ValueError as exc:  # a repeated key, or a value beyond the limits
        raise ConfigError(f"{source}: {exc}") from None
    return document


def parse_text(text: str, source: str) -> Any:
    """The document in ``text``; YAML and JSON syntax errors name ``source:line``.

    JSON goes through the YAML parser too (which knows line numbers), except JSON that
    YAML cannot read (tab indentation), which upstream's JSON decoder reads.
    """
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        if text.lstrip().startswith("{") and not isinstance(exc, yaml.constructor.ConstructorError):
            return _parse_json(text, source)
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: {TOO_DEEP}") from None


def read_file(path: Path) -> Any:
    """The parsed content of a YAML or JSON configuration file."""
    try:
        text = read_document(path, ConfigError).decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    return parse_text(text, str(path))
