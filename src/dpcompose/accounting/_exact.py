"""Exact budget arithmetic and outward rounding.

The rules (docs/concepts.md, "Exact budget arithmetic"):

* Privacy quantities are :class:`fractions.Fraction`. Rational steps (sums, products, ``d_in/scale``)
  stay exact.
* Every number is first read by :func:`dpcompose._validation.read_real`, the one reader of user numbers:
  ints, floats, Fractions, Decimals and numpy scalars of every dtype (0-d arrays as their scalar); bools,
  complex numbers, NaN, ±inf and magnitudes beyond the double range are refused with ``InvalidParameter``.
* A mechanism's own float parameter, a cost or a sensitivity is read as its exact binary value
  (:func:`exact`): ``scale=0.3`` is ``5404319552844595/18014398509481984``, because that is the number the
  sampler really uses. A ``numpy.longdouble`` is read through ``as_integer_ratio`` with all its bits —
  never rounded to a double first, which could round a sensitivity *down* and under-report.
* A budget or target the *user states* (``d_out``, a filter's budget) is read as the decimal it prints
  as **in its own type** (:func:`decimal`): ``0.1`` is ``1/10``, and so are ``numpy.float32(0.1)``,
  ``numpy.float16(0.1)`` and ``numpy.longdouble('0.1')``, whose binary values differ. So ten Laplace
  releases of ε = 1/10 use up ``1.0`` exactly, and a budget never admits more than the number it prints
  as: ``numpy.float32(0.3)`` is 0.30000001192… in binary but a budget of ``3/10``, so it refuses the
  third query of ε = 0.1 exactly as ``0.3`` does. (Reading a budget *too large* would over-admit; the
  printed decimal is what the user stated and what every display shows.) A ``Decimal`` or a ``Fraction``
  prints as its exact value.
* A distance the user states as ``d_in`` (a sensitivity) is read as the *larger* of its binary value and
  its printed decimal (``core._metrics``): read too small, it would under-report.
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
import sys
from collections.abc import Iterable
from fractions import Fraction

import numpy as np

from dpcompose._validation import check_finite, real_scalar
from dpcompose.errors import InvalidParameter

__all__ = [
    "EXACT_DISTINCT",
    "Number",
    "decimal",
    "exact",
    "exact_sum",
    "exp_down",
    "exp_up",
    "expm1_down",
    "expm1_up",
    "float_down",
    "float_up",
    "fraction_up",
    "gamma_q",
    "log1p_down",
    "log1p_up",
    "log_down",
    "log_up",
    "next_down",
    "next_up",
    "sqrt_down",
    "sqrt_up",
    "sqrt_up_dyadic",
    "sqrt_up_q",
]

Number = int | float | Fraction
"""A real number dpcompose accepts as a privacy quantity or parameter."""

_PAD_ULPS = 2


def exact(x: object, name: str = "value") -> Fraction:
    """The exact rational value of a finite number (a float of any width is its exact binary value).

    Examples:
        >>> import numpy as np
        >>> exact(np.float32(0.1)) == Fraction(float(np.float32(0.1)))
        True
        >>> exact(np.longdouble(1) / 3) > exact(float(np.longdouble(1) / 3))  # all 64 bits are kept
        True

    Raises:
        InvalidParameter: ``x`` is not a finite real number (see
            :func:`dpcompose._validation.read_real`).
    """
    v = check_finite(x, name)
    return v if isinstance(v, Fraction) else Fraction(v)


def decimal(x: object, name: str = "value") -> Fraction:
    """The rational a user-stated number *prints as* in its own type: ``decimal(0.1) == Fraction(1, 10)``.

    Used for budgets and targets that a person typed (``d_out``, a filter budget), so that ``1.0`` spent in
    ten exact steps of ``1/10`` is exactly used up. A float of any width is read as the shortest decimal
    that round-trips in *its own* precision (``numpy.float32(0.3)`` → ``3/10``, not the double
    0.30000001192092896); an int, ``Fraction`` or ``Decimal`` as its exact value. The printed form is
    computed here (never taken from the object's ``__repr__``, which a subclass could change).

    Examples:
        >>> import numpy as np
        >>> decimal(np.float32(0.3)), decimal(np.longdouble("0.1")), decimal(np.float16(0.1))
        (Fraction(3, 10), Fraction(1, 10), Fraction(1, 10))

    Raises:
        InvalidParameter: ``x`` is not a finite real number.
    """
    v = check_finite(x, name)
    raw = real_scalar(x)
    if isinstance(raw, float):
        return Fraction(float.__repr__(float(raw)))
    if isinstance(raw, np.floating):
        return Fraction(np.format_float_scientific(raw, unique=True))
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


def _number(q: object) -> Number:
    """``q`` as an int, float or Fraction (other types through the one reader, NaN refused)."""
    t = type(q)
    if t is Fraction or t is int:
        return q  # type: ignore[return-value]
    if t is float:
        if q != q:
            raise InvalidParameter(f"q={q!r} must not be NaN")
        return q  # type: ignore[return-value]
    return check_finite(q, "q")


def float_up(q: Number) -> float:
    """The least float ≥ ``q`` (``inf`` if ``q`` exceeds the float range)."""
    q = _number(q)
    if isinstance(q, float):
        return q
    f = _to_float(q)
    if f == -math.inf:
        return -sys.float_info.max
    if f != math.inf and Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def fraction_up(q: Fraction, cap: float = math.inf) -> Fraction:
    """The least float ≥ ``q`` as a Fraction, or ``q`` itself where that float is not below ``cap`` (or is
    infinite): ``q`` rounded up to a short dyadic value, for sums of many distinct fractions.

    Examples:
        >>> fraction_up(Fraction(1, 3)) > Fraction(1, 3), fraction_up(Fraction(1, 2))
        (True, Fraction(1, 2))
    """
    f = float_up(q)
    return Fraction(f) if math.isfinite(f) and f < cap else q


#: Up to this many distinct terms (costs, denominators) a sum is taken exactly; past it each term is first
#: rounded up to a float (:func:`fraction_up`), where the exact sum's denominator would run to millions of
#: digits (advanced composition of 20,000 distinct ε: 177 s).
EXACT_DISTINCT = 256


def float_down(q: Number) -> float:
    """The greatest float ≤ ``q`` (``-inf`` if ``q`` is below the float range)."""
    q = _number(q)
    if isinstance(q, float):
        return q
    f = _to_float(q)
    if f == math.inf:
        return sys.float_info.max
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


def _log_wide(q: Fraction) -> tuple[float, float]:
    """ln q for a rational q > 0 of any magnitude, and a bound on the error of that float.

    ``math.log`` of an integer is accurate to a few ulps of its result at any size, so
    ln q = ln(numerator) − ln(denominator) is off by at most a few ulps of the two terms.
    """
    ln, ld = math.log(q.numerator), math.log(q.denominator)
    r = ln - ld
    return r, (abs(ln) + abs(ld) + abs(r)) * 2.0**-50 + 1e-300


def log_up(x: Number) -> float:
    """An upper bound on ln x, for x > 0 (finite for every positive rational, however large or small)."""
    xf = float_up(x)
    if xf == math.inf:
        q = Fraction(x)
        if q.denominator == 1 and q.numerator.bit_length() > 10**7:  # pragma: no cover - absurd sizes
            return math.inf
        r, err = _log_wide(q)
        return next_up(r + err, 1)
    if xf < 2.2250738585072014e-308:  # subnormal: float_up can more than double a tiny value
        r, err = _log_wide(Fraction(x))
        return next_up(r + err, 1)
    return next_up(math.log(xf), _PAD_ULPS)


def log_down(x: Number) -> float:
    """A lower bound on ln x, for x > 0 (finite for every positive rational; ``-inf`` for x ≤ 0)."""
    q = x if isinstance(x, Fraction) else Fraction(x)
    if q <= 0:
        return -math.inf
    xf = float_down(q)
    if xf < 2.2250738585072014e-308 or xf >= sys.float_info.max:  # below the normal range, or beyond
        r, err = _log_wide(q)
        return next_down(r - err, 1)
    return next_down(math.log(xf), _PAD_ULPS)


def log1p_up(x: Number) -> float:
    """An upper bound on ln(1 + x), for x > −1 (finite for every finite rational x)."""
    xf = float_up(x)
    if xf == math.inf:
        return log_up(1 + Fraction(x))
    return next_up(math.log1p(xf), _PAD_ULPS)


def log1p_down(x: Number) -> float:
    """A lower bound on ln(1 + x), for x > −1."""
    xf = float_down(x)
    if xf <= -1:
        return log_down(1 + Fraction(x))  # −inf for x ≤ −1; finite just above −1
    if xf >= sys.float_info.max:
        return log_down(1 + Fraction(x))
    return next_down(math.log1p(xf), _PAD_ULPS)


def sqrt_up(x: Number) -> float:
    """An upper bound on √x, for x ≥ 0 (finite for every finite rational x below 2**2048)."""
    xf = float_up(x)
    if xf == math.inf:  # beyond doubles: an integer square root of ⌈x⌉, plus one
        q = Fraction(x)
        return float_up(math.isqrt(-(-q.numerator // q.denominator)) + 1)
    return next_up(math.sqrt(xf), 1) if xf > 0 else 0.0


def sqrt_up_q(x: Number) -> Fraction:
    """An upper bound on √x, for x ≥ 0, as an exact rational (finite for every finite rational x)."""
    f = sqrt_up(x)
    if math.isfinite(f):
        return Fraction(f)
    q = Fraction(x)
    return Fraction(math.isqrt(-(-q.numerator // q.denominator)) + 1)


def sqrt_up_dyadic(n: int, bits: int) -> Fraction:
    """The least multiple of 2**-``bits`` at or above √n, for integers n ≥ 0 and ``bits`` ≥ 0: exactly √n
    where n is a perfect square, else within 2**-``bits`` above it. Integer arithmetic only:
    ⌈√n·2^b⌉ = ⌈√(n·4^b)⌉ = isqrt(n·4^b − 1) + 1 for n ≥ 1 (isqrt(m − 1) < k ⟺ m ≤ k²).

    Examples:
        >>> sqrt_up_dyadic(9, 64), sqrt_up_dyadic(2, 4)
        (Fraction(3, 1), Fraction(23, 16))
    """
    if n == 0:
        return Fraction(0)
    return Fraction(math.isqrt((n << (2 * bits)) - 1) + 1, 1 << bits)


def sqrt_down(x: Number) -> float:
    """A lower bound on √x, for x ≥ 0."""
    xf = float_down(x)
    if xf >= sys.float_info.max:
        q = Fraction(x)
        return float_down(math.isqrt(q.numerator // q.denominator))
    return max(0.0, next_down(math.sqrt(xf), 1)) if xf > 0 else 0.0


def exact_sum(values: Iterable[Fraction]) -> Fraction:
    """The exact sum of fractions, fast for many terms: numerators are added per denominator in plain
    integers, then the few distinct denominators are combined (100,000 terms take milliseconds).

    Examples:
        >>> exact_sum([Fraction(1, 10)] * 10 + [Fraction(1, 3)])
        Fraction(4, 3)
    """
    by_denominator: dict[int, int] = {}
    for v in values:
        d = v.denominator
        by_denominator[d] = by_denominator.get(d, 0) + v.numerator
    return sum((Fraction(n, d) for d, n in by_denominator.items()), Fraction(0))


U = 2.0**-53


def gamma_q(n: int) -> Fraction:
    """γₙ = n·u/(1 − n·u) exactly, u = 2**-53 (the unit round-off of binary64), for 0 <= n < 2**52.

    γₙ bounds the relative error of n roundings, |∏(1 + δᵢ)^{±1} − 1| <= γₙ for |δᵢ| <= u, and so the error
    of any float sum of m terms in which each term takes part in at most n additions:
    |fl(Σxᵢ) − Σxᵢ| <= γₙ·Σ|xᵢ| (no overflow; an addition whose result underflows is exact).

    Source: Higham 2002, Accuracy and Stability of Numerical Algorithms (2nd ed.), Lemma 3.1, and §4.2
    (eq. 4.3–4.4: every summation order is a binary tree of additions).

    Examples:
        >>> gamma_q(1) == Fraction(1, 2**53 - 1)
        True
    """
    if not 0 <= n < 1 << 52:
        raise InvalidParameter(f"n={n!r} must be an integer in [0, 2**52)")
    return Fraction(n, (1 << 53) - n)


EXP_REL = 2.0**-44  # assumed relative accuracy of numpy exp / expm1 (2**9·u, 2**8 ulps at worst), padded
