"""``kaudit.gostrings`` against Go: ``go_quote`` must write what ``strconv.Quote`` writes
(Go's ``strconv/quote.go``).

The expected strings were printed by Go's ``strconv.Quote`` (Go 1.26, Unicode 15.0.0 tables, as
Go 1.24's that build kube-scheduler v1.34) for each input's bytes.
"""

from __future__ import annotations

import hashlib

import pytest

from kaudit.gostrings import aggregate, go_len, go_quote, is_print

#: (a Go string's bytes, ``strconv.Quote`` of it).
GO_QUOTED: list[tuple[bytes, str]] = [
    (b"", '""'),
    (b"plain", '"plain"'),
    (b'say "hi"', r'"say \"hi\""'),
    (b"back\\slash", r'"back\\slash"'),
    (b"'single'", "\"'single'\""),
    (b"\a\b\f\n\r\t\v", r'"\a\b\f\n\r\t\v"'),
    (b"\x00\x01\x1f\x7f", r'"\x00\x01\x1f\x7f"'),
    (b"\x1b[0m", r'"\x1b[0m"'),
    # C1 controls, no-break space, soft hyphen, zero-width and line/paragraph separators,
    # BOM, private use (BMP and plane 15), the last code point, a tag, an unassigned code
    # point, the ideographic space and the Arabic letter mark: not printable.
    ("\u0080\u009f".encode(), r'"\u0080\u009f"'),
    ("\u00a0".encode(), r'"\u00a0"'),
    ("\u00ad".encode(), r'"\u00ad"'),
    ("\u200b\u2028\u2029".encode(), r'"\u200b\u2028\u2029"'),
    ("\ufeff".encode(), r'"\ufeff"'),
    ("\ue000".encode(), r'"\ue000"'),
    ("\U000f0000".encode(), r'"\U000f0000"'),
    ("\U0010ffff".encode(), r'"\U0010ffff"'),
    ("\U000e0001".encode(), r'"\U000e0001"'),
    ("\u0378".encode(), r'"\u0378"'),
    ("\u3000".encode(), r'"\u3000"'),
    ("\u061c".encode(), r'"\u061c"'),
    # Printable: as they are, including characters Unicode 15.0 assigned (Python 3.11 does
    # not know them) and a literal U+FFFD.
    ("é 日本語 😀".encode(), '"é 日本語 😀"'),
    ("\U0001f6dc".encode(), '"\U0001f6dc"'),
    ("\U00031350".encode(), '"\U00031350"'),
    ("\u0cf3".encode(), '"\u0cf3"'),
    ("\ufffd".encode(), '"\ufffd"'),
    # Not UTF-8: each byte that is not part of a valid sequence as \xNN.
    (b"\xff", r'"\xff"'),
    (b"a\xc3(", r'"a\xc3("'),
    (b"\xed\xa0\x80", r'"\xed\xa0\x80"'),  # an encoded surrogate
    (b"\xe2\x82", r'"\xe2\x82"'),  # truncated
    (b"\xe2\x82\xe2\x82\xac", '"\\xe2\\x82\u20ac"'),  # truncated, then a valid euro sign
    (b"\xc0\xaf", r'"\xc0\xaf"'),  # overlong
    (b"\xf4\x90\x80\x80", r'"\xf4\x90\x80\x80"'),  # above U+10FFFF
    (b"\x80abc", r'"\x80abc"'),  # a lone continuation byte
    (b"\xf0\x9f\x98", r'"\xf0\x9f\x98"'),  # a truncated emoji
]

#: SHA-256 of the code points ``strconv.IsPrint`` accepts (Go 1.26, Unicode 15.0.0), written
#: as comma-separated ``first-last`` hex ranges: 711 ranges, 148,998 code points.
GO_PRINTABLE_SHA256 = "1d8d55952d5aac4c33531ef8b83714b058507431677fc118fd8ad6a96508cd9f"


@pytest.mark.parametrize(("data", "quoted"), GO_QUOTED, ids=[d.hex() or "empty"
                                                               for d, _ in GO_QUOTED])
def test_go_quote_matches_strconv_quote(data: bytes, quoted: str) -> None:
    assert go_quote(data) == quoted
    # A str carries undecodable bytes as Python's surrogateescape decoder does.
    assert go_quote(data.decode("utf-8", "surrogateescape")) == quoted


def test_a_lone_surrogate_is_quoted_as_the_bytes_of_its_utf8_form() -> None:
    assert go_quote("a\ud800b") == go_quote(b"a\xed\xa0\x80b") == r'"a\xed\xa0\x80b"'


def test_is_print_agrees_with_go_on_every_code_point() -> None:
    ranges: list[str] = []
    start: int | None = None
    for code in range(0x110001):
        printable = code <= 0x10FFFF and is_print(chr(code))
        if printable and start is None:
            start = code
        elif not printable and start is not None:
            ranges.append(f"{start:x}-{code - 1:x}")
            start = None
    digest = hashlib.sha256(",".join(ranges).encode()).hexdigest()
    assert (len(ranges), digest) == (711, GO_PRINTABLE_SHA256)


def test_aggregate() -> None:
    assert aggregate(["a"]) == "a"
    assert aggregate(["a", "b", "a"]) == "[a, b]"


def test_go_len_counts_bytes() -> None:
    assert go_len("abc") == 3
    assert go_len("é") == 2
    assert go_len("😀") == 4
    assert go_len(b"\xff") == 1
    assert go_len("\udcff") == 1  # one undecodable byte
