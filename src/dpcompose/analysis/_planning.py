"""Static planning: find the least noise that fits a budget, and split a budget exactly."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_nonnegative, check_nonempty, check_probability
from dpcompose.accounting import decimal
from dpcompose.core import Measurement
from dpcompose.errors import DPError, InvalidParameter

__all__ = ["binary_search_param", "split_budget"]


def _float_to_key(x: float) -> int:
    """A monotone integer key of a finite float (bit pattern, sign-adjusted)."""
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _key_to_float(k: int) -> float:
    """The inverse of :func:`_float_to_key` (a negative key sets the sign bit: an unsigned pattern)."""
    bits = k if k >= 0 else (-k) | (1 << 63)
    (x,) = struct.unpack("<d", struct.pack("<Q", bits))
    return float(x)


def _read_bounds(bounds: object) -> tuple[float, float] | tuple[int, int]:
    """``bounds`` as a pair of ints (an integer search) or of finite floats, else ``InvalidParameter``."""
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi)")
    ints: list[int] = []
    floats: list[float] = []
    for b in bounds:
        if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.integer, np.floating)):
            raise InvalidParameter(f"bounds={bounds!r} must be two ints or two finite floats")
        if isinstance(b, (int, np.integer)):
            ints.append(int(b))
        try:
            f = float(b)
        except OverflowError:
            f = math.inf
        floats.append(f)
    if len(ints) == 2:
        lo_i, hi_i = ints
        if not lo_i < hi_i:
            raise InvalidParameter(f"bounds={bounds!r} must satisfy lo < hi")
        return lo_i, hi_i
    if not all(math.isfinite(f) for f in floats):
        raise InvalidParameter(f"bounds={bounds!r} must be finite (a float search needs float-sized ends)")
    lo_f, hi_f = floats
    if not lo_f < hi_f:
        raise InvalidParameter(f"bounds={bounds!r} must satisfy lo < hi")
    return lo_f, hi_f


def binary_search_param(
    make: Callable[[Any], Measurement[Any, Any, Any, Any]],
    d_in: Any,
    d_out: Any,
    bounds: tuple[float, float] | tuple[int, int] = (0.0, 1e10),
) -> float | int:
    """The parameter at the boundary of ``make(param).check(d_in, d_out)`` within ``bounds``.

    If larger parameters pass (noise scales) it returns the *smallest* passing one; if smaller ones pass
    (ε-like parameters) the *largest*. The search runs over the floats themselves (or the integers, for
    two integer bounds), so the answer is exact: the boundary float, with no tolerance — the scale giving
    ε = 1/15 at d_in = 1 is exactly ``15.0``. The returned parameter always passes the check. (If the
    check is not monotone in the parameter, it is *a* passing parameter next to a failing one.)

    A parameter at which ``make`` or the check raises — a refused parameter (``DPError``) or an
    arithmetic error inside a map (``ArithmeticError``/``ValueError``, e.g. a conversion at an extreme
    scale) — counts as not passing: nothing certifies it. No such error escapes the search; when no
    parameter can be found the refusal names the first one.

    Raises:
        InvalidParameter: ``make`` is not callable; bounds are not two ints or two finite floats with
            lo < hi; or the check passes at both ends or at neither (no boundary in the bounds, e.g. no
            parameter in them meets ``d_out``).

    Examples:
        >>> import dpcompose as dp
        >>> make = lambda s: dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=s)
        >>> binary_search_param(make, d_in=1, d_out=1 / 15)
        15.0
        >>> binary_search_param(make, d_in=3, d_out=0.5)
        6.0
    """
    if not callable(make):
        raise InvalidParameter(f"make={make!r} must be a function from a parameter to a Measurement")
    lo, hi = _read_bounds(bounds)
    integer = isinstance(lo, int)
    errors: list[str] = []

    def passes(p: float | int) -> bool:
        try:
            measurement = make(p)
            if not isinstance(measurement, Measurement):
                raise InvalidParameter(f"make({p!r}) returned {measurement!r}, not a Measurement")
            return bool(measurement.check(d_in, d_out))
        except (DPError, ArithmeticError, ValueError) as exc:
            if not errors:
                errors.append(f"at {p!r}: {type(exc).__name__}: {exc}")
            return False

    lo_ok, hi_ok = passes(lo), passes(hi)
    if lo_ok == hi_ok:
        detail = f" (the first error: {errors[0]})" if errors else ""
        raise InvalidParameter(
            f"bounds={bounds!r}: the check of d_in={d_in!r} against d_out={d_out!r} "
            f"{'passes' if lo_ok else 'fails'} at both ends, so there is no boundary to find in them; "
            f"widen the bounds or change d_in or d_out{detail}"
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
    if (
        isinstance(weights, (str, bytes))
        or not isinstance(weights, (Sequence, np.ndarray))
        or (isinstance(weights, np.ndarray) and weights.ndim != 1)
    ):
        raise InvalidParameter(f"weights={weights!r} must be a sequence of non-negative numbers")
    check_nonempty(list(weights), "weights")
    ws = []
    for i, w in enumerate(weights):
        check_finite_nonnegative(w, f"weights[{i}]")
        ws.append(decimal(w, f"weights[{i}]"))
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
