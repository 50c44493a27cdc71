"""Calibration: the noise scale at which the certified privacy starts to meet a target, on the float grid.

The search (:func:`least_passing`) runs over the floats themselves, ordered by their bit patterns, and
returns a float σ that passes next to the float just below it that fails: both are read, so the returned
σ's certified reading meets the target and the float one ulp below does not (with ``rtol`` > 0: a failing
σ within a factor 1 + rtol below it, so where the reading is monotone the least passing σ is within rtol
of the one returned).

Monotonicity is checked on what is read, not assumed. The bracket itself cannot show a failure (every σ
read inside it moves one of its ends), so the readings are compared: if, between two σ read, the larger
σ reads more than the smaller by over :data:`MONOTONE_SLACK` relative, the search refuses
(:class:`~dpcompose.errors.InvalidParameter` naming ``make``) instead of naming a boundary that might not
be the least. Below that slack a certified PLD reading wobbles with its float rounding (10⁴ subsampled
Gaussian steps: about 4e-13 relative in ε, a few hundred ulps of σ), so "least" holds up to that wobble
(it is reported as ``Calibration.wobble``); between the σ read nothing more is claimed. The mechanisms'
true privacy is monotone in σ for every noise family here (a larger scale is a post-processing of a
smaller one: add independent noise). A probe without readings (a Rényi curve) is checked only by its
bracket.

Speed: each probe reports, besides pass/fail, the logarithm of its reading over the target (ε at the
target δ over the target ε, ρ over ρ; :func:`log_ratio`, exact near the target); the next σ is where the
secant through the last two readings, log-ratio against log-σ, crosses zero. When that step is small
against the bracket, a second reading one double step beyond the estimate closes the bracket from the
other side; a step outside the bracket, a missing reading or a bracket that did not halve (in float keys)
over two steps falls back to halving the keys.
On DP-SGD (10⁴ Poisson-subsampled Gaussian steps, target (1, 1e-5)) that is 22–24 certified readings to the
exact float boundary (7 with rtol = 1e-4) where bisection of the floats takes about 64.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from dpcompose._validation import check_finite_nonnegative, check_finite_positive, check_probability
from dpcompose.accounting._exact import Number, decimal, exact
from dpcompose.accounting._gaussian import gaussian_delta
from dpcompose.accounting._loss import PrivacyLoss
from dpcompose.errors import DPError, InvalidParameter

__all__ = [
    "Calibration",
    "boundary",
    "calibrate_loss",
    "gaussian_sigma",
    "least_passing",
    "least_passing_exact",
]

Probe = Callable[[float], tuple[bool, float | None]]
"""A function of σ: whether σ's certified reading meets the target, and log(reading / target) (positive:
over the target; roughly linear in log σ near the boundary), or None where there is no reading."""

DEFAULT_BOUNDS = (0.0, 1e10)
MAX_LOG_STEP = math.log(16)  # the bracket walk moves σ by at most a factor 16 per reading
MAX_PROBES = 400  # far above the 64 + 64 a float bracket and bisection can take
MONOTONE_SLACK = 1e-9
"""The largest relative rise of the reading with σ that :func:`least_passing` puts down to float rounding
of the certificate (10⁴ subsampled Gaussian steps wobble by about 4e-13); a larger rise is refused."""


def float_key(x: float) -> int:
    """A monotone integer key of a finite float (its bit pattern, sign-adjusted): consecutive floats have
    consecutive keys."""
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def key_float(k: int) -> float:
    """The inverse of :func:`float_key`."""
    bits = k if k >= 0 else (-k) | (1 << 63)
    (x,) = struct.unpack("<d", struct.pack("<Q", bits))
    return float(x)


@dataclass(frozen=True)
class Calibration:
    """The result of :func:`least_passing`.

    Attributes:
        value: the passing σ returned.
        below: the largest σ read that fails: the float just below ``value`` (with ``rtol`` > 0, within a
            factor 1 + rtol below it).
        probes: the number of certified readings taken.
        points: every evaluated ``(σ, passes, log(reading / target))``, in order of σ.
        wobble: the largest relative rise of the reading between two σ read, larger σ reading more (0
            where the readings fall monotonically; at most :data:`MONOTONE_SLACK`).
    """

    value: float
    below: float
    probes: int
    points: tuple[tuple[float, bool, float | None], ...]
    wobble: float


def log_ratio(value: Fraction, target: Fraction) -> float | None:
    """log(value / target), to full float precision near 0 (log1p of the exact excess); None unless both
    are positive."""
    if value <= 0 or target <= 0:
        return None
    q = Fraction(value) / Fraction(target)
    if abs(q - 1) < Fraction(1, 2):
        return math.log1p(float(q - 1))
    return math.log(q.numerator) - math.log(q.denominator)


def read_bounds(bounds: object) -> tuple[float, float]:
    """``bounds`` as a pair of finite non-negative floats ``lo < hi``, else InvalidParameter naming it."""
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi) of non-negative numbers")
    lo = float(exact(check_finite_nonnegative(bounds[0], "bounds[0]"), "bounds[0]"))
    hi = float(exact(check_finite_nonnegative(bounds[1], "bounds[1]"), "bounds[1]"))
    if not math.isfinite(hi):
        raise InvalidParameter(f"bounds[1]={bounds[1]!r} must be a finite double")
    if not lo < hi:
        raise InvalidParameter(f"bounds={bounds!r} must satisfy lo < hi")
    return lo, hi


def least_passing(
    probe: Probe, bounds: object = DEFAULT_BOUNDS, start: float | None = None, rtol: float = 0.0
) -> Calibration:
    """A float σ in ``bounds`` at which ``probe`` passes, next to the float below it that fails (both read).

    What is claimed: ``value`` passes and ``below``, the float just below it (with ``rtol`` > 0, a σ within
    a factor 1 + rtol below it), fails; every σ read below ``value`` fails and every σ read above passes;
    and the readings taken fall as σ grows, up to a relative rise of at most :data:`MONOTONE_SLACK`
    (reported as ``wobble``; a larger rise is refused). Between the σ read nothing is claimed: ``value`` is
    the least passing float when the probe is monotone in σ, and a probe that is so only up to its float
    rounding (a certified PLD reading) may also pass at a float a little below (a few hundred ulps for 10⁴
    subsampled Gaussian steps).

    The search first brackets the boundary from ``start`` (default 1, or the geometric middle of the bounds)
    by extrapolating the reading in log-log scale with a margin, then closes the bracket (see the module
    docstring). A probe that raises a :class:`~dpcompose.errors.DPError`, ``ArithmeticError`` or
    ``ValueError`` counts as failing (nothing certifies σ there); the first such error is named if no σ is
    found.

    Raises:
        InvalidParameter: ``rtol`` is not in [0, 1); ``bounds`` are not two finite non-negative numbers
            with lo < hi; the lower bound
            already passes (lower it); the upper bound fails (no σ in the bounds meets the target: raise it,
            or loosen the target); or, between two σ read, the larger reads more than the smaller by over
            :data:`MONOTONE_SLACK` relative (the reading is not monotone in σ, so no boundary is claimed).
    """
    cal = boundary(probe, bounds, start, rtol)
    seen = {float_key(x): (ok, r) for x, ok, r in cal.points}
    return replace(cal, wobble=_check_monotone(seen))


def boundary(
    probe: Probe, bounds: object = DEFAULT_BOUNDS, start: float | None = None, rtol: float = 0.0
) -> Calibration:
    """:func:`least_passing`'s search without its check of the readings (``wobble`` is 0): a passing σ
    next to a failing one below it, both read, for callers that check the readings themselves."""
    if not callable(probe):
        raise InvalidParameter(f"probe={probe!r} must be a function of σ returning (passes, log ratio)")
    lo, hi = read_bounds(bounds)
    if start is not None:
        start = float(exact(check_finite_nonnegative(start, "start"), "start"))
    check_finite_nonnegative(rtol, "rtol")
    if not float(rtol) < 1:
        raise InvalidParameter(
            f"rtol={rtol!r} must be below 1 (a relative tolerance on σ; 0 for the exact float boundary)"
        )
    rtol = float(exact(rtol, "rtol"))
    seen: dict[int, tuple[bool, float | None]] = {}
    errors: list[str] = []

    def at(k: int) -> tuple[bool, float | None]:
        if k not in seen:
            if len(seen) >= MAX_PROBES:
                raise InvalidParameter(
                    f"bounds: the search took {MAX_PROBES} readings without closing; give tighter bounds"
                )
            x = key_float(k)
            try:
                ok, r = probe(x)
            except (DPError, ArithmeticError, ValueError) as exc:
                if not errors:
                    errors.append(f" (at σ = {x!r}: {type(exc).__name__}: {exc})")
                ok, r = False, None
            if r is not None and not math.isfinite(r):
                r = None
            seen[k] = (bool(ok), r)
        return seen[k]

    k_lo, k_hi = float_key(lo), float_key(hi)
    if start is None or not lo < start < hi:
        start = 1.0 if lo < 1.0 < hi else (math.sqrt(lo * hi) if lo > 0 else hi / 2)
    a, b, walked = _bracket(at, k_lo, k_hi, float_key(start), errors)
    a, b = _close(at, a, b, walked, rtol)
    points = tuple((key_float(k), ok, r) for k, (ok, r) in sorted(seen.items()))
    return Calibration(key_float(b), key_float(a), len(seen), points, 0.0)


ExactProbe = Callable[[float], tuple[bool, Fraction | None]]
"""A function of σ: whether σ's reading meets the target, and reading / target as an exact rational (None
where there is no reading)."""


def least_passing_exact(
    probe: ExactProbe, bounds: object = DEFAULT_BOUNDS, start: float | None = None, rtol: float = 0.0
) -> Calibration:
    """:func:`least_passing` for a reading that is an exact rational function of σ, such as the map of noise
    on the secure float grid ``g = 2**(⌊log₂ σ⌋ − 30)``: no slack, and the rises where that grid coarsens
    (at a power of two) crossed.

    Such a map is monotone within each binade ``[2**m, 2**(m+1))`` (the grid is fixed there), but may rise
    at ``2**m``, so a passing σ may lie just below a power of two under a failing one. After the search
    (:func:`boundary`) returns a passing ``value`` next to a failing float below it, the top float of the
    binade below ``value``'s, ``2**m`` less one ulp, is read: if it fails, that binade has no passing σ (it
    is monotone); if it passes, the boundary is searched again below it (between it and the largest failing
    σ read below), and so on down. Every reading taken is then compared exactly, with no slack: within a
    binade, a larger σ reading more is refused (:class:`~dpcompose.errors.InvalidParameter` naming both σ
    and both readings), since the claim would not hold.

    What is claimed: ``value`` passes, ``below`` (the float just below it; with ``rtol`` > 0, a σ within a
    factor 1 + rtol below it) fails, the top of the binade below ``value``'s fails, and within each binade
    the readings taken never rise with σ. ``value`` is the least passing float when the map is monotone
    within each binade and its readings at the binades' tops fall as σ grows (then a binade has a passing σ
    only if its top passes, and the tops below ``value``'s binade fail with the one read). Both hold for a
    grid map ``⌈D/g⌉·g/σ`` (or its square, for ρ): within a binade ``g`` is fixed; at the tops, ``σⱼ = 2σⱼ₋₁``
    and ``gⱼ = 2gⱼ₋₁``, and with ``y = D/gⱼ₋₁ >= 0``, ``⌈D/gⱼ⌉·gⱼ = 2⌈y/2⌉·gⱼ₋₁ <= 2⌈y⌉·gⱼ₋₁``, so the
    reading at ``σⱼ`` is at most the one at ``σⱼ₋₁``.

    Raises:
        InvalidParameter: as :func:`least_passing`, or a reading rises with σ within a binade.
    """
    cache: dict[float, tuple[bool, Fraction | None]] = {}

    def read(x: float) -> tuple[bool, Fraction | None]:
        if x not in cache:
            ok, q = probe(x)
            cache[x] = (bool(ok), q if isinstance(q, Fraction) and q > 0 else None)
        return cache[x]

    def logged(x: float) -> tuple[bool, float | None]:
        ok, q = read(x)
        return ok, None if q is None else log_ratio(q, Fraction(1))

    lo, _ = read_bounds(bounds)
    cal = boundary(logged, bounds, start, rtol)
    value, below = cal.value, cal.below
    while value > 0:
        edge = math.ldexp(0.5, math.frexp(value)[1])  # 2**m <= value < 2**(m+1)
        top = math.nextafter(edge, 0.0)
        if top <= lo:
            break  # the binade below lies outside the bounds
        try:
            passes = read(top)[0]
        except (DPError, ArithmeticError, ValueError):
            passes = False  # (nothing certifies it: counted as failing, as the search does)
        if not passes:
            break
        if len(cache) >= MAX_PROBES:
            raise InvalidParameter(
                f"bounds: the search took {len(cache)} readings crossing rises at powers of two without "
                "closing; give tighter bounds"
            )
        fails = [x for x, (ok, _) in cache.items() if not ok and x < top]
        inner = boundary(logged, (max(fails, default=lo), top), None, rtol)
        value, below = inner.value, inner.below
    _refuse_rises(cache)
    points = tuple((x, *logged(x)) for x in sorted(cache))
    return Calibration(value, below, len(cache), points, 0.0)


def _refuse_rises(cache: dict[float, tuple[bool, Fraction | None]]) -> None:
    """Refuse a reading that rises with σ within a binade (exact comparison of the readings taken)."""
    last: tuple[int, float, Fraction] | None = None
    for x, (_, q) in sorted(cache.items()):
        if q is None or x <= 0:
            continue
        binade = math.frexp(x)[1]
        if last is not None and last[0] == binade and q > last[2]:
            raise InvalidParameter(
                f"make: the map rises with the scale within the binade [2**{binade - 1}, 2**{binade}): "
                f"reading/target = {float(last[2])!r} at {last[1]!r} but {float(q)!r} at the larger {x!r}, "
                "so no least scale is claimed; the map is expected to be monotone between powers of two"
            )
        last = (binade, x, q)


def _aim(x0: float, r0: float | None, x1: float | None, r1: float | None, target: float) -> float | None:
    """The σ at which the log-log line through (x0, r0) and (x1, r1) reads ``target`` (only (x0, r0): the
    slope −1, a reading inversely proportional to σ); None where the readings give no falling line."""
    if r0 is None or x0 <= 0:
        return None
    slope = -1.0
    if x1 is not None and r1 is not None and x1 > 0 and x1 != x0:
        run = math.log(x1) - math.log(x0)
        if run == 0:  # neighbouring floats whose logarithms round alike: no slope to read
            return None
        slope = (r1 - r0) / run
        if not slope < 0 or not math.isfinite(slope):
            return None
    step = (target - r0) / slope
    step = max(-MAX_LOG_STEP, min(MAX_LOG_STEP, step))
    return x0 * math.exp(step)


def _bracket(
    at: Callable[[int], tuple[bool, float | None]], k_lo: int, k_hi: int, k0: int, errors: list[str]
) -> tuple[int, int, list[int]]:
    """Keys ``(a, b, walked)``: ``a < b``, ``a`` failing and ``b`` passing, found by walking out from
    ``k0``; ``walked`` lists the keys read, in order."""
    ok0, r0 = at(k0)
    prev: tuple[float, float | None] | None = None
    k, ok, r = k0, ok0, r0
    walked = [k0]
    while True:
        x = key_float(k)
        margin = math.log(1.1) if ok else -math.log(1.1)  # aim 10% past the target, to bracket it
        aim = _aim(x, r, prev[0] if prev else None, prev[1] if prev else None, margin)
        if ok:  # look below for a failing σ
            if k == k_lo:
                raise InvalidParameter(
                    f"bounds[0]={key_float(k_lo)!r} already meets the target: lower the bounds' lower end"
                )
            nxt = aim if aim is not None and aim < x else x / 16
            k_new = max(k_lo, min(k - 1, float_key(max(nxt, 0.0))))
        else:  # look above for a passing σ
            if k == k_hi:
                raise InvalidParameter(
                    f"bounds[1]={key_float(k_hi)!r} does not meet the target, so no σ in the bounds does: "
                    f"raise the bounds' upper end or loosen the target{errors[0] if errors else ''}"
                )
            nxt = aim if aim is not None and aim > x else x * 16
            k_new = min(k_hi, max(k + 1, float_key(min(nxt, key_float(k_hi)))))
        ok_new, r_new = at(k_new)
        walked.append(k_new)
        if ok_new != ok:
            return ((k_new, k) if ok else (k, k_new)) + (walked,)
        prev = (x, r)
        k, ok, r = k_new, ok_new, r_new


def _secant(at: Callable[[int], tuple[bool, float | None]], k1: int, k2: int) -> float | None:
    """The σ where the log-log line through the readings at keys ``k1`` and ``k2`` meets the target."""
    (_, r1), (_, r2) = at(k1), at(k2)
    x1, x2 = key_float(k1), key_float(k2)
    if r1 is None or r2 is None or r1 == r2 or x1 <= 0 or x2 <= 0:
        return None
    l1, l2 = math.log(x1), math.log(x2)
    lx = l2 - r2 * (l2 - l1) / (r2 - r1)
    return math.exp(lx) if -700 < lx < 700 else None


def _close(
    at: Callable[[int], tuple[bool, float | None]], a: int, b: int, walked: list[int], rtol: float
) -> tuple[int, int]:
    """Shrink the bracket (``a`` failing, ``b`` passing) until its ends are adjacent floats (or, with
    ``rtol`` > 0, until b ≤ a·(1 + rtol)).

    Each step reads the σ where the secant through the last two readings (log-reading against log-σ)
    meets the target; when that estimate moved little from the previous estimate (against the bracket),
    the root is within about that move of it, so a second reading one double move beyond it, on the other
    side, closes the bracket from both ends. A step outside the bracket, missing readings, or a bracket
    that did not halve (in float keys) over the last two steps falls back to halving the keys."""
    recent = list(walked)
    widths = [b - a]

    def done() -> bool:
        return b - a <= 1 or (rtol > 0 and key_float(b) <= key_float(a) * (1 + rtol))

    def read(k: int) -> bool:
        nonlocal a, b
        ok, _ = at(k)
        if ok:
            b = k
        else:
            a = k
        recent.append(k)
        return ok

    estimate = recent[-1]  # the last secant estimate (where the root was thought to be)
    while not done():
        cand = _secant(at, recent[-2], recent[-1]) if len(recent) >= 2 else None
        k = float_key(cand) if cand is not None else a
        stalled = len(widths) >= 3 and widths[-1] * 2 > widths[-3]
        if stalled or not a < k < b:
            k = (a + b) // 2
            step = None
        else:
            step, estimate = abs(k - estimate), k  # how far the estimate moved: about its error
        ok = read(k)
        if step is not None and not done() and 8 * step < b - a:
            d = 2 * step + 1
            k2 = k + d if not ok else k - d  # the root lies above a failing σ, below a passing one
            if a < k2 < b:
                read(k2)
        widths.append(b - a)
    return a, b


def _check_monotone(seen: dict[int, tuple[bool, float | None]]) -> float:
    """The largest relative rise of the reading between two σ read (0 if it never rises); refuses a rise
    above :data:`MONOTONE_SLACK` (the bracket alone cannot show non-monotonicity: every σ read in it
    moves one end)."""
    worst, top, where = 0.0, -math.inf, 0
    worst_at = (0, 0)
    for k, (_, r) in sorted(seen.items(), reverse=True):  # from the largest σ down
        if r is None:
            continue
        if r < top:
            rise = math.expm1(top - r)
            if rise > worst:
                worst, worst_at = rise, (k, where)
        if r > top:
            top, where = r, k
    if worst > MONOTONE_SLACK:
        lo_k, hi_k = worst_at
        raise InvalidParameter(
            f"make: the certified reading is not monotone in σ (log(reading / target) = {seen[hi_k][1]!r} at "
            f"σ = {key_float(hi_k)!r} but {seen[lo_k][1]!r} at the smaller σ = {key_float(lo_k)!r}), so no "
            "least σ is claimed: give bounds within which larger σ never reads more, or use "
            "binary_search_param for a boundary"
        )
    return worst


def _target(epsilon: object, delta: object) -> tuple[Fraction, Fraction]:
    check_finite_nonnegative(epsilon, "epsilon")
    check_probability(delta, "delta")
    return decimal(epsilon, "epsilon"), decimal(delta, "delta")


def calibrate_loss(
    make_loss: Callable[[float], PrivacyLoss],
    epsilon: Number,
    delta: Number,
    *,
    bounds: object = DEFAULT_BOUNDS,
    start: float | None = None,
    rtol: float = 0.0,
) -> float:
    """A float σ in ``bounds`` whose pair ``make_loss(σ)`` certifies ε(δ) ≤ ``epsilon`` while the float just
    below it does not: the boundary of the certified reading on the float grid (:func:`least_passing`).

    The reading is :meth:`PrivacyLoss.epsilon` at ``delta`` (the certified upper bound of the privacy loss
    distribution: Zhu–Dong–Wang 2022 Thm 10 for compositions, Thm 11 / Prop. 30 for subsampling, each
    pair's PLD as its constructor cites). What is claimed: the σ returned meets the target and the float
    below it does not (both were read; with ``rtol`` > 0, a σ within a factor 1 + rtol below it); the
    readings taken fall as σ grows up to a relative rise of at most ``MONOTONE_SLACK`` = 1e-9 (checked: a
    larger rise is refused). It is the least such float only where the certified reading is monotone in σ:
    the pairs' true privacy is (a larger σ is a post-processing of a smaller one), but the certified
    reading wobbles with its float rounding (about 4e-13 relative in ε at 10⁴ subsampled Gaussian steps),
    so a float a few hundred ulps below may also pass, and runs that read different σ on the way may return
    boundaries that far apart; between the σ read nothing is claimed (:func:`least_passing` returns the
    readings and the wobble seen). A σ whose pair cannot be built or read counts as not meeting the
    target. The targets are read as the decimals they print as.

    Args:
        make_loss: σ ↦ the dominating pair of the whole planned run (e.g. T compositions of a subsampled
            Gaussian step).
        epsilon: the target ε (finite, ≥ 0).
        delta: the target δ in [0, 1].
        bounds: the interval of σ searched (default (0, 1e10)).
        start: where the search starts (default 1, or the middle of the bounds).
        rtol: 0 (default) for the exact float boundary; a positive tolerance stops the search once a
            failing σ is within a factor 1 + rtol below the passing one returned (fewer readings).

    Raises:
        InvalidParameter: a target is not a number in range (named); ``make_loss`` is not callable;
            ``rtol`` is not a finite number in [0, 1);
            ``bounds`` are bad; no σ in the bounds meets the target; or the reading is not monotone in σ
            (see :func:`least_passing`).

    Examples:
        >>> from dpcompose.accounting import PrivacyLoss
        >>> make = lambda s: PrivacyLoss.gaussian(1, s)
        >>> sigma = calibrate_loss(make, 1.0, 1e-6)
        >>> round(sigma, 3)
        4.225
    """
    if not callable(make_loss):
        raise InvalidParameter(f"make_loss={make_loss!r} must be a function from σ to a PrivacyLoss")
    eps, dlt = _target(epsilon, delta)

    def probe(sigma: float) -> tuple[bool, float | None]:
        loss = make_loss(sigma)
        if not isinstance(loss, PrivacyLoss):
            raise InvalidParameter(f"make_loss({sigma!r}) returned {loss!r}, not a PrivacyLoss")
        e = loss.epsilon(dlt)
        return e <= eps, log_ratio(e, eps)

    try:
        return least_passing(probe, bounds, start, rtol).value
    except InvalidParameter as exc:
        raise InvalidParameter(f"{exc} [target: epsilon={epsilon!r}, delta={delta!r}]") from None


def gaussian_sigma(epsilon: Number, delta: Number, sensitivity: Number = 1) -> float:
    """A float σ for which Gaussian noise N(0, σ²) on a value of L2 sensitivity Δ is certified (ε, δ)-DP by
    the exact privacy profile, δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ ``delta``, while the float
    just below it is not.

    The profile is evaluated by :func:`~dpcompose.accounting.gaussian_delta` (every step rounded to
    increase δ), so the σ returned is certified; the float just below it is not (both were evaluated).
    The true δ(ε) falls as σ grows (the Gaussian pair of a larger σ is a post-processing of the smaller's:
    add independent noise); its rounded evaluation does so up to its rounding, checked on the σ read as
    :func:`least_passing` does (a relative rise above ``MONOTONE_SLACK`` is refused), so σ is the least
    certified float up to that rounding, nothing being claimed between the σ read.

    Source: Balle–Wang 2018 (ICML), Thm 8 (the analytic Gaussian mechanism); Dong–Roth–Su 2019 Cor 2.13.

    Args:
        epsilon: the target ε (> 0).
        delta: the target δ in (0, 1).
        sensitivity: Δ (> 0), the L2 sensitivity.

    Raises:
        InvalidParameter: ε is not positive and finite, δ not in (0, 1), or Δ not positive (each named).

    Examples:
        >>> round(gaussian_sigma(1.0, 1e-6), 4)
        4.2247
    """
    eps, dlt = _target(epsilon, delta)
    if eps == 0:
        raise InvalidParameter(
            f"epsilon={epsilon!r} must be positive: Gaussian noise is never (0, δ)-DP for δ < 1"
        )
    if not 0 < dlt < 1:
        raise InvalidParameter(f"delta={delta!r} must be in (0, 1): Gaussian noise has δ(ε) > 0 at every ε")
    check_finite_positive(sensitivity, "sensitivity")
    sens = exact(sensitivity, "sensitivity")
    if not Fraction(1, 2**300) <= sens <= 2**300:
        raise InvalidParameter(
            f"sensitivity={sensitivity!r} must lie in [2**-300, 2**300]: the σ sought, about "
            "Δ·√(2 ln(1.25/δ))/ε, must stay a float whose (Δ/σ)² the certified Gaussian profile can read; "
            "rescale the data"
        )
    df = float(dlt)

    def probe(sigma: float) -> tuple[bool, float | None]:
        if sigma <= 0:
            return False, None
        d = gaussian_delta((sens / Fraction(sigma)) ** 2, eps)
        return d <= dlt, log_ratio(d, dlt)

    try:  # the classical σ (Dwork–Roth 2014 Thm A.1), only where the search starts
        start = float(sens) * math.sqrt(2 * math.log(1.25 / df)) / float(eps)
    except (ArithmeticError, ValueError):  # (ε or δ below the double range)
        start = 1.0
    if not 0 < start < 1e300:
        start = 1.0
    try:
        return least_passing(probe, (0.0, 1e300), start).value
    except InvalidParameter as exc:  # (δ below what the floats of the profile certify)
        raise InvalidParameter(f"{exc} [target: epsilon={epsilon!r}, delta={delta!r}]") from None
