"""Go's string formatting where kaudit repeats upstream's messages: ``%q`` quoting
(``strconv.Quote``, Go's ``strconv/quote.go``) and the text of ``utilerrors.NewAggregate``
(``k8s.io/apimachinery/pkg/util/errors/errors.go``)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

#: Graphic code points that Unicode 15.0.0 assigned, as (first, last) ranges. kube-scheduler
#: v1.34 is built with Go 1.24, whose tables are Unicode 15.0.0, so ``strconv.IsPrint`` is true
#: for them; Python 3.11's tables are Unicode 14.0.0, where they are unassigned (not
#: printable). Later Pythons already know them.
_PRINTABLE_SINCE_UNICODE_15 = (
    (0xCF3, 0xCF3), (0xECE, 0xECE), (0x10EFD, 0x10EFF), (0x1123F, 0x11241), (0x11B00, 0x11B09),
    (0x11F00, 0x11F10), (0x11F12, 0x11F3A), (0x11F3E, 0x11F59), (0x1342F, 0x1342F),
    (0x13440, 0x13455), (0x1B132, 0x1B132), (0x1B155, 0x1B155), (0x1D2C0, 0x1D2D3),
    (0x1DF25, 0x1DF2A), (0x1E030, 0x1E06D), (0x1E08F, 0x1E08F), (0x1E4D0, 0x1E4F9),
    (0x1F6DC, 0x1F6DC), (0x1F774, 0x1F776), (0x1F77B, 0x1F77F), (0x1F7D9, 0x1F7D9),
    (0x1FA75, 0x1FA77), (0x1FA87, 0x1FA88), (0x1FAAD, 0x1FAAF), (0x1FABB, 0x1FABD),
    (0x1FABF, 0x1FABF), (0x1FACE, 0x1FACF), (0x1FADA, 0x1FADB), (0x1FAE8, 0x1FAE8),
    (0x1FAF7, 0x1FAF8), (0x2B739, 0x2B739), (0x31350, 0x323AF),
)
_SINCE_15_FIRSTS = tuple(first for first, _ in _PRINTABLE_SINCE_UNICODE_15)

#: The escapes ``strconv.Quote`` writes by name.
_NAMED_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                  "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}

#: Python's UTF-8 decoder with ``errors="surrogateescape"`` reads an undecodable byte ``b``
#: as the lone surrogate ``U+DC00 + b`` (``b`` is 0x80–0xFF).
_ESCAPED_BYTES = range(0xDC80, 0xDD00)


def is_print(rune: str) -> bool:
    """``strconv.IsPrint`` of one character: letters, marks, numbers, punctuation, symbols
    and the ASCII space, as Go 1.24's Unicode 15.0.0 tables classify them."""
    if rune.isprintable():
        return True
    code = ord(rune)
    i = bisect_right(_SINCE_15_FIRSTS, code) - 1
    return i >= 0 and code <= _PRINTABLE_SINCE_UNICODE_15[i][1]


def _go_bytes(text: str | bytes) -> bytes:
    """The Go string ``text`` stands for. ``bytes`` are one as they are; in a ``str``, a lone
    surrogate U+DC80–U+DCFF stands for the undecodable byte it escapes (how Python decodes
    command lines and file names) and any other lone surrogate for the three bytes of its
    UTF-8 form, which Go does not decode either."""
    if isinstance(text, bytes):
        return text
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return b"".join(ch.encode("utf-8", "surrogateescape") if ord(ch) in _ESCAPED_BYTES
                        else ch.encode("utf-8", "surrogatepass") for ch in text)


def go_len(text: str | bytes) -> int:
    """Go's ``len`` of a string: its bytes, not its characters (``"é"`` is 2)."""
    return len(text) if isinstance(text, str) and text.isascii() else len(_go_bytes(text))


def _go_runes(text: str | bytes) -> str:
    """The runes Go's ``for range`` sees in ``text`` (see :func:`_go_bytes`), with every byte
    that is not part of valid UTF-8 as its ``surrogateescape`` character."""
    if isinstance(text, str):
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
    return _go_bytes(text).decode("utf-8", "surrogateescape")


def go_quote(text: str | bytes) -> str:
    """Go's ``%q`` (``strconv.Quote``): a double-quoted Go literal. Printable runes stay as
    they are; ``\\a \\b \\f \\n \\r \\t \\v``, ``\\\\`` and ``\\"`` by name; other runes below
    U+0080 as ``\\xNN``, then ``\\uNNNN`` and ``\\UNNNNNNNN``; a byte that is not valid UTF-8
    as ``\\xNN`` (see :func:`_go_bytes` for how a ``str`` carries one)."""
    out = []
    for ch in _go_runes(text):
        code = ord(ch)
        if ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif code in _ESCAPED_BYTES:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif is_print(ch):
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as it is, several deduplicated
    in order, joined by ", " in brackets."""
    seen = list(dict.fromkeys(messages))
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"
