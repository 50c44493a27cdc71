"""Static planning: find the least noise that fits a budget, and split a budget exactly."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from dpcompose._validation import check_finite_nonnegative, check_nonempty, check_probability
from dpcompose.accounting import decimal
from dpcompose.core import Measurement
from dpcompose.errors import InvalidParameter

__all__ = ["binary_search_param", "split_budget"]


def _float_to_key(x: float) -> int:
    """A monotone integer key of a finite float (bit pattern, sign-adjusted)."""
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _key_to_float(k: int) -> float:
    bits = k if k >= 0 else (-k) | (1 << 63)
    (x,) = struct.unpack("<d", struct.pack("<q", bits))
    return float(x)


def binary_search_param(
    make: Callable[[Any], Measurement[Any, Any, Any, Any]],
    d_in: Any,
    d_out: Any,
    bounds: tuple[float, float] | tuple[int, int] = (0.0, 1e10),
) -> float | int:
    """The parameter at the boundary of ``make(param).check(d_in, d_out)`` within ``bounds``.

    If larger parameters pass (noise scales) it returns the *smallest* passing one; if smaller ones pass
    (ε-like parameters) the *largest*. The search runs over the floats themselves (or the integers, for
    integer bounds), so the answer is exact: the boundary float, with no tolerance — the scale giving
    ε = 1/15 at d_in = 1 is exactly ``15.0``.

    Raises:
        InvalidParameter: bounds are not finite with lo < hi, or neither or both ends pass (no boundary).

    Examples:
        >>> import dpcompose as dp
        >>> make = lambda s: dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=s)
        >>> binary_search_param(make, d_in=1, d_out=1 / 15)
        15.0
        >>> binary_search_param(make, d_in=3, d_out=0.5)
        6.0
    """
    lo, hi = bounds
    integer = isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool)
    for b in bounds:
        check_finite_nonnegative(abs(b), "bounds")
    if not lo < hi:
        raise InvalidParameter(f"bounds={bounds!r} must satisfy lo < hi")

    def passes(p: float | int) -> bool:
        try:
            return make(p).check(d_in, d_out)
        except InvalidParameter:
            return False

    lo_ok, hi_ok = passes(lo), passes(hi)
    if lo_ok == hi_ok:
        raise InvalidParameter(
            f"bounds={bounds!r}: the check {'passes' if lo_ok else 'fails'} at both ends, so there is no "
            "boundary to find; widen the bounds"
        )
    increasing = hi_ok  # True: larger params pass; find the smallest passing one
    to_key: Callable[[Any], int] = int if integer else _float_to_key
    from_key: Callable[[int], Any] = int if integer else _key_to_float
    a, b = to_key(lo), to_key(hi)  # invariant: passes(a) != passes(b), passes(a) == lo_ok
    while b - a > 1:
        mid = (a + b) // 2
        value = from_key(mid)
        if passes(value) == lo_ok:
            a = mid
        else:
            b = mid
    found: float | int = from_key(b) if increasing else from_key(a)
    return found


def split_budget(d_out: Any, weights: Sequence[float | int | Fraction]) -> list[Any]:
    """Divide a budget into parts proportional to ``weights`` whose sum is exactly the budget.

    ``d_out`` is read as the decimal it prints as; a pair is an (ε, δ) budget and both parts are split.
    The shares are exact fractions, so composing the children with basic composition uses up exactly
    ``d_out`` (Σ shares = d_out).

    Examples:
        >>> split_budget(1.0, [1, 1, 2])
        [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)]
        >>> split_budget((1.0, 1e-6), [1, 3])
        [(Fraction(1, 4), Fraction(1, 4000000)), (Fraction(3, 4), Fraction(3, 4000000))]
    """
    check_nonempty(list(weights), "weights")
    ws = []
    for w in weights:
        check_finite_nonnegative(w, "weights")
        ws.append(decimal(w, "weights"))
    total = sum(ws, Fraction(0))
    if total == 0:
        raise InvalidParameter(f"weights={list(weights)!r} must not all be zero")
    if isinstance(d_out, (tuple, list)):
        if len(d_out) != 2:
            raise InvalidParameter(f"d_out={d_out!r} must be a number or a pair (epsilon, delta)")
        check_finite_nonnegative(d_out[0], "d_out epsilon")
        check_probability(d_out[1], "d_out delta")
        e, d = decimal(d_out[0]), decimal(d_out[1])
        return [(e * w / total, d * w / total) for w in ws]
    check_finite_nonnegative(d_out, "d_out")
    b = decimal(d_out, "d_out")
    return [b * w / total for w in ws]
