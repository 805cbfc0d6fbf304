"""Label key and value checks used by plugin-argument validation.

Mirrors ``k8s.io/apimachinery/pkg/util/validation/validation.go`` (``IsQualifiedName``,
``IsDNS1123Subdomain``, ``IsValidLabelValue`` and their messages) and
``pkg/apis/meta/v1/validation`` (``ValidateLabelName``: one error per message).
:func:`regex_error` is kaudit's one writer of apimachinery's ``RegexError`` text. Lengths are
Go's ``len``, in bytes.
"""

from __future__ import annotations

import re

from kaudit.config.fielderrors import FieldError, invalid
from kaudit.gostrings import go_len

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must "
                      "start and end with an alphanumeric character")
QUALIFIED_NAME_MAX = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case "
                         "alphanumeric characters, '-' or '.', and must start and end with "
                         "an alphanumeric character")
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric "
                   "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                   "character")
LABEL_VALUE_MAX = 63

_QUALIFIED = re.compile(QUALIFIED_NAME_FMT)
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``: ``msg``, the examples if any, and the regex."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """``validation.MaxLenError``."""
    return f"must be no more than {length} characters"


def is_dns1123_subdomain(value: str) -> list[str]:
    errors = []
    if go_len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN.fullmatch(value):
        errors.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def is_qualified_name(value: str) -> list[str]:
    """Messages for a label key (``[prefix/]name``); empty when valid."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT,
                                                  "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif go_len(name) > QUALIFIED_NAME_MAX:
        errors.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED.fullmatch(name):
        errors.append("name part " + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT,
                                                 "MyName", "my.name", "123-abc"))
    return errors


def is_valid_label_value(value: str) -> list[str]:
    errors = []
    if go_len(value) > LABEL_VALUE_MAX:
        errors.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value",
                                  "12345"))
    return errors


def validate_label_name(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, message) for message in is_qualified_name(name)]
