"""Exact budget arithmetic and outward rounding.

The rules (docs/concepts.md, "Exact budget arithmetic"):

* Privacy quantities are :class:`fractions.Fraction`. Rational steps (sums, products, ``d_in/scale``)
  stay exact.
* A mechanism's own float parameter is read as its exact binary value (:func:`exact`): ``scale=0.3`` is
  ``5404319552844595/18014398509481984``, because that is the number the sampler really uses.
* A budget or target the *user states* (``d_out``, a filter's budget) is read as the decimal it prints
  as (:func:`decimal`): ``0.1`` is ``1/10``. So ten Laplace releases of ε = 1/10 use up ``1.0`` exactly.
* Irrational steps (exp, log, sqrt) are evaluated in floating point and rounded *outward* (up for an upper
  bound, down where a quantity is subtracted) by two units in the last place — libm's exp/log/log1p/expm1
  are accurate to within one ulp, sqrt is correctly rounded — and the input of a monotone function is
  first rounded in the direction that keeps the result on the safe side.
* Converting a Fraction to a float for display rounds up (:func:`float_up`).

Examples:
    >>> from fractions import Fraction
    >>> decimal(0.1)
    Fraction(1, 10)
    >>> exact(0.5)
    Fraction(1, 2)
    >>> sum([Fraction(1, 10)] * 10) == decimal(1.0)
    True
    >>> float_up(Fraction(1, 3)) >= 1 / 3
    True
    >>> exp_up(1.0) > 2.718281828459045
    True
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpcompose._validation import check_finite

__all__ = [
    "Number",
    "decimal",
    "exact",
    "exp_down",
    "exp_up",
    "expm1_down",
    "expm1_up",
    "float_down",
    "float_up",
    "log1p_down",
    "log1p_up",
    "log_down",
    "log_up",
    "next_down",
    "next_up",
    "sqrt_down",
    "sqrt_up",
]

Number = int | float | Fraction
"""A real number dpcompose accepts as a privacy quantity or parameter."""

_PAD_ULPS = 2


def exact(x: object, name: str = "value") -> Fraction:
    """The exact rational value of a finite number (a float is its exact binary value).

    Raises:
        InvalidParameter: ``x`` is not a finite real number.
    """
    v = check_finite(x, name)
    return v if isinstance(v, Fraction) else Fraction(v)


def decimal(x: object, name: str = "value") -> Fraction:
    """The rational a user-stated number *prints as*: ``decimal(0.1) == Fraction(1, 10)``.

    Used for budgets and targets that a person typed (``d_out``, a filter budget), so that ``1.0`` spent in
    ten exact steps of ``1/10`` is exactly used up.

    Raises:
        InvalidParameter: ``x`` is not a finite real number.
    """
    v = check_finite(x, name)
    if isinstance(v, float):
        return Fraction(repr(v))
    return v if isinstance(v, Fraction) else Fraction(v)


def next_up(x: float, n: int = 1) -> float:
    """``x`` moved ``n`` floats toward +∞."""
    for _ in range(n):
        x = math.nextafter(x, math.inf)
    return x


def next_down(x: float, n: int = 1) -> float:
    """``x`` moved ``n`` floats toward −∞."""
    for _ in range(n):
        x = math.nextafter(x, -math.inf)
    return x


def float_up(q: Number) -> float:
    """The least float ≥ ``q`` (``inf`` if ``q`` exceeds the float range)."""
    if isinstance(q, float):
        return q
    f = _to_float(q)
    if f != math.inf and Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def float_down(q: Number) -> float:
    """The greatest float ≤ ``q`` (``-inf`` if ``q`` is below the float range)."""
    if isinstance(q, float):
        return q
    f = _to_float(q)
    if f != -math.inf and Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def _to_float(q: int | Fraction) -> float:
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def exp_up(x: Number) -> float:
    """An upper bound on e^x."""
    xf = float_up(x)
    try:
        return next_up(math.exp(xf), _PAD_ULPS)
    except OverflowError:
        return math.inf


def exp_down(x: Number) -> float:
    """A lower bound on e^x (never negative)."""
    xf = float_down(x)
    try:
        return max(0.0, next_down(math.exp(xf), _PAD_ULPS))
    except OverflowError:
        return math.inf if xf > 0 else 0.0


def expm1_up(x: Number) -> float:
    """An upper bound on e^x − 1."""
    xf = float_up(x)
    try:
        return next_up(math.expm1(xf), _PAD_ULPS)
    except OverflowError:
        return math.inf


def expm1_down(x: Number) -> float:
    """A lower bound on e^x − 1."""
    xf = float_down(x)
    try:
        return max(-1.0, next_down(math.expm1(xf), _PAD_ULPS))
    except OverflowError:
        return math.inf


def log_up(x: Number) -> float:
    """An upper bound on ln x, for x > 0."""
    xf = float_up(x)
    if xf == math.inf:
        return math.inf
    return next_up(math.log(xf), _PAD_ULPS)


def log_down(x: Number) -> float:
    """A lower bound on ln x, for x > 0 (``-inf`` if x rounds down to 0)."""
    xf = float_down(x)
    if xf <= 0:
        return -math.inf
    if xf == math.inf:
        return math.inf
    return next_down(math.log(xf), _PAD_ULPS)


def log1p_up(x: Number) -> float:
    """An upper bound on ln(1 + x), for x > −1."""
    xf = float_up(x)
    if xf == math.inf:
        return math.inf
    return next_up(math.log1p(xf), _PAD_ULPS)


def log1p_down(x: Number) -> float:
    """A lower bound on ln(1 + x), for x > −1."""
    xf = float_down(x)
    if xf <= -1:
        return -math.inf
    if xf == math.inf:
        return math.inf
    return next_down(math.log1p(xf), _PAD_ULPS)


def sqrt_up(x: Number) -> float:
    """An upper bound on √x, for x ≥ 0."""
    xf = float_up(x)
    return next_up(math.sqrt(xf), 1) if xf > 0 else 0.0


def sqrt_down(x: Number) -> float:
    """A lower bound on √x, for x ≥ 0."""
    xf = float_down(x)
    return max(0.0, next_down(math.sqrt(xf), 1)) if xf > 0 else 0.0
