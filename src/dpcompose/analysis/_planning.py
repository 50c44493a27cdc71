"""Static planning: find the least noise that fits a budget, and split a budget exactly."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_nonnegative, check_nonempty, check_probability
from dpcompose.accounting import PrivacyProfile, decimal, least_passing
from dpcompose.accounting._calibrate import DEFAULT_BOUNDS, least_passing_exact, log_ratio, read_bounds
from dpcompose.core import ZCDP, ApproxDP, Measurement, ProfileDP, PureDP
from dpcompose.core._measurement import refuse_odd_d_in
from dpcompose.errors import DPError, InvalidParameter

__all__ = ["binary_search_param", "calibrate_noise", "split_budget"]


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
    refuse_odd_d_in(make, hi, d_in)

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


def _ratio(measurement: Measurement[Any, Any, Any, Any], value: Any, bound: Any) -> float | None:
    """log(the map's reading / the budget), one number (positive: over budget), or None where the measure
    has no single number to read (a Rényi curve): ε/ε for pure and approximate DP, ε(δ)/ε for a privacy
    profile (ε is nearer a power of σ than δ is), ρ/ρ for zCDP. Only a guide for where to read next:
    passing is decided by ``check``."""
    measure = measurement.output_measure
    if isinstance(measure, ProfileDP) and isinstance(value, PrivacyProfile):
        ((eps, delta),) = bound.approx_parts
        try:
            top, bottom = value.epsilon(delta), eps
        except InvalidParameter:  # (δ below the least the profile reaches: no ε to read)
            return None
    elif isinstance(measure, ApproxDP):
        top, bottom = value[0], bound[0]
    elif isinstance(value, Fraction) and isinstance(bound, Fraction):
        top, bottom = value, bound
    else:
        return None
    return log_ratio(Fraction(top), Fraction(bottom))


def calibrate_noise(
    make: Callable[[float], Measurement[Any, Any, Any, Any]],
    d_in: Any,
    d_out: Any,
    *,
    bounds: tuple[float, float] = DEFAULT_BOUNDS,
    start: float | None = None,
    rtol: float = 0.0,
) -> float:
    """The least noise scale σ on the float grid whose measurement ``make(σ)`` passes ``check(d_in, d_out)``.

    ``make`` builds the whole planned run from σ — a composition of T subsampled steps, a pipeline, any
    measurement — and its certified privacy map is what is checked; the budget ``d_out`` is read by the
    measurement's output measure (ε, (ε, δ), ρ, or an (ε, δ) for a privacy profile). The σ returned
    passes and the float just below it fails (both were checked); with ``rtol`` > 0 a failing σ within a
    factor 1 + rtol below it was found instead (fewer checks). Monotonicity in σ is checked on every σ
    read, never assumed: a passing σ below a failing one is refused. The search and its guarantees are
    :func:`~dpcompose.accounting.least_passing`'s (a secant on the map's reading, log against log σ, with
    halving of the float keys as the fallback); :func:`binary_search_param` finds a boundary without
    readings, in about 64 checks. A pure-DP or zCDP measurement's map is an exact rational: it is read
    with no slack, and where noise on the float grid rises at a power of two of σ (the grid coarsens
    there, so a σ just below may pass where the power of two fails) the binade below the answer's is
    searched too (``least_passing_exact`` of ``dpcompose.accounting._calibrate``); a rise within a binade
    among the readings taken is refused. The answer is the least passing float when the map is monotone
    within each binade of σ; a part whose scale is a non-power-of-two multiple of σ (``lap(3 * s)``) rises
    inside a binade, where the search may not read both sides of the rise: the σ returned then still
    passes, but a float a little below it (about 1e-10 relative) may pass too. Other measures (a privacy
    profile, an (ε, δ) from a PLD) keep ``least_passing``'s 1e-9 slack for their certified float rounding.

    A σ at which ``make`` or the check raises (a refused parameter, an arithmetic error inside a map)
    counts as failing: nothing certifies it.

    Args:
        make: σ ↦ Measurement.
        d_in: the input distance the budget is for.
        d_out: the budget (in the output measure of ``make(σ)``).
        bounds: the interval of σ searched (default (0, 1e10)).
        start: where the search starts (default 1, or the middle of the bounds).
        rtol: 0 for the exact float boundary; else a relative tolerance on σ.

    Raises:
        InvalidParameter: ``make`` is not callable; ``bounds`` or ``rtol`` are bad; no σ in the bounds
            passes (the first refusal is named); the lower bound already passes; or the map is not
            monotone on the σ read (for an exact map: within a binade).

    Examples:
        >>> import dpcompose as dp
        >>> floats = dp.AtomDomain(float)
        >>> make = lambda b: dp.make_sequential(
        ...     *[dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=b)] * 10)
        >>> calibrate_noise(make, 1, 1.0)
        10.0
    """
    if not callable(make):
        raise InvalidParameter(f"make={make!r} must be a function from a parameter to a Measurement")
    refuse_odd_d_in(make, 1.0, d_in)

    def read(sigma: float) -> tuple[bool, Measurement[Any, Any, Any, Any], Any, Any]:
        measurement = make(sigma)
        if not isinstance(measurement, Measurement):
            raise InvalidParameter(f"make({sigma!r}) returned {measurement!r}, not a Measurement")
        bound = measurement.output_measure.parse(d_out)
        value = measurement.map(d_in)
        return bool(measurement.output_measure.less_equal(value, bound)), measurement, value, bound

    def probe(sigma: float) -> tuple[bool, float | None]:
        ok, measurement, value, bound = read(sigma)
        return ok, _ratio(measurement, value, bound)

    def probe_exact(sigma: float) -> tuple[bool, Fraction | None]:
        ok, _, value, bound = read(sigma)
        exact = isinstance(value, Fraction) and isinstance(bound, Fraction) and value > 0 and bound > 0
        return ok, value / bound if exact else None

    try:
        if _exact_map(make, bounds, start):
            return least_passing_exact(probe_exact, bounds, start, rtol).value
        return least_passing(probe, bounds, start, rtol).value
    except InvalidParameter as exc:
        raise InvalidParameter(f"{exc} [for d_in={d_in!r}, d_out={d_out!r}]") from None


def _exact_map(make: Callable[[float], Any], bounds: object, start: float | None) -> bool:
    """Whether ``make`` builds a pure-DP or zCDP measurement (at the σ the search starts from): their maps
    are exact rationals (sums of the parts' ε or ρ), read with no slack (``least_passing_exact``). Other
    measures (a privacy profile, (ε, δ) from a PLD) carry a certified float rounding and keep
    ``least_passing``'s slack. Anything that stops the build says no (the search then names it)."""
    try:  # (bad bounds or start: no; the search refuses them by name)
        lo, hi = read_bounds(bounds)
        at = start if isinstance(start, float | int) and lo < start < hi else None
        if at is None:
            at = 1.0 if lo < 1.0 < hi else (math.sqrt(lo * hi) if lo > 0 else hi / 2)
        built = make(float(at))
    except (DPError, ArithmeticError, ValueError, TypeError):
        return False
    return isinstance(built, Measurement) and isinstance(built.output_measure, (PureDP, ZCDP))


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
