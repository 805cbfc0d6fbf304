"""Go's string formatting where kaudit repeats upstream's messages: ``%q`` quoting and the
text of ``utilerrors.NewAggregate``."""

from __future__ import annotations

from collections.abc import Sequence


def go_quote(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``) for the strings an extender error quotes."""
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
             "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}
    out = []
    for ch in text:
        if ch in named:
            out.append(named[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as it is, several deduplicated
    in order, joined by ", " in brackets."""
    seen = list(dict.fromkeys(messages))
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"
