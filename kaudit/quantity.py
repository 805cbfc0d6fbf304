"""Kubernetes resource quantities, parsed exactly as apimachinery parses them.

Mirrors ``ParseQuantity``, ``parseQuantityString`` and the suffix table of
``staging/src/k8s.io/apimachinery/pkg/api/resource/{quantity.go,suffix.go}`` (Kubernetes
v1.34): an optional sign, digits with an optional fraction, then a suffix that is a binary SI
suffix (``Ki`` … ``Ei``), a decimal SI suffix (``n u m k M G T P E``) or a decimal exponent
(``e3``, ``E-2``). Non-zero values are rounded away from zero to the nearest nano-unit, and
binary-SI values are capped at the largest int64, as upstream does.

A :class:`Quantity` keeps its exact value as an integer number of nano-units, so
:meth:`Quantity.value` and :meth:`Quantity.milli_value` (what the scheduler uses: millicores for
``cpu``, units for everything else) round away from zero like upstream's ``ScaledValue``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from kaudit.errors import QuantityError

NANO = 10**9
MAX_INT64 = 2**63 - 1

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                     "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")

# Upstream keeps arbitrarily large decimal exponents in an inf.Dec; kaudit refuses exponents
# beyond this, because no value that large (or small) can take part in int64 scheduling maths.
_MAX_DECIMAL_EXPONENT = 1000

#: Digits a quantity may hold (before and after its point), checked before conversion: far
#: beyond any quantity that fits an int64 in nano-units (28 digits), far below Python's
#: 4,300-digit limit on converting text to an integer. One of the input limits
#: (``kaudit.input_limits``), kept here because this module may not import that one (same layer).
MAX_QUANTITY_DIGITS = 1000

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity: ``nanos`` nano-units, and the format its text was written in."""

    nanos: int
    format: str
    #: The text as written, kept when upstream keeps it (already canonical), for ``str()``.
    text: str | None = field(default=None, compare=False)

    def scaled_value(self, scale: int) -> int:
        """The value in units of ``10**scale``, rounded away from zero (upstream ScaledValue)."""
        exponent = scale + 9
        if exponent <= 0:
            return self.nanos * 10 ** (-exponent)
        divisor = 10**exponent
        magnitude, remainder = divmod(abs(self.nanos), divisor)
        if remainder:
            magnitude += 1
        return -magnitude if self.nanos < 0 else magnitude

    def value(self) -> int:
        """Whole units, rounded away from zero (``Quantity.Value``)."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Thousandths of a unit, rounded away from zero (``Quantity.MilliValue``)."""
        return self.scaled_value(-3)

    def as_decimal(self) -> Decimal:
        return Decimal(self.nanos).scaleb(-9)

    def __str__(self) -> str:
        return self.text if self.text is not None else canonical_string(self)

    @classmethod
    def from_scaled(cls, unscaled: int, scale: int, fmt: str = DECIMAL_SI) -> Quantity:
        """``unscaled * 10**scale``, which must be a whole number of nano-units."""
        if scale >= -9:
            return cls(unscaled * 10 ** (scale + 9), fmt)
        nanos, remainder = divmod(unscaled, 10 ** (-scale - 9))
        if remainder:
            raise QuantityError(f"{unscaled}e{scale} is finer than a nano-unit")
        return cls(nanos, fmt)


class QuantityTooLargeError(QuantityError):
    """A quantity too large to convert (its message names it: ``quantity '…' is too
    large``)."""


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: (positive, value, numerator, denominator, suffix)."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1

    while True:  # strip leading zeros
        if pos >= end:
            return positive, "0", "0", "", ""
        if text[pos] != "0":
            break
        pos += 1

    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""

    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]

    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end:
        if text[pos] not in _DIGITS:
            raise QuantityError("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        pos += 1
    return positive, value, num, denom, text[suffix_start:]


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """``suffixHandler.interpret``: (base, exponent, format)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body):
            return 10, int(digits), DECIMAL_EXPONENT
    raise QuantityError("unable to parse quantity's suffix")


def _decimal_unscaled(value: str) -> tuple[int, int]:
    """``inf.Dec.SetString``: the digits without the point, and the digits after it."""
    body = value
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    point = body.find(".")
    fraction = 0
    if point >= 0:
        fraction = len(body) - point - 1
        body = body[:point] + body[point + 1:]
    if not body or not all(c in _DIGITS for c in body):
        raise QuantityError("unable to parse quantity's numeric part")
    return sign * int(body), fraction


def _check_length(text: str, num: str, denom: str, base: int, exponent: int) -> None:
    """Refuse, before any conversion, a value too large for kaudit (beyond 10**1000
    nano-units; a binary-SI value is capped instead, as upstream caps it) and a quantity of
    more than :data:`MAX_QUANTITY_DIGITS` digits."""
    if base == 10 and num != "0" and len(num) - 1 + exponent + 9 > _MAX_DECIMAL_EXPONENT:
        raise QuantityTooLargeError(f"quantity {shortened(text)} is too large")
    if len(num) + len(denom) > MAX_QUANTITY_DIGITS:
        if base == 2 and num != "0":
            raise QuantityTooLargeError(f"quantity {shortened(text)} is too large")
        raise QuantityError(f"quantity {shortened(text)} has more than "
                            f"{MAX_QUANTITY_DIGITS} digits")


def shortened(text: str) -> str:
    """``text`` quoted, cut short if long enough to flood a message."""
    return repr(text) if len(text) <= 40 else f"'{text[:16]}…' ({len(text)} characters)"


@lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Quantity:
    """Parse a quantity string; raises :class:`QuantityError` as upstream would fail."""
    if not isinstance(text, str):
        raise QuantityError(f"quantity must be a string, not {type(text).__name__}")
    if not text:
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    if text == "0":
        return Quantity(0, DECIMAL_SI, text)

    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret_suffix(suffix)

    # The int64 fast path of ParseQuantity: taken when the digits fit and no rounding is
    # needed. It accepts a few strings the exact path refuses ("." is 0), so mirror it.
    if fmt == BINARY_SI:
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1 if not denom else -1
        scale, mantissa = 0, 1 << exponent
    else:
        precision = 18 - (len(num) + len(denom))
        scale, mantissa = exponent, 1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            digits = int(shifted)
            result = digits * mantissa
            if result <= MAX_INT64:
                nanos = result * 10 ** (scale + 9)
                if fmt == BINARY_SI:
                    keep = exponent % 10 == 0 and digits & 0x07 != 0
                else:
                    keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(nanos if positive else -nanos, fmt, text if keep else None)

    _check_length(text, num, denom, base, exponent)
    unscaled, fraction = _decimal_unscaled(value)
    if base == 10:
        power = exponent - fraction + 9  # value in nanos = unscaled * 10**power
        if power > _MAX_DECIMAL_EXPONENT:
            raise QuantityTooLargeError(f"quantity {shortened(text)} is too large")
        if power >= 0:
            nanos = abs(unscaled) * 10**power
        elif -power > len(str(abs(unscaled))) + 1:
            nanos = 1 if unscaled else 0
        else:
            magnitude, remainder = divmod(abs(unscaled), 10**-power)
            nanos = magnitude + (1 if remainder else 0)
    else:
        scaled = abs(unscaled) << exponent
        if fraction:
            magnitude, remainder = divmod(scaled * NANO, 10**fraction)
            nanos = magnitude + (1 if remainder else 0)
        else:
            nanos = scaled * NANO
        if nanos > MAX_INT64 * NANO:
            nanos = MAX_INT64 * NANO
        if 0 < nanos < NANO:  # a fraction of one unit cannot be written in binary SI
            fmt = DECIMAL_SI
    negative = unscaled < 0
    return Quantity(-nanos if negative else nanos, fmt)


def parse_milli(text: str) -> int:
    """Millicores (or milli-units) of a quantity string, as ``MilliValue``."""
    return parse_quantity(text).milli_value()


def parse_value(text: str) -> int:
    """Whole units of a quantity string, as ``Value``."""
    return parse_quantity(text).value()


_BINARY_SUFFIX_BY_POWER = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}
_DECIMAL_SUFFIX_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}


def canonical_string(quantity: Quantity) -> str:
    """Upstream's canonical ``Quantity.String()`` (``CanonicalizeBytes``), as of v1.34.

    Binary SI values print with the largest power of 1024 that divides them (values under
    1024, or not whole, print as decimal SI); decimal values move trailing zeros into an
    exponent that is a multiple of three and print it as an SI suffix or ``e<n>``. Exponents
    outside the suffix tables print without a suffix, as v1.34 does.
    """
    nanos = quantity.nanos
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    magnitude = abs(nanos)
    fmt = quantity.format
    if fmt not in (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT):
        fmt = DECIMAL_EXPONENT
    if fmt == BINARY_SI:
        if magnitude < 1024 * NANO or magnitude % NANO:
            fmt = DECIMAL_SI
        else:
            units, power = magnitude // NANO, 0
            while units % 1024 == 0:
                units //= 1024
                power += 1
            return f"{sign}{units}{_BINARY_SUFFIX_BY_POWER.get(power, '')}"
    mantissa, exponent = magnitude, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    adjust = exponent % 3
    mantissa *= 10**adjust
    exponent -= adjust
    if fmt == DECIMAL_EXPONENT:
        suffix = f"e{exponent}" if exponent else ""
    else:
        suffix = _DECIMAL_SUFFIX_BY_EXPONENT.get(exponent, "")
    return f"{sign}{mantissa}{suffix}"
