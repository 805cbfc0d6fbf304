"""Label names in plugin-argument validation, as field errors.

Mirrors ``pkg/apis/meta/v1/validation`` (``ValidateLabelName``: one error per message). The
checks and their messages (``IsQualifiedName``, ``IsValidLabelValue``, ``RegexError``) are
:mod:`kaudit.k8s.labels`'s, importable from here too.
"""

from __future__ import annotations

from kaudit.config.fielderrors import FieldError, invalid
from kaudit.k8s.labels import is_qualified_name as is_qualified_name
from kaudit.k8s.labels import is_valid_label_value as is_valid_label_value


def validate_label_name(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, message) for message in is_qualified_name(name)]
