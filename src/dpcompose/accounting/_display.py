"""Privacy numbers shown to people: short decimal strings that never understate a cost.

A privacy quantity is an exact :class:`~fractions.Fraction`; a person reads a few significant digits.
Rounding to *nearest* can show less than the true cost (``1 + 6e-10`` would print as ``1``, a number the
budget check would accept although the cost is refused), so every displayed cost, spent total or
sensitivity rounds **up**, exactly:

* :func:`format_up` — the least decimal with at most ``digits`` significant digits that is ≥ the value;
* :func:`format_down` — the greatest such decimal ≤ the value, for numbers whose safe side is below
  (a remaining budget, a lower bound from an audit);
* :func:`format_excess` — a pair of strings for ``larger > limit`` with as many digits as it takes for
  the strings themselves to show the excess (``1.0000000006 > 1``), for refusal messages.

The strings follow Python's ``"g"`` presentation (``0.5``, ``1.5e-10``, ``1.23457e+06``) and parse
back with ``Fraction(s)`` or ``float(s)``. Rounding is done on exact rationals (a float is its exact
binary value), never through a float conversion.

Examples:
    >>> from fractions import Fraction
    >>> format_up(Fraction(1, 3))
    '0.333334'
    >>> format_down(Fraction(1, 3))
    '0.333333'
    >>> format_up(1 + Fraction(6, 10**10))
    '1.00001'
    >>> format_up(0.5), format_up(Fraction(1, 10**12)), format_up(10**9 + 1)
    ('0.5', '1e-12', '1.00001e+09')
    >>> format_excess(1 + Fraction(6, 10**10), Fraction(1))
    ('1.0000000006', '1')
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from fractions import Fraction

from dpcompose.accounting._exact import exact
from dpcompose.errors import InvalidParameter

__all__ = ["Shown", "format_down", "format_excess", "format_up", "shown_down", "shown_up"]

_LOG10_2 = math.log10(2)

#: format_excess stops adding digits here and shows the exact fractions instead.
_EXCESS_MAX_DIGITS = 40


def format_up(q: int | float | Fraction, digits: int = 6) -> str:
    """The least decimal with at most ``digits`` significant digits that is ≥ ``q``, as a short string.

    Exact: ``Fraction(format_up(q, d)) >= q`` always, and no decimal of ``d`` significant digits lies in
    ``[q, Fraction(format_up(q, d)))``. Values that need no rounding are shown as they are (``0.5``).
    ``inf`` and ``nan`` floats are shown as ``inf`` and ``nan``.

    Args:
        q: the value (an exact rational; a float is read as its exact binary value).
        digits: at most this many significant digits (≥ 1).

    Raises:
        InvalidParameter: ``q`` is not a number or ``digits`` is not an integer from 1 to 100.

    Examples:
        >>> from fractions import Fraction
        >>> format_up(Fraction(2, 3)), format_up(Fraction(2, 3), 2), format_up(0.1)
        ('0.666667', '0.67', '0.100001')
        >>> format_up(Fraction(999_999_5, 10)), format_up(-Fraction(1, 3))
        ('1e+06', '-0.333333')
    """
    return _format(q, digits, up=True)


def format_down(q: int | float | Fraction, digits: int = 6) -> str:
    """The greatest decimal with at most ``digits`` significant digits that is ≤ ``q``, as a short string.

    The mirror of :func:`format_up`, for numbers whose safe side is below: a remaining budget, a
    certified lower bound.

    Examples:
        >>> from fractions import Fraction
        >>> format_down(Fraction(2, 3)), format_down(0.1), format_down(Fraction(-1, 3))
        ('0.666666', '0.1', '-0.333334')
    """
    return _format(q, digits, up=False)


class Shown(Fraction):
    """An exact privacy quantity that prints as a short decimal rounded in its safe direction.

    It *is* the exact :class:`~fractions.Fraction` (it compares, hashes and computes as one; arithmetic
    gives plain Fractions); only its ``repr``/``str`` are short: :func:`format_up` for a cost or a spent
    total, :func:`format_down` for a remaining budget. :attr:`exact` is the plain Fraction.

    Examples:
        >>> from fractions import Fraction
        >>> left = shown_down(Fraction(1, 3))
        >>> left, left.exact, left == Fraction(1, 3)
        (0.333333, Fraction(1, 3), True)
        >>> {"epsilon": shown_up(Fraction(1, 3)), "delta": shown_up(0)}
        {'epsilon': 0.333334, 'delta': 0}
    """

    __slots__ = ("_up",)
    _up: bool

    def __new__(cls, value: int | float | Fraction, up: bool) -> Shown:
        if not isinstance(up, bool):
            raise InvalidParameter(f"up={up!r} must be True (print rounded up) or False (rounded down)")
        self = super().__new__(cls, exact(value, "value"))
        self._up = up
        return self

    # Fraction's comparisons with a float or a Decimal go through cls.from_float / cls.from_decimal, which
    # would call Shown(n, d) with the denominator as ``up``: plain Fractions there
    @classmethod
    def from_float(cls, f: float) -> Fraction:  # type: ignore[override]
        return Fraction.from_float(f)

    @classmethod
    def from_decimal(cls, dec: Decimal) -> Fraction:  # type: ignore[override]
        return Fraction.from_decimal(dec)

    @property
    def exact(self) -> Fraction:
        """The exact value, as a plain Fraction."""
        return Fraction(self.numerator, self.denominator)

    @property
    def rounds_up(self) -> bool:
        """True if the display rounds up (a cost), False if down (a remaining budget)."""
        return self._up

    def __repr__(self) -> str:
        return format_up(self.exact) if self._up else format_down(self.exact)

    __str__ = __repr__

    def __reduce__(self) -> tuple[type[Shown], tuple[Fraction, bool]]:
        return (type(self), (self.exact, self._up))  # (Fraction's own reduce goes through str: rounded)

    def __copy__(self) -> Shown:
        return self

    def __deepcopy__(self, memo: object) -> Shown:
        return self


def shown_up(value: int | float | Fraction) -> Shown:
    """``value`` as a :class:`Shown` that prints rounded up (a cost, a spent total)."""
    return Shown(value, True)


def shown_down(value: int | float | Fraction) -> Shown:
    """``value`` as a :class:`Shown` that prints rounded down (what is left of a budget)."""
    return Shown(value, False)


def format_excess(
    larger: int | float | Fraction, limit: int | float | Fraction, digits: int = 6
) -> tuple[str, str]:
    """Strings for two numbers with ``larger > limit`` whose digits themselves show the excess.

    ``larger`` is rounded down and ``limit`` up, with the fewest significant digits (at least ``digits``)
    at which the rounded strings still differ, so that the displayed statement "larger > limit" is true
    of the exact numbers: ``larger ≥ shown_larger > shown_limit ≥ limit``. When that would take more than
    40 digits the exact fractions are shown. (If ``larger ≤ limit`` both are rounded up.)

    Examples:
        >>> from fractions import Fraction
        >>> format_excess(Fraction(3, 10) + Fraction(1, 10**9), Fraction(3, 10))
        ('0.300000001', '0.3')
        >>> format_excess(2, 1)
        ('2', '1')
    """
    a, b = _as_fraction(larger, "larger"), _as_fraction(limit, "limit")
    _check_digits(digits)
    if not isinstance(a, Fraction) or not isinstance(b, Fraction) or a <= b:
        return _format(larger, digits, up=True, name="larger"), _format(limit, digits, up=True, name="limit")
    for d in range(digits, _EXCESS_MAX_DIGITS + 1):
        shown_a, shown_b = _format(a, d, up=False), _format(b, d, up=True)
        if Fraction(shown_a) > Fraction(shown_b):
            return shown_a, shown_b
    return str(a), str(b)


_MAX_DIGITS = 100


def _check_digits(digits: object) -> None:
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= _MAX_DIGITS:
        raise InvalidParameter(f"digits={digits!r} must be an integer from 1 to {_MAX_DIGITS}")


def _as_fraction(q: object, name: str = "q") -> Fraction | str:
    """The exact value of ``q`` (any real number type, numpy's included), or the text of a NaN or ±inf."""
    if isinstance(q, Fraction):
        return q
    if isinstance(q, bool) or not isinstance(q, numbers.Real | Decimal):
        raise InvalidParameter(f"{name}={q!r} must be a real number (int, float or Fraction)")
    if isinstance(q, numbers.Integral):
        return Fraction(int(q))
    try:
        # exact for float, numpy floats (longdouble included) and Decimal
        num, den = q.as_integer_ratio()  # type: ignore[union-attr]
    except OverflowError:
        return "inf" if float(q) > 0 else "-inf"
    except (ValueError, AttributeError):
        if isinstance(q, Decimal) or math.isnan(float(q)):
            return "nan"
        raise InvalidParameter(f"{name}={q!r} must be a real number (int, float or Fraction)") from None
    return Fraction(num, den)


def _format(q: object, digits: int, *, up: bool, name: str = "q") -> str:
    _check_digits(digits)
    x = _as_fraction(q, name)
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    if x < 0:
        return "-" + _format_positive(-x, digits, up=not up)
    return _format_positive(x, digits, up=up)


def _floor_log10(x: Fraction) -> int:
    """The integer e with 10**e ≤ x < 10**(e + 1), for x > 0 (exact; no float or str conversion)."""
    e = math.floor((x.numerator.bit_length() - x.denominator.bit_length()) * _LOG10_2)
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


def _format_positive(x: Fraction, digits: int, *, up: bool) -> str:
    shift = _floor_log10(x) - digits + 1  # x = scaled · 10**shift with 10**(digits-1) ≤ scaled < 10**digits
    scaled = x / Fraction(10) ** shift
    n = math.ceil(scaled) if up else math.floor(scaled)
    if n == 10**digits:  # rounding up carried into a new digit: 999.9995 → 1000
        n, shift = n // 10, shift + 1
    while n % 10 == 0:
        n, shift = n // 10, shift + 1
    mantissa = str(n)
    exponent = shift + len(mantissa) - 1  # the value is mantissa[0].mantissa[1:] × 10**exponent
    if -4 <= exponent < digits:  # fixed notation, as Python's "g" presentation
        if shift >= 0:
            return mantissa + "0" * shift
        padded = mantissa.rjust(-shift + 1, "0")
        return padded[:shift] + "." + padded[shift:]
    head = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{head}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"
